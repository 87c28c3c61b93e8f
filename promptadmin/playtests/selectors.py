"""Reads of playtest runs: a run as the API and the studio show it, its totals."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from promptadmin.playtests.models import PlaytestRun, PlaytestSample


def runs() -> QuerySet[PlaytestRun]:
    """Runs, newest first, with their samples and answers (three queries in all)."""
    samples = PlaytestSample.objects.select_related("call").order_by("number", "id")
    return PlaytestRun.objects.prefetch_related(Prefetch("samples", queryset=samples))


def results(run: PlaytestRun) -> list[dict[str, Any]]:
    """Each (scenario, side) of the run in plan order, with its samples so far (one query).

    A scenario passes when every sample it asked for has come and passes."""
    rows: dict[tuple[str, str], list[PlaytestSample]] = {}
    for sample in run.samples.all():
        rows.setdefault((sample.scenario, sample.side), []).append(sample)
    answer = []
    for item in run.plan:
        got = rows.get((item["scenario"], item["side"]), [])
        wanted = 1 if item.get("error") is not None else item["samples"]
        answer.append(
            {
                "scenario": item["scenario"],
                "side": item["side"],
                "samples": [
                    {
                        "reply": s.call.text if s.call else None,
                        "tokens": {"in": s.call.tokens_in, "out": s.call.tokens_out}
                        if s.call
                        else None,
                        "latency_ms": s.call.latency_ms if s.call else None,
                        "cached": s.cached,
                        "expectations": s.expectations,
                    }
                    for s in got
                ],
                "passed": len(got) == wanted and all(s.passed for s in got),
            }
        )
    return answer


def totals(run: PlaytestRun) -> dict[str, int]:
    """Tokens in and out of the replies and judgements this run paid for."""
    paid = run.paid_calls.all()
    return {
        "tokens_in": sum(call.tokens_in for call in paid),
        "tokens_out": sum(call.tokens_out for call in paid),
    }


def detail(run: PlaytestRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "status": run.status,
        "release": run.release,
        "compare_to": run.compare_to or None,
        "model": run.model,
        "calls": run.calls,
        "cached": run.cached,
        "results": results(run),
    }


def latest_on_working(compare_to: str | None) -> PlaytestRun | None:
    """The newest run of the working copy compared with ``compare_to`` (the publish page's
    "Playtest the change")."""
    return runs().filter(release="working", compare_to=compare_to or "").first()


def replies_failing(run: PlaytestRun) -> bool:
    """Whether a reply of the run's release side fails an expectation (or never came)."""
    return PlaytestSample.objects.filter(run=run, side="release", passed=False).exists()


def scenarios_with_reply_expectations() -> list[str]:
    from assembler.replies import is_reply_expectation
    from promptadmin.releases.models import Scenario

    return [
        name
        for name, expectations in Scenario.objects.values_list("name", "expectations")
        if any(is_reply_expectation(item) for item in expectations)
    ]
