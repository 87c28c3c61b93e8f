"""Prompts, their immutable versions, and labels (set, moved, removed; every change audited)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from assembler.format_lint import FormatFinding, lint_prompt
from assembler.storable import StoredJsonError, check_stored_json
from assembler.templates import SYNTAXES, used_variables
from promptadmin.core.actors import (
    Actor,
    attribution,
    record_actor,
)
from promptadmin.core.errors import InUseError
from promptadmin.core.roles import Role, require
from promptadmin.core.text import normalize_newlines, normalize_values
from promptadmin.prompts.errors import PromptLookupError
from promptadmin.prompts.models import (
    LABEL_COLUMN,
    LABEL_HELP,
    LABEL_RE,
    LATEST,
    MAX_TEMPLATE_TEXT,
    MAX_USER_TEMPLATES,
    MAX_VARIABLES,
    NAME_HELP,
    NAME_RE,
    RESERVED_TEMPLATE_NAMES,
    TEMPLATE_NAME_RE,
    Label,
    LabelAction,
    LabelEvent,
    Prompt,
    PromptVersion,
)
from promptadmin.prompts.services import CHANGING_PROMPTS, prompts_changed

Errors = dict[str, list[str]]

#: The config key under which the Langfuse API serves a version's user templates.
CONFIG_RESERVED = "user_templates"


def _text_problem(value: object, *, max_length: int = MAX_TEMPLATE_TEXT) -> str | None:
    if not isinstance(value, str):
        return "Expected text."
    if len(value) > max_length:
        return f"At most {max_length} characters."
    try:
        check_stored_json(value)
    except StoredJsonError as error:
        return error.message
    return None


def content_hash(
    *,
    syntax: str,
    system: str,
    user_templates: Mapping[str, str],
    variables: Sequence[str],
    task: str,
    config: Any,
) -> str:
    """SHA-256 of the version's content in a canonical JSON form (keys sorted)."""
    canonical = json.dumps(
        {
            "syntax": syntax,
            "system": system,
            "user_templates": dict(user_templates),
            "variables": list(variables),
            "task": task,
            "config": config,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@transaction.atomic
def prompt_create(
    *,
    actor: Actor,
    component: str,
    agent: str,
    task_type: str | None = None,
    description: str = "",
    expected_system: str | None = None,
) -> Prompt:
    """Create the prompt addressed by (component, agent, task type or None: the default)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    description = normalize_newlines(description)
    expected_system = normalize_newlines(expected_system)
    errors: Errors = {}
    for field, value in (("component", component), ("agent", agent)):
        if not isinstance(value, str) or not NAME_RE.fullmatch(value):
            errors[field] = [NAME_HELP]
    if task_type is not None and (
        not isinstance(task_type, str) or not NAME_RE.fullmatch(task_type)
    ):
        errors["task_type"] = [f"{NAME_HELP} Use null for the default prompt."]
    for field, text in (("description", description), ("expected_system", expected_system)):
        problem = None if text is None else _text_problem(text)
        if problem:
            errors[field] = [problem]
    if errors:
        raise ValidationError(errors)
    if Prompt.objects.filter(component=component, agent=agent, task_type=task_type or "").exists():
        raise ValidationError(
            {"task_type": [f"A prompt {_address(component, agent, task_type)} already exists."]}
        )
    prompt = Prompt(
        component=component,
        agent=agent,
        task_type=task_type or "",
        description=description,
        expected_system=expected_system,
    )
    record_actor(prompt, actor)
    prompt.save()
    prompts_changed()
    return prompt


def _address(component: str, agent: str, task_type: str | None) -> str:
    return f"({component}, {agent}, {task_type or 'default'})"


def _user_template_problems(user_templates: Any) -> list[str]:
    if not isinstance(user_templates, dict):
        return ["Expected an object of template name to template text."]
    problems = []
    if len(user_templates) > MAX_USER_TEMPLATES:
        problems.append(f"At most {MAX_USER_TEMPLATES} user templates.")
    for name, text in user_templates.items():
        if not isinstance(name, str) or not TEMPLATE_NAME_RE.fullmatch(name):
            problems.append(
                f"{name!r}: a template name is a letter or '_', then letters, digits or "
                "'_' (at most 64)."
            )
        elif name in RESERVED_TEMPLATE_NAMES:
            problems.append(f"{name!r} is the system template's name; name it otherwise.")
        problem = _text_problem(text)
        if problem:
            problems.append(f"{name!r}: {problem}")
    return problems


def _variables_problem(variables: Any) -> str | None:
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        return "Expected a list of variable names."
    if len(variables) > MAX_VARIABLES:
        return f"At most {MAX_VARIABLES} variables."
    if len(set(variables)) != len(variables):
        return "Each variable is declared once."
    return None


def _config_errors(config: Any) -> Errors:
    if not isinstance(config, dict):
        return {"config": ["Expected a JSON object."]}
    errors: Errors = {}
    try:
        check_stored_json(config)
    except StoredJsonError as error:
        errors["config"] = [f"{error.path}: {error.message}" if error.path else error.message]
    if CONFIG_RESERVED in config:
        errors[f"config.{CONFIG_RESERVED}"] = [
            f"'{CONFIG_RESERVED}' is not a config key: the Langfuse API serves the "
            "version's user templates under it, which would hide this value. Put "
            "templates in user_templates, settings under another key."
        ]
    return errors


def _lint_errors(findings: Sequence[FormatFinding]) -> Errors:
    """Error-level findings as field errors: a version with one is refused."""
    errors: Errors = {}
    for finding in findings:
        if finding.level != "error":
            continue
        if finding.code in ("undeclared_variable", "invalid_variable_name"):
            field = "variables"
        else:
            field = "system" if finding.template == "system" else "user_templates"
        where = ""
        if finding.position is not None:
            where = f" (line {finding.position.line}, column {finding.position.column})"
        prefix = f"{finding.template!r}: " if field == "user_templates" else ""
        errors.setdefault(field, []).append(f"{prefix}{finding.message}{where}")
    return errors


def check_version_input(
    *,
    syntax: Any,
    system: Any,
    user_templates: Any,
    variables: Any,
    task: Any,
    config: Any,
    commit_message: Any = "",
    expected_system: str | None = None,
) -> tuple[Errors, list[FormatFinding]]:
    """Field errors of a version's content, and its lint findings once it parses.

    Error-level lint findings (syntax errors, undeclared or invalid variable names, a
    system text that is not the expected one) are field errors: such a version is refused.
    """
    errors: Errors = {}
    if syntax not in SYNTAXES:
        errors["syntax"] = [f"Unknown syntax {syntax!r}; use one of: {', '.join(SYNTAXES)}."]
    for field, value in (("system", system), ("commit_message", commit_message)):
        problem = _text_problem(value)
        if problem:
            errors[field] = [problem]
    template_problems = _user_template_problems(user_templates)
    if template_problems:
        errors["user_templates"] = template_problems
    variables_problem = _variables_problem(variables)
    if variables_problem:
        errors["variables"] = [variables_problem]
    if not isinstance(task, str) or (task and not NAME_RE.fullmatch(task)):
        errors["task"] = [f"{NAME_HELP} Or empty for no adapter lookup."]
    errors.update(_config_errors(config))
    if errors:
        return errors, []
    findings = lint_prompt(
        syntax=syntax,
        system=system,
        user_templates=user_templates,
        variables=variables,
        expected_system=expected_system,
    )
    return _lint_errors(findings), findings


def lock_prompt(prompt: Prompt) -> Prompt:
    """Lock the prompt's row for the rest of the transaction: version numbers and label
    changes of one prompt are serialized, so none is lost."""
    return Prompt.objects.select_for_update().get(pk=prompt.pk)


@transaction.atomic
def prompt_version_create(
    *,
    actor: Actor,
    prompt: Prompt,
    syntax: str = "curly",
    system: str = "",
    user_templates: Mapping[str, str],
    variables: Sequence[str] | None = None,
    task: str = "",
    config: Mapping[str, Any] | None = None,
    commit_message: str = "",
    labels: Sequence[str] = (),
) -> PromptVersion:
    """Create the next version of ``prompt`` and set ``labels`` on it at once.

    ``variables`` None declares exactly the variables the templates use. A protected label
    among ``labels`` needs an admin (see :func:`_require_protected`).
    """
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    if isinstance(labels, list | tuple):
        _require_protected(actor, labels, "Setting")
    prompt = lock_prompt(prompt)
    templates = dict(user_templates) if isinstance(user_templates, Mapping) else user_templates
    templates = normalize_values(templates)
    system = normalize_newlines(system)
    commit_message = normalize_newlines(commit_message)
    if variables is None and isinstance(templates, dict):
        variables = _used_variables(syntax, system, templates)
    config_value = (
        {} if config is None else (dict(config) if isinstance(config, Mapping) else config)
    )
    errors, _findings = check_version_input(
        syntax=syntax,
        system=system,
        user_templates=templates,
        variables=list(variables) if isinstance(variables, list | tuple) else variables,
        task=task,
        config=config_value,
        commit_message=commit_message,
        expected_system=prompt.expected_system,
    )
    label_errors = _label_name_problems(labels)
    if label_errors:
        errors["labels"] = label_errors
    if errors:
        raise ValidationError(errors)
    ordered = {name: templates[name] for name in sorted(templates)}
    declared = list(variables or [])
    # Never a number given before, even one whose version was deleted since: a client
    # pinned to a number must never get other content under it. The prompt's row is
    # locked, so two creations cannot take the same number.
    number = prompt.last_version_number + 1
    Prompt.objects.filter(pk=prompt.pk).update(last_version_number=number)
    prompt.last_version_number = number
    user, author_label = attribution(actor, max_length=LABEL_COLUMN)
    content = {
        "syntax": syntax,
        "system": system,
        "user_templates": ordered,
        "variables": declared,
        "task": task,
        "config": config_value,
    }
    version = PromptVersion(
        prompt=prompt,
        number=number,
        **content,
        commit_message=commit_message,
        author=user,
        author_label=author_label,
        content_hash=content_hash(**content),
    )
    version.save()
    for name in dict.fromkeys(labels):
        _set_label(actor, prompt, name, version)
    prompts_changed()
    return version


def _used_variables(syntax: str, system: Any, templates: Mapping[str, Any]) -> list[str] | None:
    """The variables the templates use (None when the syntax is unknown: the version is
    refused anyway); texts that are not text are left to the checks that refuse them."""
    if syntax not in SYNTAXES:
        return None
    texts = {name: text for name, text in templates.items() if isinstance(text, str)}
    return list(used_variables(syntax, system if isinstance(system, str) else "", texts))


def _label_name_problems(labels: Any) -> list[str]:
    if not isinstance(labels, list | tuple):
        return ["Expected a list of label names."]
    problems = []
    for name in labels:
        problem = label_name_problem(name)
        if problem:
            problems.append(problem)
    return problems


def protected_labels() -> frozenset[str]:
    """The labels only admins and admin keys may set, move or remove
    (``PROTECTED_PROMPT_LABELS``, default ``production``): what a game fetches by default."""
    return frozenset(settings.PROTECTED_PROMPT_LABELS)


def _require_protected(actor: Actor, names: Any, doing: str) -> None:
    """Refuse anyone but admins, admin keys and scripts a change to a protected label among
    ``names`` (``doing`` the change: ``"Setting"``, ``"Moving"``, ``"Removing"``)."""
    protected = sorted(protected_labels().intersection(n for n in names if isinstance(n, str)))
    if protected:
        listed = ", ".join(f"'{name}'" for name in protected)
        which = "label" if len(protected) == 1 else "labels"
        require(actor, role=Role.ADMIN, action=f"{doing} the protected {which} {listed}")


def label_name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not LABEL_RE.fullmatch(name):
        return f"{name!r} is not a label name: {LABEL_HELP}"
    if name == LATEST:
        return "'latest' always names the newest version; it is never set by hand."
    return None


def _set_label(actor: Actor, prompt: Prompt, name: str, version: PromptVersion) -> bool:
    """Point ``name`` at ``version`` (prompt already locked); False when it already did."""
    label = Label.objects.filter(prompt=prompt, name=name).first()
    if label is not None and label.version_id == version.pk:
        return False
    user, actor_label = attribution(actor, max_length=LABEL_COLUMN)
    if label is None:
        Label.objects.create(prompt=prompt, name=name, version=version)
        action, old = LabelAction.SET, None
    else:
        old = label.version.number
        label.version = version
        label.save(update_fields=["version", "updated_at"])
        action = LabelAction.MOVED
    LabelEvent.objects.create(
        prompt=prompt,
        label=name,
        action=action,
        from_version=old,
        to_version=version.number,
        user=user,
        actor_label=actor_label,
    )
    return True


def _version(prompt: Prompt, number: Any) -> PromptVersion:
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValidationError({"version": ["Expected a version number (1 or more)."]})
    version = prompt.versions.filter(number=number).first()
    if version is None:
        raise ValidationError({"version": [f"{prompt.langfuse_name} has no version {number}."]})
    return version


@transaction.atomic
def prompt_label_set(*, actor: Actor, prompt: Prompt, name: str, version: int) -> Label:
    """Set ``name`` on version number ``version``, or move it there; recorded as an event.
    Setting a label where it already points changes nothing and records nothing. A
    protected label needs an admin (see :func:`_require_protected`)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    problem = label_name_problem(name)
    if problem:
        raise ValidationError({"label": [problem]})
    _require_protected(actor, [name], "Moving")
    prompt = lock_prompt(prompt)
    target = _version(prompt, version)
    if _set_label(actor, prompt, name, target):
        prompts_changed()
    return Label.objects.select_related("version").get(prompt=prompt, name=name)


#: The same operation under the name the studio and the API use for an existing label.
prompt_label_move = prompt_label_set


@transaction.atomic
def prompt_label_remove(*, actor: Actor, prompt: Prompt, name: str) -> None:
    """Remove a label; recorded as an event. ``latest`` cannot be removed; a protected
    label needs an admin (see :func:`_require_protected`)."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    if name == LATEST:
        raise ValidationError({"label": ["'latest' always names the newest version."]})
    _require_protected(actor, [name], "Removing")
    prompt = lock_prompt(prompt)
    label = Label.objects.select_related("version").filter(prompt=prompt, name=name).first()
    if label is None:
        raise PromptLookupError(f"{prompt.langfuse_name} has no label '{name}'.")
    user, actor_label = attribution(actor, max_length=LABEL_COLUMN)
    LabelEvent.objects.create(
        prompt=prompt,
        label=name,
        action=LabelAction.REMOVED,
        from_version=label.version.number,
        to_version=None,
        user=user,
        actor_label=actor_label,
    )
    label.delete()
    prompts_changed()


@transaction.atomic
def prompt_version_delete(*, actor: Actor, version: PromptVersion) -> None:
    """Delete a version no label points at, ``latest`` included: the newest version
    stays, or ``latest`` would move back to an older one without any label event."""
    require(actor, role=Role.AUTHOR, action=CHANGING_PROMPTS)
    prompt = lock_prompt(version.prompt)
    names = sorted(version.labels.values_list("name", flat=True))
    problems = []
    if names:
        problems.append(f"has the labels {', '.join(names)}; move or remove them first")
    if version.number == prompt.versions.aggregate(newest=Max("number"))["newest"]:
        problems.append("is the newest version, which 'latest' always names, so it stays")
    if problems:
        raise InUseError(
            f"Version {version.number} of {prompt.langfuse_name} {' and '.join(problems)}."
        )
    version.delete()
    prompts_changed()
