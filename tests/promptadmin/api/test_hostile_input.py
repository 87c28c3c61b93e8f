"""Hostile bodies and values: every one is a 400 naming the field, never a 500, and no
stored row can break reading for other clients."""

from __future__ import annotations

import json
from dataclasses import replace
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from promptadmin.api import content as content_views
from promptadmin.api.serializers.releases import ReleaseInputSerializer
from promptadmin.content.models import Segment
from promptadmin.content.services import segments as segment_services
from promptadmin.conversations.models import Message
from promptadmin.releases.models import Release
from tests.factories import make_segment
from tests.promptadmin.api.conftest import codes, errors

pytestmark = pytest.mark.django_db


def deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def test_metadata_beyond_64_bits_is_refused_and_the_list_keeps_working(writer) -> None:  # type: ignore[no-untyped-def]
    make_segment(content="Narrate.")
    body = '{"scope": "core", "content": "x", "metadata": {"n": 18446744073709551616}}'
    response = writer.post("/api/v1/segments/", body, content_type="application/json")
    assert response.status_code == 400
    assert "At n: integers must fit in 64 bits" in errors(response)["metadata"]
    assert Segment.objects.count() == 1
    assert writer.get("/api/v1/segments/?page_size=200").status_code == 200


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        (deep(300), "nest 32 deep"),
        ('{"tags": [1, -9223372036854775809]}', "At tags.1: integers must fit"),
        ('{"a": "x\\u0000"}', "NUL"),
        ('{"a": "\\udfff"}', "surrogates"),
    ],
)
def test_metadata_that_cannot_be_stored_and_read_back_is_a_400(  # type: ignore[no-untyped-def]
    writer, metadata: str, words: str
) -> None:
    body = f'{{"scope": "core", "content": "x", "metadata": {metadata}}}'
    response = writer.post("/api/v1/segments/", body, content_type="application/json")
    assert response.status_code == 400
    assert words in errors(response)["metadata"]
    assert not Segment.objects.exists()


def test_a_patch_cannot_plant_metadata_either(writer) -> None:  # type: ignore[no-untyped-def]
    segment = make_segment(content="Narrate.")
    response = writer.patch(
        f"/api/v1/segments/{segment.pk}/",
        json.dumps({"metadata": {"n": 2**64}}),
        content_type="application/json",
        HTTP_IF_MATCH=f'"segment-{segment.pk}-r1"',
    )
    assert response.status_code == 400 and "64 bits" in errors(response)["metadata"]
    segment.refresh_from_db()
    assert segment.metadata == {} and segment.revision == 1


@pytest.mark.parametrize(
    "body",
    [
        deep(995),
        deep(5000),
        "[" * 100_000 + "]" * 100_000,
        '{"entry": "drowned-bell", "token_budget": 1e400}',
        '{"entry": "drowned-bell", "token_budget": NaN}',
        '{"entry": "drowned-bell", "token_budget": Infinity}',
        '{"entry": "drowned-bell", "token_budget": -Infinity}',
        '{"entry": "drowned-bell", "token_budget": 1' + "0" * 5000 + "}",
    ],
    ids=["deep-995", "deep-5000", "deep-array", "1e400", "NaN", "Infinity", "-Infinity", "digits"],
)
@pytest.mark.parametrize("path", ["/api/v1/assemble", "/api/v1/preview", "/api/v1/segments/"])
def test_bodies_the_parser_cannot_take_are_a_400_parse_error(  # type: ignore[no-untyped-def]
    writer, path: str, body: str
) -> None:
    response = writer.post(path, body, content_type="application/json")
    assert response.status_code == 400
    assert codes(response) == ["parse_error"]
    assert not Segment.objects.exists()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ('{"hp": 18446744073709551616}', "At hp: integers must fit in 64 bits"),
        (deep(200), "nest 32 deep"),
        ('{"a\\u0000": 1}', "NUL"),
    ],
)
def test_state_objects_are_checked_like_stored_json(demo, reader, value: str, words: str) -> None:  # type: ignore[no-untyped-def]
    body = f'{{"entry": "drowned-bell", "state": {{"game_state": {value}}}}}'
    for path in ("/api/v1/assemble", "/api/v1/preview"):
        response = reader.post(path, body, content_type="application/json")
        assert response.status_code == 400
        assert words in errors(response)["state.game_state"]


def test_a_stored_row_that_cannot_be_rendered_never_fails_a_read(writer) -> None:  # type: ignore[no-untyped-def]
    # Rows written before the check existed (or behind its back) must not turn every
    # list, nor the row itself, into an error: the value goes out as text, marked.
    segment = make_segment(content="Narrate.")
    Segment.objects.filter(pk=segment.pk).update(metadata={"n": 2**64})
    page = writer.get("/api/v1/segments/")
    detail = writer.get(f"/api/v1/segments/{segment.pk}/")
    assert page.status_code == detail.status_code == 200
    for row in (page.json()["results"][0], detail.json()):
        assert row["metadata"] == {"n": str(2**64)}
        assert row["error"]["code"] == "unencodable_row"


def test_a_write_whose_answer_cannot_be_rendered_is_not_committed(  # type: ignore[no-untyped-def]
    writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    create = segment_services.segment_create

    def create_unrenderable(**kwargs: Any) -> Segment:
        segment = create(**kwargs)
        segment.metadata = {"n": 2**64}  # what the renderer cannot write
        return segment

    writes = replace(content_views.SegmentViewSet.writes, create=create_unrenderable)
    monkeypatch.setattr(content_views.SegmentViewSet, "writes", writes)
    response = writer.post("/api/v1/segments/", {"scope": "core", "content": "x"}, format="json")
    assert response.status_code == 500
    assert response.json()["type"] == "server_error"
    # The client saw an error: a retry must not make a duplicate.
    assert not Segment.objects.exists()


# One valid body per endpoint, and where the key goes ("K"); then the attr of the error:
# None for a body's own key (a parse error), else the object holding the key.
ASSEMBLY = {"entry": "drowned-bell"}
MESSAGE = {"role": "user", "content": "x"}
RENDER = {"variables": {"question": "a", "response": "b"}}
SURROGATE_KEY_PLACES = [
    ("/api/v1/assemble", {**ASSEMBLY, "K": 1}, None),
    ("/api/v1/assemble", {**ASSEMBLY, "npcs": [{"npc": "marta", "K": 1}]}, "npcs.0"),
    ("/api/v1/assemble", {**ASSEMBLY, "state": {"K": "x"}}, "state"),
    ("/api/v1/assemble", {**ASSEMBLY, "policy": {"floors": {"K": 0.1}}}, "policy.floors"),
    ("/api/v1/preview", {**ASSEMBLY, "K": 1}, None),
    ("/api/v1/preview", {**ASSEMBLY, "state": {"player": {"K": 1}}}, "state.player"),
    ("/api/v1/segments/", {"scope": "core", "content": "x", "K": 1}, None),
    (
        "/api/v1/segments/",
        {"scope": "core", "content": "x", "metadata": {"a": [{"K": 1}]}},
        "metadata.a.0",
    ),
    ("/api/v1/conversations/c/messages", {"messages": [MESSAGE], "K": 1}, None),
    ("/api/v1/conversations/c/messages", {"messages": [{**MESSAGE, "K": 1}]}, "messages.0"),
    ("/api/v1/prompts/verifier/parser/render", {**RENDER, "K": 1}, None),
    (
        "/api/v1/prompts/verifier/parser/render",
        {"variables": {"question": "a", "response": "b", "K": "c"}},
        "variables",
    ),
    (
        "/api/v1/prompts/verifier/parser/render",
        {**RENDER, "instruction_context": {"K": "c"}},
        "instruction_context",
    ),
    ("/api/v1/releases/", {"name": "r-one", "K": 1}, None),
]


@pytest.mark.parametrize(("path", "body", "field"), SURROGATE_KEY_PLACES)
@pytest.mark.parametrize("key", ["\\ud800x", "x\\udfff", "\\uDBFF"])
def test_a_key_holding_a_lone_surrogate_is_a_400_never_echoed_raw(  # type: ignore[no-untyped-def]
    demo, writer, path: str, body: dict[str, Any], field: str | None, key: str
) -> None:
    # JSON can carry "\ud800" in a key, UTF-8 cannot: sent raw, as a hostile client would.
    call_command("seed_prompts", stdout=StringIO())
    rows = [model.objects.count() for model in (Segment, Message, Release)]
    raw = json.dumps(body).replace('"K"', f'"{key}"')
    response = writer.post(path, raw, content_type="application/json")
    assert response.status_code == 400, response.content
    if field is None:  # the body's own key: the body cannot be taken
        assert codes(response) == ["parse_error"]
        assert "lone surrogate" in errors(response)[None]
    else:  # inside a field: the error names the object holding the key
        assert codes(response) == ["surrogate_characters_not_allowed"]
        assert "key: text may not contain lone surrogates" in errors(response)[field]
    assert key.lower() in response.content.decode().lower().replace("\\\\", "\\")
    assert [model.objects.count() for model in (Segment, Message, Release)] == rows


def test_an_unknown_field_is_named_in_a_form_that_can_be_sent() -> None:
    serializer = ReleaseInputSerializer(data={"name": "r-one", "\ud800x": 1})
    assert not serializer.is_valid()
    assert list(serializer.errors) == ["\\ud800x"]
    assert serializer.errors["\\ud800x"][0].startswith("Unknown field; the fields are: name,")
