"""The official Langfuse SDK, unchanged, against a live promptadmin (``/api/public/``).

Only ``base_url`` and the keys change: the public key is a promptadmin API key's prefix,
the secret key the whole key. Tracing is off, so the SDK sends nothing anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langfuse import Langfuse
from langfuse.api import AccessDeniedError, NotFoundError, UnauthorizedError

from promptadmin.content.services.api_keys import api_key_create
from promptadmin.prompts.services.interfaces import interface_create
from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def client(live_server: Any, key: str, public: str | None = None) -> Langfuse:
    return Langfuse(
        public_key=public or key.partition(".")[0],
        secret_key=key,
        base_url=live_server.url,
        tracing_enabled=False,
        timeout=10,
    )


@pytest.fixture
def langfuse(live_server: Any) -> Iterator[Langfuse]:
    _, key = api_key_create(actor=None, name="langfuse-sdk", scope="write")
    sdk = client(live_server, key)
    yield sdk
    sdk.shutdown()


@pytest.fixture
def langfuse_admin(live_server: Any) -> Iterator[Langfuse]:
    """The SDK with an admin key: what moves the protected ``production`` label."""
    _, key = api_key_create(actor=None, name="langfuse-ops", scope="admin")
    sdk = client(live_server, key)
    yield sdk
    sdk.shutdown()


@pytest.fixture
def judge() -> None:
    """verifier/judge: v1 production (curly), v2 staging (format syntax); and a rubric
    task type with v1 production."""
    interface_create(actor=None, name="langchain")
    default = prompt_create(actor=None, component="verifier", agent="judge")
    prompt_version_create(
        actor=None, prompt=default, labels=["production"], commit_message="first",
        system="You grade {{ subject }}.",
        user_templates={"default": "Question: {{ question }}\n\nAnswer:",
                        "short": "{{ question }}"},
        config={"model": "gpt-4o-mini"},
    )  # fmt: skip
    prompt_version_create(
        actor=None, prompt=default, labels=["staging"], syntax="format",
        system='You grade {subject}; reply {{"score": n}}.',
        user_templates={"default": "Question: {question}\n\nAnswer:"},
    )  # fmt: skip
    rubric = prompt_create(actor=None, component="verifier", agent="judge", task_type="rubric")
    prompt_version_create(
        actor=None, prompt=rubric, labels=["production"],
        system="You grade {{ subject }} by the rubric.",
        user_templates={"default": "{{ question }}"},
    )  # fmt: skip


def test_get_prompt_by_label_and_compile(langfuse: Langfuse, judge: None) -> None:
    prompt = langfuse.get_prompt("verifier/judge", type="chat", cache_ttl_seconds=0)
    assert prompt.version == 1
    assert prompt.labels == ["production"]
    assert prompt.config == {
        "model": "gpt-4o-mini",
        "user_templates": {
            "default": "Question: {{ question }}\n\nAnswer:",
            "short": "{{ question }}",
        },
    }
    assert prompt.commit_message == "first"
    assert prompt.compile(subject="essays", question="Why?") == [
        {"role": "system", "content": "You grade essays."},
        {"role": "user", "content": "Question: Why?\n\nAnswer:"},
    ]


def test_get_prompt_by_version_serves_format_templates_in_curly_syntax(
    langfuse: Langfuse, judge: None
) -> None:
    prompt = langfuse.get_prompt("verifier/judge", version=2, type="chat", cache_ttl_seconds=0)
    assert prompt.labels == ["staging", "latest"]
    messages = prompt.compile(subject="essays", question="Why?")
    assert messages[0]["content"] == 'You grade essays; reply {"score": n}.'


def test_a_name_with_a_task_type_and_slashes_is_found(langfuse: Langfuse, judge: None) -> None:
    prompt = langfuse.get_prompt("verifier/judge/rubric", type="chat", cache_ttl_seconds=0)
    assert prompt.name == "verifier/judge/rubric"
    assert prompt.compile(subject="x", question="y")[0]["content"] == "You grade x by the rubric."
    fallback = langfuse.get_prompt("verifier/judge/parsing", type="chat", cache_ttl_seconds=0)
    assert (fallback.name, fallback.version) == ("verifier/judge", 1)


def test_a_label_moved_with_update_prompt_is_seen_on_the_next_fetch(
    langfuse_admin: Langfuse, judge: None
) -> None:
    sdk = langfuse_admin
    assert sdk.get_prompt("verifier/judge", type="chat", cache_ttl_seconds=0).version == 1
    updated = sdk.update_prompt(name="verifier/judge", version=2, new_labels=["production"])
    assert sorted(updated.labels) == ["latest", "production", "staging"]
    assert sdk.get_prompt("verifier/judge", type="chat", cache_ttl_seconds=0).version == 2


def test_a_write_key_moving_production_gets_the_sdks_access_denied_error(
    langfuse: Langfuse, judge: None
) -> None:
    with pytest.raises(AccessDeniedError) as raised:
        langfuse.update_prompt(name="verifier/judge", version=2, new_labels=["production"])
    assert raised.value.status_code == 403
    assert "protected label 'production'" in str(raised.value.body)
    with pytest.raises(AccessDeniedError):
        langfuse.create_prompt(name="verifier/judge", prompt="New text.", labels=["production"])
    assert langfuse.get_prompt("verifier/judge", type="chat", cache_ttl_seconds=0).version == 1
    # The other labels are a write key's to move.
    updated = langfuse.update_prompt(name="verifier/judge", version=1, new_labels=["staging"])
    assert sorted(updated.labels) == ["production", "staging"]


def test_create_a_text_prompt_and_a_chat_prompt(
    langfuse: Langfuse, langfuse_admin: Langfuse, judge: None
) -> None:
    text = langfuse_admin.create_prompt(
        name="summarizer/writer",
        prompt="Summarize {{ text }} in {{ words }} words.",
        labels=["production"],
        commit_message="from the SDK",
    )
    assert (text.version, text.labels) == (1, ["production", "latest"])
    fetched = langfuse.get_prompt("summarizer/writer", cache_ttl_seconds=0)
    assert fetched.compile(text="the book", words=10) == "Summarize the book in 10 words."
    chat = langfuse.create_prompt(
        name="verifier/judge/abstention",
        type="chat",
        prompt=[
            {"role": "system", "content": "You detect abstentions."},
            {"role": "user", "content": "Answer: {{ answer }}"},
        ],
        labels=["staging"],
        config={"temperature": 0},
    )
    assert chat.version == 1
    again = langfuse.get_prompt(
        "verifier/judge/abstention", label="staging", type="chat", cache_ttl_seconds=0
    )
    assert again.compile(answer="I don't know") == [
        {"role": "system", "content": "You detect abstentions."},
        {"role": "user", "content": "Answer: I don't know"},
    ]
    assert again.config["temperature"] == 0


def test_an_unknown_label_is_the_sdks_not_found_error(langfuse: Langfuse, judge: None) -> None:
    with pytest.raises(NotFoundError):
        langfuse.get_prompt("verifier/judge", label="canary", cache_ttl_seconds=0, max_retries=0)
    with pytest.raises(NotFoundError):
        langfuse.get_prompt("nobody/here", cache_ttl_seconds=0, max_retries=0)


def test_a_wrong_key_is_refused_with_401(live_server: Any, judge: None) -> None:
    _, key = api_key_create(actor=None, name="real", scope="read")
    wrong = client(live_server, key[:-1] + ("a" if key[-1] != "a" else "b"))
    try:
        with pytest.raises(UnauthorizedError):
            wrong.get_prompt("verifier/judge", cache_ttl_seconds=0, max_retries=0)
        with pytest.raises(UnauthorizedError):
            wrong.auth_check()
    finally:
        wrong.shutdown()


def test_auth_check_passes_with_a_promptadmin_key(langfuse: Langfuse) -> None:
    assert langfuse.auth_check() is True


def test_a_read_key_fetches_but_cannot_move_labels(live_server: Any, judge: None) -> None:
    _, key = api_key_create(actor=None, name="reader", scope="read")
    reader = client(live_server, key)
    try:
        assert reader.get_prompt("verifier/judge", type="chat", cache_ttl_seconds=0).version == 1
        with pytest.raises(Exception) as raised:
            reader.update_prompt(name="verifier/judge", version=2, new_labels=["production"])
        assert getattr(raised.value, "status_code", None) == 403
    finally:
        reader.shutdown()


def test_the_prompt_list_pages_with_data_and_meta(langfuse: Langfuse, judge: None) -> None:
    listed = langfuse.api.prompts.list(limit=1)
    assert listed.meta.total_items == 2
    assert listed.meta.total_pages == 2
    assert listed.data[0].name == "verifier/judge"
    assert listed.data[0].versions == [1, 2]


def test_a_version_with_no_langfuse_form_is_a_409_naming_the_native_api(
    live_server: Any, langfuse: Langfuse, judge: None
) -> None:
    # A literal '{{' in a format template would read as a placeholder in {{ }} syntax.
    prompt = prompt_create(actor=None, component="verifier", agent="literal")
    prompt_version_create(
        actor=None, prompt=prompt, labels=["production"], syntax="format",
        user_templates={"default": "Write {{{{name}}}} literally, then {name}."},
    )  # fmt: skip
    with pytest.raises(Exception) as raised:
        langfuse.get_prompt("verifier/literal", cache_ttl_seconds=0, max_retries=0)
    assert getattr(raised.value, "status_code", None) == 409
    assert "/api/v1/prompts/" in str(getattr(raised.value, "body", ""))
