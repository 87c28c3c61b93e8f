"""Tri-section assembly: task text, then adapter additions, then user instructions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import Tokenizer
from assembler.format_lint import EMPTY_VALUE, rendered_findings
from assembler.templates import TemplateSyntaxError, render_many
from assembler.trisection import (
    AdapterInstruction,
    Interface,
    Message,
    TriSectionResult,
    assemble_trisection,
    join_parts,
    message_tokens,
)

LANGCHAIN = Interface("langchain", supports_system_prompt=True, supports_structured_output=False)
NO_SYSTEM = Interface("manual", supports_system_prompt=False)


def test_without_additions_the_task_texts_are_kept_exactly() -> None:
    result = assemble_trisection(
        system_text="You grade.\n", user_text="  Answer: 42\n", interface=LANGCHAIN
    )
    assert result == TriSectionResult(
        system="You grade.\n",
        user="  Answer: 42\n",
        messages=(Message("system", "You grade.\n"), Message("user", "  Answer: 42\n")),
    )


def test_adapter_additions_go_to_their_texts_then_user_instructions_to_the_system() -> None:
    result = assemble_trisection(
        system_text="You grade answers.",
        user_text="Answer: 42",
        interface=LANGCHAIN,
        adapter_instructions=[AdapterInstruction(1, "Reply in JSON.", "Schema below.")],
        user_instructions="Be strict.",
    )
    assert result.system == "You grade answers.\n\nReply in JSON.\n\nBe strict."
    assert result.user == "Answer: 42\n\nSchema below."
    assert result.messages == (
        Message("system", result.system),
        Message("user", result.user),
    )


def test_adapters_apply_by_order_and_equal_orders_keep_the_given_order() -> None:
    instructions = [
        AdapterInstruction(5, "five"),
        AdapterInstruction(1, "one-a"),
        AdapterInstruction(3, "three"),
        AdapterInstruction(1, "one-b"),
    ]
    result = assemble_trisection(
        system_text="S", user_text="U", interface=LANGCHAIN, adapter_instructions=instructions
    )
    assert result.system == "S\n\none-a\n\none-b\n\nthree\n\nfive"


def test_adapter_additions_are_rendered_with_the_instruction_context() -> None:
    instruction = AdapterInstruction(
        1,
        system_addition="Reply with JSON matching {{ json_schema }}.",
        user_addition="{{ format_instructions }}",
    )
    result = assemble_trisection(
        system_text="S",
        user_text="U",
        interface=LANGCHAIN,
        adapter_instructions=[instruction],
        instruction_context={
            "json_schema": {"type": "object", "required": ["score"]},
            "format_instructions": "Use double quotes.",
            "unused": 1,
        },
    )
    assert result.system == (
        'S\n\nReply with JSON matching {"type": "object", "required": ["score"]}.'
    )
    assert result.user == "U\n\nUse double quotes."


def test_adapter_additions_work_without_context_and_empty_ones_are_skipped() -> None:
    instruction = AdapterInstruction(
        1, system_addition="Schema: {{ json_schema }}", user_addition="{{ format_instructions }}"
    )
    result = assemble_trisection(
        system_text="S", user_text="U", interface=LANGCHAIN, adapter_instructions=[instruction]
    )
    assert result.system == "S\n\nSchema:"
    assert result.user == "U"


def test_adapter_additions_in_the_format_syntax_are_rendered_as_format() -> None:
    instruction = AdapterInstruction(1, system_addition='{{"schema": {schema}}}', syntax="format")
    result = assemble_trisection(
        system_text="S",
        user_text="U",
        interface=LANGCHAIN,
        adapter_instructions=[instruction],
        instruction_context={"schema": [1]},
    )
    assert result.system == 'S\n\n{"schema": [1]}'


def test_an_adapter_template_that_does_not_parse_is_an_error() -> None:
    with pytest.raises(TemplateSyntaxError):
        assemble_trisection(
            system_text="S",
            user_text="U",
            interface=LANGCHAIN,
            adapter_instructions=[AdapterInstruction(1, "{{ schema.type }}")],
        )


def test_without_system_prompt_support_one_user_message_holds_system_then_user() -> None:
    result = assemble_trisection(
        system_text="You grade.",
        user_text="Answer: 42",
        interface=NO_SYSTEM,
        adapter_instructions=[AdapterInstruction(1, "JSON only.", "Schema.")],
        user_instructions="Be strict.",
    )
    assert result.messages == (
        Message("user", "You grade.\n\nJSON only.\n\nBe strict.\n\nAnswer: 42\n\nSchema."),
    )
    # the raw texts stay separate
    assert result.system == "You grade.\n\nJSON only.\n\nBe strict."
    assert result.user == "Answer: 42\n\nSchema."


def test_a_blank_system_text_sends_only_the_user_message() -> None:
    result = assemble_trisection(system_text="  ", user_text="Hi", interface=LANGCHAIN)
    assert result.messages == (Message("user", "Hi"),)
    no_system = assemble_trisection(system_text="", user_text="Hi", interface=NO_SYSTEM)
    assert no_system.messages == (Message("user", "Hi"),)


def test_user_instructions_alone_make_the_system_text() -> None:
    result = assemble_trisection(
        system_text="", user_text="U", interface=LANGCHAIN, user_instructions="Be brief."
    )
    assert result.messages == (Message("system", "Be brief."), Message("user", "U"))


def test_the_separator_is_configurable() -> None:
    result = assemble_trisection(
        system_text="S", user_text="U", interface=LANGCHAIN, user_instructions="I", separator="\n"
    )
    assert result.system == "S\nI"


def test_the_result_has_a_json_safe_form() -> None:
    result = assemble_trisection(system_text="S", user_text="U", interface=LANGCHAIN)
    assert result.to_dict() == {
        "system": "S",
        "user": "U",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
    }


def test_message_tokens_counts_each_message(tokenizer: Tokenizer) -> None:
    result = assemble_trisection(
        system_text="You are a helpful assistant.", user_text="Hello, world!", interface=LANGCHAIN
    )
    assert message_tokens(result.messages, tokenizer) == (
        tokenizer.count("You are a helpful assistant."),
        4,
    )


@pytest.mark.parametrize(
    ("parts", "joined"),
    [
        (["a", "b"], "a\n\nb"),
        (["a\n", "\n b \n"], "a\n\nb"),
        (["", "a", "   ", "b"], "a\n\nb"),
        ([" a\n"], " a\n"),
        (["", "\n"], ""),
        ([], ""),
    ],
)
def test_join_parts_skips_blank_parts_and_strips_only_at_seams(
    parts: list[str], joined: str
) -> None:
    assert join_parts(parts) == joined


PARTS = st.lists(st.sampled_from(["", " ", "\n", "a", "b c", " d\n", "é"]), max_size=4).map("".join)


@settings(max_examples=150, deadline=None)
@given(
    system=PARTS,
    user=PARTS,
    additions=st.lists(st.tuples(st.integers(0, 3), PARTS, PARTS), max_size=4),
    instructions=st.one_of(st.none(), PARTS),
    supports_system=st.booleans(),
)
def test_assembly_is_deterministic_and_keeps_every_non_blank_part_in_order(
    system: str,
    user: str,
    additions: list[tuple[int, str, str]],
    instructions: str | None,
    supports_system: bool,
) -> None:
    adapters = [AdapterInstruction(order, s, u) for order, s, u in additions]

    def run() -> TriSectionResult:
        return assemble_trisection(
            system_text=system,
            user_text=user,
            interface=Interface("x", supports_system_prompt=supports_system),
            adapter_instructions=adapters,
            user_instructions=instructions,
        )

    result = run()
    assert run() == result
    ordered = sorted(adapters, key=lambda adapter: adapter.order)
    system_parts = [system, *(a.system_addition for a in ordered), instructions or ""]
    user_parts = [user, *(a.user_addition for a in ordered)]
    assert result.system == join_parts(system_parts)
    assert result.user == join_parts(user_parts)
    content = "".join(message.content for message in result.messages)
    for part in [*system_parts, *user_parts]:
        assert part.strip() in content
    assert result.messages[-1].role == "user"
    assert len(result.messages) == (2 if supports_system and result.system.strip() else 1)


# Empty context (issue 21, item 6): with interface openai_endpoint and no instruction
# context, the system message ended "…validates against this JSON schema:" and nothing after.
JSON_FORMAT = AdapterInstruction(
    1,
    "Respond with one JSON object that validates against this JSON schema:\n{{ json_schema }}",
    "{{ format_instructions }}",
)
OPENAI_ENDPOINT = Interface("openai_endpoint")


def test_an_adapter_addition_rendered_with_an_empty_value_warns() -> None:
    result = assemble_trisection(
        system_text="You parse.",
        user_text="Text: hi",
        interface=OPENAI_ENDPOINT,
        adapter_instructions=[JSON_FORMAT],
        instruction_context={},
    )
    assert result.system.endswith("validates against this JSON schema:")
    [finding] = result.findings
    assert (finding.code, finding.level) == (EMPTY_VALUE, "warning")
    assert finding.template == "adapter:openai_endpoint:system"
    assert finding.position is not None and finding.position.line == 2
    assert finding.message == (
        "The openai_endpoint adapter's system addition renders 'json_schema' empty: "
        '"…that validates against this JSON schema:" is followed by nothing. '
        "Pass 'json_schema' in the instruction context."
    )


@pytest.mark.parametrize("blank", ["", "   \n", None])
def test_a_blank_value_is_as_empty_as_a_missing_one(blank: object) -> None:
    result = assemble_trisection(
        system_text="You parse.",
        user_text="Text: hi",
        interface=OPENAI_ENDPOINT,
        adapter_instructions=[JSON_FORMAT],
        instruction_context={"json_schema": blank, "format_instructions": "Only JSON."},
    )
    assert [finding.template for finding in result.findings] == ["adapter:openai_endpoint:system"]


def test_an_addition_that_renders_blank_as_a_whole_or_full_does_not_warn() -> None:
    # The user addition is only a placeholder: without it the addition is left out, which
    # is what an adapter without context means to do.
    full = assemble_trisection(
        system_text="You parse.",
        user_text="Text: hi",
        interface=OPENAI_ENDPOINT,
        adapter_instructions=[JSON_FORMAT],
        instruction_context={"json_schema": {"type": "object"}},
    )
    assert full.findings == ()
    assert full.user == "Text: hi"


def test_a_prompt_template_rendered_with_an_empty_value_warns() -> None:
    templates = {"system": "You grade {{ subject }}.", "default": "Question: {{ q }}"}
    rendered = render_many(templates, "curly", {"subject": "essays", "q": " "})
    [finding] = rendered_findings(templates, "curly", rendered)
    assert (finding.code, finding.template) == (EMPTY_VALUE, "default")
    assert finding.message == (
        "The user template 'default' renders 'q' empty: \"Question:\" is followed by nothing. "
        "Give 'q' a value."
    )
    middle = {"system": "You grade {{ subject }} carefully.", "default": "Hi"}
    [finding] = rendered_findings(middle, "curly", render_many(middle, "curly", {"subject": ""}))
    assert 'nothing comes between "You grade" and "carefully."' in finding.message
    assert rendered_findings(middle, "curly", render_many(middle, "curly", {"subject": "x"})) == []
