"""Runs: a run's claim on its conversation, its provider call indexes and its end.

Why runs own the conversation: a run (one execution attempt, keyed by the Bidi request id) claims
the conversation; the claim cancels the run it supersedes and moves the conversation's head to
the run's base. Every later write names its run and the head it expects, and is refused with
``StaleRun`` unless that run still owns the conversation at that head, which makes a superseded
run's late events harmless.
"""

from __future__ import annotations

import msgspec
import peewee

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.conversations.checks import check_id
from store.conversations.errors import (
    ConversationNotFound,
    InvalidInput,
    RunConflict,
    RunHeldByPeer,
    RunNotFound,
    StaleRun,
)
from store.conversations.records import ClaimedRun, RunRecord, RunStatus
from store.conversations.revisions import Revisions
from store.conversations.sql import RUNS, bind_table, columns_of
from store.instances import instance_of


def run_user(database: peewee.Database, run_id: str) -> str | None:
    """The user a run was for (None: no such run, or one stored before users were kept)."""
    row = execute_sql(
        database, f'SELECT "user_id" FROM "{RUNS}" WHERE "run_id" = {database.param}', (run_id,)
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


class Runs(Revisions):
    """Claims, call indexes and ends of runs, and the ownership check every write of a run
    makes (``_own``) on top of the revision chain."""

    def __init__(self, database: peewee.Database) -> None:
        super().__init__(database)
        self._runs = bind_table(database, RUNS, RunRecord.__struct_fields__)
        # This process's instance, written on the runs it claims (``store.instances``); the
        # statements were chosen for it (``Statements.leased``).
        self._instance = instance_of(database)
        self._lease = () if self._instance is None else (self._instance,)
        assert self._sql.leased == (self._instance is not None), "instance bound mid-store"

    def claim_run(
        self,
        run_id: str,
        conversation_id: str,
        base_revision_id: int,
        user_id: str | None = None,
    ) -> ClaimedRun:
        """Make ``run_id`` the conversation's active run, its head moved to ``base_revision_id``.

        A different active run is cancelled (it can no longer write). Choosing an old revision
        as base is how a rollback starts a new branch: later appends become its children and the
        old suffix stays readable from its own revisions. A finished run id is claimed again (a
        client retrying the same request after a restart): status back to ``running``, head
        reset to the base, ``provider_call_index`` kept so model call ids stay unique.
        ``user_id``: who the run is for (``wire.identity``), kept on its row.
        """
        check_id(run_id, "run_id")
        now = now_ms()
        with self._db.atomic():
            locked = self._lock_conversation(conversation_id)
            if locked is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            _, active = locked
            self._require_revision_of(conversation_id, base_revision_id)
            existing = self._claimable(run_id, conversation_id)
            superseded = self._write_claim(
                run_id,
                conversation_id,
                active,
                existing,
                base_revision_id,
                base_revision_id,
                -1 if existing is None else existing,
                now,
                user_id,
            )
        return ClaimedRun(run_id, conversation_id, base_revision_id, superseded)

    def run(self, run_id: str) -> RunRecord | None:
        t = self._runs
        query = t.select(*columns_of(t, RunRecord.__struct_fields__)).where(t.run_id == run_id)
        for row in query.dicts():
            return msgspec.convert(row, RunRecord)
        return None

    def begin_provider_call(self, run_id: str) -> int:
        """Reserve the next provider call index (0, 1, 2, ...) BEFORE the request is sent.

        Only a ``running`` run gets one (``StaleRun`` otherwise), so a superseded run cannot
        start another model call; the index names the call (``{run_id}:{index}``).
        """
        with self._db.atomic():
            updated = execute_sql(self._db, self._sql.reserve_call, (now_ms(), run_id))
            return self._reserved_index(run_id, updated.rowcount)

    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        usage_json: str | None = None,
        failure_category: str | None = None,
        failure_message: str | None = None,
    ) -> bool:
        """End a run; False (and nothing changed) if it was no longer ``running``.

        The first finish wins, so a superseded run cannot overwrite its ``cancelled``. The
        conversation's active run is released only if it is still this run.
        """
        status = RunStatus(status)
        if status is RunStatus.RUNNING:
            raise InvalidInput("finish_run needs a final status, not running")
        now = now_ms()
        with self._db.atomic():
            conversation_id = self._run_conversation(run_id)
            self._lock_conversation(conversation_id)
            finished = execute_sql(
                self._db,
                self._sql.finish_run,
                (status.value, usage_json, failure_category, failure_message, now, now, run_id),
            ).rowcount
            if finished:
                execute_sql(
                    self._db, self._sql.release_conversation, (now, conversation_id, run_id)
                )
        return finished == 1

    def cancel_unfinished_runs(self, reason: str) -> int:
        """At startup and at every sweep: the runs left ``running`` by a process whose lease
        expired (or that had none, ``store.instances``) become ``cancelled`` and release their
        conversations; a live peer's runs are untouched. Returns how many."""
        now = now_ms()
        sql = self._sql
        with self._db.atomic():
            execute_sql(self._db, sql.record_orphaned_heads, (now,))
            execute_sql(self._db, sql.release_orphaned, (now, now))
            return int(execute_sql(self._db, sql.cancel_orphaned, (reason, now, now, now)).rowcount)

    def _run_conversation(self, run_id: str) -> str:
        row = execute_sql(self._db, self._sql.run_conversation, (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id}")
        return str(row[0])

    def _own(self, run_id: str, expected_head: int | None) -> tuple[str, int]:
        """Lock the run's conversation and check the run owns it (at ``expected_head`` if
        given); returns (conversation id, current head)."""
        conversation_id = self._run_conversation(run_id)
        locked = self._lock_conversation(conversation_id)
        assert locked is not None
        current, active = locked
        row = execute_sql(self._db, self._sql.run_status, (run_id,)).fetchone()
        status = (None, None) if row is None else (row[0], row[1])
        head = self._check_owner(run_id, conversation_id, current, active, status, expected_head)
        return conversation_id, head

    def _check_owner(
        self,
        run_id: str,
        conversation_id: str,
        current: int | None,
        active: str | None,
        status: tuple[str | None, str | None],
        expected_head: int | None,
    ) -> int:
        """``StaleRun`` unless the run is running, on this process's instance, and the
        conversation's active run (read under the conversation's lock), at ``expected_head``
        if given; the current head. ``status`` is the run's (status, instance id): a run id
        another instance took over after this one's lease expired is no longer this one's."""
        run_status, instance = status
        if active != run_id or run_status != RunStatus.RUNNING or instance != self._instance:
            raise StaleRun(
                f"run {run_id} no longer owns conversation {conversation_id} "
                f"(run {run_status} on instance {instance}, active run {active})"
            )
        assert current is not None
        if expected_head is not None and current != expected_head:
            raise StaleRun(self._moved(run_id, conversation_id, expected_head, current))
        return int(current)

    @staticmethod
    def _moved(run_id: str, conversation_id: str, expected: int, current: int) -> str:
        return (
            f"run {run_id} expected conversation {conversation_id} at revision {expected}, "
            f"but it is at revision {current}"
        )

    def _claimable(self, run_id: str, conversation_id: str) -> int | None:
        """The ``provider_call_index`` of the run if it exists (None if new), after checking
        it may be claimed on this conversation (``RunConflict`` otherwise).

        A run that is not running changes only under its conversation's lock, which the caller
        holds, so the index read here is still the run's when the claim writes it."""
        row = execute_sql(self._db, self._sql.run, (run_id,)).fetchone()
        if row is None:
            return None
        owner, status, call_index, instance = row
        if owner != conversation_id:
            raise RunConflict(f"run {run_id} belongs to conversation {owner}")
        if status == RunStatus.RUNNING and instance == self._instance:
            raise RunConflict(f"run {run_id} is already running")
        if status == RunStatus.RUNNING and self._lease_live(instance):
            raise RunHeldByPeer(
                f"run {run_id} is still running on instance {instance}, whose lease has not "
                "expired; retry once it has"
            )
        return int(call_index)

    def _lease_live(self, instance: str | None) -> bool:
        """Whether a running run on ``instance`` still has a live owner: this process, or a
        peer whose lease has not expired. A dead peer's run id may be claimed again (the client
        retrying on the other server), its old owner fenced off by the instance check."""
        if instance == self._instance:
            return True
        if instance is None:
            return False
        row = execute_sql(self._db, self._sql.lease_live, (instance, now_ms())).fetchone()
        return row is not None

    def _write_claim(
        self,
        run_id: str,
        conversation_id: str,
        active: str | None,
        existing: int | None,
        base: int,
        head: int,
        call_index: int,
        now: int,
        user_id: str | None = None,
    ) -> str | None:
        """A claim's writes: cancel the superseded active run, (re)start the run on ``base``
        at ``head`` with ``call_index``, make it the conversation's active run at ``head``;
        the superseded run's id. ``existing`` is ``_claimable``'s answer."""
        sql = self._sql
        superseded = None
        if active is not None and active != run_id:
            superseded = active
            execute_sql(self._db, sql.cancel_run, (f"superseded by run {run_id}", now, now, active))
        user = () if user_id is None else (user_id,)
        if existing is None:
            execute_sql(
                self._db,
                sql.insert_run if user_id is None else sql.insert_run_for_user,
                (run_id, conversation_id, base, head, call_index, now, now, *user, *self._lease),
            )
        else:
            execute_sql(
                self._db,
                sql.restart_run if user_id is None else sql.restart_run_for_user,
                (base, head, call_index, now, *user, *self._lease, run_id),
            )
        execute_sql(self._db, sql.claim_conversation, (head, run_id, now, conversation_id))
        return superseded

    def _reserved_index(self, run_id: str, updated: int) -> int:
        """The index a ``provider_call_index + 1`` update of a running run (``updated`` rows)
        just reserved; ``RunNotFound``/``StaleRun`` when it updated nothing."""
        row = execute_sql(self._db, self._sql.run_call_index, (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id}")
        status, index = row
        if updated != 1:
            raise StaleRun(f"run {run_id} is {status}: it may not start a provider call")
        return int(index)

    def _move_head(self, conversation_id: str, run_id: str, revision_id: int, now: int) -> None:
        """The conversation's head, the one copy of it (the run row records its own only at
        its end)."""
        moved = execute_sql(
            self._db, self._sql.move_conversation_head, (revision_id, now, conversation_id, run_id)
        ).rowcount
        assert moved == 1, f"run {run_id} lost conversation {conversation_id} under its lock"
