"""The demo registered prompts: idempotent, lint-clean, labelled, and renderable."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from assembler.summarize import DEFAULT_INSTRUCTIONS
from promptadmin.prompts.models import AdapterInstruction, Interface, Label, Prompt, PromptVersion
from promptadmin.prompts.selectors import fetch_prompt, render_prompt

pytestmark = pytest.mark.django_db


def test_seeding_twice_creates_everything_once() -> None:
    call_command("seed_prompts")
    counts = [m.objects.count() for m in (Interface, AdapterInstruction, Prompt, PromptVersion)]
    call_command("seed_prompts")
    assert [
        m.objects.count() for m in (Interface, AdapterInstruction, Prompt, PromptVersion)
    ] == counts
    assert set(Interface.objects.values_list("name", flat=True)) == {
        "langchain", "openrouter", "openai_endpoint", "claude_tool", "claude_agent_sdk", "manual",
    }  # fmt: skip
    assert not AdapterInstruction.objects.filter(interface__name="manual").exists()


def test_production_and_staging_point_at_different_versions() -> None:
    call_command("seed_prompts")
    judge = Prompt.objects.get(component="verifier", agent="judge", task_type="rubric")
    labels = {label.name: label.version.number for label in Label.objects.filter(prompt=judge)}
    assert labels == {"production": 1, "staging": 2}


def test_the_langchain_parsing_prompt_carries_the_json_schema() -> None:
    call_command("seed_prompts")
    resolved = fetch_prompt(component="verifier", agent="parser", task_type="numeric")
    assert resolved.task_type_used == "numeric"
    rendered = render_prompt(
        resolved,
        variables={"question": "How far?", "response": "About 3 km."},
        interface="openrouter",
        instruction_context={
            "json_schema": {"type": "object"},
            "format_instructions": "JSON only.",
        },
    )
    assert rendered.system.endswith('JSON schema:\n{"type": "object"}')
    assert rendered.user.endswith("JSON only.")
    assert '{"value": 3.2, "unit": "km"}' in rendered.user


def test_the_summarizer_prompt_is_seeded_with_the_built_in_instructions_in_production() -> None:
    call_command("seed_prompts")
    resolved = fetch_prompt(component="conversations", agent="summarizer")
    assert resolved.system == DEFAULT_INSTRUCTIONS
    assert resolved.user_templates == {} and resolved.variables == []
    assert "production" in resolved.labels and resolved.version == 1
    # What the summarizer sends, rendered, is exactly the built-in text it replaces.
    assert render_prompt(resolved).system == DEFAULT_INSTRUCTIONS
