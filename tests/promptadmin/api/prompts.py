"""Registered prompts the prompt API tests share: verifier/judge and how to make more."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from promptadmin.prompts.models import Prompt
from promptadmin.prompts.services.prompts import prompt_create, prompt_version_create

JUDGE = "/api/v1/prompts/verifier/judge/"


def make_prompt(task_type: str | None = None, **fields: Any) -> Prompt:
    return prompt_create(
        actor=None, component="verifier", agent="judge", task_type=task_type, **fields
    )


def make_version(prompt: Prompt, labels: tuple[str, ...] = (), **fields: Any) -> Any:
    fields.setdefault("system", "You grade {{ subject }}.")
    fields.setdefault("user_templates", {"default": "Question: {{ question }}\n\nAnswer:"})
    return prompt_version_create(actor=None, prompt=prompt, labels=labels, **fields)


@pytest.fixture
def judge() -> Prompt:
    """verifier/judge: default prompt with v1 (production) and v2 (staging), plus a rubric
    task type with v1 (production)."""
    default = make_prompt()
    make_version(default, ("production",), commit_message="first")
    make_version(default, ("staging",), system="You strictly grade {{ subject }}.")
    rubric = make_prompt("rubric")
    make_version(rubric, ("production",), system="You grade {{ subject }} by the rubric.")
    return default


def basic_client(read_key: str) -> APIClient:
    basic = base64.b64encode(f"{read_key.partition('.')[0]}:{read_key}".encode()).decode()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {basic}")
    return client


LANGFUSE_JUDGE = "/api/public/v2/prompts/verifier%2Fjudge"


def post_raw(client: APIClient, url: str, body: Any) -> Any:
    """POST ``body`` as JSON that Python writes but strict encoders refuse (NaN, lone
    surrogates), as a hostile client would send it."""
    return client.post(url, json.dumps(body), content_type="application/json")
