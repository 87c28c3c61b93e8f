"""The impact of a change: what differs between two versions of the content, and what
that does to every scenario's prompt (tokens, cuts, expectations).

Comparisons start from the manifests (:mod:`promptadmin.releases.bundles`): only the
bundles that differ are read to list the segments and lore entries changed, and only the
scenarios whose bundles differ (the entry's own, its world's, its rulesets', its NPCs', the
core, or the lore of its world or of every world, for a scenario with lore on) are
assembled again; the others are reported unchanged without assembling. The rules about
cuts and expectations are the assembler's (:mod:`assembler.impact`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import assembler
from assembler.impact import cuts, failure
from promptadmin.content.assembly import AssemblyInputError, build_request
from promptadmin.core.tokens import tokenizer
from promptadmin.lore.selectors import BUNDLE_FIELDS
from promptadmin.releases.bundles import LORE, Part, Version, manifest_hashes
from promptadmin.releases.scenarios import ScenarioSpec
from promptadmin.releases.snapshot import (
    CATALOG_KEYS,
    SEGMENT_FIELDS,
    SnapSegment,
    catalog_objects,
)

# Scenarios assembled per read of the bundles they need: bounds what a comparison of a
# change to the core (every scenario) holds in memory at once.
CHUNK = 200

Progress = Callable[[int, int], None]
"""Told ``(done, total)`` as a comparison assembles the scenarios whose bundles differ."""

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


def evaluate(spec: ScenarioSpec, version: Version) -> ScenarioRun:
    """Assemble ``spec`` from ``version``. An entry or NPC missing there is reported as
    missing, except an NPC of an implicit scenario's cast (the cast is the working copy's:
    one a version lacks is left out)."""
    npcs = version.npc_hashes
    if spec.cast_npcs:
        spec = replace(spec, npcs=tuple(npc for npc in spec.npcs if npc[0] in npcs))
    missing = [(ENTRIES, spec.entry)] if version.entry_hashes(spec.entry) is None else []
    missing += [(NPCS, slug) for slug, _tier in spec.npcs if slug not in npcs]
    if missing:
        return ScenarioRun(missing=tuple(missing))
    try:
        request = build_request(spec.params(), load=version.load, lore=version.lore)
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


def scenario_key(spec: ScenarioSpec, version: Version) -> tuple[Any, ...]:
    """What ``spec``'s prompt in ``version`` depends on: the bundles its entry assembles
    from (None: no such entry) and each of its NPCs' (None: no such NPC). Two versions
    giving one key give one prompt."""
    listed = version.entry_hashes(spec.entry)
    npcs = tuple(version.npc_hashes.get(slug) for slug, _tier in spec.npcs)
    return (None if listed is None else tuple(listed), npcs, _lore_hashes(spec, version))


def _lore_hashes(spec: ScenarioSpec, version: Version) -> tuple[str, ...]:
    """The lore bundles ``spec``'s prompt reads in ``version`` (none with lore off)."""
    return version.entry_lore_hashes(spec.entry) if spec.lore.enabled else ()


def _needed(version: Version, specs: Iterable[ScenarioSpec]) -> set[str]:
    """The bundles assembling ``specs`` from ``version`` reads."""
    found: set[str] = set()
    for spec in specs:
        found.update(version.entry_hashes(spec.entry) or ())
        found.update(h for slug, _tier in spec.npcs if (h := version.npc_hashes.get(slug)))
        found.update(_lore_hashes(spec, version))
    return found


def _changed_rows(before: Version, after: Version) -> tuple[dict[int, SnapSegment], ...]:
    """The segments of the bundles one version names and the other does not, by id, on
    each side. Every other segment is in a bundle both name, so it is the same on both."""
    return tuple(
        {row.id: row for part in parts for row in part.rows}
        for parts in _changed_parts(before, after)
    )


def _changed_parts(before: Version, after: Version) -> tuple[list[Part], list[Part]]:
    """The bundles one version names and the other does not, on each side."""
    old, new = manifest_hashes(before.manifest), manifest_hashes(after.manifest)
    return (
        list(before.parts(old - new).values()),
        list(after.parts(new - old).values()),
    )


def segment_changes(before: Version, after: Version) -> dict[str, list[dict[str, Any]]]:
    """The segments added, changed and removed (read from the bundles that differ)."""
    return segment_diff(*_changed_rows(before, after))


# What a lore entry's state is made of, compared between two versions.
LORE_FIELDS = tuple(name for name in BUNDLE_FIELDS if name not in ("id", "token_encoding"))


def _lore_summary(world: str, row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "world": world or None,
        "title": row["title"],
        "tokens": row["token_count"],
    }


LoreRows = Mapping[int, tuple[str, Mapping[str, Any]]]
"""Lore entries by id, each with its world's slug ("": every world's)."""


def lore_by_id(lore: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[int, Any]:
    """The entries of ``lore`` (rows by world slug, as a content set holds them) by id."""
    return {row["id"]: (world, row) for world, rows in lore.items() for row in rows}


def lore_changes(before: Version, after: Version) -> dict[str, list[dict[str, Any]]]:
    """The active lore entries added, changed and removed (read from the lore bundles that
    differ; an entry made inactive is removed from what assembles)."""
    old, new = (
        lore_by_id({part.slug: part.lore for part in parts if part.kind == LORE})
        for parts in _changed_parts(before, after)
    )
    return lore_diff(old, new)


def lore_diff(old_rows: LoreRows, new_rows: LoreRows) -> dict[str, list[dict[str, Any]]]:
    """The lore entries added, changed and removed between two sets of entries by id."""
    added = [_lore_summary(*new_rows[pk]) for pk in sorted(new_rows.keys() - old_rows.keys())]
    removed = [_lore_summary(*old_rows[pk]) for pk in sorted(old_rows.keys() - new_rows.keys())]
    changed = []
    for pk in sorted(old_rows.keys() & new_rows.keys()):
        (old_world, old_row), (new_world, new_row) = old_rows[pk], new_rows[pk]
        old = {**old_row, "world": old_world or None}
        new = {**new_row, "world": new_world or None}
        fields = [name for name in ("world", *LORE_FIELDS) if old.get(name) != new.get(name)]
        if fields:
            changed.append(
                {
                    **_lore_summary(new_world, new),
                    "fields": fields,
                    "changes": _changes(fields, old, new, text="content"),
                    "tokens_before": old["token_count"],
                    "diff": text_diff(old["content"], new["content"])
                    if "content" in fields
                    else "",
                }
            )
    return {"added": added, "changed": changed, "removed": removed}


def segment_diff(
    old_rows: Mapping[int, SnapSegment], new_rows: Mapping[int, SnapSegment]
) -> dict[str, list[dict[str, Any]]]:
    """The segments added, changed and removed between two sets of segments by id."""
    added = [_segment_summary(new_rows[pk]) for pk in sorted(new_rows.keys() - old_rows.keys())]
    removed = [_segment_summary(old_rows[pk]) for pk in sorted(old_rows.keys() - new_rows.keys())]
    changed = []
    for pk in sorted(old_rows.keys() & new_rows.keys()):
        old, new = old_rows[pk], new_rows[pk]
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


def object_changes(before: Version, after: Version) -> dict[str, list[dict[str, Any]]]:
    old, new = catalog_objects(before.catalog), catalog_objects(after.catalog)

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


def content_changes(before: Version, after: Version) -> dict[str, Any]:
    """What differs between two versions: segments, objects and lore entries."""
    return {
        "segments": segment_changes(before, after),
        "objects": object_changes(before, after),
        "lore": lore_changes(before, after),
    }


def _scenario(spec: ScenarioSpec) -> dict[str, Any]:
    return {
        "scenario": spec.name,
        "saved": spec.scenario_id is not None,
        "entry": spec.entry,
        "first_turn": spec.first_turn,
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
        **_scenario(spec),
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
        "assembled": True,
        "preview_query": spec.preview_query(),
    }


def scenario_unchanged(spec: ScenarioSpec) -> dict[str, Any]:
    """A scenario whose bundles are the same on both sides: its prompt is too, so it is
    not assembled (nothing about its tokens or expectations is known here)."""
    return {
        **_scenario(spec),
        "tokens_before": None,
        "tokens_after": None,
        "cuts_added": [],
        "cuts_removed": [],
        "expectations_failing": [],
        "expectations_fixed": [],
        "expectations_still_failing": [],
        "error_before": None,
        "error_after": None,
        "new": False,
        "missing_before": [],
        "missing_after": [],
        "outcome_before": None,
        "outcome_after": None,
        "changed": False,
        "assembled": False,
        "preview_query": spec.preview_query(),
    }


def to_assemble(before: Version, after: Version, scenarios: Sequence[ScenarioSpec]) -> list[int]:
    """The positions of the scenarios whose bundles differ between the two versions."""
    return [
        index
        for index, spec in enumerate(scenarios)
        if scenario_key(spec, before) != scenario_key(spec, after)
    ]


def scenario_impact(
    before: Version,
    after: Version,
    scenarios: Sequence[ScenarioSpec],
    *,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Each scenario's row of the report, assembling only those whose bundles differ."""
    rows = [scenario_unchanged(spec) for spec in scenarios]
    todo = to_assemble(before, after, scenarios)
    names: Mapping[tuple[str, str], str] | None = None  # read once, if anything is missing
    # Bundles read for the last chunk, on either side: most are the same on both sides
    # (all but the core's, after a change to the core), and the core's, the worlds' and
    # the rulesets' serve chunk after chunk. Each is read once, not once per side and
    # chunk; what is kept stays bounded by two chunks' bundles.
    previous: Mapping[str, Part] = {}
    for start in range(0, len(todo), CHUNK):
        chunk = [scenarios[index] for index in todo[start : start + CHUNK]]
        old = before.pinned(_needed(before, chunk), known=previous)
        new = after.pinned(_needed(after, chunk), known={**previous, **old.loaded})
        previous = {**old.loaded, **new.loaded}
        for done, (index, spec) in enumerate(zip(todo[start:], chunk, strict=False), start + 1):
            run_before, run_after = evaluate(spec, old), evaluate(spec, new)
            if names is None and (run_before.missing or run_after.missing):
                names = object_names(before, after)
            rows[index] = scenario_changes(spec, run_before, run_after, names)
            if progress is not None:
                progress(done, len(todo))
    return rows


def object_names(before: Version, after: Version) -> dict[tuple[str, str], str]:
    """Every object's name by (catalog key, slug), the newer version's where both have it."""
    names = {key: row.get("name", "") for key, row in catalog_objects(before.catalog).items()}
    names.update((key, row.get("name", "")) for key, row in catalog_objects(after.catalog).items())
    return names


def compare(
    before: Version,
    after: Version,
    scenarios: Sequence[ScenarioSpec],
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The impact report of going from ``before`` to ``after``."""
    return {
        **content_changes(before, after),
        "scenarios": scenario_impact(before, after, scenarios, progress=progress),
    }


def failing(version: Version, scenarios: Sequence[ScenarioSpec]) -> list[dict[str, str]]:
    """Every expectation ``version`` fails, as ``{"scenario", "expectation", "reason"}``."""
    checked = [spec for spec in scenarios if spec.expectations]
    pinned = version.pinned(_needed(version, checked))
    found = []
    for spec in checked:
        run = evaluate(spec, pinned)
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
