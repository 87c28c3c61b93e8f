"""Studio pages of registered prompts: roles, the version editor, labels, diffs, playground."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape

from assembler.format_lint import EMPTY_VALUE
from promptadmin.prompts.models import Label, LabelEvent, Prompt
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def prompts(db: None) -> Prompt:
    cache.clear()
    call_command("seed_prompts", stdout=StringIO())
    return Prompt.objects.get(component="verifier", agent="judge", task_type="rubric")


def client_for(role: str) -> Client:
    user = UserFactory()
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


def test_the_list_shows_every_prompt_with_its_labels_in_few_queries(
    prompts: Prompt, django_assert_max_num_queries: Any
) -> None:
    viewer = client_for("viewer")
    with django_assert_max_num_queries(8):
        page = viewer.get("/prompts/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "verifier/judge/rubric" in html
    assert "production v1" in html and "staging v2" in html
    assert 'aria-current="page">Prompts<' in html


def test_viewers_read_but_cannot_change_prompts(prompts: Prompt) -> None:
    viewer = client_for("viewer")
    assert viewer.get(f"/prompts/{prompts.pk}/").status_code == 200
    assert viewer.get(f"/prompts/{prompts.pk}/playground/").status_code == 200
    assert viewer.get(f"/prompts/{prompts.pk}/versions/new/").status_code == 403
    moved = viewer.post(f"/prompts/{prompts.pk}/labels/", {"name": "production", "version": 2})
    assert moved.status_code == 403
    assert Label.objects.get(prompt=prompts, name="production").version.number == 1
    assert Client().get("/prompts/").status_code == 302


def test_a_new_version_starts_from_the_chosen_version_and_saves_with_labels(
    prompts: Prompt,
) -> None:
    author = client_for("author")
    form = author.get(f"/prompts/{prompts.pk}/versions/new/?from=1").content.decode()
    assert "You grade {{ subject }} responses and cite the evidence you used.</textarea>" in form
    saved = author.post(
        f"/prompts/{prompts.pk}/versions/new/",
        {
            "syntax": "curly",
            "system": "You grade {{ subject }}.",
            "template_name_0": "default",
            "template_text_0": "Q: {{ q }}",
            "template_name_1": "",
            "template_text_1": "",
            "variables": "",
            "task": "rubric",
            "config": '{"temperature": 0}',
            "commit_message": "Shorter",
            "labels": "canary",
        },
    )
    assert saved.status_code == 302
    version = prompts.versions.get(number=3)
    assert version.user_templates == {"default": "Q: {{ q }}"}
    assert version.variables == ["subject", "q"]
    assert version.config == {"temperature": 0}
    assert Label.objects.get(prompt=prompts, name="canary").version == version


def test_a_version_with_errors_is_refused_and_the_form_keeps_the_text(prompts: Prompt) -> None:
    author = client_for("author")
    response = author.post(
        f"/prompts/{prompts.pk}/versions/new/",
        {
            "syntax": "curly",
            "system": "You grade {{ user.name }}.",
            "template_name_0": "default",
            "template_text_0": "kept text",
            "config": "[1]",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "attribute access" in html
    assert "JSON object" in html
    assert "kept text</textarea>" in html
    assert prompts.versions.count() == 2


def test_the_live_check_lists_variables_tokens_and_lint_findings(prompts: Prompt) -> None:
    author = client_for("author")
    response = author.post(
        f"/prompts/{prompts.pk}/versions/check/",
        {
            "syntax": "curly",
            "system": "You grade.",
            "template_name_0": "default",
            "template_text_0": "You are a grader. Question: {{ q }}",
            "variables": "q topic",
        },
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert 'id="live-check"' in html and "<html" not in html
    assert "<code>q</code>" in html
    assert 'data-code="system_text_in_user"' in html
    assert 'data-code="unused_variable"' in html
    assert "default: <strong>" in html


def test_the_variables_panel_agrees_with_the_declared_variables_field(prompts: Prompt) -> None:
    """A "Variables" field and a "Variables" panel listing other names, side by side,
    read as a contradiction: the panel says how each name stands against the field."""
    author = client_for("author")
    form = author.get(f"/prompts/{prompts.pk}/versions/new/").content.decode()
    assert '<label for="id_variables">Declared variables</label>' in form
    post = {
        "syntax": "curly",
        "system": "You grade {{ subject }}.",
        "template_name_0": "default",
        "template_text_0": "{{ question }} in a {{ tone }} tone",
        "variables": "subject question extra",
    }
    html = author.post(
        f"/prompts/{prompts.pk}/versions/check/", post, HTTP_HX_REQUEST="true"
    ).content.decode()
    panel = re.search(r'data-testid="variables">([\s\S]*?)</ul>', html)
    assert panel is not None
    rows = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in panel[1].split("</li>")]
    assert [row for row in rows if row] == [
        "subject",
        "question",
        "tone used, not declared",
        "extra declared, not used",
    ]
    undeclared = author.post(
        f"/prompts/{prompts.pk}/versions/check/", {**post, "variables": ""}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Declared: those the templates use" in undeclared
    assert "not declared" not in undeclared


def test_labels_move_and_are_removed_and_the_history_shows_it(prompts: Prompt) -> None:
    author = client_for("admin")
    author.post(
        f"/prompts/{prompts.pk}/labels/",
        {"name": "production", "version": 2, "live_confirmed": "yes"},
    )
    author.post(f"/prompts/{prompts.pk}/labels/remove/", {"name": "staging"})
    assert list(Label.objects.filter(prompt=prompts).values_list("name", "version__number")) == [
        ("production", 2)
    ]
    events = list(LabelEvent.objects.filter(prompt=prompts).values_list("action", flat=True)[:2])
    assert events == ["removed", "moved"]
    page = author.get(f"/prompts/{prompts.pk}/").content.decode()
    assert "from version 1 to 2" in page
    refused = author.post(
        f"/prompts/{prompts.pk}/labels/", {"name": "latest", "version": 1}, follow=True
    )
    assert "newest version" in refused.content.decode()


def test_authors_cannot_move_or_remove_the_protected_production_label(prompts: Prompt) -> None:
    author = client_for("author")
    page = author.get(f"/prompts/{prompts.pk}/").content.decode()
    assert "Protected: only admins move or remove it." in page
    assert 'aria-label="Move production to version 2"' not in page
    assert 'aria-label="Move staging to version 1"' in page
    for url, data in (
        (f"/prompts/{prompts.pk}/labels/", {"name": "production", "version": 2}),
        (f"/prompts/{prompts.pk}/labels/remove/", {"name": "production"}),
    ):
        refused = author.post(url, data, follow=True)
        assert refused.status_code == 200
        assert "protected label" in refused.content.decode()
    assert Label.objects.get(prompt=prompts, name="production").version.number == 1
    version = {"syntax": "curly", "template_name_0": "default", "template_text_0": "Hi."}
    editor = author.post(
        f"/prompts/{prompts.pk}/versions/new/", {**version, "labels": "production"}
    )
    assert "protected label" in editor.content.decode() and prompts.versions.count() == 2
    admin = client_for("admin")
    assert (
        'aria-label="Move production to version 2"'
        in admin.get(f"/prompts/{prompts.pk}/").content.decode()
    )
    admin.post(
        f"/prompts/{prompts.pk}/labels/",
        {"name": "production", "version": 2, "live_confirmed": "yes"},
    )
    assert Label.objects.get(prompt=prompts, name="production").version.number == 2


def test_moving_or_removing_production_asks_first_and_the_answer_posts_it_again(
    prompts: Prompt,
) -> None:
    admin = client_for("admin")
    asked = admin.post(f"/prompts/{prompts.pk}/labels/", {"name": "production", "version": 2})
    assert asked.status_code == 200
    html = asked.content.decode()
    assert "Move the production label of verifier/judge/rubric from version 1 to version 2?" in html
    assert "get version 2 on their next request" in html
    assert '<input type="hidden" name="live_confirmed" value="yes">' in html
    assert '<input type="hidden" name="version" value="2">' in html
    assert Label.objects.get(prompt=prompts, name="production").version.number == 1
    admin.post(
        f"/prompts/{prompts.pk}/labels/",
        {"name": "production", "version": 2, "live_confirmed": "yes"},
    )
    assert Label.objects.get(prompt=prompts, name="production").version.number == 2

    asked = admin.post(f"/prompts/{prompts.pk}/labels/remove/", {"name": "production"})
    question = "Remove the production label of verifier/judge/rubric (version 2)?"
    assert question in asked.content.decode()
    assert Label.objects.filter(prompt=prompts, name="production").exists()
    admin.post(
        f"/prompts/{prompts.pk}/labels/remove/", {"name": "production", "live_confirmed": "yes"}
    )
    assert not Label.objects.filter(prompt=prompts, name="production").exists()

    # Other labels move at once.
    moved = admin.post(f"/prompts/{prompts.pk}/labels/", {"name": "staging", "version": 1})
    assert moved.status_code == 302
    assert Label.objects.get(prompt=prompts, name="staging").version.number == 1


def test_two_versions_are_compared_side_by_side(prompts: Prompt) -> None:
    viewer = client_for("viewer")
    response = viewer.get(f"/prompts/{prompts.pk}/?a=1&b=2", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert 'id="compare"' in html and "<html" not in html
    assert "<ins>" in html
    assert "Version 1" in html and "Version 2" in html
    bad = viewer.get(f"/prompts/{prompts.pk}/?a=1&b=9").content.decode()
    assert "There is no version 9." in bad


def test_the_playground_renders_messages_with_token_counts_and_names_missing_variables(
    prompts: Prompt,
) -> None:
    viewer = client_for("viewer")
    url = f"/prompts/{prompts.pk}/playground/"
    filled = viewer.get(
        url,
        {
            "source": "label:production",
            "template": "default",
            "interface": "manual",
            "format": "messages",
            "var_subject": "essay",
            "var_evidence": "It cites two sources.",
            "var_trait": "rigour",
        },
    ).content.decode()
    assert 'data-testid="message-role">user' in filled
    assert "You grade essay responses" in filled
    assert 'data-testid="total-tokens"' in filled
    missing = viewer.get(url, {"source": "label:production", "var_subject": "essay"})
    assert "Missing variables: evidence, trait." in missing.content.decode()


UNSTORABLE_JSON = [
    pytest.param("[" * 100_000, "too deeply", id="deep"),
    pytest.param('{"x": NaN}', "finite", id="nan"),
    pytest.param('{"x": 1e400}', "too large", id="1e400"),
    pytest.param('{"x": 18446744073709551616}', "64 bits", id="2**64"),
    pytest.param('{"x": 1.63e+284}', "stored as the integer", id="1.63e+284"),
    pytest.param('{"x": "\\ud800"}', "surrogate", id="lone surrogate"),
    pytest.param("[1]", "JSON object", id="not an object"),
]


def version_post(**fields: str) -> dict[str, str]:
    return {
        "syntax": "curly",
        "system": "You grade {{ subject }}.",
        "template_name_0": "default",
        "template_text_0": "Q: {{ q }}",
        **fields,
    }


@pytest.mark.parametrize(("text", "words"), UNSTORABLE_JSON)
def test_the_version_config_box_refuses_json_that_cannot_be_stored_next_to_the_field(
    prompts: Prompt, text: str, words: str
) -> None:
    author = client_for("author")
    saved = author.post(f"/prompts/{prompts.pk}/versions/new/", version_post(config=text))
    assert saved.status_code == 200
    assert words in " ".join(saved.context["form"].errors["config"])
    assert prompts.versions.count() == 2
    checked = author.post(
        f"/prompts/{prompts.pk}/versions/check/", version_post(config=text), HTTP_HX_REQUEST="true"
    )
    assert checked.status_code == 200


def test_the_version_config_box_refuses_the_key_the_langfuse_api_serves_templates_under(
    prompts: Prompt,
) -> None:
    author = client_for("author")
    saved = author.post(
        f"/prompts/{prompts.pk}/versions/new/",
        version_post(config='{"user_templates": {"short": "x"}}'),
    )
    assert saved.status_code == 200
    assert "Langfuse" in " ".join(saved.context["form"].errors["config"])
    assert prompts.versions.count() == 2


@pytest.mark.parametrize(("text", "words"), UNSTORABLE_JSON)
def test_a_playground_link_with_unstorable_instruction_context_names_the_field(
    prompts: Prompt, text: str, words: str
) -> None:
    viewer = client_for("viewer")
    # A playground is a shareable GET link: whatever it holds, the page answers.
    response = viewer.get(
        f"/prompts/{prompts.pk}/playground/",
        {"source": "label:production", "var_subject": "essay", "instruction_context": text},
    )
    assert response.status_code == 200
    assert words in " ".join(response.context["form"].errors["instruction_context"])
    assert 'data-testid="message"' not in response.content.decode()


FILLED = {
    "source": "label:production",
    "interface": "manual",
    "var_subject": "essay",
    "var_evidence": "It cites two sources.",
    "var_trait": "rigour",
}


def test_the_playground_announces_a_summary_never_the_rendered_prompt(prompts: Prompt) -> None:
    viewer = client_for("viewer")
    url = f"/prompts/{prompts.pk}/playground/"
    html = viewer.get(url, FILLED, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="result").content
    result, status = html.decode().split('<p id="playground-status"')
    assert "aria-live" not in result and 'role="alert"' not in result
    assert "You grade essay responses" in result
    assert re.fullmatch(
        r' class="sr-only" role="status" hx-swap-oob="innerHTML">'
        r"Rendered: 1 message, [0-9]+ tokens\.</p>\s*",
        status,
    ), status
    missing = viewer.get(url, {"source": "label:production"}, HTTP_HX_REQUEST="true")
    assert (
        "Not rendered: Missing variables: subject, evidence, trait.</p>" in missing.content.decode()
    )


def test_choosing_another_version_in_the_playground_answers_the_whole_page(
    prompts: Prompt,
) -> None:
    viewer = client_for("viewer")
    page = viewer.get(
        f"/prompts/{prompts.pk}/playground/",
        {"source": "label:staging"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="main",
    ).content.decode()
    assert 'id="main"' in page and 'id="playground-form"' in page
    assert "Version 2, task <code>rubric</code>" in page


def test_the_live_check_announces_counts_not_the_findings(prompts: Prompt) -> None:
    author = client_for("author")
    html = author.post(
        f"/prompts/{prompts.pk}/versions/check/",
        version_post(template_text_0="You are a grader. {{ q }}", variables="q subject topic"),
        HTTP_HX_REQUEST="true",
    ).content.decode()
    box, status = html.split('<p id="live-check-status"')
    assert "aria-live" not in box
    assert status.startswith(' class="sr-only" role="status" hx-swap-oob="innerHTML">')
    assert "Checked: 2 variables, 2 lint findings (2 warnings).</p>" in status


def test_the_playground_warns_of_an_instruction_rendered_without_its_context(
    prompts: Prompt,
) -> None:
    # What was seen (issue 21, item 6): openai_endpoint with an empty instruction context
    # ended the system message "…validates against this JSON schema:" with nothing after.
    viewer = client_for("viewer")
    query = {
        "source": "label:production",
        "template": "default",
        "interface": "openai_endpoint",
        "format": "messages",
        "var_subject": "essay",
        "var_evidence": "It cites two sources.",
        "var_trait": "rigour",
    }
    response = viewer.get(f"/prompts/{prompts.pk}/playground/", query)
    html = response.content.decode()
    assert "validates against this JSON schema:</pre>" in html
    assert f'data-code="{EMPTY_VALUE}"' in html
    assert escape("renders 'json_schema' empty") in html
    assert "1 warning" in response.context["announcement"]
    with_context = viewer.get(
        f"/prompts/{prompts.pk}/playground/",
        {**query, "instruction_context": '{"json_schema": {"type": "object"}}'},
    ).content.decode()
    assert EMPTY_VALUE not in with_context


def test_the_version_editor_says_what_the_tasks_adapters_need_in_their_context(
    prompts: Prompt,
) -> None:
    author = client_for("author")
    fields = {
        "syntax": "curly",
        "system": "You grade.",
        "template_name_0": "default",
        "template_text_0": "Question: {{ q }}",
        "variables": "q",
    }
    url = f"/prompts/{prompts.pk}/versions/check/"
    html = author.post(url, {**fields, "task": "rubric"}, HTTP_HX_REQUEST="true").content.decode()
    # The version itself is fine: what the adapters need is the caller's to send.
    assert "No lint findings." in html
    notes = html[html.index('data-testid="adapter-notes"') :]
    found = re.findall(rf'data-code="{EMPTY_VALUE}">.*?</li>', notes, re.S)
    # langchain, openrouter and openai_endpoint spell out the schema; the Claude adapters
    # need no context.
    assert len(found) == 3
    assert all("Without instruction context" in item for item in found)
    assert any("openai_endpoint adapter" in item for item in found)
    assert "badge-info" in found[0]
    none = author.post(url, fields, HTTP_HX_REQUEST="true").content.decode()
    assert EMPTY_VALUE not in none
