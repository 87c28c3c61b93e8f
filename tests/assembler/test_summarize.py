"""Summarizers: the extractive one, the OpenAI-compatible one against a local endpoint,
the checks every summary passes, and falling back from one to the other."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler import (
    DEFAULT_INSTRUCTIONS,
    ExtractiveSummarizer,
    HistoryMessage,
    OpenAISummarizer,
    SummarizerUnavailable,
    SummaryPlan,
    SummaryRejected,
    SummaryText,
    get_tokenizer,
    plan_summary,
    summarize_with_fallback,
    validate_summary,
)
from assembler.summarize import EXTRACTIVE_MODEL, sentence_score, summary_limit

TOKENIZER = get_tokenizer()

CHAT = [
    ("user", "Hello! How are you today? I hope the weather is nice where you are."),
    ("assistant", "Hi there, all good here. Thanks for asking, it is sunny and warm."),
    ("user", "We need a stone bridge over the river Tarn before winter."),
    ("assistant", "A stone bridge needs 40 masons and about three months of work."),
    ("user", "Then hire the masons from Tarn. That sounds great, really."),
    ("assistant", "The masons of Tarn refused: their guild is on strike. Sorry about that."),
    ("user", "Ok. Hmm. Try the guild master Orsolya instead."),
    ("assistant", "Orsolya agreed for 300 silver. Work can start on Monday."),
    ("user", "Good. What next?"),
]


def messages(chat: list[tuple[str, str]] = CHAT) -> list[HistoryMessage]:
    return [
        HistoryMessage(index + 1, role, text)  # type: ignore[arg-type]
        for index, (role, text) in enumerate(chat)
    ]


def plan_for(
    chat: list[tuple[str, str]] = CHAT,
    target_tokens: int = 40,
    previous: SummaryText | None = None,
) -> SummaryPlan:
    plan = plan_summary(
        messages=messages(chat),
        previous=previous,
        keep_recent_tokens=0,
        target_tokens=target_tokens,
        tokenizer=TOKENIZER,
    )
    assert plan is not None
    return plan


# Extractive


def test_extractive_summary_keeps_decisions_errors_names_and_numbers_not_small_talk() -> None:
    outcome = ExtractiveSummarizer(TOKENIZER).summarize(plan_for(target_tokens=80))
    # Best scores first (newest first among equals) while they fit; then in their order.
    assert outcome.text.splitlines() == [
        "User: We need a stone bridge over the river Tarn before winter.",
        "Assistant: A stone bridge needs 40 masons and about three months of work.",
        "Assistant: The masons of Tarn refused: their guild is on strike.",
        "User: Try the guild master Orsolya instead.",
        "Assistant: Orsolya agreed for 300 silver.",
    ]
    assert (outcome.backend, outcome.model) == ("extractive", EXTRACTIVE_MODEL)
    assert outcome.tokens == TOKENIZER.count(outcome.text) <= 80


def test_extractive_summary_is_deterministic() -> None:
    plan = plan_for()
    first = ExtractiveSummarizer(TOKENIZER).summarize(plan)
    assert all(ExtractiveSummarizer(TOKENIZER).summarize(plan) == first for _ in range(3))


def test_extractive_summary_builds_on_the_previous_summary() -> None:
    previous = SummaryText("User: The bridge must be of stone.\nUser: Hello again.", 4)
    plan = plan_for(previous=previous, target_tokens=40)
    text = ExtractiveSummarizer(TOKENIZER).summarize(plan).text
    assert text.splitlines()[0] == "User: The bridge must be of stone."
    assert "Hello again" not in text
    assert "Orsolya agreed for 300 silver." in text


def test_extractive_summary_takes_the_newest_sentences_when_none_carries_anything() -> None:
    chat = [
        ("user", "hello there. how are you. nice day."),
        ("user", "fine thanks."),
        ("user", "ok"),
    ]
    text = ExtractiveSummarizer(TOKENIZER).summarize(plan_for(chat, target_tokens=16)).text
    assert text.splitlines()[-1] == "User: fine thanks."


def test_extractive_summary_is_never_a_copy_of_a_short_input() -> None:
    chat = [("user", "Hire Orsolya for 300 silver."), ("user", "Ok?")]
    plan = plan_for(chat, target_tokens=100)
    outcome = ExtractiveSummarizer(TOKENIZER).summarize(plan)
    assert outcome.tokens <= plan.input_tokens * 0.75


PLACES = ["the mill", "Harrow Ford", "the salt road", "Greyhaven", "the bell tower", "Vell's farm"]
PEOPLE = ["Orsolya", "Brom", "Captain Idris", "Marta", "the ferryman", "Old Kess"]


def long_quest(turns: int) -> list[tuple[str, str]]:
    """A conversation of ``turns`` messages, each naming its turn, so that a summary's
    lines say where they come from; then the newest user message, kept verbatim."""
    chat = []
    for turn in range(1, turns + 1):
        place, person = PLACES[turn % len(PLACES)], PEOPLE[turn * 5 % len(PEOPLE)]
        if turn % 2:
            chat.append(("user", f"On turn {turn} we head for {place}. Is it far?"))
        else:
            chat.append(
                (
                    "assistant",
                    f"On turn {turn} {person} meets you at {place} and asks for {turn * 7} "
                    "silver. The wind is cold. Nothing else stirs.",
                )
            )
    return [*chat, ("user", "What now?")]


def test_a_summary_of_54_messages_draws_from_their_beginning_middle_and_end() -> None:
    plan = plan_for(long_quest(54), target_tokens=150)
    assert plan.covers_through == 54 and plan.complete
    outcome = ExtractiveSummarizer(TOKENIZER).summarize(plan)
    turns = [int(re.search(r"turn (\d+)", line)[1]) for line in outcome.text.splitlines()]
    assert any(turn <= 18 for turn in turns), turns
    assert any(19 <= turn <= 36 for turn in turns), turns
    assert any(turn >= 37 for turn in turns), turns
    # It says where its sentences come from: the messages of the turns it names.
    assert outcome.drawn_from == tuple(sorted(set(turns)))
    assert outcome.tokens <= 150


def test_a_summary_keeps_lines_of_the_previous_summary_and_draws_from_the_new_messages() -> None:
    previous = SummaryText("User: The bridge must be of stone.", 4)
    plan = plan_for(long_quest(30)[4:], previous=previous, target_tokens=80)
    outcome = ExtractiveSummarizer(TOKENIZER).summarize(plan)
    assert outcome.text.splitlines()[0] == "User: The bridge must be of stone."
    assert outcome.drawn_from and min(outcome.drawn_from) > 4


def test_a_repetition_in_other_words_loses_to_a_new_fact() -> None:
    told = (
        "Orsolya agreed to build the bridge for 300 silver. "
        "Orsolya agreed: the bridge for 300 silver, built by her. "
        "The Tarn flooded the mill on Monday."
    )
    chat = [("user", told), ("assistant", "Ok."), ("user", "Next?")]
    outcome = ExtractiveSummarizer(TOKENIZER).summarize(plan_for(chat, target_tokens=40))
    # Room for two of the three: the second is the same fact in other words.
    assert outcome.text.count("Orsolya agreed") == 1
    assert "User: The Tarn flooded the mill on Monday." in outcome.text.splitlines()


def test_sentence_scores_add_up_what_a_sentence_carries() -> None:
    assert sentence_score("Thanks, that sounds lovely.") == 0
    assert sentence_score("We agreed on it.") == 3
    assert sentence_score("The upload failed.") == 3
    assert sentence_score("It costs 300.") == 2
    assert sentence_score("Ask Orsolya.") == 2
    assert sentence_score("Call `load_config` again.") == 2
    assert sentence_score("Orsolya refused, so we decided on 40 masons from Tarn.") == 10


@settings(max_examples=40, deadline=None)
@given(
    chat=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant"]),
            st.lists(
                st.sampled_from(
                    [
                        "We decided to go north. ",
                        "The gate failed to open. ",
                        "It costs 12 coins. ",
                        "Ask Brom the smith. ",
                        "Nice day. ",
                        "ok ",
                        "龍の門。",
                        "🐉 ",
                        "\n",
                    ]
                ),
                min_size=1,
                max_size=12,
            ).map(lambda parts: "x " + "".join(parts)),
        ),
        min_size=2,
        max_size=12,
    ),
    target=st.integers(4, 60),
)
def test_extractive_summary_is_within_its_target_and_passes_validation(
    chat: list[tuple[str, str]], target: int
) -> None:
    chat = [*chat, ("user", "Next?")]
    plan = plan_summary(
        messages=messages(chat),
        previous=None,
        keep_recent_tokens=0,
        target_tokens=target,
        max_input_tokens=max(64, 4 * target),
        tokenizer=TOKENIZER,
    )
    assert plan is not None
    summarizer = ExtractiveSummarizer(TOKENIZER)
    outcome = summarizer.summarize(plan)
    assert outcome.tokens == TOKENIZER.count(outcome.text)
    assert outcome.tokens <= min(target, plan.input_tokens * 0.75)
    assert summarizer.summarize(plan) == outcome
    assert outcome.drawn_from is not None
    assert set(outcome.drawn_from) <= {message.position for message in plan.messages}


# Validation


def test_an_empty_summary_is_rejected() -> None:
    with pytest.raises(SummaryRejected) as caught:
        validate_summary("  \n ", plan=plan_for(), tokenizer=TOKENIZER)
    assert caught.value.reason == "empty"


def test_a_summary_over_its_target_by_more_than_the_margin_is_rejected() -> None:
    plan = plan_for(target_tokens=20)
    text = "Orsolya builds the bridge. " * 20
    assert TOKENIZER.count(text) > summary_limit(20)
    with pytest.raises(SummaryRejected) as caught:
        validate_summary(text, plan=plan, tokenizer=TOKENIZER)
    assert caught.value.reason == "oversized"
    within_margin = "Orsolya builds the stone bridge for 300 silver with 40 masons, from Monday."
    assert 20 < TOKENIZER.count(within_margin) <= summary_limit(20)
    validate_summary(within_margin, plan=plan, tokenizer=TOKENIZER)


def test_a_summary_that_repeats_the_instructions_is_rejected() -> None:
    echo = DEFAULT_INSTRUCTIONS.split("\n")[0] + " " + DEFAULT_INSTRUCTIONS.split("\n")[3]
    with pytest.raises(SummaryRejected) as caught:
        validate_summary(
            echo,
            plan=plan_for(target_tokens=100),
            tokenizer=TOKENIZER,
            instructions=DEFAULT_INSTRUCTIONS,
        )
    assert caught.value.reason == "echoes_instructions"


def test_a_summary_that_copies_its_input_is_rejected() -> None:
    plan = plan_for(CHAT[:3], target_tokens=100)
    with pytest.raises(SummaryRejected) as caught:
        validate_summary(plan.text, plan=plan, tokenizer=TOKENIZER)
    assert caught.value.reason == "echoes_input"


def test_a_real_summary_passes_even_when_it_reuses_names_and_phrases() -> None:
    plan = plan_for(target_tokens=60)
    summary = (
        "The user wants a stone bridge over the river Tarn before winter. The masons of "
        "Tarn refused (strike), so the guild master Orsolya was hired for 300 silver; work "
        "starts on Monday."
    )
    assert validate_summary(
        summary, plan=plan, tokenizer=TOKENIZER, instructions=DEFAULT_INSTRUCTIONS
    ) == TOKENIZER.count(summary)


# A local chat-completions endpoint


@dataclass
class Reply:
    status: int = 200
    content: str | None = "Orsolya builds the bridge over the Tarn for 300 silver."
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    finish_reason: str = "stop"
    model: str = "tiny-summarizer-1"


@dataclass
class Seen:
    at: float
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ChatEndpoint:
    """An OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1, answering from a script
    (the last reply repeats) and recording every request."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        self.release = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.seen.append(
                    Seen(
                        time.monotonic(),
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                reply = endpoint.replies[min(len(endpoint.seen), len(endpoint.replies)) - 1]
                if reply.hang:
                    endpoint.release.wait(10)
                    return
                if reply.status == 200:
                    payload: dict[str, Any] = {
                        "id": f"chatcmpl-{len(endpoint.seen)}",
                        "object": "chat.completion",
                        "created": 1_700_000_000,
                        "model": reply.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply.content},
                                "finish_reason": reply.finish_reason,
                            }
                        ],
                    }
                else:
                    payload = {"error": {"message": f"status {reply.status}", "type": "test"}}
                data = json.dumps(payload).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[type[ChatEndpoint]]:
    started: list[ChatEndpoint] = []

    class Started(ChatEndpoint):
        def __init__(self, *replies: Reply) -> None:
            super().__init__(*replies)
            started.append(self)

    yield Started
    for server in started:
        server.stop()


def summarizer(server: ChatEndpoint, **options: Any) -> OpenAISummarizer:
    options = {"timeout": 5.0, "max_retries": 2, **options}
    return OpenAISummarizer(
        base_url=server.base_url,
        model="tiny-summarizer",
        api_key="test-key",
        tokenizer=TOKENIZER,
        **options,
    )


def test_openai_summarizer_sends_instructions_and_transcript_and_returns_the_answer(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply())
    plan = plan_for(target_tokens=40)
    outcome = summarizer(server).summarize(plan)
    assert outcome.text == "Orsolya builds the bridge over the Tarn for 300 silver."
    assert (outcome.backend, outcome.model) == ("openai", "tiny-summarizer-1")
    assert outcome.tokens == TOKENIZER.count(outcome.text)
    [request] = server.seen
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.body["model"] == "tiny-summarizer"
    system, user = request.body["messages"]
    assert system == {
        "role": "system",
        "content": DEFAULT_INSTRUCTIONS + "\n\nKeep the summary under 40 tokens.",
    }
    assert user == {"role": "user", "content": plan.text}
    assert request.body["max_tokens"] >= summary_limit(40)


def test_openai_summarizer_sends_the_instructions_it_is_given(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply())
    summarizer(server, instructions="Summarize tersely.").summarize(plan_for())
    assert server.seen[0].body["messages"][0]["content"].startswith("Summarize tersely.\n\n")


def test_openai_summarizer_retries_a_server_error(endpoint: type[ChatEndpoint]) -> None:
    server = endpoint(Reply(status=500), Reply())
    outcome = summarizer(server).summarize(plan_for())
    assert outcome.backend == "openai"
    assert len(server.seen) == 2


def test_openai_summarizer_waits_as_long_as_retry_after_says_on_429(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply(status=429, headers={"Retry-After": "1"}), Reply())
    summarizer(server).summarize(plan_for())
    first, second = server.seen
    # Without Retry-After the client's first backoff is at most half a second.
    assert second.at - first.at >= 0.9


def test_openai_summarizer_gives_up_when_the_server_hangs(endpoint: type[ChatEndpoint]) -> None:
    server = endpoint(Reply(hang=True))
    with pytest.raises(SummarizerUnavailable) as caught:
        summarizer(server, timeout=0.3, max_retries=0).summarize(plan_for())
    assert caught.value.reason == "timeout"
    assert len(server.seen) == 1


def test_openai_summarizer_reports_the_status_once_retries_are_spent(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply(status=503))
    with pytest.raises(SummarizerUnavailable) as caught:
        summarizer(server, max_retries=1).summarize(plan_for())
    assert caught.value.reason == "http_503"
    assert len(server.seen) == 2


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(content=""), "empty"),
        (Reply(content=None), "empty"),
        (Reply(finish_reason="length"), "oversized"),
        (Reply(content=DEFAULT_INSTRUCTIONS), "echoes_instructions"),
    ],
    ids=["empty", "null", "cut-off", "instructions"],
)
def test_openai_summarizer_rejects_bad_answers(
    endpoint: type[ChatEndpoint], reply: Reply, reason: str
) -> None:
    server = endpoint(reply)
    with pytest.raises(SummaryRejected) as caught:
        summarizer(server).summarize(plan_for(target_tokens=200))
    assert caught.value.reason == reason


def test_an_echo_of_the_transcript_is_rejected(endpoint: type[ChatEndpoint]) -> None:
    plan = plan_for(CHAT[:3], target_tokens=100)
    server = endpoint(Reply(content=plan.text))
    with pytest.raises(SummaryRejected) as caught:
        summarizer(server).summarize(plan)
    assert caught.value.reason == "echoes_input"


# Fallback


def test_fallback_to_extractive_is_used_and_recorded_when_the_endpoint_fails(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply(status=500))
    plan = plan_for()
    result = summarize_with_fallback(
        summarizer(server, max_retries=0), ExtractiveSummarizer(TOKENIZER), plan
    )
    assert result.fallback_used
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith("openai: http_500: ")
    assert result.outcome == ExtractiveSummarizer(TOKENIZER).summarize(plan)


def test_fallback_is_used_when_the_endpoints_summary_is_rejected(
    endpoint: type[ChatEndpoint],
) -> None:
    server = endpoint(Reply(content=DEFAULT_INSTRUCTIONS))
    result = summarize_with_fallback(
        summarizer(server), ExtractiveSummarizer(TOKENIZER), plan_for(target_tokens=200)
    )
    assert result.fallback_used
    assert result.outcome.backend == "extractive"
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith("openai: echoes_instructions: ")


def test_no_fallback_when_the_primary_succeeds(endpoint: type[ChatEndpoint]) -> None:
    server = endpoint(Reply())
    result = summarize_with_fallback(
        summarizer(server), ExtractiveSummarizer(TOKENIZER), plan_for()
    )
    assert (result.fallback_used, result.fallback_reason) == (False, None)
    assert result.outcome.backend == "openai"


def test_with_retry_unavailable_an_unavailable_endpoint_is_left_to_the_caller(
    endpoint: type[ChatEndpoint],
) -> None:
    down = endpoint(Reply(status=503))
    with pytest.raises(SummarizerUnavailable):
        summarize_with_fallback(
            summarizer(down, max_retries=0),
            ExtractiveSummarizer(TOKENIZER),
            plan_for(),
            retry_unavailable=True,
        )
    # A refusal is not worth asking again: it still falls back at once.
    echo = endpoint(Reply(content=DEFAULT_INSTRUCTIONS))
    result = summarize_with_fallback(
        summarizer(echo),
        ExtractiveSummarizer(TOKENIZER),
        plan_for(target_tokens=200),
        retry_unavailable=True,
    )
    assert result.fallback_used and result.outcome.backend == "extractive"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_request_the_endpoint_refuses_falls_back_at_once_even_when_retries_are_wanted(
    endpoint: type[ChatEndpoint], status: int
) -> None:
    # A bad key, an unknown model, a request it cannot take: asking again changes nothing.
    server = endpoint(Reply(status=status))
    result = summarize_with_fallback(
        summarizer(server, max_retries=2),
        ExtractiveSummarizer(TOKENIZER),
        plan_for(),
        retry_unavailable=True,
    )
    assert result.fallback_used and result.outcome.backend == "extractive"
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith(f"openai: http_{status}: ")
    assert len(server.seen) == 1  # the client does not retry it either


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_a_status_worth_asking_again_is_left_to_the_caller(
    endpoint: type[ChatEndpoint], status: int
) -> None:
    server = endpoint(Reply(status=status, headers={"Retry-After": "0"}))
    with pytest.raises(SummarizerUnavailable) as caught:
        summarize_with_fallback(
            summarizer(server, max_retries=0),
            ExtractiveSummarizer(TOKENIZER),
            plan_for(),
            retry_unavailable=True,
        )
    assert caught.value.reason == f"http_{status}"
