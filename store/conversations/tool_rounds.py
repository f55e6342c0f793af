"""Tool rounds: a model message's calls, their results committed as (call, result) pairs in
arrival order, and a round taken over by the run that resumes it.

Why a run can adopt a tool round: when the client's stream drops mid-round, the next run finds
the round by its base and call ids (``find_pending_round``), claims the conversation on the
round's head (``round_head``: the revision of its last committed pair, or its base), takes the
round over (``adopt_tool_round``) and commits the remaining results, which continue the same
arrival numbering and chain of pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.conversations.checks import (
    check_call_ids,
    check_id,
    check_messages,
    check_revision_id,
)
from store.conversations.errors import (
    ConversationNotFound,
    DuplicateToolResult,
    InvalidInput,
    StaleRun,
    ToolRoundConversationMismatch,
    ToolRoundExists,
    ToolRoundNotFound,
    ToolRoundSettled,
    UnknownToolCall,
)
from store.conversations.records import (
    ClaimedRun,
    StoredMessage,
    ToolCallRecord,
    ToolCallSpec,
    ToolCallStatus,
    ToolResultCommitted,
    ToolRoundRecord,
    ToolRoundStatus,
)
from store.conversations.runs import Runs
from store.conversations.sql import TOOL_ROUND_CALLS, TOOL_ROUNDS, as_bytes, bind_table, columns_of

# tool_rounds columns are ToolRoundRecord's but its calls; tool_round_calls columns are
# round_id, call_index (the record's ``index``) and the rest of ToolCallRecord's.
ROUND_COLUMNS = tuple(f for f in ToolRoundRecord.__struct_fields__ if f != "calls")
CALL_FIELDS = tuple(f for f in ToolCallRecord.__struct_fields__ if f != "index")


class ToolRounds(Runs):
    """Rounds and their calls; every write is a run's, checked like an append."""

    def __init__(self, database: peewee.Database) -> None:
        super().__init__(database)
        self._rounds = bind_table(database, TOOL_ROUNDS, ROUND_COLUMNS)
        self._calls = bind_table(
            database, TOOL_ROUND_CALLS, ("round_id", "call_index", *CALL_FIELDS, "tool_call")
        )

    def create_tool_round(
        self,
        run_id: str,
        round_id: str,
        expected_head: int,
        assistant_json: bytes,
        calls: Sequence[ToolCallSpec],
        *,
        created_at_ms: int | None = None,
    ) -> None:
        """Record a round of tool calls, all pending, based on the run's head.

        ``assistant_json`` (text, thinking, replay state of the model's message) is kept as
        given. ``created_at_ms`` lets a resumed round keep its original start time.
        """
        check_id(round_id, "round_id")
        if not isinstance(assistant_json, bytes):
            raise InvalidInput("assistant_json must be bytes")
        checked = self._check_calls(round_id, calls)
        now = now_ms()
        with self._db.atomic():
            self._own(run_id, expected_head)
            r = self._rounds
            if r.select(r.round_id).where(r.round_id == round_id).exists():
                raise ToolRoundExists(f"tool round {round_id} already exists")
            r.insert(
                round_id=round_id,
                run_id=run_id,
                base_revision_id=expected_head,
                assistant_json=assistant_json,
                status=ToolRoundStatus.PENDING.value,
                next_completion_seq=0,
                created_at_ms=now if created_at_ms is None else created_at_ms,
                updated_at_ms=now,
            ).execute()
            self._calls.insert(
                [
                    {
                        "round_id": round_id,
                        "call_index": call.index,
                        "call_id": call.call_id,
                        "model_call_id": call.model_call_id,
                        "name": call.name,
                        "arguments": call.arguments,
                        "status": ToolCallStatus.PENDING.value,
                    }
                    for call in checked
                ]
            ).execute()

    def commit_tool_result(
        self,
        run_id: str,
        round_id: str,
        call_id: str,
        pair: tuple[StoredMessage, StoredMessage],
        *,
        reserve_call_when_settled: bool = False,
        tool_call: bytes = b"",
    ) -> ToolResultCommitted:
        """Append the (assistant call, tool result) pair as ONE revision on the run's head and
        mark the call completed, in one transaction. With ``reserve_call_when_settled``, the
        last result of a round also reserves the next provider call index
        (``begin_provider_call``) in that transaction: one commit before the model is asked.

        Results arrive in any order; ``completion_seq`` numbers them 0, 1, 2, ... in arrival
        order, and the round is ``settled`` when no call is pending. Refused: a run that lost
        ownership (``StaleRun``), an unknown round (``ToolRoundNotFound``), a settled round
        (``ToolRoundSettled``), an unknown call id (``UnknownToolCall``), a second result for a
        call (``DuplicateToolResult``).

        On the critical path of every tool round: the run, round and call are checked in one
        read, and only the conversation row holds the head (12 statements, 14 when it reserves,
        where it took 16 and 20).

        The result (its text and whether it is an error) is stored once, in the pair's tool
        message (migrations 6 and 7 dropped the call row's copies). ``tool_call`` is the call's
        completion card (a serialized ``agent.ToolCall``; empty: none), kept on the call row so
        a run resuming the round can rebuild the checkpoint step of a call it did not run.
        """
        check_id(call_id, "call_id")
        if not isinstance(tool_call, bytes):
            raise InvalidInput("tool_call must be bytes")
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidInput("pair must be a tuple (assistant message, tool result message)")
        messages = check_messages(pair)
        if messages[0].role != "assistant" or messages[1].role != "tool":
            raise InvalidInput("pair must be an assistant message followed by a tool message")
        now = now_ms()
        sql = self._sql
        with self._db.atomic():
            # _own's checks, with the round and call read in the same statement as the run.
            conversation_id = self._run_conversation(run_id)
            locked = self._lock_conversation(conversation_id)
            assert locked is not None
            current, active = locked
            run_status, round_status, seq, call_status, pending, instance = execute_sql(
                self._db, sql.commit_state, (round_id, call_id, run_id)
            ).fetchone()
            head = self._check_owner(
                run_id, conversation_id, current, active, (run_status, instance), None
            )
            if round_status is None:
                raise ToolRoundNotFound(f"run {run_id} has no tool round {round_id}")
            if round_status == ToolRoundStatus.SETTLED:
                raise ToolRoundSettled(f"tool round {round_id} is already settled")
            if call_status is None:
                raise UnknownToolCall(f"tool round {round_id} has no call {call_id}")
            if call_status != ToolCallStatus.PENDING:
                raise DuplicateToolResult(
                    f"call {call_id} of round {round_id} already has a result"
                )
            revision_id = self._extend(conversation_id, head, messages, now)
            settled = pending == 1  # this call was the round's last pending one
            call_index = None
            if settled and reserve_call_when_settled:
                self._move_head(conversation_id, run_id, revision_id, now)
                updated = execute_sql(self._db, sql.reserve_call, (now, run_id))
                call_index = self._reserved_index(run_id, updated.rowcount)
            else:
                self._move_head(conversation_id, run_id, revision_id, now)
            if tool_call:
                execute_sql(
                    self._db,
                    sql.complete_call_with_card,
                    (seq, revision_id, now, tool_call, round_id, call_id),
                )
            else:
                execute_sql(self._db, sql.complete_call, (seq, revision_id, now, round_id, call_id))
            status = ToolRoundStatus.SETTLED if settled else ToolRoundStatus.PENDING
            execute_sql(self._db, sql.advance_round, (seq + 1, status.value, now, round_id))
        return ToolResultCommitted(revision_id, seq, settled, call_index)

    def tool_round(self, round_id: str) -> ToolRoundRecord | None:
        """A round with all its calls (index order), or None."""
        r = self._rounds
        query = r.select(*columns_of(r, ROUND_COLUMNS)).where(r.round_id == round_id)
        for row in query.dicts():
            row["assistant_json"] = as_bytes(row["assistant_json"])
            row["calls"] = self._round_calls(round_id)
            return msgspec.convert(row, ToolRoundRecord)
        return None

    # --- resuming a tool round ------------------------------------------------------------------

    def find_pending_round(
        self,
        conversation_id: str,
        base_revision_id: int,
        call_ids: Sequence[str],
        *,
        settled_too: bool = False,
    ) -> ToolRoundRecord | None:
        """The pending tool round of the conversation created on ``base_revision_id`` whose
        call ids are exactly ``call_ids`` (in any order), or None.

        How a run finds the round a dropped client stream interrupted, from what the client's
        state says (the round's base and its calls); ``adopt_tool_round`` then takes it over.
        Should several match, the most recently created one is returned. ``settled_too`` also
        finds a round whose last result was committed after the client's staged checkpoint
        (the process died before the settled one reached the client): nothing of it runs again.
        """
        check_id(conversation_id, "conversation_id")
        check_revision_id(base_revision_id, "base_revision_id")
        wanted = check_call_ids(call_ids)
        r, u, c = self._rounds, self._runs, self._calls
        query = (
            r.select(r.round_id, c.call_id)
            .join(u, on=u.run_id == r.run_id)
            .join(c, on=c.round_id == r.round_id)
            .where(
                (u.conversation_id == conversation_id)
                & (r.base_revision_id == base_revision_id)
                & (
                    r.status.in_([s.value for s in ToolRoundStatus])
                    if settled_too
                    else r.status == ToolRoundStatus.PENDING.value
                )
            )
            .order_by(r.created_at_ms.desc(), r.round_id.desc())
        )
        rounds: dict[str, set[str]] = {}
        for round_id, call_id in query.tuples():
            rounds.setdefault(round_id, set()).add(call_id)
        for round_id, calls in rounds.items():  # newest first
            if calls == wanted:
                return self.tool_round(round_id)
        return None

    def newest_round_on(
        self, conversation_id: str, base_revision_id: int
    ) -> ToolRoundRecord | None:
        """The newest tool round of the conversation created on ``base_revision_id`` (pending
        or settled), or None: for a client state that names no round, the round a run started
        from it whose staged checkpoint the client never got."""
        check_id(conversation_id, "conversation_id")
        check_revision_id(base_revision_id, "base_revision_id")
        r, u = self._rounds, self._runs
        query = (
            r.select(r.round_id)
            .join(u, on=u.run_id == r.run_id)
            .where(
                (u.conversation_id == conversation_id) & (r.base_revision_id == base_revision_id)
            )
            .order_by(r.created_at_ms.desc(), r.round_id.desc())
            .limit(1)
        )
        for (round_id,) in query.tuples():
            return self.tool_round(round_id)
        return None

    def claim_run_on_round(
        self, run_id: str, conversation_id: str, round_id: str, user_id: str | None = None
    ) -> tuple[ClaimedRun, ToolRoundRecord]:
        """Claim ``run_id`` on the round's head (``round_head``) as it is when the claim
        writes, with the round as read then: one transaction under the conversation's lock.

        A resume reads the round before it claims; the round's previous run may commit a
        result in between (the client answered an exec, then dropped its stream and resumed
        at once). Read and claimed together, that result is either before the read (the run
        stands after it) or refused (its run no longer owns the conversation), so the
        adoption that follows always finds the run on the round's head."""
        with self._db.atomic():
            if self._lock_conversation(conversation_id) is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            record = self.tool_round(round_id)
            if record is None:
                raise ToolRoundNotFound(f"no tool round {round_id}")
            claimed = self.claim_run(run_id, conversation_id, self.round_head(record), user_id)
        return claimed, record

    def adopt_tool_round(self, run_id: str, round_id: str) -> ToolRoundRecord:
        """Make ``run_id`` the owner of a still-pending round of its conversation, so it commits
        the remaining results (``commit_tool_result(run_id, round_id, ...)``); returns the round
        as adopted, its calls with their statuses and committed revisions.

        The run must own its conversation (``StaleRun``) and stand on the round's head
        (``round_head``: the revision holding its last committed pair, or its base when none
        completed), so the remaining pairs extend the same chain: claim the run on that revision
        first, else ``StaleRun``. Refused too: an unknown round (``ToolRoundNotFound``), one of
        another conversation (``ToolRoundConversationMismatch``), a settled one
        (``ToolRoundSettled``). Adopting a round the run already holds changes nothing.
        """
        check_id(run_id, "run_id")
        check_id(round_id, "round_id")
        now = now_ms()
        with self._db.atomic():
            conversation_id, head = self._own(run_id, None)
            record = self.tool_round(round_id)
            if record is None:
                raise ToolRoundNotFound(f"no tool round {round_id}")
            owner = self._run_conversation(record.run_id)
            if owner != conversation_id:
                raise ToolRoundConversationMismatch(
                    f"tool round {round_id} belongs to conversation {owner}, "
                    f"not to conversation {conversation_id} of run {run_id}"
                )
            if record.status is ToolRoundStatus.SETTLED:
                raise ToolRoundSettled(f"tool round {round_id} is already settled")
            expected = self.round_head(record)
            if head != expected:
                raise StaleRun(
                    f"run {run_id} is at revision {head}, but tool round {round_id} continues "
                    f"from revision {expected}: claim the run there to adopt the round"
                )
            if record.run_id == run_id:
                return record
            r = self._rounds
            r.update(run_id=run_id, updated_at_ms=now).where(r.round_id == round_id).execute()
            return msgspec.structs.replace(record, run_id=run_id, updated_at_ms=now)

    def tool_call_cards(self, round_id: str) -> dict[str, bytes]:
        """The completion cards (serialized ``agent.ToolCall``) of the round's completed calls,
        by call id; a call without one (pending, cardless, or completed before migration 10)
        is absent. What a run resuming the round shows as the steps of calls it did not run."""
        c = self._calls
        query = c.select(c.call_id, c.tool_call).where(
            (c.round_id == round_id) & c.tool_call.is_null(False)
        )
        return {call_id: as_bytes(card) for call_id, card in query.tuples()}

    @staticmethod
    def round_head(tool_round: ToolRoundRecord) -> int:
        """The revision holding the round's last committed pair (the call with the highest
        ``completion_seq``), or the round's base when no call completed yet: where a run that
        resumes the round must stand, and the history its next checkpoint shows."""
        committed = {
            call.completion_seq: call.committed_revision_id
            for call in tool_round.calls
            if call.completion_seq is not None
        }
        if not committed:
            return tool_round.base_revision_id
        revision = committed[max(committed)]
        assert revision is not None, f"round {tool_round.round_id}: a completed call has no pair"
        return revision

    @staticmethod
    def _check_calls(round_id: str, calls: Sequence[ToolCallSpec]) -> list[ToolCallSpec]:
        checked = list(calls)
        if not checked:
            raise InvalidInput(f"tool round {round_id} has no calls")
        for call in checked:
            if not isinstance(call, ToolCallSpec):
                raise InvalidInput(f"expected a ToolCallSpec, got {type(call).__name__}")
            if not isinstance(call.index, int) or call.index < 0:
                raise InvalidInput(f"tool call {call.call_id}: bad index {call.index!r}")
            check_id(call.call_id, "call_id")
            for value, what in ((call.model_call_id, "model_call_id"), (call.name, "name")):
                check_id(value, f"tool call {call.call_id}: {what}")
            if not isinstance(call.arguments, str):
                raise InvalidInput(f"tool call {call.call_id}: arguments must be a string")
        if len({c.index for c in checked}) != len(checked):
            raise InvalidInput(f"tool round {round_id} repeats a call index")
        if len({c.call_id for c in checked}) != len(checked):
            raise InvalidInput(f"tool round {round_id} repeats a call id")
        return checked

    def _round_calls(self, round_id: str) -> tuple[ToolCallRecord, ...]:
        c = self._calls
        query = (
            c.select(c.call_index.alias("index"), *columns_of(c, CALL_FIELDS))
            .where(c.round_id == round_id)
            .order_by(c.call_index)
        )
        calls = []
        for row in query.dicts():
            calls.append(msgspec.convert(row, ToolCallRecord))
        return tuple(calls)
