"""The impact of a change: what differs between two versions of the content, and what
that does to every scenario's prompt (tokens, cuts, expectations).

Comparisons start from the manifests (:mod:`promptadmin.releases.bundles`): only the
bundles that differ are read to list the segments and lore entries changed, and only the
scenarios whose bundles differ (the entry's own, its world's, its rulesets', its NPCs', the
core, or the lore of its world or of every world, for a scenario with lore on) are
assembled again; the others are reported unchanged without assembling. The rules about
cuts and expectations are the assembler's (:mod:`assembler.impact`).

A scenario's run on a version follows from the scenario and the bundles it reads alone,
so what a report needs of it is kept in the shared cache under those (:func:`run_key`),
and so is each scenario's row, under its two runs' keys: a report that follows another
(the working copy changed again; the release published is the next report's "before")
assembles only the scenarios whose runs no report has made yet. What is kept is bounded
by what a report shows: the keys of a run's cuts, not its whole outcome, and a row's
outcomes hold only the cuts that appear or disappear.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import assembler
from assembler.impact import cut_key, failure
from assembler.result import Change, Outcome
from promptadmin.content.assembly import AssemblyInputError, build_request
from promptadmin.core.tokens import tokenizer
from promptadmin.lore.selectors import BUNDLE_FIELDS
from promptadmin.releases.bundles import (
    LORE,
    Part,
    Version,
    canonical,
    manifest_hashes,
    sha256,
)
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

# Change it when what a run or a row kept in the cache holds changes (or how the assembler
# makes a prompt): one kept by older code is not read.
RUN_FORMAT = 1
# Runs and rows are named by content: they hold for good; this bounds what Redis keeps.
KEPT_SECONDS = 24 * 3600


class Memo(Protocol):
    """Where runs and rows are kept: Django's cache."""

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]: ...

    def set_many(self, data: Mapping[str, Any], timeout: float | None = ...) -> Any: ...


# What a version may lack of a scenario's content, by catalog key (see ScenarioRun.missing).
ENTRIES, NPCS = CATALOG_KEYS["entry"], CATALOG_KEYS["npc"]
_KIND_WORDS = {ENTRIES: "entry", NPCS: "NPC"}


@dataclass(frozen=True)
class ScenarioRun:
    """One scenario assembled from one version of the content.

    ``digest`` is the prompt's content hash ("" when it was not assembled); ``cuts`` the
    keys of what it lost (its ``meta.outcome``, keyed as :func:`assembler.impact.cuts`
    does), in the outcome's order, and ``changes`` the outcome's change of each (None for
    a run read back from the cache, which keeps the keys alone: see :meth:`kept`).
    ``missing`` is what this version lacks of the scenario's content, as (catalog key,
    slug): then nothing is assembled, and that is no error (the entry is new, or gone).
    ``prompt`` is there when the run was assembled now.
    """

    tokens: int | None = None
    prompt: str = ""
    digest: str = ""
    cuts: tuple[str, ...] = ()
    changes: Mapping[str, Change] | None = None
    failures: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    missing: tuple[tuple[str, str], ...] = ()

    def kept(self) -> tuple[Any, ...]:
        """What the cache keeps of this run (see :meth:`from_kept`)."""
        return (self.tokens, self.digest, self.cuts, self.failures, self.error)

    @classmethod
    def from_kept(cls, kept: Sequence[Any]) -> ScenarioRun:
        tokens, digest, cuts, failures, error = kept
        return cls(
            tokens=tokens, digest=digest, cuts=tuple(cuts), failures=dict(failures), error=error
        )


def _cast(spec: ScenarioSpec, version: Version) -> ScenarioSpec:
    """``spec`` as ``version`` assembles it: an implicit scenario's cast without the NPCs
    the version lacks (the cast is the working copy's)."""
    if not spec.cast_npcs:
        return spec
    npcs = version.npc_hashes
    return replace(spec, npcs=tuple(npc for npc in spec.npcs if npc[0] in npcs))


def _missing(spec: ScenarioSpec, version: Version) -> tuple[tuple[str, str], ...]:
    """What ``version`` lacks of ``spec`` (as :func:`_cast` gives it), as in ScenarioRun."""
    missing = [(ENTRIES, spec.entry)] if version.entry_hashes(spec.entry) is None else []
    missing += [(NPCS, slug) for slug, _tier in spec.npcs if slug not in version.npc_hashes]
    return tuple(missing)


def evaluate(spec: ScenarioSpec, version: Version) -> ScenarioRun:
    """Assemble ``spec`` from ``version``. An entry or NPC missing there is reported as
    missing, except an NPC of an implicit scenario's cast (the cast is the working copy's:
    one a version lacks is left out)."""
    spec = _cast(spec, version)
    missing = _missing(spec, version)
    if missing:
        return ScenarioRun(missing=missing)
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
    changes = {cut_key(change): change for change in result.meta.outcome.changes()}
    return ScenarioRun(
        tokens=result.meta.tokens,
        prompt=result.prompt,
        digest=result.meta.content_hash,
        cuts=tuple(changes),
        changes=changes,
        failures=failures,
    )


def run_key(spec: ScenarioSpec, version: Version) -> str | None:
    """Where the cache keeps ``spec``'s run on ``version``: a hash of what it follows
    from (the scenario, whatever its name, and the bundles it reads: see
    :func:`scenario_key`). None when the version lacks its entry or an NPC it names:
    such a run costs no assembly, and its words name objects, which bundles do not."""
    if _missing(_cast(spec, version), version):
        return None
    body = [RUN_FORMAT, tokenizer().name, spec.judged(), scenario_key(spec, version)]
    return f"impact:run:{sha256(canonical(body))}"


def row_key(before: str | None, after: str | None) -> str | None:
    """Where the cache keeps the findings of a scenario's row, by its two runs' keys."""
    if before is None or after is None:
        return None
    return f"impact:row:{sha256(canonical([before, after]))}"


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
    return {
        **_scenario(spec),
        **_findings(spec, before, after, names or {}),
        "preview_query": spec.preview_query(),
    }


def _findings(
    spec: ScenarioSpec,
    before: ScenarioRun,
    after: ScenarioRun,
    names: Mapping[tuple[str, str], str],
) -> dict[str, Any]:
    """A scenario's row but what names it (see :func:`scenario_changes`). The outcomes
    hold the cuts that appear (after) or disappear (before), as ``cuts_added`` and
    ``cuts_removed`` say them: all of a new scenario's, and no more of the others' (the
    preview, or ``/assemble``, gives a version's whole outcome)."""
    added, removed = _lost(after, before), _lost(before, after)
    return {
        "tokens_before": before.tokens,
        "tokens_after": after.tokens,
        "cuts_added": [change.explanation for change in added],
        "cuts_removed": [change.explanation for change in removed],
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
        # Those checked on the new version that hold: a writer sees every expectation.
        "expectations_holding": [
            e.description
            for e in spec.expectations
            if after.tokens is not None and e.description not in after.failures
        ],
        "error_before": before.error,
        "error_after": after.error,
        "new": bool(before.missing) and not after.missing and after.error is None,
        "missing_before": missing_words(before.missing, names),
        "missing_after": missing_words(after.missing, names),
        "outcome_before": None if before.tokens is None else _outcome(removed),
        "outcome_after": None if after.tokens is None else _outcome(added),
        "changed": (before.digest, before.error, before.missing)
        != (after.digest, after.error, after.missing),
        "assembled": True,
    }


def _lost(run: ScenarioRun, other: ScenarioRun) -> list[Change]:
    """The changes of ``run``'s cuts that ``other`` does not have, in outcome order."""
    theirs = set(other.cuts)
    keys = [key for key in run.cuts if key not in theirs]
    if not keys:
        return []
    if run.changes is None:
        raise ValueError("a run read back from the cache has no changes: assemble it again")
    return [run.changes[key] for key in keys]


def _lacks_changes(run: ScenarioRun, other: ScenarioRun) -> bool:
    """Whether ``run`` must be assembled again to say what it lost that ``other`` did not
    (it was read back from the cache, which keeps only its cuts' keys)."""
    return run.changes is None and not set(run.cuts) <= set(other.cuts)


def _outcome(changes: Sequence[Change]) -> dict[str, list[dict[str, Any]]]:
    """``changes`` (in outcome order) as an outcome's ``to_dict()``."""
    return Outcome(
        left_out=tuple(change for change in changes if change.kind == "left_out"),
        shortened=tuple(change for change in changes if change.kind == "shortened"),
        lowered=tuple(change for change in changes if change.kind == "lowered"),
    ).to_dict()


def scenario_unchanged(spec: ScenarioSpec) -> dict[str, Any]:
    """A scenario whose bundles are the same on both sides: its prompt is too, so it is
    not assembled (nothing about its tokens or expectations is known here)."""
    return {**_scenario(spec), **unassembled(), "preview_query": spec.preview_query()}


def unassembled() -> dict[str, Any]:
    """A scenario row's findings when it is not assembled: nothing known, nothing changed.

    The API's example row starts from these too, so it lists every field in this order."""
    return {
        "tokens_before": None,
        "tokens_after": None,
        "cuts_added": [],
        "cuts_removed": [],
        "expectations_failing": [],
        "expectations_fixed": [],
        "expectations_still_failing": [],
        "expectations_holding": [],
        "error_before": None,
        "error_after": None,
        "new": False,
        "missing_before": [],
        "missing_after": [],
        "outcome_before": None,
        "outcome_after": None,
        "changed": False,
        "assembled": False,
    }


def to_assemble(before: Version, after: Version, scenarios: Sequence[ScenarioSpec]) -> list[int]:
    """The positions of the scenarios whose bundles differ between the two versions."""
    return [
        index
        for index, spec in enumerate(scenarios)
        if scenario_key(spec, before) != scenario_key(spec, after)
    ]


def _by_content(
    version: Version, todo: Sequence[int], scenarios: Sequence[ScenarioSpec]
) -> list[int]:
    """The positions ``todo`` in an order that assembles the scenarios of one entry, and the
    entries of one world, one after the other: what they share (bundles read, segments
    priced, joins counted, blocks encoded) is then still in the caches that keep it, which
    are bounded far below what a whole game needs."""

    def content(index: int) -> tuple[str, str, int]:
        entry = scenarios[index].entry
        return (version.entry_world(entry) or "", entry, index)

    return sorted(todo, key=content)


def scenario_impact(
    before: Version,
    after: Version,
    scenarios: Sequence[ScenarioSpec],
    *,
    progress: Progress | None = None,
    memo: Memo | None = None,
) -> list[dict[str, Any]]:
    """Each scenario's row of the report, assembling only those whose bundles differ, and
    of those only the runs (and rows) ``memo`` does not keep yet (it keeps those made)."""
    todo = _by_content(after, to_assemble(before, after, scenarios), scenarios)
    again = set(todo)  # their rows are made below
    rows = [
        {} if index in again else scenario_unchanged(spec) for index, spec in enumerate(scenarios)
    ]
    names: Mapping[tuple[str, str], str] | None = None  # read once, if anything is missing
    bundles = _Bundles()
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start : start + CHUNK]
        specs = [scenarios[index] for index in chunk]
        keys = [(run_key(spec, before), run_key(spec, after)) for spec in specs]
        rows_at = [row_key(*pair) for pair in keys]
        kept = _kept(memo, [*rows_at, *(key for pair in keys for key in pair)])
        made: dict[str, Any] = {}
        wanted = [k for k, key in enumerate(rows_at) if key is None or key not in kept]

        def note(done: int, start: int = start, wanted: list[int] = wanted) -> None:
            if progress is not None:
                progress(start + wanted[done - 1] + 1, len(todo))

        pairs = _pairs(
            (before, after),
            [specs[k] for k in wanted],
            [keys[k] for k in wanted],
            kept=kept,
            made=made,
            bundles=bundles,
            note=note,
        )
        runs = dict(zip(wanted, pairs, strict=True))
        for k, index in enumerate(chunk):
            spec, key = specs[k], rows_at[k]
            if k in runs:
                run_before, run_after = runs[k]
                if names is None and (run_before.missing or run_after.missing):
                    names = object_names(before, after)
                found = _findings(spec, run_before, run_after, names or {})
                if key is not None:
                    made[key] = found
            else:
                assert key is not None  # a row without a key is always wanted
                found = kept[key]
            rows[index] = {**_scenario(spec), **found, "preview_query": spec.preview_query()}
        _keep(memo, made)
        bundles.next_chunk()
        if progress is not None:
            progress(start + len(chunk), len(todo))
    return rows


def _pairs(
    sides: tuple[Version, Version],
    specs: Sequence[ScenarioSpec],
    keys: Sequence[tuple[str | None, str | None]],
    *,
    kept: Mapping[str, Any],
    made: dict[str, Any],
    bundles: _Bundles,
    note: Callable[[int], None],
) -> list[tuple[ScenarioRun, ScenarioRun]]:
    """Each scenario's runs on both ``sides``: read back from what the cache keeps under
    their ``keys``, or assembled now (``made``: what to keep of those; ``note(done)`` after
    each scenario). A scenario's two runs are made in turn, as they share all but what
    changed: its content is then priced, joined and counted once, not once per side."""
    pinned = [
        bundles.pin(
            side, [spec for spec, pair in zip(specs, keys, strict=True) if pair[at] not in kept]
        )
        for at, side in enumerate(sides)
    ]
    pairs = []
    for done, (spec, pair) in enumerate(zip(specs, keys, strict=True), 1):
        old, new = (_run(spec, pinned[at], pair[at], kept, made) for at in (0, 1))
        pairs.append((old, new))
        note(done)
    # A run read back keeps its cuts' keys alone: where the other side lacks some of its
    # cuts, it is assembled again, to say what they are (for a change to the core, the
    # few scenarios that lose or gain one more segment at their budget's edge).
    again = [
        i
        for i, (old, new) in enumerate(pairs)
        if _lacks_changes(old, new) or _lacks_changes(new, old)
    ]
    if again:
        pinned = [
            bundles.pin(side, [specs[i] for i in again if pairs[i][at].changes is None])
            for at, side in enumerate(sides)
        ]
        for i in again:
            old, new = pairs[i]
            if _lacks_changes(old, new):
                old = evaluate(specs[i], pinned[0])
            if _lacks_changes(new, old):
                new = evaluate(specs[i], pinned[1])
            pairs[i] = old, new
    return pairs


class _Bundles:
    """The bundles read for the chunk of scenarios under way and for the one before, on
    either side: most are the same on both sides (all but the core's, after a change to
    the core), and the core's, the worlds' and the rulesets' serve chunk after chunk. Each
    is read once, not once per side and chunk; what is kept stays bounded by two chunks'
    bundles."""

    def __init__(self) -> None:
        self.previous: dict[str, Part] = {}
        self.current: dict[str, Part] = {}

    def pin(self, version: Version, specs: Iterable[ScenarioSpec]) -> Version:
        """``version`` with the bundles that assembling ``specs`` reads."""
        pinned = version.pinned(_needed(version, specs), known={**self.previous, **self.current})
        self.current.update(pinned.loaded)
        return pinned

    def next_chunk(self) -> None:
        self.previous, self.current = self.current, {}


def _run(
    spec: ScenarioSpec,
    version: Version,
    key: str | None,
    kept: Mapping[str, Any],
    made: dict[str, Any],
) -> ScenarioRun:
    """``spec``'s run on ``version``: read back from what the cache keeps under ``key``,
    else assembled now (and added to ``made``, to be kept)."""
    found = kept.get(key) if key is not None else None
    if found is not None:
        return ScenarioRun.from_kept(found)
    run = evaluate(spec, version)
    if key is not None:
        made[key] = run.kept()
    return run


def _kept(memo: Memo | None, keys: Iterable[str | None]) -> dict[str, Any]:
    """What ``memo`` keeps under ``keys`` (one round trip)."""
    wanted = [key for key in keys if key is not None]
    return memo.get_many(wanted) if memo is not None and wanted else {}


def _keep(memo: Memo | None, values: Mapping[str, Any]) -> None:
    if memo is not None and values:
        memo.set_many(values, KEPT_SECONDS)


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
    memo: Memo | None = None,
) -> dict[str, Any]:
    """The impact report of going from ``before`` to ``after`` (``memo``: where runs and
    rows are kept, see :func:`scenario_impact`)."""
    return {
        **content_changes(before, after),
        "scenarios": scenario_impact(before, after, scenarios, progress=progress, memo=memo),
    }


def failing(
    version: Version, scenarios: Sequence[ScenarioSpec], *, memo: Memo | None = None
) -> list[dict[str, str]]:
    """Every expectation ``version`` fails, as ``{"scenario", "expectation", "reason"}``
    (the runs ``memo`` keeps are not assembled again; those made are kept there)."""
    checked = [spec for spec in scenarios if spec.expectations]
    keys = [run_key(spec, version) for spec in checked]
    kept = _kept(memo, keys)
    made: dict[str, Any] = {}
    pinned = version.pinned(
        _needed(version, [spec for spec, key in zip(checked, keys, strict=True) if key not in kept])
    )
    found = []
    for spec, key in zip(checked, keys, strict=True):
        run = _run(spec, pinned, key, kept, made)
        if run.missing:
            # What is missing has no name in this version: its slug says which.
            lacks = ", ".join(missing_words(run.missing, {}))
            reason = f"this version has no {lacks}"
            found.append({"scenario": spec.name, "expectation": "assembles", "reason": reason})
        if run.error is not None:
            found.append({"scenario": spec.name, "expectation": "assembles", "reason": run.error})
        for name, why in run.failures.items():
            found.append({"scenario": spec.name, "expectation": name, "reason": why})
    _keep(memo, made)
    return found
