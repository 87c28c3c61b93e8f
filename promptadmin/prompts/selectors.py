"""Reads of registered prompts: fetch by label or version, render with an interface.

Fetches go through the cache of :mod:`promptadmin.core.cache` under the prompts'
own generation, which every version, label, interface or adapter change replaces when
its transaction commits: the next fetch after a promotion sees the new version, on every
process (the generation is read from the shared cache on every fetch). A warm fetch
costs that one cache round trip and no query; so does a warm render
(:func:`fetch_and_render`: the version and the adapter instructions under one reading
of the generation).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db.models import Max, Prefetch, QuerySet

from assembler.format_lint import FormatFinding, lint_prompt, rendered_findings
from assembler.request import DEFAULT_TEMPLATE
from assembler.templates import (
    DEFAULT_SYNTAX,
    MissingVariablesError,
    TemplateError,
    TemplateValueError,
    render,
    render_many,
)
from assembler.tokens import get_tokenizer
from assembler.trisection import (
    AdapterInstruction as AdapterRule,
)
from assembler.trisection import (
    Interface as InterfaceRule,
)
from assembler.trisection import (
    adapter_findings,
    assemble_trisection,
    message_tokens,
)
from promptadmin.core import cache as content_cache
from promptadmin.core.tokens import tokenizer
from promptadmin.prompts.errors import PromptLookupError, RenderInputError
from promptadmin.prompts.models import (
    DEFAULT_LABEL,
    LATEST,
    AdapterInstruction,
    Interface,
    Label,
    Prompt,
    PromptVersion,
)

# Readers outside the prompts domain (the summarizer) address a prompt by its name.
from promptadmin.prompts.models import parse_langfuse_name as parse_langfuse_name
from promptadmin.prompts.services import PROMPTS_GENERATION_KEY


@dataclass(frozen=True, slots=True)
class ResolvedPrompt:
    """A fetched prompt version as callers see it (plain data, cacheable)."""

    prompt_id: int
    component: str
    agent: str
    task_type_used: str | None
    version: int
    labels: tuple[str, ...]
    syntax: str
    system: str
    user_templates: dict[str, str]
    variables: list[str]
    task: str
    config: dict[str, Any]
    content_hash: str
    commit_message: str
    created_at: str
    etag: str = field(default="")

    @property
    def langfuse_name(self) -> str:
        parts = [self.component, self.agent] + (
            [self.task_type_used] if self.task_type_used else []
        )
        return "/".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The native API's fields (the contract of ``GET /api/v1/prompts/{c}/{a}/``)."""
        return {
            "component": self.component,
            "agent": self.agent,
            "task_type_used": self.task_type_used,
            "version": self.version,
            "labels": list(self.labels),
            "syntax": self.syntax,
            "system": self.system,
            "user_templates": dict(self.user_templates),
            "variables": list(self.variables),
            "task": self.task,
            "config": self.config,
            "content_hash": self.content_hash,
            "commit_message": self.commit_message,
            "created_at": self.created_at,
        }


def _resolve(version: PromptVersion, labels: tuple[str, ...]) -> ResolvedPrompt:
    prompt = version.prompt
    resolved = ResolvedPrompt(
        prompt_id=prompt.pk,
        component=prompt.component,
        agent=prompt.agent,
        task_type_used=prompt.task_type_or_none,
        version=version.number,
        labels=labels,
        syntax=version.syntax,
        system=version.system,
        user_templates=version.sorted_user_templates(),
        variables=list(version.variables),
        task=version.task,
        config=version.config,
        content_hash=version.content_hash,
        commit_message=version.commit_message,
        created_at=version.created_at.isoformat().replace("+00:00", "Z"),
    )
    body = json.dumps(resolved.to_dict(), sort_keys=True, ensure_ascii=False).encode()
    etag = f'"pv-{hashlib.sha256(body).hexdigest()[:32]}"'
    return ResolvedPrompt(**{**_fields(resolved), "etag": etag})


def prompts_with_labels() -> QuerySet[Prompt]:
    """Every prompt, by address, with ``latest_version`` (its newest version's number, None
    before its first) and its labels and their versions: what a list of prompts shows, in
    three queries whatever its length."""
    labels = Label.objects.select_related("version").order_by("name")
    return (
        Prompt.objects.annotate(latest_version=Max("versions__number"))
        .prefetch_related(Prefetch("labels", queryset=labels))
        .order_by("component", "agent", "task_type")
    )


def _fields(resolved: ResolvedPrompt) -> dict[str, Any]:
    return {name: getattr(resolved, name) for name in ResolvedPrompt.__slots__}


def resolve_from_db(
    component: str, agent: str, task_type: str | None, label: str | None, version: int | None
) -> ResolvedPrompt:
    """Resolve without the cache; see :func:`fetch_prompt`."""
    candidates = {
        p.task_type: p
        for p in Prompt.objects.filter(
            component=component, agent=agent, task_type__in={task_type or "", ""}
        )
    }
    prompt = candidates.get(task_type or "") or candidates.get("")
    if prompt is None:
        raise PromptLookupError(f"No prompt for component '{component}' and agent '{agent}'.")
    versions = PromptVersion.objects.select_related("prompt").filter(prompt=prompt)
    newest = prompt.versions.aggregate(newest=Max("number"))["newest"] or 0
    found: PromptVersion | None
    if version is not None:
        found = versions.filter(number=version).first()
        missing = f"{prompt.langfuse_name} has no version {version}."
    elif label == LATEST:
        found = versions.filter(number=newest).first()
        missing = f"{prompt.langfuse_name} has no versions yet."
    else:
        label = label or DEFAULT_LABEL
        found = versions.filter(labels__name=label).first()
        missing = f"{prompt.langfuse_name} has no label '{label}'."
    if found is None:
        raise PromptLookupError(missing)
    names = sorted(Label.objects.filter(version=found).values_list("name", flat=True))
    labels = (*names, LATEST) if found.number == newest else tuple(names)
    return _resolve(found, labels)


def fetch_prompt(
    *,
    component: str,
    agent: str,
    task_type: str | None = None,
    label: str | None = None,
    version: int | None = None,
) -> ResolvedPrompt:
    """The version of (component, agent, task_type) named by ``label`` (default
    ``production``) or ``version``.

    A task type without a prompt of its own falls back to the default prompt of
    (component, agent); ``task_type_used`` says which one answered. An unknown label or
    version raises :class:`PromptLookupError`, never another label's version.
    """
    return _fetch(_generation(), component, agent, task_type, label, version)


def _generation() -> str:
    return content_cache.generation(PROMPTS_GENERATION_KEY)


def _fetch(
    generation: str,
    component: str,
    agent: str,
    task_type: str | None,
    label: str | None,
    version: int | None,
) -> ResolvedPrompt:
    if version is None and not label:
        # Named here, not by each caller: a fetch without a label shares production's entry.
        label = DEFAULT_LABEL
    ref = f"{component}:{agent}:{task_type or ''}:{label or ''}:{version or ''}"
    key = content_cache.key(generation, "prompt", ref)
    cached = content_cache.get_many([key]).get(key)
    if isinstance(cached, ResolvedPrompt):
        return cached
    resolved = resolve_from_db(component, agent, task_type, label, version)
    content_cache.set_many({key: resolved})
    return resolved


def lint_resolved(resolved: ResolvedPrompt) -> list[FormatFinding]:
    """The lint findings of a version :func:`fetch_prompt` found, against the
    ``expected_system`` of the prompt it belongs to (read now: the expectation may have
    changed since the version was made)."""
    expected = (
        Prompt.objects.filter(pk=resolved.prompt_id)
        .values_list("expected_system", flat=True)
        .first()
    )
    return lint_prompt(
        syntax=resolved.syntax,
        system=resolved.system,
        user_templates=resolved.user_templates,
        variables=resolved.variables,
        expected_system=expected,
    )


def adapter_context_findings(task: str) -> list[FormatFinding]:
    """Info findings for the version editor: what the active adapter instructions of
    ``task`` (every interface's) render empty when a caller sends no instruction context,
    by interface name and order."""
    if not task:
        return []
    findings: list[FormatFinding] = []
    adapters = (
        AdapterInstruction.objects.filter(task=task, active=True)
        .select_related("interface")
        .order_by("interface__name", "order", "id")
    )
    for adapter in adapters:
        additions: tuple[tuple[Literal["system", "user"], str], ...] = (
            ("system", adapter.system_addition),
            ("user", adapter.user_addition),
        )
        for role, template in additions:
            try:
                rendered = render(template, DEFAULT_SYNTAX, {}, lenient=True)
            except TemplateError:  # checked when saved; an old row is no reason to fail
                continue
            findings += adapter_findings(
                adapter.interface.name,
                role,
                template,
                DEFAULT_SYNTAX,
                rendered,
                level="info",
                without_context=True,
            )
    return findings


def adapters_for(
    interface_name: str, task: str, generation: str | None = None
) -> tuple[InterfaceRule, tuple[AdapterRule, ...]]:
    """The interface's capabilities and its active adapter instructions for ``task``
    (under ``generation`` when the caller has just read it)."""
    if generation is None:
        generation = _generation()
    key = content_cache.key(generation, "adapters", f"{interface_name}:{task}")
    if generation is not None:
        cached = content_cache.get_many([key]).get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
    interface = Interface.objects.filter(name=interface_name).first()
    if interface is None:
        names = list(Interface.objects.values_list("name", flat=True))
        raise RenderInputError(
            {
                "interface": [
                    f"Unknown interface '{interface_name}'; the interfaces are: "
                    f"{', '.join(names) or 'none yet'}."
                ]
            }
        )
    rules: tuple[AdapterRule, ...] = ()
    if task:
        rules = tuple(
            AdapterRule(a.order, a.system_addition, a.user_addition)
            for a in AdapterInstruction.objects.filter(
                interface=interface, task=task, active=True
            ).order_by("order", "id")
        )
    value = (
        InterfaceRule(
            interface.name, interface.supports_system_prompt, interface.supports_structured_output
        ),
        rules,
    )
    if generation is not None:
        content_cache.set_many({key: value})
    return value


@dataclass(frozen=True, slots=True)
class Rendered:
    resolved: ResolvedPrompt
    system: str
    user: str
    messages: tuple[dict[str, Any], ...]
    tokens: dict[str, int]
    unused_variables: tuple[str, ...]
    # Warnings about the render: a value empty where a template's text expects one.
    findings: tuple[FormatFinding, ...] = ()


def fetch_and_render(
    *,
    component: str,
    agent: str,
    task_type: str | None = None,
    label: str | None = None,
    version: int | None = None,
    template: str = DEFAULT_TEMPLATE,
    variables: Mapping[str, Any] | None = None,
    interface: str | None = None,
    user_instructions: str | None = None,
    instruction_context: Mapping[str, Any] | None = None,
) -> Rendered:
    """:func:`fetch_prompt`, then :func:`render_prompt`, with one reading of the cache
    generation for both (one cache round trip for a warm render, not two)."""
    generation = _generation()
    resolved = _fetch(generation, component, agent, task_type, label, version)
    return _render(
        resolved,
        generation,
        template=template,
        variables=variables,
        interface=interface,
        user_instructions=user_instructions,
        instruction_context=instruction_context,
    )


def render_prompt(
    resolved: ResolvedPrompt,
    *,
    template: str = DEFAULT_TEMPLATE,
    variables: Mapping[str, Any] | None = None,
    interface: str | None = None,
    user_instructions: str | None = None,
    instruction_context: Mapping[str, Any] | None = None,
) -> Rendered:
    """Render a fetched version's system template and one user template with
    ``variables``, then assemble the tri-section prompt for ``interface`` (its adapter
    instructions for the version's task, then ``user_instructions``).

    Raises :class:`RenderInputError` naming an unknown template or interface, or every
    missing variable.
    """
    return _render(
        resolved,
        None,
        template=template,
        variables=variables,
        interface=interface,
        user_instructions=user_instructions,
        instruction_context=instruction_context,
    )


def _render(
    resolved: ResolvedPrompt,
    generation: str | None,
    *,
    template: str,
    variables: Mapping[str, Any] | None,
    interface: str | None,
    user_instructions: str | None,
    instruction_context: Mapping[str, Any] | None,
) -> Rendered:
    templates = resolved.user_templates
    if template in templates:
        user_template = templates[template]
    elif template == DEFAULT_TEMPLATE and not templates:
        user_template = ""
    else:
        raise RenderInputError(
            {
                "template": [
                    f"Unknown template '{template}'; version {resolved.version} has: "
                    f"{', '.join(templates) or 'no user templates'}."
                ]
            }
        )
    sources = {"system": resolved.system, template: user_template}
    try:
        rendered = render_many(sources, resolved.syntax, variables or {})
    except MissingVariablesError as error:
        raise RenderInputError(
            {"variables": [f"Missing variables: {', '.join(error.names)}."]}
        ) from None
    except TemplateValueError as error:
        raise RenderInputError({f"variables.{error.name}": [error.reason]}) from None
    if interface is None:
        rule, adapters = InterfaceRule("none"), ()
    else:
        rule, adapters = adapters_for(interface, resolved.task, generation)
    try:
        result = assemble_trisection(
            system_text=rendered.texts["system"],
            user_text=rendered.texts[template],
            interface=rule,
            adapter_instructions=adapters,
            user_instructions=user_instructions,
            instruction_context=instruction_context,
        )
    except TemplateError as error:
        raise RenderInputError({"instruction_context": [str(error)]}) from None
    # Each text is counted once: a message that is the system or the user text reuses its
    # count (counting is most of the cost of a render), and the system text, the same from
    # one call to the next more often than not, is remembered.
    tokens = {"system": _remembered_count(result.system), "user": tokenizer().count(result.user)}
    known = {result.system: tokens["system"], result.user: tokens["user"]}
    counts = [
        known[m.content] if m.content in known else message_tokens([m], tokenizer())[0]
        for m in result.messages
    ]
    messages = tuple(
        {"role": m.role, "content": m.content, "tokens": n}
        for m, n in zip(result.messages, counts, strict=True)
    )
    findings = (*rendered_findings(sources, resolved.syntax, rendered), *result.findings)
    return Rendered(
        resolved, result.system, result.user, messages, tokens, rendered.unused, findings
    )


# System texts up to this many characters have their counts remembered (memory bounded).
_REMEMBERED_TEXT = 32_000


def _remembered_count(text: str) -> int:
    """The token count of ``text``, remembered for a text that comes back (a system text)."""
    if len(text) > _REMEMBERED_TEXT:
        return tokenizer().count(text)
    return _count_in(tokenizer().name, text)


@functools.lru_cache(maxsize=128)
def _count_in(encoding: str, text: str) -> int:
    return get_tokenizer(encoding).count(text)
