"""Load stored content for an assembly request and hand it to ``assembler``.

This module holds no prompt rule: it resolves slugs, fetches segments in a constant
number of queries (none when the content cache has them), and adapts rows into the
assembler's dataclasses.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Q

import assembler
from assembler.request import AssembleParams
from promptadmin.content.models import (
    NPC,
    SEGMENT_SCOPES,
    Entry,
    EntryNpc,
    EntryRuleset,
    Scope,
    Segment,
)
from promptadmin.conversations.selectors import history_for_assembly
from promptadmin.core import cache as content_cache
from promptadmin.core.tokens import cached_count, token_count, tokenizer


class AssemblyInputError(Exception):
    """The request names things that do not exist or do not fit together."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {message}" for name, message in self.errors.items()))


@dataclass(frozen=True)
class EntryBundle:
    """The static content of one entry, as the assembler wants it."""

    entry_id: int
    world_slug: str
    rulesets: tuple[assembler.Ruleset, ...]
    core: tuple[assembler.Segment, ...]
    world: tuple[assembler.Segment, ...]
    entry: tuple[assembler.Segment, ...]
    entry_start: tuple[assembler.Segment, ...]


@dataclass(frozen=True)
class NpcBundle:
    slug: str
    name: str
    segments: tuple[assembler.Segment, ...]


@dataclass(frozen=True)
class Preview:
    """An assembly for authors: the result plus every segment considered and its fate."""

    result: assembler.AssemblyResult
    segments: list[dict[str, Any]]


class StoredSegment(Protocol):
    """A segment as stored: the working copy's row, or a release's (``releases.snapshot``)."""

    id: int
    scope: str
    content: str
    sort_order: int
    tier: int
    token_count: int | None
    token_encoding: str
    title: str


def segment_for_assembly(row: StoredSegment) -> assembler.Segment:
    """The one adapter from a stored segment to the assembler's: the working copy's rows
    and a release's bundles both go through it, so both assemble alike."""
    return assembler.Segment(
        id=row.id,
        scope=row.scope,
        content=row.content,
        sort_order=row.sort_order,
        tier=row.tier,
        # A count made with another encoding is stale: let the assembler count afresh.
        token_count=cached_count(row),
        title=row.title.strip(),
    )


_SEGMENT_COLUMNS = (
    "id",
    "scope",
    "content",
    "sort_order",
    "tier",
    "token_count",
    "token_encoding",
    "title",
    "ruleset_id",
    "world_id",
    "entry_id",
    "npc_id",
)


def _segments_query(
    entry: Entry, ruleset_ids: list[int], npc_ids: list[int], *, active: bool
) -> Any:
    belongs = (
        Q(scope=Scope.CORE)
        | Q(ruleset_id__in=ruleset_ids)
        | Q(world_id=entry.world_id)
        | Q(entry_id=entry.pk)
        | Q(npc_id__in=npc_ids)
    )
    return Segment.objects.filter(belongs, active=active).only(*_SEGMENT_COLUMNS)


def _bundle(
    entry: Entry,
    links: Sequence[EntryRuleset],
    by_owner: Mapping[tuple[str, int | None], list[assembler.Segment]],
) -> EntryBundle:
    return EntryBundle(
        entry_id=entry.pk,
        world_slug=entry.world.slug,
        rulesets=tuple(
            assembler.Ruleset(
                slug=link.ruleset.slug,
                name=link.ruleset.name,
                segments=tuple(by_owner.get((Scope.RULESET, link.ruleset_id), ())),
            )
            for link in links
        ),
        core=tuple(by_owner.get((Scope.CORE, None), ())),
        world=tuple(by_owner.get((Scope.WORLD, entry.world_id), ())),
        entry=tuple(by_owner.get((Scope.ENTRY, entry.pk), ())),
        entry_start=tuple(by_owner.get((Scope.ENTRY_START, entry.pk), ())),
    )


def _by_owner(rows: Any) -> dict[tuple[str, int | None], list[assembler.Segment]]:
    """Segments grouped by (scope, id of the object they belong to), in query order."""
    by_owner: dict[tuple[str, int | None], list[assembler.Segment]] = {}
    for row in rows:
        owner = row.ruleset_id or row.world_id or row.entry_id or row.npc_id
        by_owner.setdefault((row.scope, owner), []).append(segment_for_assembly(row))
    return by_owner


def _load_from_database(
    entry_slug: str, npc_slugs: Sequence[str]
) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
    """Four queries whatever the amount of content: entry, rulesets, NPCs, segments."""
    npcs = list(NPC.objects.filter(slug__in=npc_slugs)) if npc_slugs else []
    entry = Entry.objects.select_related("world").filter(slug=entry_slug).first()
    if entry is None:
        # Still say which NPCs exist, so an error names only what is really unknown.
        return None, {npc.slug: NpcBundle(npc.slug, npc.name, ()) for npc in npcs}
    links = list(
        EntryRuleset.objects.filter(entry=entry).select_related("ruleset").order_by("position")
    )
    ruleset_ids = [link.ruleset_id for link in links]
    by_owner = _by_owner(_segments_query(entry, ruleset_ids, [n.pk for n in npcs], active=True))
    npc_bundles = {
        npc.slug: NpcBundle(npc.slug, npc.name, tuple(by_owner.get((Scope.NPC, npc.pk), ())))
        for npc in npcs
    }
    return _bundle(entry, links, by_owner), npc_bundles


@dataclass(frozen=True)
class CastEntry:
    """An entry with its static content, its cast (slug, usual tier) and the cast's NPCs."""

    entry: Entry
    bundle: EntryBundle
    cast: tuple[tuple[str, int], ...]
    npcs: dict[str, NpcBundle]


def all_entries(entry_ids: Collection[int] | None = None) -> list[CastEntry]:
    """Every entry (by name), or those of ``entry_ids``, with its static content and
    cast, in five queries whatever the count (reading only the content those entries
    use).

    For pages that look at every entry at once (the dashboard's findings), where loading
    entry by entry would cost queries per entry.
    """
    entries_query = Entry.objects.select_related("world").order_by("name", "slug")
    links_query = EntryRuleset.objects.select_related("ruleset").order_by("entry_id", "position")
    casts_query = EntryNpc.objects.select_related("npc").order_by("entry_id", "position")
    if entry_ids is not None:
        entries_query = entries_query.filter(pk__in=entry_ids)
        links_query = links_query.filter(entry_id__in=entry_ids)
        casts_query = casts_query.filter(entry_id__in=entry_ids)
    entries = list(entries_query)
    links: dict[int, list[EntryRuleset]] = {}
    for link in links_query:
        links.setdefault(link.entry_id, []).append(link)
    casts: dict[int, list[EntryNpc]] = {}
    for member in casts_query:
        casts.setdefault(member.entry_id, []).append(member)
    static = [scope for scope in SEGMENT_SCOPES if scope != Scope.NPC]
    static_segments = Segment.objects.filter(active=True, scope__in=static)
    if entry_ids is not None:
        static_segments = static_segments.filter(
            Q(scope=Scope.CORE)
            | Q(world_id__in={entry.world_id for entry in entries})
            | Q(ruleset_id__in={link.ruleset_id for row in links.values() for link in row})
            | Q(entry_id__in=[entry.pk for entry in entries])
        )
    by_owner = _by_owner(static_segments.only(*_SEGMENT_COLUMNS))
    cast_npcs = {member.npc.pk: member.npc for cast in casts.values() for member in cast}
    npc_segments = _by_owner(
        Segment.objects.filter(active=True, scope=Scope.NPC, npc_id__in=list(cast_npcs)).only(
            *_SEGMENT_COLUMNS
        )
        if cast_npcs
        else []
    )
    npcs = {
        npc.slug: NpcBundle(npc.slug, npc.name, tuple(npc_segments.get((Scope.NPC, pk), ())))
        for pk, npc in cast_npcs.items()
    }
    return [
        CastEntry(
            entry=entry,
            bundle=_bundle(entry, links.get(entry.pk, []), by_owner),
            cast=tuple((m.npc.slug, m.tier) for m in casts.get(entry.pk, [])),
            npcs={m.npc.slug: npcs[m.npc.slug] for m in casts.get(entry.pk, [])},
        )
        for entry in entries
    ]


def load_content(
    entry_slug: str, npc_slugs: Sequence[str]
) -> tuple[EntryBundle | None, dict[str, NpcBundle]]:
    """The entry's static content and the named NPCs, from the cache or the database."""
    generation = content_cache.generation()
    entry_key = content_cache.key(generation, "entry", entry_slug)
    npc_keys = {slug: content_cache.key(generation, "npc", slug) for slug in npc_slugs}
    cached = content_cache.get_many([entry_key, *npc_keys.values()])
    bundle = cached.get(entry_key)
    npcs = {slug: cached[k] for slug, k in npc_keys.items() if k in cached}
    if bundle is not None and len(npcs) == len(npc_keys):
        return bundle, npcs
    bundle, npcs = _load_from_database(entry_slug, npc_slugs)
    if bundle is not None:
        content_cache.set_many(
            {entry_key: bundle, **{npc_keys[slug]: value for slug, value in npcs.items()}}
        )
    return bundle, npcs


Loader = Callable[[str, Sequence[str]], tuple[EntryBundle | None, dict[str, NpcBundle]]]
"""Where an assembly gets its content: ``load_content`` (the working copy) or a release's."""

LoreLoader = Callable[[str], assembler.LoreBook | None]
"""Where an assembly gets its lore: the book for a world (by slug), or None for no lore.
Lore reads content, not the other way round, so the caller passes it in (the working
copy's is ``promptadmin.lore.selectors.lore_book``)."""


def conversation_history(key: str, budget: int | None = None) -> assembler.History:
    """Conversation ``key``'s history for a ``budget`` (default: the conversation's own):
    its newest ready summary and the messages after it that could fit; AssemblyInputError
    naming ``conversation`` when there is no such conversation."""
    try:
        return history_for_assembly(key, budget)
    except ObjectDoesNotExist:  # the conversation (its model is not ours to name)
        raise AssemblyInputError({"conversation": f"No conversation with key '{key}'."}) from None


def build_request(
    params: AssembleParams, *, load: Loader = load_content, lore: LoreLoader | None = None
) -> assembler.AssemblyRequest:
    """Resolve the slugs in ``params`` into an assembler request, or say what is wrong.

    ``lore`` gives the lore of the entry's world (none without it, or with the request's
    lore switched off)."""
    npc_slugs = [slug for slug, _tier in params.npcs]
    bundle, npcs = load(params.entry, npc_slugs)
    errors: dict[str, str] = {}
    if bundle is None:
        errors["entry"] = f"No entry with slug '{params.entry}'."
    elif params.world is not None and params.world != bundle.world_slug:
        errors["world"] = (
            f"Entry '{params.entry}' belongs to world '{bundle.world_slug}', not '{params.world}'."
        )
    unknown = [slug for slug in npc_slugs if slug not in npcs]
    if unknown:
        errors["npcs"] = f"Unknown NPC slugs: {', '.join(unknown)}."
    history = None
    if params.conversation is not None:
        try:
            history = conversation_history(params.conversation, params.history_budget)
        except AssemblyInputError as exc:
            errors.update(exc.errors)
    if errors:
        raise AssemblyInputError(errors)
    assert bundle is not None
    book = lore(bundle.world_slug) if lore is not None and params.lore.enabled else None
    return request_for(bundle, npcs, params, history, book)


def request_for(
    bundle: EntryBundle,
    npcs: Mapping[str, NpcBundle],
    params: AssembleParams,
    history: assembler.History | None = None,
    lore_book: assembler.LoreBook | None = None,
) -> assembler.AssemblyRequest:
    """The assembler's request for loaded content; a bad value is named by its field."""
    try:
        return assembler.AssemblyRequest(
            core=bundle.core,
            rulesets=bundle.rulesets,
            world=bundle.world,
            entry=bundle.entry,
            entry_start=bundle.entry_start,
            npcs=[
                assembler.Npc(slug, npcs[slug].name, tier, npcs[slug].segments)
                for slug, tier in params.npcs
            ],
            state=params.state,
            first_turn=params.first_turn,
            token_budget=params.token_budget,
            npc_budget=params.npc_budget,
            policy=assembler.Policy(floors=params.floors, block_format=params.block_format),
            strict=params.strict,
            history=history,
            lore=params.lore,
            lore_book=lore_book,
        )
    except assembler.RequestError as exc:
        raise AssemblyInputError({exc.field: str(exc)}) from None


def assemble_prompt(
    params: AssembleParams, *, load: Loader = load_content, lore: LoreLoader | None = None
) -> assembler.AssemblyResult:
    """Assemble the prompt for ``params``; raises AssemblyInputError or OverBudgetError."""
    return assembler.assemble(build_request(params, load=load, lore=lore), tokenizer())


def preview_prompt(
    params: AssembleParams,
    *,
    include_inactive: bool = False,
    load: Loader = load_content,
    lore: LoreLoader | None = None,
) -> Preview:
    """Assemble as the API would, and list every segment considered with its fate.

    Inactive segments are never assembled; with ``include_inactive`` they are listed
    (fate ``inactive``) so authors see what is switched off (the working copy only: a
    release holds active segments alone).
    """
    result = assemble_prompt(params, load=load, lore=lore)
    rows = [fate.to_dict() for fate in result.segments]
    if include_inactive and load is load_content:
        entry = Entry.objects.get(slug=params.entry)
        ruleset_ids = list(entry.ruleset_links.values_list("ruleset_id", flat=True))
        npc_slugs = dict(
            NPC.objects.filter(slug__in=[slug for slug, _ in params.npcs]).values_list("pk", "slug")
        )
        inactive = _segments_query(entry, ruleset_ids, list(npc_slugs), active=False)
        for row in inactive.filter(scope__in=SEGMENT_SCOPES):
            rows.append(
                {
                    "id": row.pk,
                    "scope": row.scope,
                    "npc": npc_slugs.get(row.npc_id) if row.npc_id else None,
                    "title": segment_for_assembly(row).label,
                    "tokens": token_count(row),
                    "fate": "inactive",
                }
            )
    return Preview(result=result, segments=rows)
