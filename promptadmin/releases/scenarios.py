"""Scenarios: the prompts a change is judged by.

Saved scenarios are preview configurations authors keep, with expectations. Each entry
also has implicit scenarios (:func:`implicit_scenarios`: the first and a later turn with
its cast), so a change is judged on every entry even before anyone saves one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.db import connection

import assembler
from assembler.impact import Expectation, failure, parse_expectation
from assembler.replies import is_reply_expectation
from assembler.request import AssembleParams, LoreOptions, RequestError, parse_lore_options
from promptadmin.content.assembly import (
    AssemblyInputError,
    Loader,
    LoreLoader,
    assemble_prompt,
)
from promptadmin.content.models import EntryNpc
from promptadmin.releases.models import Scenario, WorkingStamp


@dataclass(frozen=True)
class ScenarioSpec:
    """One scenario, saved (``scenario_id``) or implicit (None)."""

    name: str
    entry: str
    first_turn: bool = False
    npcs: tuple[tuple[str, int], ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)
    token_budget: int = assembler.DEFAULT_TOKEN_BUDGET
    npc_budget: int = assembler.DEFAULT_NPC_BUDGET
    expectations: tuple[Expectation, ...] = ()
    scenario_id: int | None = None
    # An implicit scenario's NPCs are its entry's cast: one a version lacks is left out.
    cast_npcs: bool = False
    lore: LoreOptions = field(default_factory=LoreOptions)

    def params(self) -> AssembleParams:
        return AssembleParams(
            entry=self.entry,
            first_turn=self.first_turn,
            token_budget=self.token_budget,
            npc_budget=self.npc_budget,
            npcs=self.npcs,
            state=dict(self.state),
            lore=self.lore,
        )

    def identity(self) -> list[Any]:
        """Everything that makes this scenario's row of a report, as JSON values (the
        report cache's key holds it)."""
        return [self.name, self.scenario_id, *self.judged()]

    def judged(self) -> list[Any]:
        """What this scenario's prompt and the verdicts on it follow from, whatever it is
        called: its request and its expectations, as JSON values (with the bundles
        assembled, the key of a run kept for any scenario alike)."""
        return [
            self.entry,
            self.first_turn,
            [list(npc) for npc in self.npcs],
            dict(self.state),
            self.token_budget,
            self.npc_budget,
            [expectation.to_dict() for expectation in self.expectations],
            self.cast_npcs,
            self.lore.to_dict(),
        ]

    def preview_query(self) -> str:
        """The studio preview's query string for this scenario (release not included)."""
        query: list[tuple[str, Any]] = [
            ("entry", self.entry),
            ("token_budget", self.token_budget),
            ("npc_budget", self.npc_budget),
        ]
        if self.first_turn:
            query.append(("first_turn", "on"))
        for slug, tier in self.npcs:
            query += [("npc", slug), ("tier", tier)]
        query += lore_query(self.lore)
        for scope, value in self.state.items():
            if value is not None:
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                query.append((scope, text))
        return urlencode(query)


def from_model(scenario: Scenario) -> ScenarioSpec:
    return ScenarioSpec(
        name=scenario.name,
        entry=scenario.entry,
        first_turn=scenario.first_turn,
        npcs=tuple((item["npc"], item.get("tier", 0)) for item in scenario.npcs),
        state=scenario.state,
        token_budget=scenario.token_budget,
        npc_budget=scenario.npc_budget,
        expectations=tuple(
            parse_expectation(item)
            for item in scenario.expectations
            if not is_reply_expectation(item)  # a playtest checks those, on replies
        ),
        scenario_id=scenario.pk,
        lore=stored_lore(scenario),
    )


def stored_lore(scenario: Scenario) -> LoreOptions:
    """The scenario's ``lore`` option (checked when saved; the defaults for a value no
    longer valid, as limits may narrow)."""
    try:
        return parse_lore_options(scenario.lore)
    except RequestError:
        return LoreOptions()


def lore_query(options: LoreOptions) -> list[tuple[str, Any]]:
    """The studio preview's query parameters for a request's ``lore`` option (only what
    differs from the defaults: ``lore_budget``, ``lore`` ``off``...)."""
    return [
        ("lore" if name == "enabled" else f"lore_{name}", "off" if value is False else value)
        for name, value in options.to_dict().items()
    ]


def implicit_scenarios(entry: str, cast: Sequence[tuple[str, int]] = ()) -> list[ScenarioSpec]:
    """An entry's implicit scenarios: the first turn and a later turn, with its cast (the
    entry's usual NPCs, in priority order, at their usual tiers), at the default budgets.

    Casts are the working copy's (a release does not hold them), so an NPC of the cast
    that one side of a comparison lacks is left out of that side's prompt.
    """
    npcs = tuple(cast)
    return [
        ScenarioSpec(
            name=f"{entry}: first turn",
            entry=entry,
            first_turn=True,
            npcs=npcs,
            cast_npcs=True,
        ),
        ScenarioSpec(
            name=f"{entry}: later turn",
            entry=entry,
            first_turn=False,
            npcs=npcs,
            cast_npcs=True,
        ),
    ]


def casts(entries: Iterable[str]) -> dict[str, list[tuple[str, int]]]:
    """The cast of each entry named (slugs), as ``(npc slug, tier)`` pairs; one query."""
    slugs = set(entries)
    found: dict[str, list[tuple[str, int]]] = {slug: [] for slug in slugs}
    if not slugs:
        return found
    links = EntryNpc.objects.filter(entry__slug__in=slugs).order_by("entry_id", "position")
    for entry, npc, tier in links.values_list("entry__slug", "npc__slug", "tier"):
        found[entry].append((npc, tier))
    return found


def scenarios_for(entries: Iterable[str]) -> list[ScenarioSpec]:
    """Every saved scenario, then the implicit ones of ``entries`` (slugs), with their
    casts (two queries in all, one without entries)."""
    saved = [from_model(scenario) for scenario in Scenario.objects.order_by("name")]
    cast = casts(entries)
    implicit = [spec for slug in sorted(cast) for spec in implicit_scenarios(slug, cast[slug])]
    return saved + implicit


# The stamps PostgreSQL replaces on every write of what scenarios are made of (migration
# releases 0012): the saved scenarios; the casts (and the slugs naming their entries and NPCs).
JUDGED_STAMPS = ("scenarios", "casts")


class Judged:
    """The scenarios a comparison judges (:func:`scenarios_for` the entries of both
    versions), read when first needed; and what they follow from beside the two versions'
    content (which names the entries): :meth:`identity`."""

    def __init__(self, entries: Iterable[str]) -> None:
        self._entries = list(entries)
        self._specs: list[ScenarioSpec] = []
        self._read = False

    def specs(self) -> list[ScenarioSpec]:
        if not self._read:
            self._specs, self._read = scenarios_for(self._entries), True
        return self._specs

    def identity(self) -> Any:
        """The stamps of the saved scenarios and the casts (PostgreSQL: one small query,
        none of them read), else every scenario's identity."""
        if connection.vendor == "postgresql":
            found = dict(
                WorkingStamp.objects.filter(kind__in=JUDGED_STAMPS, owner=0).values_list(
                    "kind", "stamp"
                )
            )
            if len(found) == len(JUDGED_STAMPS):
                return [str(found[kind]) for kind in JUDGED_STAMPS]
        return [spec.identity() for spec in self.specs()]


@dataclass(frozen=True)
class Check:
    """One expectation of a scenario, run: ``reason`` says why it fails (None: it holds)."""

    expectation: str
    reason: str | None = None

    @property
    def passed(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class Run:
    """A scenario assembled from one version of the content, every expectation checked.

    ``error``: the scenario could not be assembled there (an entry or NPC it names is
    missing), so no expectation holds.
    """

    tokens: int | None = None
    checks: tuple[Check, ...] = ()
    error: str | None = None

    @property
    def passed(self) -> int:
        return sum(check.passed for check in self.checks)

    @property
    def failed(self) -> int:
        return len(self.checks) - self.passed


def run(spec: ScenarioSpec, load: Loader, lore: LoreLoader | None = None) -> Run:
    """Assemble ``spec`` from the content ``load`` reads, with the lore ``lore`` gives
    (see ``serving.resolve``), and check each of its expectations, those that hold
    included."""
    try:
        result = assemble_prompt(spec.params(), load=load, lore=lore)
    except AssemblyInputError as exc:
        return Run(error="; ".join(exc.errors.values()))
    except assembler.OverBudgetError as exc:
        return Run(error=str(exc))
    return Run(
        tokens=result.meta.tokens,
        checks=tuple(Check(e.description, failure(e, result)) for e in spec.expectations),
    )
