"""Registered prompts in the studio: the list, a prompt's versions and labels, the version
editor (with variables, lint findings and token counts as you type), diffs between
versions, and the render playground."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from assembler.format_lint import lint_prompt
from assembler.request import DEFAULT_TEMPLATE
from assembler.templates import used_variables
from promptadmin.core.roles import Role, role_of
from promptadmin.core.text import normalize_newlines, normalize_values
from promptadmin.core.tokens import tokenizer
from promptadmin.prompts.errors import PromptLookupError, RenderInputError
from promptadmin.prompts.models import (
    DEFAULT_LABEL,
    LATEST,
    Interface,
    Label,
    LabelEvent,
    Prompt,
    PromptVersion,
)
from promptadmin.prompts.selectors import (
    ResolvedPrompt,
    adapter_context_findings,
    fetch_prompt,
    prompts_with_labels,
    render_prompt,
)
from promptadmin.prompts.services import prompts as services
from promptadmin.studio import confirm, diffs
from promptadmin.studio.access import (
    HtmxHttpRequest,
    fragment_or_page,
    page_of,
    render_page,
    studio_view,
)
from promptadmin.studio.forms.common import add_service_errors
from promptadmin.studio.forms.prompts import (
    CompareForm,
    LabelForm,
    LabelRemoveForm,
    PlaygroundForm,
    PromptForm,
    VersionForm,
)

SECTION = "prompts"
EDITOR = "studio/prompt_version_edit.html"
PLAYGROUND = "studio/prompt_playground.html"


@studio_view()
def prompt_list(request: HttpRequest) -> HttpResponse:
    page = page_of(request, prompts_with_labels())
    context = {"section": SECTION, "page": page, "prompts": page.items}
    return render_page(request, "studio/prompt_list.html", context)


@studio_view(read=Role.AUTHOR)
def prompt_create(request: HttpRequest) -> HttpResponse:
    form = PromptForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            prompt = services.prompt_create(actor=request.user, **form.service_fields())
        except ValidationError as exc:
            add_service_errors(form, exc)
        else:
            messages.success(
                request, f"Created {prompt.langfuse_name}; now write its first version."
            )
            return redirect("studio:prompt_version_create", prompt.pk)
    return render_page(request, "studio/prompt_create.html", {"section": SECTION, "form": form})


def _versions(prompt: Prompt) -> QuerySet[PromptVersion]:
    return prompt.versions.select_related("author").prefetch_related("labels").order_by("-number")


@studio_view()
@vary_on_headers("HX-Request")
def prompt_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Versions with their labels, the labels (move or remove with one click), their
    history, and a diff between any two versions."""
    prompt = get_object_or_404(Prompt, pk=pk)
    versions = page_of(request, _versions(prompt), param="versions_page")
    numbers = list(prompt.versions.order_by("-number").values_list("number", flat=True))
    compare = CompareForm(request.GET or None)
    diff = None
    if compare.is_bound and compare.is_valid():
        diff = _diff(prompt, compare.cleaned_data["a"], compare.cleaned_data["b"], compare)
    elif len(numbers) >= 2:
        # By default: what the newest version changed.
        compare = CompareForm({"a": numbers[1], "b": numbers[0]})
        compare.is_valid()
        diff = _diff(prompt, numbers[1], numbers[0], compare)
    template = fragment_or_page(request, "studio/prompt_detail.html", "compare")
    return render_page(
        request,
        template,
        {
            "section": SECTION,
            "prompt": prompt,
            "versions": versions,
            "numbers": numbers,
            "labels": Label.objects.filter(prompt=prompt).select_related("version"),
            "protected": services.protected_labels(),
            "events": page_of(
                request,
                LabelEvent.objects.filter(prompt=prompt).select_related("user"),
                param="events_page",
            ),
            "compare": compare,
            "diff": diff,
        },
    )


def _diff(prompt: Prompt, a: int, b: int, form: CompareForm) -> dict[str, Any] | None:
    found = {v.number: v for v in prompt.versions.filter(number__in=[a, b])}
    for field, number in (("a", a), ("b", b)):
        if number not in found:
            form.add_error(field, f"There is no version {number}.")
    if form.errors:
        return None
    left, right = found[a], found[b]
    parts = []
    names = ["system", *sorted(set(left.user_templates) | set(right.user_templates))]
    for name in names:
        old = left.system if name == "system" else left.user_templates.get(name, "")
        new = right.system if name == "system" else right.user_templates.get(name, "")
        parts.append(
            {
                "name": "System template" if name == "system" else f"User template “{name}”",
                "same": old == new,
                "rows": diffs.side_by_side(old, new),
            }
        )
    settings = []
    for label, old, new in (
        ("Syntax", left.syntax, right.syntax),
        ("Variables", ", ".join(left.variables), ", ".join(right.variables)),
        ("Task", left.task, right.task),
        ("Config", diffs.show(left.config), diffs.show(right.config)),
    ):
        if old != new:
            settings.append({"label": label, "old": old, "new": new})
    return {
        "left_title": f"Version {a}",
        "right_title": f"Version {b}",
        "parts": parts,
        "fields": settings,
    }


def _asks_first(request: HttpRequest, name: str) -> bool:
    """Whether a change to the label ``name`` asks for confirmation first: it is the label
    services fetch by default, not yet confirmed, and the person may change it at all
    (otherwise the service's refusal is the answer)."""
    if name != DEFAULT_LABEL or confirm.confirmed(request):
        return False
    role = role_of(request.user)
    return name not in services.protected_labels() or (role is not None and role >= Role.ADMIN)


def _live_version(prompt: Prompt, name: str) -> int | None:
    """The version number the label ``name`` points at now (None: no such label)."""
    label = Label.objects.filter(prompt=prompt, name=name).select_related("version").first()
    return label.version.number if label is not None else None


def _ask(
    request: HttpRequest, prompt: Prompt, action: tuple[str, str], question: str, then: str
) -> HttpResponse:
    """Ask before a protected label of ``prompt`` moves or goes. ``action``: the title and
    the confirm button's words; ``then``: what services naming no label or version get."""
    title, confirm_label = action
    return confirm.ask(
        request,
        title=title,
        question=question,
        consequence=(
            f"Services that fetch {prompt.langfuse_name} without naming a label or a "
            f"version get {then}"
        ),
        confirm_label=confirm_label,
        cancel_url=reverse("studio:prompt_detail", args=[prompt.pk]),
        section=SECTION,
    )


@studio_view(read=Role.AUTHOR)
@require_POST
def prompt_label_set(request: HttpRequest, pk: int) -> HttpResponse:
    prompt = get_object_or_404(Prompt, pk=pk)
    form = LabelForm(request.POST)
    if form.is_valid():
        name, number = form.cleaned_data["name"], form.cleaned_data["version"]
        now = _live_version(prompt, name)
        if _asks_first(request, name) and now != number:
            where = f"from version {now} to version {number}" if now else f"to version {number}"
            question = f"Move the {name} label of {prompt.langfuse_name} {where}?"
            then = f"version {number} on their next request."
            action = (f"Move {name}?", f"Move {name} to version {number}")
            return _ask(request, prompt, action, question, then)
        try:
            services.prompt_label_set(actor=request.user, prompt=prompt, name=name, version=number)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        except PermissionDenied as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Label “{name}” now points at version {number}.")
    else:
        messages.error(request, "Choose a label name and a version.")
    return redirect("studio:prompt_detail", prompt.pk)


@studio_view(read=Role.AUTHOR)
@require_POST
def prompt_label_remove(request: HttpRequest, pk: int) -> HttpResponse:
    prompt = get_object_or_404(Prompt, pk=pk)
    form = LabelRemoveForm(request.POST)
    if form.is_valid():
        name = form.cleaned_data["name"]
        now = _live_version(prompt, name)
        if _asks_first(request, name) and now:
            question = f"Remove the {name} label of {prompt.langfuse_name} (version {now})?"
            then = "an error (404) until a version has the label again."
            return _ask(request, prompt, (f"Remove {name}?", f"Remove {name}"), question, then)
        try:
            services.prompt_label_remove(actor=request.user, prompt=prompt, name=name)
        except (ValidationError, PromptLookupError, PermissionDenied) as exc:
            messages.error(request, str(getattr(exc, "message", exc)))
        else:
            messages.success(request, f"Removed label “{name}”.")
    return redirect("studio:prompt_detail", prompt.pk)


def live_check(form: VersionForm, expected_system: str | None) -> dict[str, Any]:
    """Variables, lint findings and token counts of the version being edited."""
    form.is_valid()
    data = form.cleaned_data
    syntax = data.get("syntax") or "curly"
    # As the version would be saved (core.text): the counts and positions shown are its own.
    system = normalize_newlines(data.get("system", ""))
    templates = normalize_values(form.user_templates())
    count = tokenizer().count
    used = used_variables(syntax, system, templates)
    declared = data.get("variables")
    findings = lint_prompt(
        syntax=syntax,
        system=system,
        user_templates=templates,
        variables=declared,
        expected_system=expected_system,
    )
    # One list for the panel, agreeing with the "Declared variables" field and the lint:
    # every variable used or declared, and whether it is the other too.
    listed = dict.fromkeys([*used, *(declared or [])])
    return {
        "variables": list(used),
        "declared": declared,
        "variable_rows": [
            {"name": name, "used": name in used, "declared": declared is None or name in declared}
            for name in listed
        ],
        "findings": [finding.to_dict() for finding in findings],
        # Not the version's own findings: what the adapter instructions of its task add
        # when a caller sends no instruction context (the caller's to send).
        "adapter_notes": [
            finding.to_dict() for finding in adapter_context_findings(data.get("task") or "")
        ],
        "task": data.get("task") or "",
        "tokens": [("system", count(system))]
        + [(name, count(text)) for name, text in templates.items()],
        "encoding": tokenizer().name,
        "template_errors": form.template_errors,
        "announcement": _checked(len(used), [f.level for f in findings], form.template_errors),
    }


def _counted(count: int, noun: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _checked(variables: int, levels: list[str], template_errors: list[str]) -> str:
    """What a screen reader hears after a check: counts, not the findings themselves
    (``Checked: 3 variables, 2 lint findings (1 error, 1 warning).``)."""
    lints = "no lint findings"
    if levels:
        kinds = ", ".join(
            _counted(levels.count(level), level)
            for level in ("error", "warning", "info")
            if level in levels
        )
        lints = f"{_counted(len(levels), 'lint finding')} ({kinds})"
    problems = f", {_counted(len(template_errors), 'template problem')}" if template_errors else ""
    return f"Checked: {_counted(variables, 'variable')}, {lints}{problems}."


@studio_view(read=Role.AUTHOR)
@require_POST
def prompt_version_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Relint the version being edited (the editor calls this as the author types)."""
    prompt = get_object_or_404(Prompt, pk=pk)
    form = VersionForm(request.POST)
    live = live_check(form, prompt.expected_system)
    return render_page(
        request, f"{EDITOR}#live-check", {"live": live, "prompt": prompt, "oob": True}
    )


@studio_view(read=Role.AUTHOR)
def prompt_version_create(request: HttpRequest, pk: int) -> HttpResponse:
    """A new version, starting from any version (``?from=N``; default the newest)."""
    prompt = get_object_or_404(Prompt, pk=pk)
    base = None
    if request.GET.get("from", "").isdigit():
        base = prompt.versions.filter(number=int(request.GET["from"][:9])).first()
    if base is None:
        base = prompt.versions.order_by("-number").first()
    if request.method == "POST":
        form = VersionForm(request.POST)
        if form.is_valid():
            templates = form.user_templates()
            if form.template_errors:
                form.add_error(None, form.template_errors)
            else:
                data = form.cleaned_data
                try:
                    version = services.prompt_version_create(
                        actor=request.user,
                        prompt=prompt,
                        syntax=data["syntax"],
                        system=data["system"],
                        user_templates=templates,
                        variables=data["variables"],
                        task=data["task"],
                        config=data["config"],
                        commit_message=data["commit_message"],
                        labels=data["labels"],
                    )
                except ValidationError as exc:
                    add_service_errors(
                        form, exc, rename={f"config.{services.CONFIG_RESERVED}": "config"}
                    )
                except PermissionDenied as exc:
                    form.add_error("labels", str(exc))
                else:
                    messages.success(request, f"Saved version {version.number}.")
                    return redirect("studio:prompt_detail", prompt.pk)
    else:
        initial: dict[str, Any] = {}
        templates = {DEFAULT_TEMPLATE: ""}
        if base is not None:
            initial = {
                "syntax": base.syntax,
                "system": base.system,
                "variables": ", ".join(base.variables),
                "task": base.task,
                "config": diffs.show(base.config) if base.config else "",
            }
            templates = base.sorted_user_templates()
        form = VersionForm(initial=initial, templates=templates)
    live = live_check(_bound_copy(form), prompt.expected_system)
    return render_page(
        request,
        EDITOR,
        {"section": SECTION, "prompt": prompt, "form": form, "base": base, "live": live},
    )


def _bound_copy(form: VersionForm) -> VersionForm:
    """The form itself once submitted; before that, a copy bound to its initial values, so
    the checks show from the first paint."""
    if form.is_bound:
        return form
    data = dict(form.initial)
    for index, (name, text) in enumerate(form.rows):
        data[f"template_name_{index}"] = name
        data[f"template_text_{index}"] = text
    return VersionForm(data)


def _sources(prompt: Prompt) -> list[tuple[str, str]]:
    """What the playground can render: each label (``latest`` too), then each version."""
    labels = list(
        Label.objects.filter(prompt=prompt).order_by("name").values_list("name", flat=True)
    )
    numbers = list(prompt.versions.order_by("-number").values_list("number", flat=True))
    return [(f"label:{name}", f"label {name}") for name in [*labels, LATEST]] + [
        (f"version:{n}", f"version {n}") for n in numbers
    ]


def _resolved(prompt: Prompt, source: str) -> ResolvedPrompt | None:
    """The version ``source`` (``label:NAME`` or ``version:N``) names, if it exists."""
    kind, _, value = source.partition(":")
    try:
        return fetch_prompt(
            component=prompt.component,
            agent=prompt.agent,
            task_type=prompt.task_type_or_none,
            label=value if kind == "label" else None,
            version=int(value) if kind == "version" and value.isdigit() else None,
        )
    except PromptLookupError:
        return None


def _playground_render(
    form: PlaygroundForm, resolved: ResolvedPrompt
) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    """The render the form asks for, as the render API returns it, or what is wrong."""
    data = form.cleaned_data
    try:
        rendered = render_prompt(
            resolved,
            template=data["template"] or DEFAULT_TEMPLATE,
            variables=form.values(),
            interface=data["interface"] or None,
            user_instructions=data["user_instructions"] or None,
            instruction_context=data["instruction_context"],
        )
    except RenderInputError as error:
        return None, error.errors
    return {
        "format": data["format"] or "messages",
        "messages": rendered.messages,
        "system": rendered.system,
        "user": rendered.user,
        "tokens": rendered.tokens,
        "total": sum(m["tokens"] for m in rendered.messages),
        "unused": rendered.unused_variables,
        "findings": [finding.to_dict() for finding in rendered.findings],
    }, {}


@studio_view()
@vary_on_headers("HX-Request")
def prompt_playground(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Pick a version, a template and an interface, fill the variables: the final messages
    and their token counts, exactly as the render API returns them."""
    prompt = get_object_or_404(Prompt, pk=pk)
    sources = _sources(prompt)
    params = request.GET
    source = params.get("source") or (sources[0][0] if sources else "")
    resolved = _resolved(prompt, source) if source else None
    # One field per variable: those declared, then any other the templates use.
    variables = []
    if resolved is not None:
        used = used_variables(resolved.syntax, resolved.system, resolved.user_templates)
        variables = list(dict.fromkeys([*resolved.variables, *used]))
    form = PlaygroundForm(params or None, variables=variables, initial={"source": source})
    result: dict[str, Any] | None = None
    problems: dict[str, list[str]] = {}
    if form.is_bound and form.is_valid() and resolved is not None:
        result, problems = _playground_render(form, resolved)
    elif resolved is None and sources:
        problems = {"source": [f"{prompt.langfuse_name} has nothing at {source}."]}
    # Choosing another version swaps the whole page (other variables, other templates).
    whole = bool(request.htmx) and request.htmx.target == "main"
    template = PLAYGROUND if whole else fragment_or_page(request, PLAYGROUND, "result")
    errors = [
        *(error for messages in problems.values() for error in messages),
        *(error for messages in form.errors.values() for error in messages),
    ]
    return render_page(
        request,
        template,
        {
            "section": SECTION,
            "prompt": prompt,
            "form": form,
            "sources": sources,
            "source": source,
            "resolved": resolved,
            "interfaces": list(Interface.objects.order_by("name").values_list("name", flat=True)),
            "templates": list(resolved.user_templates) if resolved else [],
            "result": result,
            "problems": problems,
            "announcement": _rendered(result, errors),
            "oob": template != PLAYGROUND,
            "api_url": reverse("api-prompt-render", args=[prompt.component, prompt.agent]),
        },
    )


def _rendered(result: dict[str, Any] | None, errors: list[str]) -> str:
    """What a screen reader hears after a render: how much, never the prompt itself."""
    if errors:
        more = f" (and {_counted(len(errors) - 1, 'more problem')})" if len(errors) > 1 else ""
        return f"Not rendered: {errors[0]}{more}"
    if result is None:
        return ""
    warned = len(result.get("findings", ()))
    warnings = f", {_counted(warned, 'warning')}" if warned else ""
    if result["format"] == "text":
        return f"Rendered: the system and user texts, {result['total']} tokens{warnings}."
    what = _counted(len(result["messages"]), "message")
    return f"Rendered: {what}, {result['total']} tokens{warnings}."
