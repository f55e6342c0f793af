"""A run's outbound stream: every frame kept for replay, fanned out to RunSSE subscribers.

Lives on the asyncio loop; actors reach it only through ``actors.loop.bridge``. A reconnecting
RunSSE gets the whole history, then live frames. The first EndStream closes the stream and
anything after it is dropped. Heartbeats go to live subscribers only and are never replayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from wire.server_messages import heartbeat_frame

# A subscriber's queue holds frames, and None once its iteration is to end.
# Waiting frames are joined into one write up to about this size (a replayed history with its
# checkpoint blobs is not copied into one object).
MAX_JOINED_BYTES = 1 << 20


class OutboundStream:
    """History plus live fan-out of one run's Connect frames."""

    def __init__(self, heartbeat_interval_s: float) -> None:
        self._history: list[bytes] = []
        self._history_bytes = 0
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()
        self._closed = False
        self._heartbeat_interval_s = heartbeat_interval_s
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._last_sent = asyncio.get_running_loop().time()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def history_bytes(self) -> int:
        """The bytes of every frame kept for replay (what a finished run holds in memory)."""
        return self._history_bytes

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def send(self, frame: bytes) -> None:
        """Append a frame to the history and deliver it live; dropped once closed."""
        if self._closed:
            return
        self._history.append(frame)
        self._history_bytes += len(frame)
        self._deliver(frame)

    def close(self, end_frame: bytes | None) -> bool:
        """Send the EndStream frame and end every subscription. False if already closed.

        ``None`` ends the stream without a frame of ours: a relayed run's frames, EndStream
        included, came from upstream."""
        if self._closed:
            return False
        if end_frame is not None:
            self._history.append(end_frame)
            self._history_bytes += len(end_frame)
            self._deliver(end_frame)
        self._closed = True
        for queue in self._subscribers:
            queue.put_nowait(None)
        self._subscribers.clear()
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            self._heartbeat_task = None
        return True

    def start_heartbeats(self) -> None:
        """Begin sending heartbeats whenever the stream has been quiet for the interval."""
        if self._closed or self._heartbeat_task is not None:
            return
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeats())

    def subscribe(self) -> AsyncGenerator[bytes]:
        """Yield the whole history, then live frames until the stream closes (see
        ``Subscription.frames``)."""
        return Subscription(self).frames()

    def _deliver(self, frame: bytes) -> None:
        self._last_sent = asyncio.get_running_loop().time()
        for queue in self._subscribers:
            queue.put_nowait(frame)

    async def _heartbeats(self) -> None:
        loop = asyncio.get_running_loop()
        frame = heartbeat_frame()
        while not self._closed:
            quiet_for = loop.time() - self._last_sent
            if quiet_for >= self._heartbeat_interval_s:
                self._deliver(frame)
                continue
            await asyncio.sleep(self._heartbeat_interval_s - quiet_for)


class Subscription:
    """One reader of a stream: its frames, and ``leave`` to end them from elsewhere on the
    loop (the reader's client has gone while nothing was being written to it)."""

    def __init__(self, stream: OutboundStream) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.left = False

    def leave(self) -> None:
        """End the iteration at its next wait; the stream itself goes on."""
        if not self.left:
            self.left = True
            self._queue.put_nowait(None)

    async def frames(self) -> AsyncGenerator[bytes]:
        """Yield the whole history, then live frames until the stream closes or the reader
        leaves.

        Frames already waiting are yielded together, in order, as one bytes object (Connect
        envelopes simply follow each other on the wire): a checkpoint's KV SETs or the events
        released behind a checkpoint then cost one write, not one each."""
        stream, queue = self._stream, self._queue
        if self.left:
            return
        for frame in stream._history:
            queue.put_nowait(frame)
        if stream._closed:
            queue.put_nowait(None)
        else:
            stream._subscribers.add(queue)
        try:
            ended = False
            while not ended:
                first = await queue.get()
                if first is None:
                    break
                batch, size = [first], len(first)
                while size < MAX_JOINED_BYTES and not queue.empty():
                    more = queue.get_nowait()
                    if more is None:
                        ended = True
                        break
                    batch.append(more)
                    size += len(more)
                yield batch[0] if len(batch) == 1 else b"".join(batch)
        finally:
            stream._subscribers.discard(queue)
