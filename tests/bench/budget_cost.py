"""What the budget check costs a run's start, in-process (run by hand:
``python -m tests.bench.budget_cost``).

The load benchmark measures the whole server, where the spread between runs is far larger
than a check of a few microseconds; this measures the check alone, as the SessionActor makes
it: ``BudgetCounters.admit`` then ``release`` for one run, with every limit set (the default
and overrides for half the users, each user with spend and a run every second, 60 in the
sliding minute, under a limit of 120), over ``--users`` users in turn, on a SQLite store seeded
with a call per user. It also times one ``refresh`` (the background re-read: not on a run's
path), to say what it costs the database.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from actors.run.budget_counters import BudgetCounters
from store.base.clock import now_ms
from store.catalog import (
    Limits,
    ModelInput,
    ProviderInput,
    create_provider,
    save_models,
    update_budgets,
)
from store.database import connect_store
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--runs", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = connect_store(f"sqlite:///{folder}/bench.db")
        db = store.database
        provider = create_provider(
            db, ProviderInput(name="p", type="openai-chat", base_url="https://p.example")
        )
        models = [ModelInput(model_id=f"m{i}", display_name=f"M{i}", price_input_per_mtok=1.0)
                  for i in range(3)]  # fmt: skip
        public_ids = [m.public_id for m in save_models(db, provider.id, models)]
        limits = Limits(1e6, 1e7, 120, 10**6, tuple(public_ids))
        users = [f"user-{i}@example.com" for i in range(args.users)]
        update_budgets(db, default=limits, overrides={u: limits for u in users[::2]})
        records = CallRecords(db)
        for user in users:
            call = NewCall(None, user, provider.id, "p", "openai-chat", "https://p.example",
                           public_ids[0], "m0", "M0", False, user_id=user)  # fmt: skip
            call_id = records.start(call, started_at_ms=now_ms() - 1000)
            usage = {"input_tokens": 1000, "output_tokens": 10}
            records.finish(call_id, CallEnd(CallStatus.COMPLETED, 1.0, 1, usage=usage,
                                            http_status=200))  # fmt: skip
        # Each user starts a run every second (60 in the sliding minute, the limit 120).
        clock = [now_ms()]
        counters = BudgetCounters(db, lambda: clock[0])
        began = time.perf_counter()
        counters.refresh()
        refresh_ms = (time.perf_counter() - began) * 1000
        model = public_ids[1]
        began_cpu = time.thread_time()
        for n in range(args.runs):
            user = users[n % len(users)]
            clock[0] += 1000 // len(users) or 1
            assert counters.admit(user, model) is None
            counters.release(user)
        cpu = time.thread_time() - began_cpu
        store.close()
    per_run_us = cpu / args.runs * 1e6
    print(
        f"{args.users} users, {args.runs} runs: check (admit + release) "
        f"{per_run_us:.1f} µs CPU per run; one refresh {refresh_ms:.1f} ms"
    )


if __name__ == "__main__":
    main()
