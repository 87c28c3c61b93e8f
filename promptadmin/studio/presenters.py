"""Shape an assembly preview for the page: blocks per layer, token bars, steps in words.

Nothing here decides anything about prompts: it arranges what ``assembler`` returned.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from assembler.explain import (
    CHANGE_KIND_WORDS,
    explain_result,
    layer_status_words,
    outcome_counts,
)
from assembler.render import BLOCK_SEPARATOR, LAYER_TITLES, render_state
from assembler.result import Meta, TruncationStep
from promptadmin.content.assembly import Preview

# The studio lists all of an entry's rulesets under one heading.
LAYER_LABELS = {**LAYER_TITLES, "ruleset": "Rulesets"}


def percent(part: int, whole: int) -> float:
    """``part`` as a percentage of ``whole``, capped at 100 (a whole of 0 is full)."""
    if whole <= 0:
        return 100.0 if part else 0.0
    return round(min(100.0, 100.0 * part / whole), 1)


@dataclass
class Layer:
    scope: str
    label: str
    status: str
    tokens: int
    percent: float  # of the token budget
    share: float = 0.0  # of the bar's width (the budget, or the prompt when it is over)
    offset: float = 0.0  # where the layer starts on that bar, as a share of its width
    text: str = ""
    segments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status_words(self) -> str:
        return layer_status_words(self.scope, self.status)  # type: ignore[arg-type]


@dataclass
class Step(TruncationStep):
    """A step of the trace as the page shows it: numbered, with its segment's editor.

    ``explanation`` is the cut in an author's words, from the assembler (one place for
    the API and us)."""

    number: int = 0
    segment_url: str | None = None


@dataclass
class Lost:
    """One thing the prompt lost in the end (an item of ``meta.outcome``), for the page."""

    kind: str
    key: str
    scope: str
    explanation: str
    segment_url: str | None
    npc_url: str | None

    @property
    def kind_words(self) -> str:
        return CHANGE_KIND_WORDS[self.kind]  # type: ignore[index]


@dataclass
class PreviewPage:
    prompt: str
    # The assembly's own report: its counts, budgets, encoding and hash are shown as is.
    meta: Meta
    layers: list[Layer]
    blocks: list[Layer]
    steps: list[Step]
    npcs: list[dict[str, Any]]
    lints: list[dict[str, str]]
    segments: list[dict[str, Any]]
    summary: str
    # What was lost in the end, and its counts: both from meta.outcome, so they agree.
    outcome: list[Lost] = field(default_factory=list)
    outcome_counts: str = "nothing cut"
    # Every lore entry triggered, what became of it, and its trigger in the turn's text.
    lore: list[dict[str, Any]] = field(default_factory=list)
    # What joins the blocks into the prompt (the page joins them to show it as one text).
    separator: str = BLOCK_SEPARATOR

    @property
    def fate_counts(self) -> str:
        """How many segments considered met each fate: "12 included, 3 skipped"."""
        counts = Counter(row["fate"] for row in self.segments)
        return ", ".join(f"{count} {fate}" for fate, count in counts.most_common())

    @property
    def used_percent(self) -> float:
        return percent(self.meta.tokens, self.meta.token_budget)

    @property
    def empty_layers(self) -> list[str]:
        """Layers with nothing to show; a layer left out to fit the budget is not empty."""
        return [layer.label for layer in self.layers if layer.status == "empty"]

    @property
    def cuts(self) -> list[Step]:
        """The trace's steps that took something out (put-backs apart)."""
        return [step for step in self.steps if step.action != "restored"]

    @property
    def put_back(self) -> list[Step]:
        return [step for step in self.steps if step.action == "restored"]

    @property
    def announcement(self) -> str:
        """What a screen reader hears after each update: a summary, never the prompt."""
        return f"Preview updated: {self.summary}."


def segment_url(segment_id: int) -> str:
    return reverse("studio:segment_edit", args=[segment_id])


def segment_urls() -> Callable[[int], str]:
    """:func:`segment_url` for many segments at the cost of one ``reverse`` (hundreds of
    them were most of the time spent shaping a large preview)."""
    marker = "918273645"
    head, found, tail = segment_url(int(marker)).rpartition(marker)
    if not found:
        return segment_url
    return lambda segment_id: f"{head}{int(segment_id)}{tail}"


# Context shown around a lore trigger in the turn's text, in characters on each side.
TRIGGER_CONTEXT = 40


def lore_rows(reports: list[Any], state: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``meta.lore`` for the page: each entry with its link and, when the turn's text
    (``state``: the request's dynamic layers) triggered it, that text around the key with
    the key marked."""
    texts = {scope: render_state(value) for scope, value in (state or {}).items()}
    rows = []
    for report in reports:
        row = {**report.to_dict(), "url": reverse("studio:lore_edit", args=[report.id])}
        trigger = report.trigger
        text = texts.get(trigger.source)
        if text and trigger.start is not None and trigger.end is not None:
            start = max(0, trigger.start - TRIGGER_CONTEXT)
            end = min(len(text), trigger.end + TRIGGER_CONTEXT)
            row["excerpt"] = {
                "before": ("…" if start else "") + text[start : trigger.start],
                "key": text[trigger.start : trigger.end],
                "after": text[trigger.end : end] + ("…" if end < len(text) else ""),
            }
        rows.append(row)
    return rows


def present(
    preview: Preview,
    npc_names: dict[str, str] | None = None,
    state: dict[str, Any] | None = None,
) -> PreviewPage:
    """Everything the preview page shows, from one assembly (``state``: the request's
    dynamic layers, where lore triggers are shown)."""
    npc_names = npc_names or {}
    url_of = segment_urls()
    result = preview.result
    meta = result.meta
    segments = [
        {
            **row,
            "url": url_of(row["id"]),
            "layer": LAYER_LABELS.get(row["scope"], row["scope"]),
        }
        for row in preview.segments
    ]
    layers = []
    for scope in meta.order:
        report = meta.layers[scope]
        layers.append(
            Layer(
                scope=scope,
                label=LAYER_LABELS.get(scope, scope),
                status=report.status,
                tokens=report.tokens,
                percent=percent(report.tokens, meta.token_budget),
                segments=[
                    row for row in segments if row["scope"] == scope and row["fate"] == "included"
                ],
            )
        )
    scale = max(meta.token_budget, sum(layer.tokens for layer in layers))
    start = 0.0
    for layer in layers:
        layer.share = percent(layer.tokens, scale)
        layer.offset = start
        start += layer.share
    by_scope = {layer.scope: layer for layer in layers}
    blocks = []
    for block in result.blocks:
        layer = by_scope[block.scope]
        layer.text = block.text
        blocks.append(layer)
    steps = [
        Step(
            **step.to_dict(),
            number=number,
            segment_url=url_of(step.segment_id) if step.segment_id else None,
        )
        for number, step in enumerate(meta.truncated, start=1)
    ]
    npcs = [
        {
            **npc.to_dict(),
            "name": npc_names.get(npc.npc, npc.npc),
            "changed": npc.tier != npc.requested_tier or npc.status == "dropped",
            "url": reverse("studio:npc_edit", args=[npc.npc]),
        }
        for npc in meta.npcs
    ]
    return PreviewPage(
        prompt=result.prompt,
        meta=meta,
        layers=layers,
        blocks=blocks,
        steps=steps,
        npcs=npcs,
        lints=[lint.to_dict() for lint in meta.lints],
        segments=segments,
        summary=explain_result(meta),
        outcome=[
            Lost(
                kind=change.kind,
                key=change.key,
                scope=change.scope,
                explanation=change.explanation,
                segment_url=url_of(change.segment_id) if change.segment_id else None,
                npc_url=reverse("studio:npc_edit", args=[change.npc]) if change.npc else None,
            )
            for change in meta.outcome.changes()
        ],
        outcome_counts=outcome_counts(meta.outcome),
        lore=lore_rows(meta.lore, state),
    )


@dataclass(frozen=True)
class Piece:
    """A run of a text, marked when a lore key matched it."""

    text: str
    marked: bool


def highlighted(text: str, spans: list[tuple[int, int]]) -> list[Piece]:
    """``text`` cut into runs, those inside any of ``spans`` (start, end) marked; spans
    that overlap or touch make one mark.

    >>> [(p.text, p.marked) for p in highlighted("a bell tower", [(2, 6), (2, 12)])]
    [('a ', False), ('bell tower', True)]
    """
    pieces: list[Piece] = []
    position = 0
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in merged:
        if start > position:
            pieces.append(Piece(text[position:start], False))
        pieces.append(Piece(text[start:end], True))
        position = end
    if position < len(text):
        pieces.append(Piece(text[position:], False))
    return pieces
