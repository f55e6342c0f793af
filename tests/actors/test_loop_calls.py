"""Calls from actor threads onto the loop: in order, one wake-up per burst, errors contained."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVarTuple

from actors.loop.bridge import LoopCalls, loop_calls


async def test_calls_from_many_threads_run_in_the_order_each_thread_made_them() -> None:
    loop = asyncio.get_running_loop()
    calls = loop_calls(loop)
    seen: dict[int, list[int]] = {t: [] for t in range(8)}
    done = asyncio.Event()
    total = 8 * 500

    def record(thread: int, number: int) -> None:
        seen[thread].append(number)
        if sum(len(v) for v in seen.values()) == total:
            done.set()

    def make(thread: int) -> None:
        for number in range(500):
            calls.call(record, thread, number)

    threads = [threading.Thread(target=make, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    await asyncio.wait_for(done.wait(), 5)
    assert all(numbers == list(range(500)) for numbers in seen.values())
    assert loop_calls(loop) is calls  # one queue per loop


Ts = TypeVarTuple("Ts")


class CountingLoop(asyncio.SelectorEventLoop):
    wakeups = 0

    def call_soon_threadsafe(
        self,
        callback: Callable[[*Ts], object],
        *args: *Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def test_a_burst_of_calls_wakes_the_loop_once_and_an_error_stops_none_of_the_others() -> None:
    loop = CountingLoop()
    errors: list[BaseException] = []
    loop.set_exception_handler(lambda _, context: errors.append(context["exception"]))
    ran: list[int] = []
    calls = LoopCalls(loop)

    def fail() -> None:
        raise ValueError("a call's own error")

    def burst() -> None:
        calls.call(ran.append, 1)
        calls.call(fail)
        calls.call(ran.append, 2)
        calls.call(ran.append, 3)

    thread = threading.Thread(target=burst)
    thread.start()
    thread.join()
    assert loop.wakeups == 1
    assert calls.wakeups == 1  # the count the crossing test reads agrees with the loop's
    loop.run_until_complete(asyncio.sleep(0.01))
    assert ran == [1, 2, 3]
    assert [str(e) for e in errors] == ["a call's own error"]
    calls.call(ran.append, 4)  # after the batch ran, the next call wakes the loop again
    assert loop.wakeups == 2
    assert calls.wakeups == 2
    loop.run_until_complete(asyncio.sleep(0.01))
    assert ran == [1, 2, 3, 4]
    loop.close()
    calls.call(ran.append, 5)  # a closed loop: dropped, no exception
    calls.call(ran.append, 6)
    assert ran == [1, 2, 3, 4]
