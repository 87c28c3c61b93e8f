from __future__ import annotations

import datetime
import decimal
import uuid

import pytest
from django.utils.translation import gettext_lazy
from rest_framework import renderers
from rest_framework.exceptions import ErrorDetail

from promptadmin.api.renderers import JSONRenderer

DATA = {
    "prompt": '=== CORE_BEGIN ===\nÆther, naïve — 龍 "quoted" \\ \t tab\n=== CORE_END ===',
    "meta": {"tokens": 12, "over_budget": False, "lints": [], "ratio": 0.25, "none": None},
    "when": datetime.datetime(2026, 11, 21, 9, 30, tzinfo=datetime.UTC),
    "day": datetime.date(2026, 11, 21),
    "price": decimal.Decimal("1.50"),
    "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "lazy": gettext_lazy("Not found."),
    "errors": [ErrorDetail("Unknown field.", code="unknown_field")],
    "nested": [[1, 2], {"a": [True, None]}],
}


def test_output_is_byte_for_byte_what_drf_renders() -> None:
    assert JSONRenderer().render(DATA) == renderers.JSONRenderer().render(DATA)


def test_nothing_renders_as_an_empty_body() -> None:
    assert JSONRenderer().render(None) == b""


def test_an_unknown_type_is_an_error_not_a_silent_null() -> None:
    with pytest.raises(TypeError):
        JSONRenderer().render({"value": object()})


def test_indentation_when_the_client_asks_for_it() -> None:
    rendered = JSONRenderer().render({"a": [1]}, "application/json; indent=2")
    assert rendered == b'{\n  "a": [\n    1\n  ]\n}'
