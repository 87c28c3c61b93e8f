"""Serializers of the registered-prompt endpoints (field names are part of the contract).

They check JSON types; the prompt services check everything else (names, templates,
lint errors, stored JSON) and name the field that was wrong.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from assembler.request import DEFAULT_TEMPLATE, INT32, MAX_NAME, MAX_TEXT, RENDER_FORMATS
from assembler.storable import StoredJsonError, check_stored_json
from assembler.templates import SYNTAXES
from promptadmin.api import fields as f
from promptadmin.api.serializers.common import StrictSerializer
from promptadmin.prompts.models import (
    LABEL_HELP,
    LABEL_RE,
    NAME_HELP,
    NAME_RE,
    Label,
    LabelEvent,
    Prompt,
)

NAME = {"max_length": 64}


def stored_json(value: Any) -> None:
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        raise ValidationError(
            f"{error.path}: {error.message}" if error.path else error.message
        ) from None


class PromptCreateSerializer(StrictSerializer):
    component = f.Text(**NAME)
    agent = f.Text(**NAME)
    task_type = f.Text(**NAME, allow_null=True, allow_blank=True, default=None)
    description = f.Text(allow_blank=True, default="", max_length=MAX_TEXT)
    expected_system = f.Text(allow_null=True, allow_blank=True, default=None, max_length=MAX_TEXT)


class LabelsField(serializers.ListField):
    child = f.Text(max_length=64)


class VersionCreateSerializer(StrictSerializer):
    task_type = f.Text(**NAME, allow_null=True, allow_blank=True, default=None)
    syntax = serializers.ChoiceField(choices=list(SYNTAXES), default="curly")
    system = f.Text(allow_blank=True, default="", trim_whitespace=False, max_length=MAX_TEXT)
    user_templates = serializers.DictField(
        child=f.Text(allow_blank=True, trim_whitespace=False, max_length=MAX_TEXT),
        help_text="Template name -> template text; served sorted by name.",
    )
    variables = serializers.ListField(
        child=f.Text(max_length=64),
        required=False,
        allow_null=True,
        default=None,
        help_text="Declared variables; omitted or null: exactly those the templates use.",
    )
    task = f.Text(allow_blank=True, default="", max_length=64)
    config = serializers.DictField(default=dict, validators=[stored_json])
    commit_message = f.Text(allow_blank=True, default="", max_length=10_000)
    labels = serializers.ListField(child=f.Text(max_length=64), default=list, max_length=50)


class LabelSetSerializer(StrictSerializer):
    task_type = f.Text(**NAME, allow_null=True, allow_blank=True, default=None)
    version = f.Integer(min_value=1, max_value=INT32)


# For the OpenAPI schema only: requests are read by assembler.request.parse_render_params,
# whose limits and choices these are.
class RenderSerializer(StrictSerializer):
    task_type = f.Text(max_length=MAX_NAME, allow_null=True, allow_blank=True, default=None)
    label = f.Text(max_length=MAX_NAME, required=False)
    version = f.Integer(min_value=1, max_value=INT32, required=False)
    template = f.Text(max_length=MAX_NAME, default=DEFAULT_TEMPLATE)
    variables = serializers.DictField(default=dict)
    interface = f.Text(max_length=MAX_NAME, required=False, allow_null=True, default=None)
    user_instructions = f.Text(
        allow_blank=True,
        allow_null=True,
        default=None,
        trim_whitespace=False,
        max_length=MAX_TEXT,
    )
    instruction_context = serializers.DictField(default=dict)
    format = serializers.ChoiceField(choices=list(RENDER_FORMATS), default="messages")


#: What names a stored version to lint, and what lints posted content instead.
LINT_REFERENCE = ("component", "agent", "task_type", "label", "version")
LINT_CONTENT = ("syntax", "system", "user_templates", "variables", "expected_system")


class LintSerializer(StrictSerializer):
    """Either posted content, or a reference to a stored version (linted against its
    prompt's ``expected_system``), never both."""

    syntax = serializers.ChoiceField(choices=list(SYNTAXES), default="curly")
    system = f.Text(allow_blank=True, default="", trim_whitespace=False, max_length=MAX_TEXT)
    user_templates = serializers.DictField(
        child=f.Text(allow_blank=True, trim_whitespace=False, max_length=MAX_TEXT),
        default=dict,
    )
    variables = serializers.ListField(
        child=f.Text(max_length=64), required=False, allow_null=True, default=None
    )
    expected_system = f.Text(
        allow_blank=True, allow_null=True, default=None, trim_whitespace=False, max_length=MAX_TEXT
    )
    component = f.Text(
        **NAME, required=False, help_text="With agent: lint a stored version instead."
    )
    agent = f.Text(**NAME, required=False)
    task_type = f.Text(
        **NAME,
        allow_null=True,
        allow_blank=True,
        required=False,
        help_text="Falls back to the default prompt of (component, agent), as a fetch does.",
    )
    label = f.Text(max_length=64, required=False, help_text="Default: production.")
    version = f.Integer(min_value=1, max_value=INT32, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = set(self.initial_data) if isinstance(self.initial_data, dict) else set()
        if not given & set(LINT_REFERENCE):
            return attrs
        errors: dict[str, list[str]] = {}
        for field in sorted(given & set(LINT_CONTENT)):
            errors[field] = [
                "Lint posted content or a stored version (component, agent, ...), not both."
            ]
        for field in ("component", "agent"):
            if field not in attrs:
                errors[field] = ["Name the stored version's component and agent."]
            elif not NAME_RE.fullmatch(attrs[field]):
                errors[field] = [NAME_HELP]
        task_type = attrs.get("task_type")
        if task_type and not NAME_RE.fullmatch(task_type):
            errors["task_type"] = [NAME_HELP]
        if "label" in attrs and not LABEL_RE.fullmatch(attrs["label"]):
            errors["label"] = [LABEL_HELP]
        if "label" in attrs and "version" in attrs:
            errors["version"] = ["Give a label or a version, not both."]
        if errors:
            raise ValidationError(errors)
        return attrs


class InterfaceSerializer(StrictSerializer):
    name = f.Text(**NAME)
    supports_system_prompt = f.Flag(default=True)
    supports_structured_output = f.Flag(default=False)


class InterfaceOutputSerializer(serializers.Serializer):
    name = f.Text()
    supports_system_prompt = f.Flag()
    supports_structured_output = f.Flag()
    updated_at = serializers.DateTimeField()


class AdapterInstructionSerializer(StrictSerializer):
    interface = f.Text(**NAME)
    task = f.Text(**NAME)
    order = f.Integer(min_value=-INT32, max_value=INT32, default=0)
    system_addition = f.Text(allow_blank=True, default="", trim_whitespace=False, max_length=50_000)
    user_addition = f.Text(allow_blank=True, default="", trim_whitespace=False, max_length=50_000)
    active = f.Flag(default=True)


class AdapterInstructionOutputSerializer(serializers.Serializer):
    id = f.Integer()
    interface = f.Text(source="interface.name")
    task = f.Text()
    order = f.Integer()
    system_addition = f.Text()
    user_addition = f.Text()
    active = f.Flag()
    updated_at = serializers.DateTimeField()


# Outputs: each builds its answer with ``of`` (plain data the renderer writes as is).


class PromptSummarySerializer(serializers.Serializer):
    component = f.Text()
    agent = f.Text()
    task_type = f.Text(allow_null=True)
    description = f.Text()
    expected_system = f.Text(allow_null=True)
    latest_version = f.Integer(allow_null=True)
    labels = serializers.DictField(child=f.Integer(), help_text="Label -> version number.")

    @staticmethod
    def of(prompt: Prompt) -> dict[str, Any]:
        """``prompt`` as listed (prompts_with_labels), or just made (no version, no label)."""
        listed = hasattr(prompt, "latest_version")
        labels = prompt.labels.all() if listed else ()
        return {
            "component": prompt.component,
            "agent": prompt.agent,
            "task_type": prompt.task_type_or_none,
            "description": prompt.description,
            "expected_system": prompt.expected_system,
            "latest_version": prompt.latest_version if listed else None,  # type: ignore[attr-defined]
            "labels": {label.name: label.version.number for label in labels},
        }


class FetchedPromptSerializer(serializers.Serializer):
    component = f.Text()
    agent = f.Text()
    task_type_used = f.Text(allow_null=True)
    version = f.Integer()
    labels = serializers.ListField(child=f.Text())
    syntax = f.Text()
    system = f.Text()
    user_templates = serializers.DictField(child=f.Text())
    variables = serializers.ListField(child=f.Text())
    task = f.Text()
    config = serializers.DictField()
    content_hash = f.Text()
    commit_message = f.Text()
    created_at = serializers.DateTimeField()


class FindingSerializer(serializers.Serializer):
    code = f.Text()
    level = f.Text()
    message = f.Text()
    template = f.Text(allow_null=True)
    position = serializers.DictField(child=f.Integer(), allow_null=True)


class VersionCreatedSerializer(FetchedPromptSerializer):
    findings = FindingSerializer(many=True)


class LabelSerializer(serializers.Serializer):
    label = f.Text()
    version = f.Integer()

    @staticmethod
    def of(label: Label) -> dict[str, Any]:
        return {"label": label.name, "version": label.version.number}


class LabelEventSerializer(serializers.Serializer):
    label = f.Text()
    action = f.Text()
    from_version = f.Integer(allow_null=True)
    to_version = f.Integer(allow_null=True)
    actor = f.Text()
    created_at = serializers.DateTimeField()

    @staticmethod
    def of(event: LabelEvent) -> dict[str, Any]:
        return {
            "label": event.label,
            "action": event.action,
            "from_version": event.from_version,
            "to_version": event.to_version,
            "actor": event.user.get_username() if event.user else (event.actor_label or "a script"),
            "created_at": event.created_at,
        }


class MessageSerializer(serializers.Serializer):
    role = f.Text()
    content = f.Text()
    tokens = f.Integer()


class RenderedSerializer(serializers.Serializer):
    version = f.Integer()
    task_type_used = f.Text(allow_null=True)
    messages = MessageSerializer(many=True, required=False)
    system = f.Text(required=False)
    user = f.Text(required=False)
    tokens = serializers.DictField(child=f.Integer(), required=False)
    unused_variables = serializers.ListField(child=f.Text())
    findings = FindingSerializer(
        many=True,
        help_text="Warnings about this render (code empty_value): a template or adapter "
        "instruction that rendered a value empty where its text expects one.",
    )


class LintResultSerializer(serializers.Serializer):
    findings = FindingSerializer(many=True)
    version = f.Integer(required=False, help_text="The stored version linted, when one was named.")
    task_type_used = f.Text(allow_null=True, required=False)
