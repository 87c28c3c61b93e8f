"""The impact of a change: what differs between two versions of the content, and what
that does to every scenario's prompt (tokens, cuts, expectations).

Pure comparison over :class:`~promptadmin.releases.snapshot.ContentSet`; the rules about
cuts and expectations are the assembler's (:mod:`assembler.impact`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import assembler
from assembler.impact import cuts, failure
from promptadmin.content.assembly import AssemblyInputError, build_request
from promptadmin.core.tokens import tokenizer
from promptadmin.releases.scenarios import ScenarioSpec
from promptadmin.releases.snapshot import (
    CATALOG_KEYS,
    SEGMENT_FIELDS,
    Bundles,
    ContentSet,
    SnapSegment,
)

# What a version may lack of a scenario's content, by catalog key (see ScenarioRun.missing).
ENTRIES, NPCS = CATALOG_KEYS["entry"], CATALOG_KEYS["npc"]
_KIND_WORDS = {ENTRIES: "entry", NPCS: "NPC"}


@dataclass(frozen=True)
class ScenarioRun:
    """One scenario assembled from one version of the content.

    ``outcome`` is the prompt's ``meta.outcome`` (None when it was not assembled);
    ``missing`` what this version lacks of the scenario's content, as (catalog key, slug):
    then nothing is assembled, and that is no error (the entry is new, or gone).
    """

    tokens: int | None = None
    prompt: str = ""
    cuts: dict[str, str] = field(default_factory=dict)
    outcome: dict[str, list[dict[str, Any]]] | None = None
    failures: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    missing: tuple[tuple[str, str], ...] = ()


def evaluate(spec: ScenarioSpec, bundles: Bundles) -> ScenarioRun:
    """Assemble ``spec`` from ``bundles``. An entry or NPC missing there is reported as
    missing, except an NPC of an implicit scenario's cast (the cast is the working copy's:
    one a version lacks is left out)."""
    if spec.cast_npcs:
        spec = replace(spec, npcs=tuple(npc for npc in spec.npcs if npc[0] in bundles.npcs))
    missing = [(ENTRIES, spec.entry)] if spec.entry not in bundles.entries else []
    missing += [(NPCS, slug) for slug, _tier in spec.npcs if slug not in bundles.npcs]
    if missing:
        return ScenarioRun(missing=tuple(missing))
    try:
        request = build_request(spec.params(), load=bundles.load)
        result = assembler.assemble(request, tokenizer())
    except AssemblyInputError as exc:
        return ScenarioRun(error="; ".join(exc.errors.values()))
    failures: dict[str, str] = {}
    for expectation in spec.expectations:
        why = failure(expectation, result)
        if why is not None:
            failures[expectation.description] = why
    return ScenarioRun(
        tokens=result.meta.tokens,
        prompt=result.prompt,
        cuts=cuts(result),
        outcome=result.meta.outcome.to_dict(),
        failures=failures,
    )


def missing_words(
    missing: Sequence[tuple[str, str]], names: Mapping[tuple[str, str], str]
) -> list[str]:
    """What a version lacks, as authors know it: ``entry 'The cinder gate'``, by its name
    in ``names`` ((catalog key, slug) → name) or else its slug."""
    return [f"{_KIND_WORDS[key]} '{names.get((key, slug), slug)}'" for key, slug in missing]


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


def scenario_changes(
    spec: ScenarioSpec,
    before: ScenarioRun,
    after: ScenarioRun,
    names: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """How one scenario's prompt changes. ``new``: its content did not exist before
    (``missing_before`` says what), and it assembles now: its ``outcome_after`` says what it
    loses. ``names`` names the objects, as in :func:`missing_words`."""
    names = names or {}
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
        "new": bool(before.missing) and not after.missing and after.error is None,
        "missing_before": missing_words(before.missing, names),
        "missing_after": missing_words(after.missing, names),
        "outcome_before": before.outcome,
        "outcome_after": after.outcome,
        "changed": (before.prompt, before.error, before.missing)
        != (after.prompt, after.error, after.missing),
        "preview_query": spec.preview_query(),
    }


def compare(
    before: ContentSet, after: ContentSet, scenarios: Sequence[ScenarioSpec]
) -> dict[str, Any]:
    """The impact report of going from ``before`` to ``after``."""
    old, new = before.bundles(), after.bundles()
    names = {key: row.get("name", "") for key, row in before.objects().items()}
    names.update((key, row.get("name", "")) for key, row in after.objects().items())
    return {
        "segments": segment_changes(before, after),
        "objects": object_changes(before, after),
        "scenarios": [
            scenario_changes(spec, evaluate(spec, old), evaluate(spec, new), names)
            for spec in scenarios
        ],
    }


def failing(content: ContentSet, scenarios: Sequence[ScenarioSpec]) -> list[dict[str, str]]:
    """Every expectation ``content`` fails, as ``{"scenario", "expectation", "reason"}``."""
    bundles = content.bundles()
    found = []
    for spec in scenarios:
        if not spec.expectations:
            continue
        run = evaluate(spec, bundles)
        if run.missing:
            # What is missing has no name in this version: its slug says which.
            lacks = ", ".join(missing_words(run.missing, {}))
            reason = f"this version has no {lacks}"
            found.append({"scenario": spec.name, "expectation": "assembles", "reason": reason})
        if run.error is not None:
            found.append({"scenario": spec.name, "expectation": "assembles", "reason": run.error})
        for name, why in run.failures.items():
            found.append({"scenario": spec.name, "expectation": name, "reason": why})
    return found
