"""What tracing costs a turn, in-process (run by hand: ``python -m tests.bench.trace_cost``).

The load benchmark's ``--traces`` measures the whole server, where the spread between runs is
larger than tracing's share; this measures the tracing alone: a tool turn's spans (the run,
two provider attempts, one tool call, five checkpoint waits) made by ``RunSpans`` and
``CallSpans`` as the recorders make them, exported by the SDK's batch thread to the OTLP sink
process (``otlp_sink``), and the process's CPU (every thread's: the export's included) per
turn after the last export."""

from __future__ import annotations

import argparse
import os
import time

from actors.conversation.request import ModelRoute, ProviderType
from actors.conversation.secret import Secret
from actors.protocols.run_events import RunEvent, RunEventsHappened, SpanClosed, SpanOpened
from actors.tracing import TraceSettings
from actors.tracing.exporter import start_tracing
from actors.tracing.recording import CallSpans, RunSpans
from store.llm_calls import CallEnd, CallStatus
from store.run_events import EventKind
from tests.bench.otlp_sink import OtlpSinkProcess

ROUTE = ModelRoute(
    provider_id=1,
    provider_name="bench",
    provider_type=ProviderType.OPENAI_CHAT,
    base_url="http://127.0.0.1:9/v1",
    api_key=Secret("sk-bench"),
    headers=(),
    public_id="bench-model",
    model_id="bench-model",
    display_name="Bench",
)
USAGE = {"input_tokens": 1200, "output_tokens": 80, "cache_read_tokens": 1024}


def turn_events(at: int) -> list[tuple[RunEvent, ...]]:
    """A tool turn's facts in the bursts a run tells them."""
    bursts: list[tuple[RunEvent, ...]] = [
        (
            SpanOpened(
                EventKind.RUN, "", at, {"model": "bench-model", "asked": "", "resumed": False}
            ),
        )
    ]
    for job in range(5):
        bursts.append((SpanOpened(EventKind.CHECKPOINT, str(job), at, {"job_id": job}),))
        bursts.append(
            (SpanClosed(EventKind.CHECKPOINT, str(job), at + 3, {"outcome": "published"}),)
        )
    bursts.append((SpanOpened(EventKind.TOOL, "c1", at, {"call_id": "c1", "tool": "Read"}),))
    done = {"call_id": "c1", "tool": "Read", "outcome": "success"}
    bursts.append((SpanClosed(EventKind.TOOL, "c1", at + 5, done, started_at_ms=at + 1),))
    bursts.append((SpanClosed(EventKind.RUN, "", at + 20, {"code": "ok", "message": None}),))
    return bursts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=3000)
    args = parser.parse_args()
    # A queue that holds every span: this loop makes them faster than any server would.
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str(args.turns * 10))
    with OtlpSinkProcess() as sink:
        tracing = start_tracing(TraceSettings(sink.url))
        runs, calls = RunSpans(tracing), CallSpans(tracing)
        end = CallEnd(CallStatus.COMPLETED, 900.0, 4000, "stop", USAGE, http_status=200)
        began, began_cpu, began_made = time.monotonic(), time.process_time(), time.thread_time()
        for n in range(args.turns):
            at = int(time.time() * 1000)
            for burst in turn_events(at):
                runs.observe(RunEventsHappened(f"run-{n}", f"conv-{n}", burst))
            for attempt in (1, 2):
                calls.ended(f"run-{n}", ROUTE, (0, attempt), time.time_ns(), end)
        made = time.thread_time() - began_made
        tracing.shutdown()  # the last export done: every span's CPU counted
        cpu = time.process_time() - began_cpu
        wall = time.monotonic() - began
    print(
        f"{args.turns} tool turns (9 spans each): {cpu / args.turns * 1e6:.0f} us CPU per turn "
        f"made and exported, of which {made / args.turns * 1e6:.0f} us making them (the "
        f"recorders' share), {wall:.1f} s; {sink.received}"
    )


if __name__ == "__main__":
    main()
