"""A run's base in the store: the revision the client's state stands for, and the turn's start.

The base is found in the checkpoint index when this server published the client's state, else
the state's roots (fetched) are imported as a revision; a state older than the head is a
rollback, a new branch from it. A user turn's start is one commit (claim, runtime message, first
call index) checked against the history its first checkpoint was built from; a resume claims
the conversation where its interrupted round stands. The decisions are in ``actors.turn.plan``;
this module is the part that reads and writes the store.
"""

from __future__ import annotations

import logging

import msgspec
import peewee

from actors.codecs.checkpoint_json import PendingRound, decode_pending_round
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    decode_message,
)
from actors.protocols.checkpoint import Step
from actors.run.history_cache import HistoryCache
from actors.turn.ending import RecordRunEnd
from actors.turn.interrupted import interrupted_pairs, refuse_resolutions_without_round
from actors.turn.plan import TurnKind, TurnPlan, imported_history, stored
from actors.turn.tool_round import ToolRound
from store.conversations import (
    ANY_HEAD,
    ClaimedRun,
    ConversationStore,
    ConversationStoreError,
    HeadMoved,
    RevisionNotFound,
    StartedTurn,
    ToolRoundRecord,
    ToolRoundStatus,
    roots_digest,
)
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.run")


class UserTurnStart(msgspec.Struct, frozen=True):
    """A user turn before its commit: ``history`` is the base's, ``predicted`` what the commit
    will make of it (the runtime message appended unless a replay already holds it)."""

    from_state: int | None  # the client state's revision; None: the conversation's head
    base: int | None
    history: tuple[CanonicalMessage, ...]
    runtime: CanonicalMessage
    replayed: bool

    @property
    def predicted(self) -> tuple[CanonicalMessage, ...]:
        return self.history if self.replayed else (*self.history, self.runtime)


def check_started(turn: UserTurnStart, started: StartedTurn) -> None:
    """The commit made the history the first checkpoint was built from. It cannot differ once
    the head is checked; if it did, that checkpoint would not be the commit."""
    if started.inserted == turn.replayed or started.base_message_count != len(turn.history):
        raise ConnectError(
            Code.INTERNAL, "the committed turn differs from the checkpoint built for it"
        )


class ResumeStart(msgspec.Struct, frozen=True):
    """A claimed resume: its base's message count, and the interrupted round if there was one
    (``existing``: this server's record of it)."""

    claimed: ClaimedRun
    base_count: int
    pending: PendingRound | None
    existing: ToolRoundRecord | None


def open_round(
    store: ConversationStore,
    run_id: str,
    head: int,
    round_id: str,
    calls: tuple[CanonicalToolCall, ...],
    content: AssistantContent,
    at_ms: int,
    cut: tuple[str, ...] = (),
) -> ToolRound:
    """A new round, stored on ``head`` with every call pending (``cut``: calls whose
    arguments the output limit cut, answered with an error instead of run)."""
    round_ = ToolRound.opened(round_id, calls, content, at_ms, cut)
    new = round_.new_round()
    store.create_tool_round(
        run_id, new.round_id, head, new.assistant_json, list(new.calls), created_at_ms=at_ms
    )
    return round_


def record_run_end(store: ConversationStore, run_id: str, record: RecordRunEnd) -> None:
    """End the run's row; a store failure is logged, and the run still ends."""
    try:
        store.finish_run(
            run_id,
            record.status,
            record.usage_json,
            record.failure_category,
            record.failure_message,
        )
    except (peewee.DatabaseError, ConversationStoreError):
        logger.exception("recording the end of run %s failed", run_id)


def _pending_calls(
    pending: PendingRound,
) -> tuple[tuple[CanonicalToolCall, ...], AssistantContent]:
    """The calls and the message of a round known only from the client's pending entry."""
    calls = tuple(
        CanonicalToolCall(c.index, c.call_id, c.name, c.arguments, pending.model_call_id)
        for c in pending.calls
    )
    content = AssistantContent(
        text=pending.text, thinking=pending.thinking, replay_state=pending.replay_state
    )
    return calls, content


class RunBase:
    """The store side of a run's start, for one run."""

    def __init__(
        self,
        store: ConversationStore,
        histories: HistoryCache,
        request_id: str,
        plan: TurnPlan,
        user_id: str | None = None,
    ) -> None:
        """``user_id``: who the run is for (``ModelRoute.user_id``), kept by its claim."""
        self._store = store
        self._histories = histories
        self._request_id = request_id
        self._plan = plan
        self.user_id = user_id

    def indexed_base(self) -> int | None:
        """The revision the checkpoint index maps the client's roots to, if any."""
        if not self._plan.roots:
            return None
        digest = roots_digest(self._plan.stable_roots)
        return self._store.revision_for_checkpoint(self._plan.conversation_id, digest)

    def base_revision(self, indexed: int | None, fetched: dict[bytes, bytes]) -> int | None:
        """The revision the client's state stands for (None: no state, use the head)."""
        plan = self._plan
        if plan.state is None:
            return None
        if not plan.roots:
            # A state without history: the conversation from its beginning. An editor sends one
            # with every new conversation; one not stored yet is created by the turn's own
            # commit, as with no state, instead of by a transaction of its own first.
            if self._store.head(plan.conversation_id) is None:
                return None
            return self._store.import_revision(plan.conversation_id, ())
        if indexed is not None:
            return indexed
        history = imported_history(plan.roots, fetched)
        revision = self._store.import_revision(plan.conversation_id, [stored(m) for m in history])
        digest = roots_digest(plan.stable_roots)
        self._store.record_checkpoint(plan.conversation_id, digest, revision)
        return revision

    def history(self, revision_id: int) -> tuple[CanonicalMessage, ...]:
        """A committed revision's history: from the cache when a run left it there."""
        cached = self._histories.get(revision_id)
        if cached is not None:
            return cached
        history = tuple(decode_message(m.payload) for m in self._store.messages_at(revision_id))
        self._histories.put(revision_id, history)
        return history

    def turn_base(self, from_state: int | None) -> tuple[int | None, tuple[CanonicalMessage, ...]]:
        """The revision a new turn starts from (the head when the client sent no state; None:
        a new conversation) and its history."""
        base = (
            from_state if from_state is not None else self._store.head(self._plan.conversation_id)
        )
        return base, self.history(base) if base is not None else ()

    def user_turn(self, base: int | None, runtime: CanonicalMessage) -> UserTurnStart:
        """Read what the user turn will start from (the head when the client sent no state)."""
        from_state = base
        # The head now, if no state; the commit must still find it there.
        base, history = self.turn_base(from_state)
        held = next((m for m in history if m.message_id == runtime.message_id), None)
        # A replay keeps the message as the history holds it (its timestamp, its context).
        runtime = held or runtime
        return UserTurnStart(from_state, base, history, runtime, held is not None)

    def commit_user_turn(self, turn: UserTurnStart) -> StartedTurn:
        """Claim, the runtime message and the first call index: one commit. Without client
        state it must still find the head read before (another run may have moved it)."""
        try:
            started = self._store.start_turn(
                self._request_id,
                self._plan.conversation_id,
                turn.from_state,
                stored(turn.runtime),
                expected_head=turn.base if turn.from_state is None else ANY_HEAD,
                user_id=self.user_id,
            )
        except HeadMoved as exc:
            raise ConnectError(
                Code.ABORTED, f"the conversation changed while this turn started ({exc})"
            ) from exc
        return started

    def start_resume(self, base: int | None) -> ResumeStart:
        """Claim the conversation for a resume: on the revision of the interrupted round's last
        committed pair when this server stored that round, else on the base."""
        store = self._store
        if base is None:
            base = store.ensure_conversation(self._plan.conversation_id)
        pending, existing = self._pending_round(base)
        revision = store.revision(base)
        if revision is None:
            raise RevisionNotFound(f"no revision {base}")
        # The claim is the last store call: a failure after it would leave the run claimed.
        if existing is None:
            claimed = store.claim_run(
                self._request_id, self._plan.conversation_id, base, self.user_id
            )
        else:
            # On the round's head as it is when the claim writes (its previous run may have
            # committed a result since the round was read), with the round as read then.
            claimed, existing = store.claim_run_on_round(
                self._request_id, self._plan.conversation_id, existing.round_id, self.user_id
            )
        return ResumeStart(claimed, revision.message_count, pending, existing)

    def settled_steps(self, resume: ResumeStart) -> tuple[Step, ...] | None:
        """For a resume whose round this server stored and settled (its last result committed
        before the settled checkpoint reached the client): the round's steps, rebuilt from its
        cards, for the settled checkpoint the run publishes before its model call; None when
        there is no such round (then the round, if any, runs)."""
        existing = resume.existing
        if existing is None or existing.status is not ToolRoundStatus.SETTLED:
            return None
        cards = self._store.tool_call_cards(existing.round_id)
        return tuple(ToolRound.adopted(existing, existing.created_at_ms, cards).steps)

    def resumed_round(
        self, resume: ResumeStart, pending: PendingRound | None, head: int
    ) -> tuple[ToolRound, int] | None:
        """The interrupted round and the head the run stands on: adopted when this server
        stored it (only calls without a result run again), else stored anew from the client's
        entries (every call runs but those the state proves completed); None when there is
        neither."""
        if resume.existing is not None:
            adopted = self._store.adopt_tool_round(self._request_id, resume.existing.round_id)
            cards = self._store.tool_call_cards(adopted.round_id)
            started = adopted.created_at_ms if pending is None else pending.started_at_ms
            return ToolRound.adopted(adopted, started, cards), head
        if pending is None:
            return None
        # A round this server never stored (e.g. after losing its database): every call runs
        # but those the state proves completed, whose results are committed first.
        calls, content = _pending_calls(pending)
        round_id = f"{self._request_id}:round:resume"
        round_ = open_round(
            self._store, self._request_id, head, round_id, calls, content, pending.started_at_ms
        )
        for pair in round_.prove(pending.results):
            head = self._store.commit_tool_result(
                self._request_id,
                round_id,
                pair.call.call_id,
                (stored(pair.assistant), stored(pair.result)),
            ).revision_id
        return round_, head

    def close_interrupted(
        self,
        base: int | None,
        resolutions: agent.InterruptedPendingToolCallResolutions | None,
        at_ms: int,
    ) -> int | None:
        """For a user message sent while the state's round was pending: the revision whose
        history closes that round, each pending call with the result the client resolved it
        with (``actors.turn.interrupted``); ``base`` when nothing was pending, where a
        resolution the client sent anyway is its error."""
        if base is None:
            refuse_resolutions_without_round(resolutions)
            return base
        pending, existing = self._pending_round(base, kind=TurnKind.NEW)
        if pending is None:
            refuse_resolutions_without_round(resolutions)
            return base
        proven: tuple[CanonicalMessage, ...] = ()
        if existing is not None:
            start = self._store.round_head(existing)
            round_ = ToolRound.adopted(existing, pending.started_at_ms)
        else:
            start = base
            round_id = f"{self._request_id}:round:interrupted"
            round_ = ToolRound.opened(round_id, *_pending_calls(pending), pending.started_at_ms)
            # The calls the state proves completed keep their results.
            pairs = round_.prove(pending.results)
            proven = tuple(m for pair in pairs for m in (pair.assistant, pair.result))
        closing = (*proven, *interrupted_pairs(round_, resolutions, at_ms))
        history = (*self.history(start), *closing)
        return self._store.import_revision(self._plan.conversation_id, [stored(m) for m in history])

    def _pending_round(
        self, base: int, *, kind: TurnKind = TurnKind.RESUME
    ) -> tuple[PendingRound | None, ToolRoundRecord | None]:
        """For a run of ``kind``: the client's pending round, and this server's record of it
        if any."""
        state = self._plan.state
        if self._plan.kind is not kind or state is None:
            return None, None
        pending = decode_pending_round(state.pending_tool_calls)
        if pending is None:
            if kind is TurnKind.RESUME:
                # A round started from this state whose staged checkpoint never reached the
                # client (the process died first): continued, never started again.
                return None, self._store.newest_round_on(self._plan.conversation_id, base)
            return None, None
        existing = self._store.find_pending_round(
            self._plan.conversation_id,
            base,
            [c.call_id for c in pending.calls],
            settled_too=kind is TurnKind.RESUME,
        )
        return pending, existing
