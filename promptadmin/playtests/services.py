"""Playtests: make a run (what to send, worked out and counted before any call), and run it.

``playtest_create`` checks who asks, assembles each scenario on each side, counts the calls
the run needs (replies and judgements the cache does not hold) and refuses a run over
``PLAYTEST_MAX_CALLS`` before any call; the run is then queued once committed.
``playtest_run``, called by the task, sends what is not cached, ``PLAYTEST_CONCURRENCY`` at
a time, and stores each answer as it comes (in its own transaction), keyed by what was
asked: a second run of an unchanged scenario makes no call, and a run killed halfway
resumes, taking what was already paid for from the cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.utils import timezone

from assembler.replies import (
    REPLY_PARAMS,
    Verdict,
    check_reply,
    is_reply_expectation,
    judge_messages,
    parse_judgement,
    parse_reply_expectation,
    playtest_messages,
)
from assembler.storable import StoredJsonError, check_stored_json
from promptadmin.content.assembly import AssemblyInputError, conversation_history
from promptadmin.core.actors import Actor, is_key, key_label, user_or_none
from promptadmin.core.roles import Role, require
from promptadmin.core.tokens import tokenizer
from promptadmin.playtests.endpoint import OFF, Answer, CallFailed, Endpoint, enabled
from promptadmin.playtests.models import PlaytestCall, PlaytestRun, PlaytestSample
from promptadmin.releases import selectors as releases
from promptadmin.releases.bundles import Version
from promptadmin.releases.impact import evaluate, missing_words
from promptadmin.releases.models import WORKING, Scenario
from promptadmin.releases.scenarios import from_model

logger = logging.getLogger(__name__)

PLAYTESTING = "Running playtests"
ALL = "all"
TASK = "promptadmin.playtests.tasks.run_playtest"
MAX_SCENARIOS = 200


class PlaytestsOff(Exception):
    """No endpoint is configured; the message says how to turn playtests on."""

    def __init__(self) -> None:
        super().__init__(OFF)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def reply_key(model: str, messages: list[dict[str, str]], params: dict[str, Any], n: int) -> str:
    """The cache key of sample ``n`` of a reply: (prompt hash, model, parameters, sample)."""
    return _digest(["reply", _digest(messages), model, params, n])


def judge_key(model: str, rubric: str, reply: str) -> str:
    return _digest(["judge", model, rubric, reply])


def _plan_side(scenario: Scenario, side: str, name: str, content: Version) -> dict[str, Any]:
    spec = from_model(scenario)
    state = dict(spec.state)
    # The input goes to the model as the user's message, not inside the system prompt.
    outcome = evaluate(
        replace(spec, state={k: v for k, v in state.items() if k != "input"}), content
    )
    params = {key: getattr(scenario, key) for key in REPLY_PARAMS if key != "samples"}
    error = outcome.error
    if outcome.missing:
        error = f"{name} has no {', '.join(missing_words(outcome.missing, {}))}"
    history = None
    if error is None and scenario.conversation:
        # The conversation is the game's, not the release's: both sides send the same.
        try:
            history = conversation_history(scenario.conversation)
        except AssemblyInputError as exc:
            error = exc.errors["conversation"]
    return {
        "scenario": scenario.name,
        "side": side,
        "release": name,
        "conversation": scenario.conversation,
        "messages": (
            playtest_messages(outcome.prompt, state.get("input"), history, tokenizer())
            if error is None
            else []
        ),
        "params": params,
        "samples": scenario.samples,
        "expectations": [item for item in scenario.expectations if is_reply_expectation(item)],
        "error": error,
    }


def _judges(item: dict[str, Any]) -> list[str]:
    return [e["rubric"] for e in item["expectations"] if e["kind"] == "judge"]


def calls_needed(plan: Iterable[dict[str, Any]], model: str) -> int:
    """Calls the plan needs: every reply the cache lacks with its judgements, and the
    judgements of cached replies that the cache lacks (two queries)."""
    wanted: dict[str, dict[str, Any]] = {}
    for item in plan:
        if item["error"] is None:
            for n in range(1, item["samples"] + 1):
                wanted[reply_key(model, item["messages"], item["params"], n)] = item
    replies = dict(PlaytestCall.objects.filter(key__in=list(wanted)).values_list("key", "text"))
    needed = 0
    judgements: list[str] = []
    for key, item in wanted.items():
        rubrics = _judges(item)
        if key not in replies:
            needed += 1 + len(rubrics)
        else:
            judgements += [judge_key(model, rubric, replies[key]) for rubric in rubrics]
    known = set(PlaytestCall.objects.filter(key__in=judgements).values_list("key", flat=True))
    return needed + sum(1 for key in judgements if key not in known)


def _scenarios(names: list[str] | str) -> list[Scenario]:
    if names == ALL:
        found = list(Scenario.objects.order_by("name"))
        if not found:
            raise ValidationError({"scenarios": "There is no saved scenario to playtest."})
        return found
    if (
        not isinstance(names, list)
        or not 0 < len(names) <= MAX_SCENARIOS
        or not all(isinstance(name, str) and 0 < len(name) <= 100 for name in names)
    ):
        raise ValidationError(
            {"scenarios": f'Expected "all" or a list of 1 to {MAX_SCENARIOS} scenario names.'}
        )
    try:
        check_stored_json(names)  # looked up: no NUL, no lone surrogate
    except StoredJsonError as exc:
        raise ValidationError({f"scenarios.{exc.path}".rstrip("."): exc.message}) from None
    found = {s.name: s for s in Scenario.objects.filter(name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise ValidationError({"scenarios": f"Unknown scenarios: {', '.join(map(str, unknown))}."})
    return [found[name] for name in dict.fromkeys(names)]


def _side(field_name: str, name: str) -> Version:
    try:
        content, _ = releases.side(name)
    except ObjectDoesNotExist as missing:
        raise ValidationError({field_name: str(missing)}) from None
    return content


def playtest_create(
    *,
    actor: Actor,
    scenarios: list[str] | str,
    release: str = WORKING,
    compare_to: str | None = None,
) -> PlaytestRun:
    """Queue a playtest of ``scenarios`` (names, or ``"all"``) on ``release`` (``working``,
    a label or a release name) and, when given, on ``compare_to``; ValidationError names
    the bad field, or says how many calls a run over ``PLAYTEST_MAX_CALLS`` needs."""
    require(actor, role=Role.AUTHOR, action=PLAYTESTING)
    if not enabled():
        raise PlaytestsOff()
    chosen = _scenarios(scenarios)
    sides = [(PlaytestRun.Side.RELEASE.value, release, _side("release", release))]
    if compare_to is not None:
        sides.append(
            (PlaytestRun.Side.COMPARE_TO.value, compare_to, _side("compare_to", compare_to))
        )
    plan = [
        _plan_side(scenario, side, name, content)
        for scenario in chosen
        for side, name, content in sides
    ]
    model = settings.PLAYTEST_MODEL
    needed = calls_needed(plan, model)
    if needed > settings.PLAYTEST_MAX_CALLS:
        raise ValidationError(
            {
                "scenarios": f"This run needs {needed} calls to the model, over "
                f"PLAYTEST_MAX_CALLS={settings.PLAYTEST_MAX_CALLS}: playtest fewer "
                "scenarios or samples, or raise the limit."
            },
            code="too_many_calls",
        )
    with transaction.atomic():
        run = PlaytestRun.objects.create(
            release=release,
            compare_to=compare_to or "",
            model=model,
            plan=plan,
            calls_needed=needed,
            created_by=user_or_none(actor),
            api_key=actor if is_key(actor) else None,
        )
        transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    """Send the run's task; without a broker run it here (as imports are)."""
    task = current_app.tasks[TASK]
    if current_app.conf.task_always_eager:
        if settings.SUMMARIZER_IN_BACKGROUND:
            _background.submit(_run_in_background, task, run_id)
        else:
            task.apply(args=[run_id], throw=False)
        return
    try:
        task.delay(run_id)
    except Exception:  # the broker is down: the run stays queued
        logger.exception("playtest #%s could not be enqueued", run_id)


_background = ThreadPoolExecutor(1, thread_name_prefix="playtests")


def _run_in_background(task: Any, run_id: int) -> None:
    try:
        task.apply(args=[run_id], throw=False)
    finally:
        connections.close_all()


def _claim(run_id: int) -> bool:
    """Take the run: queued, or running when its worker died. The task is acknowledged
    late and given back when its worker is lost, so a second delivery of a running run
    means the first worker is gone: the run resumes, its paid answers in the cache."""
    active = [PlaytestRun.Status.QUEUED, PlaytestRun.Status.RUNNING]
    return (
        PlaytestRun.objects.filter(pk=run_id, status__in=active).update(
            status=PlaytestRun.Status.RUNNING, started_at=timezone.now()
        )
        == 1
    )


@dataclass
class _Sample:
    item: dict[str, Any]
    number: int
    key: str
    call: PlaytestCall | None = None
    cached: bool = False
    error: str = ""
    judged: dict[str, tuple[bool, str]] = field(default_factory=dict)
    waiting: int = 0


def _store(run: PlaytestRun, key: str, kind: str, answer: Answer) -> PlaytestCall:
    """Keep an answer the moment it comes (autocommit): a killed run never pays twice."""
    try:
        with transaction.atomic():  # a savepoint, in a transaction or not
            call = PlaytestCall.objects.create(
                key=key,
                kind=kind,
                model=run.model,
                text=answer.text,
                tokens_in=answer.tokens_in,
                tokens_out=answer.tokens_out,
                latency_ms=answer.latency_ms,
                run=run,
            )
    except IntegrityError:  # another run asked the same at the same time
        call = PlaytestCall.objects.get(key=key)
    PlaytestRun.objects.filter(pk=run.pk).update(calls=F("calls") + 1)
    return call


def _verdicts(sample: _Sample) -> list[Verdict]:
    if sample.call is None:
        return [Verdict("reply", False, sample.error)]
    tok = tokenizer()
    text = sample.call.text

    def judged(rubric: str, _reply: str) -> tuple[bool, str]:
        return sample.judged.get(rubric, (False, "the judge gave no answer"))

    return [
        check_reply(parse_reply_expectation(item), text, tok, judged)
        for item in sample.item["expectations"]
    ]


def _finish_sample(run: PlaytestRun, sample: _Sample) -> None:
    verdicts = _verdicts(sample)
    PlaytestSample.objects.update_or_create(
        run=run,
        scenario=sample.item["scenario"],
        side=sample.item["side"],
        number=sample.number,
        defaults={
            "call": sample.call,
            "cached": sample.cached,
            "expectations": [v.to_dict() for v in verdicts],
            "passed": sample.call is not None and all(v.passed for v in verdicts),
        },
    )


def playtest_run(*, run_id: int) -> str:
    """Run a queued playtest (see the module docstring); its final status."""
    if not _claim(run_id):
        return "not_queued"
    run = PlaytestRun.objects.get(pk=run_id)
    samples: list[_Sample] = []
    for item in run.plan:
        if item["error"] is not None:
            PlaytestSample.objects.update_or_create(
                run=run,
                scenario=item["scenario"],
                side=item["side"],
                number=1,
                defaults={
                    "expectations": [Verdict("prompt", False, item["error"]).to_dict()],
                    "passed": False,
                },
            )
            continue
        for n in range(1, item["samples"] + 1):
            key = reply_key(run.model, item["messages"], item["params"], n)
            samples.append(_Sample(item, n, key))
    done = set(
        PlaytestSample.objects.filter(run=run, call__isnull=False).values_list(
            "scenario", "side", "number"
        )
    )
    samples = [s for s in samples if (s.item["scenario"], s.item["side"], s.number) not in done]
    # Checked again: answers cached when the run was made may have gone since.
    needed = calls_needed([s.item for s in samples], run.model)
    if needed + run.calls > max(run.calls_needed, settings.PLAYTEST_MAX_CALLS):
        return _end(run, f"This run now needs {needed} more calls, over PLAYTEST_MAX_CALLS.")
    cache = {
        call.key: call for call in PlaytestCall.objects.filter(key__in=[s.key for s in samples])
    }
    endpoint = Endpoint()
    failures = 0
    try:
        with ThreadPoolExecutor(settings.PLAYTEST_CONCURRENCY) as pool:
            pending: dict[Future[Answer], tuple[_Sample, str | None, str]] = {}
            # Samples with the same reply ask the judge once, and the same question (both
            # sides alike) is asked once: the others wait for the answer.
            judging: dict[str, list[tuple[_Sample, str]]] = {}
            asking: dict[str, list[_Sample]] = {}

            def ask_judges(sample: _Sample) -> None:
                assert sample.call is not None
                for rubric in _judges(sample.item):
                    key = judge_key(run.model, rubric, sample.call.text)
                    known = PlaytestCall.objects.filter(key=key).first()
                    if known is not None:
                        sample.judged[rubric] = parse_judgement(known.text)
                        PlaytestRun.objects.filter(pk=run.pk).update(cached=F("cached") + 1)
                        continue
                    sample.waiting += 1
                    if key in judging:
                        judging[key].append((sample, rubric))
                        continue
                    judging[key] = []
                    messages = judge_messages(rubric, sample.call.text)
                    params = {"temperature": 0.0, "max_tokens": 100, "seed": None}
                    future = pool.submit(endpoint.complete, messages, params)
                    pending[future] = (sample, rubric, key)
                if sample.waiting == 0:
                    _finish_sample(run, sample)

            for sample in samples:
                found = cache.get(sample.key)
                if found is not None:
                    sample.call = found
                    # Paid by this run before it was killed: not a cache hit.
                    sample.cached = found.run_id != run.pk
                    if sample.cached:
                        PlaytestRun.objects.filter(pk=run.pk).update(cached=F("cached") + 1)
                    ask_judges(sample)
                elif sample.key in asking:
                    asking[sample.key].append(sample)
                else:
                    asking[sample.key] = []
                    future = pool.submit(
                        endpoint.complete, sample.item["messages"], sample.item["params"]
                    )
                    pending[future] = (sample, None, sample.key)
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    sample, rubric, key = pending.pop(future)
                    judged: tuple[bool, str]
                    try:
                        answer = future.result()
                    except CallFailed as failed:
                        failures += 1
                        if rubric is None:
                            for waiter in [sample, *asking.pop(key, [])]:
                                waiter.error = str(failed)
                                _finish_sample(run, waiter)
                            continue
                        judged = (False, f"the judge failed: {failed}")
                    else:
                        kind = (
                            PlaytestCall.Kind.REPLY if rubric is None else PlaytestCall.Kind.JUDGE
                        )
                        call = _store(run, key, kind, answer)
                        if rubric is None:
                            sample.call = call
                            ask_judges(sample)
                            for waiter in asking.pop(key, []):
                                waiter.call, waiter.cached = call, True
                                PlaytestRun.objects.filter(pk=run.pk).update(cached=F("cached") + 1)
                                ask_judges(waiter)
                            continue
                        judged = parse_judgement(call.text)
                    for waiter, asked in [(sample, rubric), *judging.pop(key, [])]:
                        waiter.judged[asked] = judged
                        waiter.waiting -= 1
                        if waiter.waiting == 0:
                            _finish_sample(run, waiter)
    finally:
        endpoint.close()
    return _end(run, f"{failures} calls to the model failed." if failures else "")


def _end(run: PlaytestRun, error: str) -> str:
    status = PlaytestRun.Status.FAILED if error else PlaytestRun.Status.DONE
    PlaytestRun.objects.filter(pk=run.pk).update(
        status=status, error=error, finished_at=timezone.now()
    )
    return str(status)


def playtest_confirm(*, actor: Actor, run: PlaytestRun) -> PlaytestRun:
    """Record that ``actor`` publishes although a reply expectation of ``run`` fails."""
    require(actor, role=Role.AUTHOR, action=PLAYTESTING)
    who = key_label(actor) if is_key(actor) else str(getattr(actor, "username", "") or "system")
    run.confirmed_at = timezone.now()
    run.confirmed_by = who[:200]
    run.save(update_fields=["confirmed_at", "confirmed_by"])
    return run
