from __future__ import annotations

import re

import pytest

from assembler import AssemblyRequest, Npc, Policy, Ruleset, Segment
from tests.assembler.builders import request, seg


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: request(token_budget=-1), "token_budget must be >= 0, got -1"),
        (lambda: request(npc_budget=-5), "npc_budget must be >= 0, got -5"),
        (lambda: Segment(3, "npc", "x", tier=-1), "segment #3: tier must be >= 0"),
        (lambda: Segment(3, "world", "x", token_count=-2), "segment #3: token_count"),
        (lambda: Segment(3, "input", "x"), "segment #3: scope must be one of"),
        (lambda: Npc("ida", "Ida", requested_tier=-1), "NPC 'ida': requested_tier must be >= 0"),
        (
            lambda: Npc("ida", "Ida", 0, [seg(1, "world")]),
            "NPC 'ida': segment #1 has scope 'world', expected 'npc'",
        ),
        (
            lambda: Ruleset("combat", "Combat", [seg(1, "core")]),
            "ruleset 'combat': segment #1 has scope 'core', expected 'ruleset'",
        ),
        (lambda: request(world=[seg(7, "entry")]), "world: segment #7 has scope 'entry'"),
        (lambda: request(state={"weather": "rain"}), "state: 'weather' is not a dynamic layer"),
        (lambda: request(state={"input": 42}), "state['input'] must be text, a JSON object"),
        (
            lambda: request(npcs=[Npc("ida", "Ida", 0), Npc("ida", "Ida 2", 0)]),
            "npcs: duplicate slugs 'ida'",
        ),
        (lambda: Policy(floors={"input": 1.5}), "policy.floors['input'] must be between"),
        (lambda: Policy(floors={"world": 0.1}), "policy.floors: 'world' is not a dynamic"),
        (lambda: Policy(block_format="yaml"), "policy.block_format must be one of"),  # type: ignore[arg-type]
    ],
)
def test_invalid_input_is_refused_with_a_message_naming_the_field(
    build: object, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build()  # type: ignore[operator]


def test_policy_floors_default_to_ten_percent_of_the_budget() -> None:
    policy = Policy(floors={"input": 0.25})
    assert policy.floor("input", 2000) == 500
    assert policy.floor("game_state", 2000) == 200


def test_segment_label_prefers_the_title_then_a_short_excerpt() -> None:
    assert Segment(1, "world", "text", title="Old wars").label == "Old wars"
    assert Segment(1, "world", "Short\n text").label == "Short text"
    long = Segment(1, "world", "The northern provinces were emptied by the old wars.")
    assert long.label == "The northern provinces were…"


def test_a_request_needs_no_policy_or_npc_budget() -> None:
    built = AssemblyRequest(
        core=[],
        rulesets=[],
        world=[],
        entry=[],
        entry_start=[],
        npcs=[],
        state={},
        first_turn=False,
        token_budget=10,
    )
    assert built.npc_budget == 600
    assert built.policy == Policy()
    assert built.strict is False
