"""Plain words for authors: what was cut from a prompt, and why.

Assembly writes each truncation step's ``explanation`` with these functions, so the studio,
the API and scripts all say the same thing. Layers are named by their titles
(:data:`assembler.render.LAYER_TITLES`), segments by number and title, NPCs by name.

>>> old_wars = segment_name("world", 12, "Old wars")
>>> print(left_out(old_wars, 33, prompt_over(29, 300, "the input was shortened")))
... # doctest: +NORMALIZE_WHITESPACE
World segment #12 'Old wars' (33 tokens) left out: the prompt was still 29 tokens over
the 300-token budget after the input was shortened
"""

from __future__ import annotations

from collections.abc import Mapping

from assembler.render import LAYER_TITLES
from assembler.request import DYNAMIC_SCOPES, HISTORY_SCOPE, LORE_SCOPE
from assembler.result import ChangeKind, LayerReport, LayerStatus, Meta, Outcome, OutcomeReason

_INCLUDED = "included"
_LEFT_OUT = "left out to fit the budget"
LAYER_STATUS_WORDS: Mapping[str, Mapping[LayerStatus, str]] = {
    # Stored segments, left out whole (entry_start is skipped after the first turn).
    "segments": {
        "included": _INCLUDED,
        "trimmed": "some segments left out",
        "dropped": _LEFT_OUT,
        "empty": "empty (no segments)",
        "skipped": "skipped (not the first turn)",
    },
    # NPCs, shown at a lower tier or left out, under the NPC budget or the token budget.
    "npc": {
        "included": _INCLUDED,
        "trimmed": "some NPCs shown at a lower tier or left out",
        "dropped": "every NPC left out to fit the budgets",
        "empty": "empty (no NPC segments to show)",
    },
    # Lore entries the turn activated, left out whole (by the lore budget or the token
    # budget); entries their group left out do not count.
    "lore": {
        "included": _INCLUDED,
        "trimmed": "some entries left out",
        "dropped": "every entry left out to fit the budgets",
        "empty": "empty (no entry triggered)",
    },
    # The caller's text, cut at a token boundary.
    "text": {
        "included": _INCLUDED,
        "trimmed": "shortened",
        "dropped": _LEFT_OUT,
        "empty": "empty (nothing given)",
    },
    # The conversation's summary and messages, giving way oldest first.
    "history": {
        "included": _INCLUDED,
        "trimmed": "shortened",
        "dropped": _LEFT_OUT,
        "empty": "empty (no conversation)",
    },
}
"""What each layer status means, in plain words, by the kind of layer (see
:func:`layer_status_words`)."""

# How a dynamic layer is named inside a sentence ("after the input was shortened").
_TEXT_NAMES = {
    "game_state": "the game state",
    "player": "the player details",
    "rng": "the RNG",
    "input": "the input",
    "history": "the conversation history",
}


def layer_title(scope: str, *, capital: bool = True) -> str:
    """The layer's title; in lower case, unless an acronym, for use inside a sentence.

    >>> layer_title("entry_start"), layer_title("entry_start", capital=False)
    ('Entry start', 'entry start')
    >>> layer_title("rng", capital=False), layer_title("npc")
    ('RNG', 'NPC')
    """
    # One NPC's segment is an "NPC segment", though the layer holding them all is "NPCs".
    title = "NPC" if scope == "npc" else LAYER_TITLES.get(scope, scope)
    if capital or title.isupper():
        return title
    return title[0].lower() + title[1:]


def segment_name(scope: str, segment_id: int, title: str, *, capital: bool = True) -> str:
    """A segment as authors know it: its layer, number and title.

    >>> print(segment_name("world", 12, "Old wars"))
    World segment #12 'Old wars'
    """
    return f"{layer_title(scope, capital=capital)} segment #{segment_id} '{title}'"


def layer_in_sentence(name: str) -> str:
    """A name that starts with a layer title (:func:`segment_name`), for inside a sentence.

    >>> layer_in_sentence("Entry start segment #4 'Bells'"), layer_in_sentence("RNG")
    ("entry start segment #4 'Bells'", 'RNG')
    """
    head = name.split(" ", 1)[0]
    return name if head.isupper() else name[0].lower() + name[1:]


def npc_name(name: str) -> str:
    """An NPC as authors know it.

    >>> npc_name("Marta Vell")
    "NPC 'Marta Vell'"
    """
    return f"NPC '{name}'"


def text_name(scope: str, *, capital: bool = True) -> str:
    """A dynamic layer inside a sentence ("the input") or at its start ("Input")."""
    return layer_title(scope) if capital else _TEXT_NAMES.get(scope, f"the {scope}")


def prompt_over(over: int, budget: int, after: str = "") -> str:
    """Why a step was taken under the token budget; ``after`` says what was done just before.

    >>> prompt_over(12, 300)
    'the prompt was 12 tokens over the 300-token budget'
    """
    if not after:
        return f"the prompt was {_tokens(over)} over the {budget}-token budget"
    return f"the prompt was still {_tokens(over)} over the {budget}-token budget after {after}"


def npc_block_over(over: int) -> str:
    """Why a step was taken under the NPC budget (named by :func:`lower_tier` or
    :func:`npc_left_out`)."""
    return f"the NPC block was {_tokens(over)} over it"


def npc_left_out(name: str, tokens: int, npc_budget: int, why: str) -> str:
    """An NPC left out whole to fit the NPC budget.

    >>> print(npc_left_out("Wyrm", 212, 50, "on its own it is larger than that budget"))
    ... # doctest: +NORMALIZE_WHITESPACE
    NPC 'Wyrm' (212 tokens) left out to fit the 50-token NPC budget: on its own it is
    larger than that budget
    """
    what = f"{npc_name(name)} ({_tokens(tokens)})"
    return f"{what} left out to fit the {npc_budget}-token NPC budget: {why}"


def left_out(what: str, tokens: int, why: str) -> str:
    """A segment or an NPC left out whole."""
    return f"{what} ({_tokens(tokens)}) left out: {why}"


def was_left_out(what: str) -> str:
    """The same, as what was done before the next step (``what`` in sentence case)."""
    return f"{what} was left out"


def shortened(scope: str, had: int, kept: int, why: str, *, below_floor: bool = False) -> str:
    """A dynamic layer cut short (``kept`` of its ``had`` tokens) or cut to nothing.

    >>> shortened("input", 420, 60, "the prompt was 360 tokens over the 600-token budget")
    'Input shortened from 420 to 60 tokens: the prompt was 360 tokens over the 600-token budget'
    """
    if not kept:
        return left_out(text_name(scope), had, why)
    floor = " (below the share it is normally kept)" if below_floor else ""
    return f"{text_name(scope)} shortened from {had} to {_tokens(kept)}{floor}: {why}"


def was_shortened(scope: str, kept: int) -> str:
    """A dynamic layer's cut, as what was done before the next step."""
    return f"{text_name(scope, capital=False)} was {'shortened' if kept else 'left out'}"


def lower_tier(name: str, tier: int, instead: int, why: str, *, npc_budget: int = 0) -> str:
    """An NPC shown with less detail; ``npc_budget`` when that budget was the reason.

    >>> print(lower_tier("Marta Vell", 1, 2, "", npc_budget=600))
    NPC 'Marta Vell' shown at tier 1 instead of 2 to fit the 600-token NPC budget
    """
    text = f"{npc_name(name)} shown at tier {tier} instead of {instead}"
    if npc_budget:
        text += f" to fit the {npc_budget}-token NPC budget"
    return f"{text}: {why}" if why else text


def was_lowered(name: str, tier: int) -> str:
    """A tier change, as what was done before the next step."""
    return f"{npc_name(name)} was shown at tier {tier}"


def fitted(budget: int, *, npc: bool = False) -> str:
    """When put-backs happen: once the block being fitted was within its budget."""
    if npc:
        return f"once the NPC block fitted the {budget}-token NPC budget"
    return f"once the prompt fitted the {budget}-token budget"


def put_back(what: str, tokens: int, budget: int, *, npc: bool = False) -> str:
    """A segment or NPC left out earlier, put back once the prompt (or NPC block) fitted.

    >>> print(put_back("World segment #3 'Harbour'", 40, 300))
    ... # doctest: +NORMALIZE_WHITESPACE
    World segment #3 'Harbour' (40 tokens) put back: once the prompt fitted the 300-token
    budget there was room for it again
    """
    when = fitted(budget, npc=npc)
    return f"{what} ({_tokens(tokens)}) put back: {when} there was room for it again"


def tier_raised(name: str, tier: int, budget: int, *, npc: bool = False) -> str:
    """An NPC given back detail once the prompt (or NPC block) fitted."""
    when = fitted(budget, npc=npc)
    return f"{npc_name(name)} shown at tier {tier} again: {when} there was room for it"


def lengthened(scope: str, had: int, kept: int, whole: int, budget: int) -> str:
    """A dynamic layer given back part or all of what it lost.

    >>> print(lengthened("input", 60, 250, 400, 600))
    ... # doctest: +NORMALIZE_WHITESPACE
    Input given back room, from 60 to 250 of its 400 tokens: once the prompt fitted the
    600-token budget there was room for more
    """
    if kept == whole:
        return (
            f"{text_name(scope)} given back all its {_tokens(whole)} (it had been cut to {had}): "
            f"{fitted(budget)} there was room for it"
        )
    return (
        f"{text_name(scope)} given back room, from {had} to {kept} of its {_tokens(whole)}: "
        f"{fitted(budget)} there was room for more"
    )


OUTCOME_REASON_WORDS: Mapping[OutcomeReason, str] = {
    "larger_than_budget": "{what} alone is larger than the whole {budget}-token budget",
    "over_budget": "the {budget}-token budget had no room left for {what}",
    "larger_than_npc_budget": "{what} alone is larger than the {budget}-token NPC budget",
    "over_npc_budget": "the {budget}-token NPC budget had no room left for {what}",
    "larger_than_lore_budget": "{what} alone is larger than the {budget}-token lore budget",
    "over_lore_budget": "the {budget}-token lore budget had no room left for {what}",
}
"""Why something was lost in the end, by :data:`assembler.result.OUTCOME_REASONS` code."""

CHANGE_KIND_WORDS: Mapping[ChangeKind, str] = {
    "left_out": "left out",
    "shortened": "shortened",
    "lowered": "lowered",
}
"""The kinds of :class:`assembler.result.Change`, as a badge or a count says them."""


def outcome_why(reason: OutcomeReason, budget: int, what: str = "it") -> str:
    """Why ``what`` was lost in the end, ``budget`` being the budget the reason names.

    >>> outcome_why("larger_than_budget", 700)
    'it alone is larger than the whole 700-token budget'
    >>> outcome_why("over_npc_budget", 60, "tier 2")
    'the 60-token NPC budget had no room left for tier 2'
    """
    return OUTCOME_REASON_WORDS[reason].format(what=what, budget=budget)


def lowered(name: str, tiers: tuple[int, int], tokens: tuple[int, int], why: str) -> str:
    """An NPC shown in the end at a lower tier than asked for (``tiers`` and ``tokens``:
    asked for, then shown).

    >>> print(lowered("Oren Flint", (2, 1), (64, 30),
    ...     outcome_why("over_npc_budget", 60, "tier 2")))
    ... # doctest: +NORMALIZE_WHITESPACE
    NPC 'Oren Flint' lowered from tier 2 to 1 (64 → 30 tokens): the 60-token NPC budget had
    no room left for tier 2
    """
    return (
        f"{npc_name(name)} lowered from tier {tiers[0]} to {tiers[1]} "
        f"({tokens[0]} → {_tokens(tokens[1])}): {why}"
    )


def outcome_counts(outcome: Outcome) -> str:
    """How much an assembly lost in the end, counted from ``outcome``'s own lists.

    >>> from assembler.result import Outcome
    >>> outcome_counts(Outcome())
    'nothing cut'
    """
    counts: tuple[tuple[ChangeKind, int], ...] = (
        ("left_out", len(outcome.left_out)),
        ("shortened", len(outcome.shortened)),
        ("lowered", len(outcome.lowered)),
    )
    said = [f"{count} {CHANGE_KIND_WORDS[kind]}" for kind, count in counts if count]
    return ", ".join(said) if said else "nothing cut"


def layer_status_words(scope: str, status: LayerStatus) -> str:
    """What ``status`` means for layer ``scope``: a layer of segments that loses some has
    "some segments left out", a dynamic layer cut at a token boundary is "shortened", and
    only a layer given nothing is "empty".

    >>> layer_status_words("world", "trimmed"), layer_status_words("input", "trimmed")
    ('some segments left out', 'shortened')
    """
    if scope in ("npc", LORE_SCOPE):
        kind = scope
    elif scope == HISTORY_SCOPE:
        kind = "history"
    else:
        kind = "text" if scope in DYNAMIC_SCOPES else "segments"
    return LAYER_STATUS_WORDS[kind][status]


def explain_layer(scope: str, report: LayerReport) -> str:
    """One layer's outcome in plain words: empty (given nothing) is not left out.

    >>> from assembler.result import LayerReport
    >>> explain_layer("entry", LayerReport("dropped", 0, []))
    'Entry: left out to fit the budget'
    >>> explain_layer("entry_start", LayerReport("empty", 0, []))
    'Entry start: empty (no segments)'
    """
    return f"{LAYER_TITLES.get(scope, scope)}: {layer_status_words(scope, report.status)}"


def explain_result(meta: Meta) -> str:
    """A one-line summary of an assembly: its size against the budget and what it lost in
    the end (:func:`outcome_counts`: what was put back is not lost).

    >>> from assembler import AssemblyRequest, Segment, assemble, get_tokenizer
    >>> request = AssemblyRequest(core=[Segment(1, "core", "You narrate.")], rulesets=[],
    ...     world=[], entry=[], entry_start=[], npcs=[], state={}, first_turn=False,
    ...     token_budget=300)
    >>> explain_result(assemble(request, get_tokenizer()).meta)
    '13 of 300 tokens, nothing cut'
    """
    head = f"{meta.tokens} of {meta.token_budget} tokens"
    if meta.over_budget:
        return f"{head}: the core and ruleset layers alone are over the budget"
    return f"{head}, {outcome_counts(meta.outcome)}"


def _tokens(count: int) -> str:
    return f"{count} {'token' if count == 1 else 'tokens'}"
