"""The health of every entry, worked out in the background after content changes.

Each entry is assembled at the default budgets as a first turn and a later turn, with its
cast: what either turn leaves out (segments, NPCs dropped or lowered) and the lint
findings are stored per entry (:class:`EntryHealth`), with the segment counts per scope
and the active segments without text (:class:`ContentCheck`). The dashboard reads what is
stored and says when a check is under way; no page ever works it out.

After a content change commits, :func:`health_changed` asks for a check and enqueues the
task; :func:`entry_health_check` (the task's) claims the check, so one runs at a time, and
goes on until it has caught up with every change asked for. An entry whose content (its
own, its world's, its rulesets', the core's, its cast's) did not change since its last
check keeps its findings without being assembled again (:func:`fingerprints` says which
did, from ids and revisions, reading no text): after a one-segment edit, only the
entries that segment reaches are loaded and assembled.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

import assembler
from assembler.explain import segment_name
from promptadmin.content.assembly import AssembleParams, CastEntry, all_entries, request_for
from promptadmin.content.models import (
    NPC,
    SEGMENT_SCOPES,
    ContentCheck,
    Entry,
    EntryHealth,
    EntryNpc,
    EntryRuleset,
    Ruleset,
    Scope,
    Segment,
    World,
)
from promptadmin.core.tokens import tokenizer

logger = logging.getLogger(__name__)

# The task, found by name in Celery's registry (the task module imports this one).
TASK = "promptadmin.content.tasks.check_entry_health"
STATE = 1  # the primary key of the one ContentCheck row
# Active segments without text listed at most (they are rare: the services refuse them).
BLANK_SHOWN = 50
TURNS = (("First turn", True), ("Later turn", False))
# Entries loaded (with all the content they use) at a time.
LOAD_BATCH = 200


def _state() -> ContentCheck:
    state, _created = ContentCheck.objects.get_or_create(pk=STATE)
    return state


def health_changed() -> None:
    """Content changed (and committed): ask for a check, and enqueue it."""
    updated = ContentCheck.objects.filter(pk=STATE).update(requested=F("requested") + 1)
    if not updated:
        ContentCheck.objects.get_or_create(pk=STATE, defaults={"requested": 1})
    _enqueue()


def health_wanted(state: ContentCheck | None) -> None:
    """A page found the findings out of date: make sure a check is on its way (one ask a
    minute at most; the check itself catches up with every change)."""
    if state is not None and (state.up_to_date or state.running_since is not None):
        return
    if cache.add(ASKED_KEY, 1, timeout=ASKED_SECONDS):
        _enqueue()


ASKED_KEY = "entry-health:asked"
ASKED_SECONDS = 60


def _enqueue() -> None:
    """Send the task to the workers; without a broker, run it in this process (on a
    daemon thread, as summaries are: a command that changed content does not wait for it
    to exit; or here and now in the test suite)."""
    task = current_app.tasks[TASK]
    if current_app.conf.task_always_eager:
        if settings.SUMMARIZER_IN_BACKGROUND:
            threading.Thread(
                target=_run_in_background, args=(task,), name="entry-health", daemon=True
            ).start()
        else:
            task.apply(throw=False)
        return
    try:
        task.delay()
    except Exception:  # the broker is down: the next change asks again
        logger.exception("the entry health check could not be enqueued")


def _run_in_background(task: Any) -> None:
    try:
        task.apply(throw=False)
    finally:
        connections.close_all()


def _claim() -> bool:
    """Take the check: nobody runs it, or a worker that died longer ago than a task may
    run did."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
    _state()
    return (
        ContentCheck.objects.filter(pk=STATE)
        .filter(Q(running_since__isnull=True) | Q(running_since__lt=stale))
        .update(running_since=now)
        == 1
    )


def entry_health_check() -> int:
    """Check what changed until the findings have caught up with every change asked for
    (another worker's check in progress: nothing to do here). Returns how many entries
    were assembled."""
    assembled = 0
    cache.delete(ASKED_KEY)
    while _claim():
        try:
            while True:
                wanted = ContentCheck.objects.values_list("requested", flat=True).get(pk=STATE)
                assembled += check_all()
                done = ContentCheck.objects.filter(pk=STATE, requested=wanted).update(
                    checked=wanted, checked_at=timezone.now()
                )
                if done:
                    break
        finally:
            ContentCheck.objects.filter(pk=STATE).update(running_since=None)
        # A change that came as the claim was let go finds no one to run it: look again.
        state = _state()
        if state.checked >= state.requested:
            break
    return assembled


def fingerprints() -> dict[int, str]:
    """Each entry's fingerprint: a hash of what its findings depend on (its segments, its
    world's, its rulesets', the core's, its cast's: by id, revision and token count; the
    objects' revisions; the cast's tiers; the tokenizer), read without any text, in a
    handful of queries over integer columns."""
    hashes = _owner_hashes()

    def of(scope: str, owner: int | None) -> str:
        return hashes.get((scope, owner), "-")

    revisions = {
        model: dict(model.objects.values_list("pk", "revision")) for model in (World, Ruleset, NPC)
    }
    links: dict[int, list[int]] = {}
    for entry_id, ruleset_id in EntryRuleset.objects.order_by("entry_id", "position").values_list(
        "entry_id", "ruleset_id"
    ):
        links.setdefault(entry_id, []).append(ruleset_id)
    casts: dict[int, list[tuple[int, int]]] = {}
    for entry_id, npc_id, tier in EntryNpc.objects.order_by("entry_id", "position").values_list(
        "entry_id", "npc_id", "tier"
    ):
        casts.setdefault(entry_id, []).append((npc_id, tier))
    found = {}
    common = f"{tokenizer().name}|{of(Scope.CORE, None)}"
    for pk, revision, world in Entry.objects.values_list("pk", "revision", "world_id"):
        parts = [
            common,
            f"e{pk}:{revision}:{of(Scope.ENTRY, pk)}:{of(Scope.ENTRY_START, pk)}",
            f"w{world}:{revisions[World].get(world)}:{of(Scope.WORLD, world)}",
            *(
                f"r{ruleset}:{revisions[Ruleset].get(ruleset)}:{of(Scope.RULESET, ruleset)}"
                for ruleset in links.get(pk, [])
            ),
            *(
                f"n{npc}:{tier}:{revisions[NPC].get(npc)}:{of(Scope.NPC, npc)}"
                for npc, tier in casts.get(pk, [])
            ),
        ]
        found[pk] = hashlib.sha256("|".join(parts).encode()).hexdigest()
    return found


def _owner_hashes() -> dict[tuple[str, int | None], str]:
    """(scope, owner id) -> a hash of its active segments' ids, revisions and token counts.
    PostgreSQL sums them up itself (about 3,000 rows come back for 100,000 segments, not
    every segment); elsewhere they are read and hashed here."""
    if connections["default"].vendor == "postgresql":
        table = connections["default"].ops.quote_name(Segment._meta.db_table)
        with connections["default"].cursor() as cursor:
            cursor.execute(
                f"SELECT scope, COALESCE(ruleset_id, world_id, entry_id, npc_id),"
                f" md5(string_agg(concat(id, ':', revision, ':', COALESCE(token_count::text,"
                f" 'None')), ',' ORDER BY id)) FROM {table}"
                f" WHERE active AND scope = ANY(%s) GROUP BY 1, 2",
                [[str(scope) for scope in SEGMENT_SCOPES]],
            )
            return {(scope, owner): found for scope, owner, found in cursor.fetchall()}
    owned: dict[tuple[str, int | None], list[str]] = {}
    rows = (
        Segment.objects.filter(active=True, scope__in=SEGMENT_SCOPES)
        .order_by("id")
        .values_list(
            "scope", "ruleset_id", "world_id", "entry_id", "npc_id", "id", "revision", "token_count"
        )
    )
    for scope, ruleset, world, entry, npc, pk, revision, tokens in rows.iterator(chunk_size=5000):
        owner = ruleset or world or entry or npc
        owned.setdefault((scope, owner), []).append(f"{pk}:{revision}:{tokens}")
    return {key: hashlib.md5(",".join(parts).encode()).hexdigest() for key, parts in owned.items()}


def _turn_loss(
    turn: str, result: assembler.AssemblyResult, npc_names: dict[str, str]
) -> dict[str, Any] | None:
    lost = [
        segment_name(fate.scope, fate.id, fate.title)
        for fate in result.segments
        if fate.fate == "dropped"
    ]
    for npc in result.meta.npcs:
        name = npc_names.get(npc.npc, npc.npc)
        if npc.status == "dropped":
            lost.append(f"NPC {name} (dropped)")
        elif npc.status == "lowered":
            lost.append(f"NPC {name} (tier {npc.requested_tier} lowered to {npc.tier})")
    if not lost:
        return None
    largest = max(result.segments, key=lambda fate: fate.tokens)
    cause = (
        f"{segment_name(largest.scope, largest.id, largest.title)} "
        f"({largest.tokens} tokens) is the largest"
    )
    return {"turn": turn, "lost": lost, "cause": cause}


def findings(item: CastEntry) -> dict[str, Any]:
    """An entry's findings at the default budgets: errors, warnings, losses per turn."""
    npc_names = {slug: bundle.name for slug, bundle in item.npcs.items()}
    losses = []
    lints: list[assembler.Lint] = []
    for turn, first_turn in TURNS:
        params = AssembleParams(entry=item.entry.slug, first_turn=first_turn, npcs=item.cast)
        result = assembler.assemble(request_for(item.bundle, item.npcs, params), tokenizer())
        lints += [lint for lint in result.meta.lints if lint not in lints]
        loss = _turn_loss(turn, result, npc_names)
        if loss is not None:
            losses.append(loss)
    return {
        "errors": [lint.message for lint in lints if lint.level == "error"],
        "warnings": [lint.message for lint in lints if lint.level == "warning"],
        "losses": losses,
    }


def check_all() -> int:
    """Assemble every entry whose content changed since its last check and store what it
    finds; store the counts per scope and the blank segments. Returns how many entries
    were assembled."""
    current = fingerprints()
    known = dict(EntryHealth.objects.values_list("entry_id", "fingerprint"))
    stale = [pk for pk, fingerprint in current.items() if known.get(pk) != fingerprint]
    changed: list[EntryHealth] = []
    now = timezone.now()
    for start in range(0, len(stale), LOAD_BATCH):
        for item in all_entries(stale[start : start + LOAD_BATCH]):
            found = findings(item)
            changed.append(
                EntryHealth(
                    entry_id=item.entry.pk,
                    fingerprint=current[item.entry.pk],
                    errors=found["errors"],
                    warnings=found["warnings"],
                    losses=found["losses"],
                    error_count=len(found["errors"]),
                    warning_count=len(found["warnings"]),
                    loss_count=len(found["losses"]),
                    checked_at=now,
                )
            )
    counts: dict[str, list[int]] = {}
    for row in Segment.objects.order_by().values("scope", "active").annotate(n=Count("id")):
        counts.setdefault(row["scope"], [0, 0])[0 if row["active"] else 1] += row["n"]
    blank = list(
        Segment.objects.filter(active=True, content__regex=r"^\s*$")
        .order_by("id")
        .values_list("id", "scope")[:BLANK_SHOWN]
    )
    with transaction.atomic():
        EntryHealth.objects.bulk_create(
            changed,
            update_conflicts=True,
            unique_fields=["entry"],
            update_fields=[
                "fingerprint",
                "errors",
                "warnings",
                "losses",
                "error_count",
                "warning_count",
                "loss_count",
                "checked_at",
            ],
            batch_size=500,
        )
        ContentCheck.objects.filter(pk=STATE).update(
            scope_counts=counts, blank_segments=[list(row) for row in blank]
        )
    return len(changed)


# Reads for the dashboard.


def health_state() -> ContentCheck | None:
    """How far the check has come (None: content was never checked)."""
    return ContentCheck.objects.filter(pk=STATE).first()


def health_totals() -> dict[str, int]:
    """Entries checked, entries losing content, lint errors across them: one query."""
    totals = EntryHealth.objects.aggregate(
        checked=Count("entry"),
        losing=Count("entry", filter=Q(loss_count__gt=0)),
        errors=Sum("error_count", default=0),
    )
    return {name: int(value or 0) for name, value in totals.items()}


def entries_with_findings() -> Any:
    """Entries with anything to say, the worst first (losses, errors, then warnings)."""
    return (
        EntryHealth.objects.select_related("entry")
        .filter(Q(loss_count__gt=0) | Q(error_count__gt=0) | Q(warning_count__gt=0))
        .order_by("-loss_count", "-error_count", "-warning_count", "entry")
    )
