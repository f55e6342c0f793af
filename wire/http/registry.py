"""The edge's run registry: request id -> outbound stream, ordering inbox and SessionActor.

Owned by the asyncio loop (no locks). RunSSE and BidiAppend may arrive in either order, so
both create the run; a finished run keeps its frames for a retention period, then its id is
remembered as removed so that a late append answers 404 instead of starting a new session.

The SessionActor starts with the first released client message, unless that message is a
RunRequest the edge marked as one of Cursor's own models: then the run is relayed upstream
(``wire.http.upstream_run``) and no actor ever starts for it. Anything else the run hears
before its first message (a deadline, a cancel) starts the actor, which answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable

import msgspec
import pykka

from actors.loop.bridge import LoopRunOutput
from actors.protocols.edge import (
    AppendGapDeadlinePassed,
    CancelRun,
    ClientMessageReceived,
    EdgeMessage,
    RunRequestDeadlinePassed,
    RunSseStalled,
)
from actors.protocols.mailbox import Mailbox
from actors.protocols.run_output import RunOutput
from wire.bidi import BidiAppend, ParentLink
from wire.burst_log import BurstLog
from wire.connect import end_stream_frame
from wire.errors import Code, ConnectError, cancelled_error, protocol_error
from wire.http.limits import EdgeLimits
from wire.http.outbound import OutboundStream
from wire.http.upstream_run import Answer, RawRequest, Upstream, UpstreamRun
from wire.identity import ANONYMOUS_USER
from wire.inbox import BufferPool, SeqnoInbox
from wire.log import log_event
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.registry")

SessionFactory = Callable[[str, RunOutput], Mailbox[EdgeMessage]]


def run_not_found(request_id: str) -> ConnectError:
    return ConnectError(Code.NOT_FOUND, f"run not found: {request_id}")


class Inbound(msgspec.Struct, frozen=True):
    """One append waiting in a run's inbox, with its request as sent when it may be relayed."""

    seqno: int
    message: agent.AgentClientMessage
    raw: RawRequest | None
    user_id: str = ANONYMOUS_USER  # who sent it (``wire.identity``)


def inbound_bytes(item: Inbound) -> int:
    """What a waiting append holds in memory: its parsed message and its body as sent."""
    return item.message.ByteSize() + (0 if item.raw is None else len(item.raw.body))


class RunChannel:
    """What the edge holds for one request id."""

    def __init__(
        self,
        request_id: str,
        outbound: OutboundStream,
        output: RunOutput,
        inbox: SeqnoInbox[Inbound],
    ) -> None:
        self.request_id = request_id
        self.outbound = outbound
        self.output = output
        self.inbox = inbox
        self.parent: ParentLink | None = None
        self.actor: Mailbox[EdgeMessage] | None = None
        # Relaying: the RunSSE as sent, whether the RunRequest is Cursor's, whether the whole
        # stream is (a relayed ``Run``: messages before its RunRequest go upstream too), the
        # live relay.
        self.run_sse: RawRequest | None = None
        self.relay_wanted = False
        self.relay_stream = False
        self.relay: UpstreamRun | None = None
        self.timers: list[asyncio.TimerHandle] = []
        # The deadline of the open append_seqno gap, if any: (missing seqno, its timer).
        self.gap: tuple[int, asyncio.TimerHandle] | None = None

    def tell(self, message: EdgeMessage) -> None:
        """Tell the run's actor; a stopped actor means the run is over."""
        assert self.actor is not None
        try:
            self.actor.tell(message)
        except pykka.ActorDeadError as exc:
            raise run_not_found(self.request_id) from exc

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        self.cancel_gap()

    def cancel_gap(self) -> None:
        if self.gap is not None:
            self.gap[1].cancel()
            self.gap = None


class RunRegistry:
    """Maps request ids to live runs and removed ids to tombstones."""

    def __init__(
        self, limits: EdgeLimits, start_session: SessionFactory, upstream: Upstream | None = None
    ) -> None:
        """Without ``upstream`` nothing is relayed."""
        self._limits = limits
        self._start_session = start_session
        self._upstream = upstream
        self._channels: dict[str, RunChannel] = {}
        self._tombstones: OrderedDict[str, float] = OrderedDict()
        # Finished runs inside their retention period, oldest first, and their frames' bytes.
        self._finished: OrderedDict[str, RunChannel] = OrderedDict()
        self._finished_bytes = 0
        self._shutting_down = False
        # Out-of-order appends of every run, against one byte budget.
        self._append_pool = BufferPool(limits.append_buffer_bytes)
        self._refused_log = BurstLog(logger, "run refused: too many live request ids")

    @property
    def buffered_append_bytes(self) -> int:
        """Bytes of appends waiting behind a gap, over all runs."""
        return self._append_pool.used

    @property
    def live_count(self) -> int:
        """Runs held in memory, finished ones inside their retention period included."""
        return len(self._channels)

    def stream_for(
        self, request_id: str, raw: RawRequest | None = None, *, relayed: bool = False
    ) -> OutboundStream:
        """The outbound stream a RunSSE subscribes to, creating the run if it is new.

        ``raw`` is the RunSSE as sent; the first one opens the upstream RunSSE of a relayed
        run (now, or once the run is relayed). ``relayed``: the caller already knows the run
        is relayed (a ``Run`` stream whose RunRequest named Cursor's model)."""
        channel = self._get_or_create(request_id)
        if relayed and self._upstream is not None:
            channel.relay_wanted = channel.relay_stream = True
        if raw is not None and channel.run_sse is None:
            channel.run_sse = raw
            if channel.relay is not None:
                channel.relay.open(raw)
        return channel.outbound

    def append(
        self,
        append: BidiAppend,
        raw: RawRequest | None = None,
        *,
        relay: bool = False,
        answered: bool = True,
    ) -> Answer | None:
        """Order one BidiAppend and tell its released messages to the run's actor.

        ``relay`` marks a RunRequest of one of Cursor's models; ``raw`` is the append as sent.
        For a relayed run the append goes upstream instead, and the upstream's answer to it
        is returned for the edge to pass on, unless ``answered`` is off (a ``Run`` stream has
        no answer per message)."""
        channel = self._get_or_create(append.request_id)
        if channel.outbound.closed:
            raise run_not_found(append.request_id)
        if channel.relay is not None:
            if raw is None:
                raise protocol_error(f"run {append.request_id} is relayed over RunSSE")
            return channel.relay.forward(raw, answered=answered)
        if append.parent is not None:
            self._link_parent(channel, append.parent)
        if relay and raw is not None and self._upstream is not None:
            channel.relay_wanted = True
        released = channel.inbox.offer(
            append.seqno, Inbound(append.seqno, append.message, raw, append.user_id)
        )
        if released and channel.actor is None:
            if self._relays(channel, released[0]):
                return self._start_relay(channel, released, append.seqno if answered else None)
            self._start_actor(channel)
        for item in released:
            channel.tell(
                ClientMessageReceived(item.seqno, item.message, channel.parent, item.user_id)
            )
        self._watch_gap(channel)
        return None

    @staticmethod
    def _relays(channel: RunChannel, first: Inbound) -> bool:
        return (
            channel.relay_wanted
            and first.raw is not None
            and (channel.relay_stream or first.message.WhichOneof("message") == "run_request")
        )

    def _start_relay(
        self, channel: RunChannel, released: list[Inbound], current: int | None
    ) -> Answer | None:
        """Relay the run: every append so far goes upstream in order; the answer to the
        ``current`` seqno is returned (the others were answered already)."""
        assert self._upstream is not None
        channel.cancel_timers()
        relay = UpstreamRun(
            self._upstream,
            channel.request_id,
            channel.outbound,
            lambda: self._retire(channel),
            client_rpc="Run" if channel.relay_stream else "",
        )
        channel.relay = relay
        log_event(logger, logging.INFO, "run relayed upstream", request_id=channel.request_id)
        if channel.run_sse is not None:
            relay.open(channel.run_sse)
        answer: Answer | None = None
        for item in [*released, *channel.inbox.drain()]:
            if item.raw is None:
                continue
            forwarded = relay.forward(item.raw, answered=item.seqno == current)
            answer = forwarded or answer
        assert (answer is None) == (current is None)
        return answer

    def _start_actor(self, channel: RunChannel) -> None:
        if channel.actor is None:
            channel.actor = self._start_session(channel.request_id, channel.output)

    def sse_left(self, request_id: str) -> None:
        """A RunSSE client went away: a relayed run's upstream streams close with it (a
        local run keeps going; its client reconnects)."""
        channel = self._channels.get(request_id)
        if channel is not None and channel.relay is not None:
            log_event(logger, logging.INFO, "relayed run's client left", request_id=request_id)
            channel.relay.close()

    def _watch_gap(self, channel: RunChannel) -> None:
        """Keep one deadline for the seqno later appends wait for; none when nothing waits."""
        missing = channel.inbox.missing
        if channel.gap is not None and channel.gap[0] == missing:
            return
        channel.cancel_gap()
        if missing is None:
            return
        timeout = self._limits.append_gap_timeout_s
        timer = asyncio.get_running_loop().call_later(
            timeout, self._gap_expired, channel, missing, timeout
        )
        channel.gap = (missing, timer)

    def _gap_expired(self, channel: RunChannel, missing: int, timeout: float) -> None:
        if channel.gap is None or channel.gap[0] != missing:
            return
        channel.gap = None
        log_event(
            logger,
            logging.INFO,
            "append_seqno gap not filled",
            request_id=channel.request_id,
            missing=missing,
            waited_s=timeout,
        )
        self._tell_quietly(channel, AppendGapDeadlinePassed(missing, timeout))

    def reader_stalled(self, request_id: str, waited_s: float) -> None:
        """A RunSSE reader of ``request_id`` took nothing for ``waited_s``: end its run."""
        channel = self._channels.get(request_id)
        if channel is not None and channel.relay is not None:
            channel.relay.close()
        elif channel is not None:
            self._tell_quietly(channel, RunSseStalled(waited_s))

    def has(self, request_id: str) -> bool:
        """Whether the id names a run held in memory (live or inside its retention)."""
        return request_id in self._channels

    def disconnect(self, request_id: str, reason: str) -> None:
        """The only client of a run left (a ``Run`` stream gone): cancel it if still open, or
        close a relayed run's upstream streams."""
        channel = self._channels.get(request_id)
        if channel is not None and channel.relay is not None:
            channel.relay.close(cancelled_error())
        elif channel is not None and not channel.outbound.closed:
            self._tell_quietly(channel, CancelRun(reason))

    def fail(self, request_id: str, error: ConnectError) -> None:
        """A client protocol violation on a ``Run`` stream: the run (relayed or not) ends
        with ``error``."""
        channel = self._channels.get(request_id)
        if channel is not None and channel.relay is not None:
            channel.relay.close(error)
        elif channel is not None and channel.outbound.close(end_stream_frame(error)):
            self._tell_quietly(channel, CancelRun(error.message))

    def shutdown(self) -> None:
        """Cancel every run: each open stream gets the ``canceled`` EndStream."""
        self._shutting_down = True
        cancelled = 0
        for channel in list(self._channels.values()):
            channel.cancel_timers()
            channel.inbox.discard()
            if channel.relay is not None:
                cancelled += not channel.outbound.closed
                channel.relay.close(cancelled_error())
                continue
            if channel.outbound.close(end_stream_frame(cancelled_error())):
                cancelled += 1
            self._tell_quietly(channel, CancelRun("server shutdown"))
        self._channels.clear()
        self._finished.clear()
        self._finished_bytes = 0
        log_event(logger, logging.INFO, "runs cancelled for shutdown", count=cancelled)

    def _get_or_create(self, request_id: str) -> RunChannel:
        channel = self._channels.get(request_id)
        if channel is not None:
            return channel
        if self._shutting_down or self._is_removed(request_id):
            raise run_not_found(request_id)
        return self._create(request_id)

    def _make_room(self, request_id: str) -> None:
        """Keep at most ``max_live_runs`` ids: the oldest finished run goes early, and with
        none finished the new id is refused."""
        while len(self._channels) >= self._limits.max_live_runs and self._finished:
            self._remove(next(iter(self._finished.values())))
        if len(self._channels) >= self._limits.max_live_runs:
            self._refused_log("live runs", request_id=request_id, limit=self._limits.max_live_runs)
            raise ConnectError(
                Code.RESOURCE_EXHAUSTED,
                f"this server holds {self._limits.max_live_runs} live runs, its limit; "
                "try again once some have ended",
            )

    def _create(self, request_id: str) -> RunChannel:
        self._make_room(request_id)
        loop = asyncio.get_running_loop()
        outbound = OutboundStream(self._limits.heartbeat_interval_s)
        output = LoopRunOutput(
            loop,
            send=outbound.send,
            run_started=outbound.start_heartbeats,
            finish=lambda error: self._finish(channel, error),
        )
        inbox: SeqnoInbox[Inbound] = SeqnoInbox(
            max_bytes=self._limits.append_buffer_bytes_per_run,
            pool=self._append_pool,
            size=inbound_bytes,
        )
        channel = RunChannel(request_id, outbound, output, inbox)
        timeout = self._limits.run_request_timeout_s
        channel.timers.append(
            loop.call_later(timeout, self._tell_quietly, channel, RunRequestDeadlinePassed(timeout))
        )
        self._channels[request_id] = channel
        log_event(logger, logging.DEBUG, "run created", request_id=request_id)
        return channel

    def _finish(self, channel: RunChannel, error: ConnectError | None) -> None:
        channel.outbound.close(end_stream_frame(error))
        self._retire(channel)

    def _retire(self, channel: RunChannel) -> None:
        """The run's stream is closed: keep its frames for the retention period, within the
        byte budget of all finished runs (the oldest go first past it). Appends still
        waiting behind a gap are dropped: nothing will read them."""
        channel.cancel_timers()
        channel.inbox.discard()
        if self._channels.get(channel.request_id) is not channel:
            return
        loop = asyncio.get_running_loop()
        channel.timers.append(
            loop.call_later(self._limits.finished_retention_s, self._remove, channel)
        )
        if channel.request_id not in self._finished:
            self._finished[channel.request_id] = channel
            self._finished_bytes += channel.outbound.history_bytes
        while (
            self._finished_bytes > self._limits.finished_retention_bytes and len(self._finished) > 1
        ):
            oldest = next(iter(self._finished.values()))
            log_event(
                logger,
                logging.DEBUG,
                "finished run removed early (retention bytes)",
                request_id=oldest.request_id,
            )
            self._remove(oldest)

    def _remove(self, channel: RunChannel) -> None:
        if self._channels.get(channel.request_id) is not channel:
            return
        channel.cancel_timers()
        if self._finished.pop(channel.request_id, None) is not None:
            self._finished_bytes -= channel.outbound.history_bytes
        del self._channels[channel.request_id]
        expiry = asyncio.get_running_loop().time() + self._limits.tombstone_ttl_s
        self._tombstones[channel.request_id] = expiry
        self._tombstones.move_to_end(channel.request_id)
        while len(self._tombstones) > self._limits.max_tombstones:
            self._tombstones.popitem(last=False)
        log_event(logger, logging.DEBUG, "run removed", request_id=channel.request_id)

    def _is_removed(self, request_id: str) -> bool:
        expiry = self._tombstones.get(request_id)
        if expiry is None:
            return False
        if expiry <= asyncio.get_running_loop().time():
            del self._tombstones[request_id]
            return False
        return True

    def _link_parent(self, channel: RunChannel, parent: ParentLink) -> None:
        # The edge owns the link (one owner); the run hears it with each message.
        if channel.parent is None:
            channel.parent = parent
        elif channel.parent != parent:
            raise protocol_error(f"conflicting parent ids for request {channel.request_id}")

    def _tell_quietly(self, channel: RunChannel, message: EdgeMessage) -> None:
        """Tell the run's actor (started now if no message came yet); never a relayed run's.

        A dead actor means the run already ended on its own."""
        if channel.relay is not None:
            return
        self._start_actor(channel)
        assert channel.actor is not None
        with contextlib.suppress(pykka.ActorDeadError):
            channel.actor.tell(message)
