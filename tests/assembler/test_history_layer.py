"""The ``history`` layer: a conversation's summary and recent messages, between ``npc``
and ``game_state``; it gives way right after ``game_state`` in the first phase, oldest
messages first, never below its newest user message until the last phase."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import SCOPES, History, Policy, Tokenizer, assemble
from tests.assembler.builders import PROSE, conversation, full_request, request, seg

PROPERTY = settings(max_examples=40, deadline=None)


def history_text(prompt: str) -> str:
    return prompt.split("=== HISTORY_BEGIN ===\n")[1].split("\n=== HISTORY_END ===")[0]


def test_history_sits_between_npc_and_game_state_and_is_reported(tokenizer: Tokenizer) -> None:
    history = conversation(4, summary="Ann reached the gate.", covers=6)
    result = assemble(full_request(history=history), tokenizer)
    assert SCOPES.index("npc") < SCOPES.index("history") < SCOPES.index("game_state")
    prompt = result.prompt
    assert prompt.index("=== NPC_END ===") < prompt.index("=== HISTORY_BEGIN ===")
    assert prompt.index("=== HISTORY_END ===") < prompt.index("=== GAME_STATE_BEGIN ===")
    assert history_text(prompt).startswith("Summary of earlier conversation:\nAnn reached")
    layer = result.meta.layers["history"]
    assert layer.status == "included" and layer.tokens > 0
    report = result.meta.to_dict()["history"]
    assert report == {
        "conversation": "quest",
        "mode": "summary_and_recent",
        "messages": [7, 8, 9, 10],
        "summary": {"id": 7, "covers_through": 6},
        "trimmed": None,
    }
    assert result.meta.tokens == tokenizer.count(prompt)


def test_without_a_conversation_the_layer_is_empty_and_not_reported(
    tokenizer: Tokenizer,
) -> None:
    result = assemble(full_request(history=None), tokenizer)
    assert "HISTORY" not in result.prompt
    assert result.meta.layers["history"].status == "empty"
    assert "history" not in result.meta.to_dict()


def test_the_history_budget_bounds_the_block_before_any_truncation(
    tokenizer: Tokenizer,
) -> None:
    history = conversation(30, budget=120)
    result = assemble(request(history=history), tokenizer)
    shown = result.meta.history.messages  # type: ignore[union-attr]
    assert shown == list(range(30 - len(shown) + 1, 31))  # the newest, consecutive
    assert result.meta.history.mode == "recent_only"  # type: ignore[union-attr]
    assert tokenizer.count(history_text(result.prompt)) <= 120
    assert result.meta.truncated == []


def test_history_gives_way_after_game_state_oldest_messages_first(tokenizer: Tokenizer) -> None:
    filler = "word " * 150
    base = request(
        core=[seg(1, "core", PROSE)],
        world=[seg(20, "world", PROSE)],
        state={"game_state": f"state {filler}", "input": "I open the gate."},
        history=conversation(20),
    )
    full = assemble(base, tokenizer).meta.tokens
    result = assemble(dataclasses.replace(base, token_budget=full - 250), tokenizer)
    scopes = [step.scope for step in result.meta.truncated if step.action != "restored"]
    assert scopes[:2] == ["game_state", "history"]
    assert "world" not in scopes
    shown = result.meta.history.messages  # type: ignore[union-attr]
    assert shown and shown[-1] == 20 and shown == list(range(shown[0], 21))
    assert shown[0] > 1  # the oldest went first
    assert result.meta.layers["history"].status == "trimmed"
    assert result.meta.tokens <= full - 250


def test_the_newest_user_message_stays_until_the_last_phase(tokenizer: Tokenizer) -> None:
    history = conversation(12)
    newest = history.messages[-1].content
    base = request(
        core=[seg(1, "core", "You narrate.")],
        world=[seg(20, "world", PROSE), seg(21, "world", PROSE)],
        history=history,
        policy=Policy(floors={"history": 0.0}),
    )
    protected = assemble(dataclasses.replace(base, world=[], history=None), tokenizer)
    full = assemble(base, tokenizer).meta.tokens
    kept_until_world_went = False
    for budget in range(full, protected.meta.tokens, -5):
        result = assemble(dataclasses.replace(base, token_budget=budget), tokenizer)
        assert result.meta.tokens <= budget
        world_left = bool(result.meta.segment_ids_by_scope["world"])
        if world_left:
            # Phases 1 and 2: whatever else went, the newest user message is whole.
            assert newest in result.prompt, budget
            kept_until_world_went = True
    assert kept_until_world_went
    # At the protected layers' size the history is cut below its floor, to nothing.
    last = assemble(dataclasses.replace(base, token_budget=protected.meta.tokens), tokenizer)
    assert last.meta.layers["history"].status == "dropped"
    assert [step.scope for step in last.meta.truncated if step.action != "restored"][-1] == (
        "history"
    )


@st.composite
def histories(draw: st.DrawFn) -> History:
    turns = draw(st.integers(1, 25))
    summary = draw(st.one_of(st.none(), st.sampled_from(["Ann hired 40 masons.", PROSE])))
    return conversation(turns, budget=draw(st.integers(0, 2000)), summary=summary, covers=3)


@PROPERTY
@given(history=histories(), cut=st.floats(0.0, 1.0))
def test_with_history_the_prompt_never_exceeds_its_budget(
    tokenizer: Tokenizer, history: History, cut: float
) -> None:
    base = request(
        core=[seg(1, "core", "You narrate.")],
        world=[seg(20, "world", PROSE)],
        state={"input": "I open the gate. " * 5},
        history=history,
    )
    full = assemble(base, tokenizer).meta.tokens
    protected = assemble(
        dataclasses.replace(base, world=[], history=None, state={}), tokenizer
    ).meta.tokens
    budget = protected + int((full - protected) * cut)
    result = assemble(dataclasses.replace(base, token_budget=budget), tokenizer)
    assert result.meta.tokens == tokenizer.count(result.prompt) <= budget
    report = result.meta.history
    if report is not None and report.messages:
        assert report.messages == list(range(report.messages[0], report.messages[-1] + 1))
        assert report.messages[-1] == history.messages[-1].position
