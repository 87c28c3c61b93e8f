"""The impact of a change: what differs between two versions of the content, and what
that does to every scenario's prompt (tokens, cuts, expectations).

Pure comparison over :class:`~promptadmin.releases.snapshot.ContentSet`; the rules about
cuts and expectations are the assembler's (:mod:`assembler.impact`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import assembler
from assembler.impact import cuts, failure
from promptadmin.content.assembly import AssemblyInputError, build_request
from promptadmin.core.tokens import tokenizer
from promptadmin.releases.scenarios import ScenarioSpec
from promptadmin.releases.snapshot import SEGMENT_FIELDS, Bundles, ContentSet, SnapSegment


@dataclass(frozen=True)
class Outcome:
    """One scenario assembled from one version of the content."""

    tokens: int | None = None
    prompt: str = ""
    cuts: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def evaluate(spec: ScenarioSpec, bundles: Bundles) -> Outcome:
    """Assemble ``spec`` from ``bundles``; an entry or NPC missing there is an error,
    except an NPC of an implicit scenario's cast (the cast is the working copy's)."""
    if spec.cast_npcs:
        spec = replace(spec, npcs=tuple(npc for npc in spec.npcs if npc[0] in bundles.npcs))
    try:
        request = build_request(spec.params(), load=bundles.load)
        result = assembler.assemble(request, tokenizer())
    except AssemblyInputError as exc:
        return Outcome(error="; ".join(exc.errors.values()))
    failures: dict[str, str] = {}
    for expectation in spec.expectations:
        why = failure(expectation, result)
        if why is not None:
            failures[expectation.description] = why
    return Outcome(
        tokens=result.meta.tokens, prompt=result.prompt, cuts=cuts(result), failures=failures
    )


def _segment_summary(row: SnapSegment) -> dict[str, Any]:
    return {
        "id": row.id,
        "scope": row.scope,
        "owner": row.owner or None,
        "title": row.title,
        "tokens": row.token_count,
    }


def text_diff(before: str, after: str) -> str:
    """A unified diff of two texts, line by line."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "before", "after", n=2, lineterm=""
    )
    return "\n".join(lines)


def segment_changes(before: ContentSet, after: ContentSet) -> dict[str, list[dict[str, Any]]]:
    added = [
        _segment_summary(after.segments[pk])
        for pk in sorted(after.segments.keys() - before.segments.keys())
    ]
    removed = [
        _segment_summary(before.segments[pk])
        for pk in sorted(before.segments.keys() - after.segments.keys())
    ]
    changed = []
    for pk in sorted(before.segments.keys() & after.segments.keys()):
        old, new = before.segments[pk], after.segments[pk]
        fields = [name for name in SEGMENT_FIELDS if getattr(old, name) != getattr(new, name)]
        if fields:
            changed.append(
                {
                    **_segment_summary(new),
                    "fields": fields,
                    "changes": _changes(fields, _fields_of(old), _fields_of(new), text="content"),
                    "tokens_before": old.token_count,
                    "diff": text_diff(old.content, new.content) if "content" in fields else "",
                }
            )
    return {"added": added, "changed": changed, "removed": removed}


def _fields_of(row: SnapSegment) -> dict[str, Any]:
    return {name: getattr(row, name) for name in SEGMENT_FIELDS}


def _changes(
    fields: Sequence[str], before: dict[str, Any], after: dict[str, Any], *, text: str
) -> list[dict[str, Any]]:
    """Each changed field's values before and after, but ``text`` (long: given as a diff)."""
    return [
        {"field": name, "before": before.get(name), "after": after.get(name)}
        for name in fields
        if name != text
    ]


def object_changes(before: ContentSet, after: ContentSet) -> dict[str, list[dict[str, Any]]]:
    old, new = before.objects(), after.objects()

    def summary(key: tuple[str, str], row: dict[str, Any]) -> dict[str, Any]:
        return {"kind": key[0], "slug": key[1], "name": row.get("name", "")}

    changed = []
    for key in sorted(old.keys() & new.keys()):
        fields = sorted(
            name
            for name in old[key].keys() | new[key].keys()
            if old[key].get(name) != new[key].get(name)
        )
        if fields:
            changed.append(
                {
                    **summary(key, new[key]),
                    "fields": fields,
                    "changes": _changes(fields, old[key], new[key], text="description"),
                    "diff": text_diff(old[key]["description"], new[key]["description"])
                    if "description" in fields
                    else "",
                }
            )
    return {
        "added": [summary(key, new[key]) for key in sorted(new.keys() - old.keys())],
        "changed": changed,
        "removed": [summary(key, old[key]) for key in sorted(old.keys() - new.keys())],
    }


def scenario_changes(spec: ScenarioSpec, before: Outcome, after: Outcome) -> dict[str, Any]:
    return {
        "scenario": spec.name,
        "saved": spec.scenario_id is not None,
        "entry": spec.entry,
        "first_turn": spec.first_turn,
        "tokens_before": before.tokens,
        "tokens_after": after.tokens,
        "cuts_added": [after.cuts[key] for key in after.cuts if key not in before.cuts],
        "cuts_removed": [before.cuts[key] for key in before.cuts if key not in after.cuts],
        "expectations_failing": [
            {"expectation": name, "reason": why}
            for name, why in after.failures.items()
            if name not in before.failures
        ],
        "expectations_fixed": [
            {"expectation": name, "reason": why}
            for name, why in before.failures.items()
            if name not in after.failures
        ],
        "expectations_still_failing": [
            {"expectation": name, "reason": why}
            for name, why in after.failures.items()
            if name in before.failures
        ],
        "error_before": before.error,
        "error_after": after.error,
        "changed": before.prompt != after.prompt or before.error != after.error,
        "preview_query": spec.preview_query(),
    }


def compare(
    before: ContentSet, after: ContentSet, scenarios: Sequence[ScenarioSpec]
) -> dict[str, Any]:
    """The impact report of going from ``before`` to ``after``."""
    old, new = before.bundles(), after.bundles()
    return {
        "segments": segment_changes(before, after),
        "objects": object_changes(before, after),
        "scenarios": [
            scenario_changes(spec, evaluate(spec, old), evaluate(spec, new)) for spec in scenarios
        ],
    }


def failing(content: ContentSet, scenarios: Sequence[ScenarioSpec]) -> list[dict[str, str]]:
    """Every expectation ``content`` fails, as ``{"scenario", "expectation", "reason"}``."""
    bundles = content.bundles()
    found = []
    for spec in scenarios:
        if not spec.expectations:
            continue
        outcome = evaluate(spec, bundles)
        if outcome.error is not None:
            found.append(
                {"scenario": spec.name, "expectation": "assembles", "reason": outcome.error}
            )
        for name, why in outcome.failures.items():
            found.append({"scenario": spec.name, "expectation": name, "reason": why})
    return found
