"""Time appending to a conversation and reading its history at 100 and at 100,000
messages: ``make bench-conversations``.

Recreates its own PostgreSQL database (``BENCH_CONVERSATIONS_DATABASE_URL``, default
``promptadmin_bench_conversations``) and makes two conversations the same way (inserted in
bulk, as if appended one at a time, all but the newest 20 messages summarized): one of
100 messages and one of ``--messages`` (default 100,000); and two whose newest user
message is followed by a run of replies longer than a small budget shows (200 replies in
300 messages, 5,000 in ``--messages``). Then, for ``--rounds`` rounds (default 30), it
times through the services and selectors the API and assembly call:

- appending one message (``conversation_append``);
- reading the history block just after (``history_block``: a new state, nothing
  remembered), at the conversation's budget;
- loading what assembly's history layer needs (``history_for_assembly``, a new budget);
- the studio's newest page of 50 messages and one from the middle (``message_page``);
- the history block after the run of replies, at a budget of about 300 tokens.

Each line gives the median (and 90th percentile) at both sizes and their ratio: the target
is a ratio near 1 (the same cost whatever the length). A shared 2-core machine is noisy:
read the ratios, and run it twice.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median, quantiles

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.bench_api import recreate_database  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/promptadmin_bench_conversations"
RECENT = 20  # messages not yet summarized
REPLIES = 5000  # after the newest user message, in the long run of replies
# "Flat" if the long conversation costs at most this many times the short one.
FLAT_RATIO = 1.5


def make_conversation(key: str, total: int, *, replies: int = 0) -> None:
    """A conversation of ``total`` messages inserted in bulk, all but the newest 20 stood
    for by a done summary; the newest ``replies`` are assistant messages after one user
    message (the rest alternate)."""
    from django.db.models.functions import Now

    from promptadmin.conversations.models import Conversation, Message, Summary, SummaryStatus
    from promptadmin.core.tokens import tokenizer

    encoding = tokenizer().name
    conversation = Conversation.objects.create(key=key, history_budget=2000)
    start = total - replies
    summarized = min(total - RECENT, max(start - RECENT, 0)) if replies else total - RECENT

    def role(position: int) -> str:
        if replies and position > start:
            return "assistant"
        return "user" if position % 2 or position == start else "assistant"

    batch = 10_000
    for first in range(1, total + 1, batch):
        Message.objects.bulk_create(
            Message(
                conversation=conversation,
                position=position,
                role=role(position),
                content=f"Turn {position}: the caravan reaches the well at dusk.",
                token_count=12,
                token_encoding=encoding,
            )
            for position in range(first, min(first + batch, total + 1))
        )
    summary = Summary.objects.create(
        conversation=conversation,
        requested_through=summarized,
        covers_through=summarized,
        status=SummaryStatus.DONE,
        content="The caravan crossed the desert and lost two camels.",
        token_count=11,
        token_encoding=encoding,
        created_at=Now(),
    )
    Conversation.objects.filter(pk=conversation.pk).update(
        last_position=total,
        summarized_through=summarized,
        current_summary=summary,
        unsummarized_tokens=(total - summarized) * 12,
    )


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_CONVERSATIONS_DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "bench-only-" + "x" * 40,
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "promptadmin.settings",
            # No summary is due during the rounds; should one be, it is made here and now.
            "CELERY_TASK_ALWAYS_EAGER": "true",
        }
    )
    os.environ.pop("REDIS_URL", None)
    print(f"bench: recreating {database_url}", flush=True)
    recreate_database(database_url)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from promptadmin.conversations import selectors, services

    call_command("migrate", verbosity=0)
    sizes = {"short": 100, "long": args.messages}
    for name, total in sizes.items():
        print(f"bench: making the {name} conversation ({total} messages)", flush=True)
        make_conversation(name, total)
    print("bench: making two with runs of replies after their newest user message", flush=True)
    runs = {"short": ("replies-short", 300, 200), "long": ("replies-long", args.messages, REPLIES)}
    for key, total, replies in runs.values():
        make_conversation(key, total, replies=replies)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    operations: dict[str, dict[str, list[float]]] = {}

    def record(operation: str, name: str, seconds: float) -> None:
        operations.setdefault(operation, {}).setdefault(name, []).append(seconds)

    message = [{"role": "user", "content": "We make camp by the well and count the water."}]
    for number in range(args.rounds):
        for name in ("short", "long"):
            record(
                "append one message",
                name,
                timed(lambda: services.conversation_append(actor=None, key=name, messages=message)),  # noqa: B023
            )
            record("history block (new state)", name, timed(lambda: selectors.history_block(name)))  # noqa: B023
            budget = 1000 + number  # a budget not loaded before
            record(
                "history for assembly (new budget)",
                name,
                timed(lambda: selectors.history_for_assembly(name, budget)),  # noqa: B023
            )
            conversation = selectors.conversation_get(name)
            record(
                "newest page of 50 messages",
                name,
                timed(lambda: selectors.message_page(conversation, size=50)),  # noqa: B023
            )
            middle = max(1, conversation.last_position // 100)
            record(
                "a middle page of 50 messages",
                name,
                timed(lambda: selectors.message_page(conversation, page=middle, size=50)),  # noqa: B023
            )
            key = runs[name][0]
            budget = 300 + number  # a budget not fitted before
            record(
                "history after a run of replies (new budget)",
                name,
                timed(lambda: selectors.history_block(key, budget=budget)),  # noqa: B023
            )

    def ms(values: list[float]) -> str:
        p90 = quantiles(values, n=10)[-1] if len(values) > 1 else values[0]
        return f"{median(values) * 1000:7.2f} ({p90 * 1000:6.2f})"

    print()
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.rounds} rounds")
    header = (
        f"{'operation':<44} {'100 msgs ms (p90)':>18} {args.messages:>7} msgs ms (p90) {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for operation, by_size in operations.items():
        short, long = by_size["short"], by_size["long"]
        ratio = median(long) / median(short)
        verdict = "flat" if ratio <= FLAT_RATIO else "GROWS"
        print(f"{operation:<44} {ms(short):>18} {ms(long):>22} {ratio:>6.2f} {verdict}")
    print(f"\n(the replies line: 200 replies in 300 messages against {REPLIES} in {args.messages})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
