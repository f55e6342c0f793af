"""A run's writes to its history: a turn's start, appends, and the exactly-once runtime turn.

Why exactly-once: a RunRequest's rendered user turn is one runtime-origin message with a stable
``runtime_event_id``. ``append_once`` appends it only if the lineage does not hold it yet, in the
same transaction as the check, and the database keeps the event id unique per conversation, so a
retry or a restart replays the turn instead of appending it again; the same message id or event id
with different bytes is refused (``MessageConflict``).
"""

from __future__ import annotations

from collections.abc import Sequence

from store.base.clock import now_ms
from store.conversations.checks import check_id, check_message, check_messages
from store.conversations.digests import EMPTY_STATE_DIGEST
from store.conversations.errors import (
    ConversationNotFound,
    HeadMoved,
    InvalidInput,
    MessageConflict,
    StaleRun,
)
from store.conversations.records import ANY_HEAD, AnyHead, ClaimedRun, StartedTurn, StoredMessage
from store.conversations.runs import Runs


class Appends(Runs):
    """The run-checked appends: each names its run and the head it expects."""

    def start_turn(
        self,
        run_id: str,
        conversation_id: str,
        base_revision_id: int | None,
        message: StoredMessage,
        *,
        expected_head: int | AnyHead | None = ANY_HEAD,
        user_id: str | None = None,
    ) -> StartedTurn:
        """A user turn's start in ONE transaction (one commit before the model is asked):
        claim the conversation on ``base_revision_id`` (None: its current head, created if
        new), append the turn's runtime message once (``append_once``), and reserve the first
        provider call index (``begin_provider_call``).

        The same checks and errors as those three calls in a row, but it is on the critical path
        of every turn, so each row is read once and written once: the run row with its final
        head and call index, the conversation row with its final head and active run (8
        statements on a new conversation, 10 on an existing one, 11 when a run is superseded;
        the three calls took 18 to 23 plus a SAVEPOINT and RELEASE each).

        ``expected_head`` (with ``base_revision_id`` None): the head the caller read before,
        None for a conversation that did not exist; ``HeadMoved`` (nothing written) if the
        head is another one now, so a caller that prepared the turn's state from its read
        never commits on a history it did not see. ``user_id``: as for ``claim_run``.
        """
        if base_revision_id is None:
            check_id(conversation_id, "conversation_id")
        check_id(run_id, "run_id")
        now = now_ms()
        with self._db.atomic():
            if base_revision_id is None:
                # The head is the conversation's own revision: no ownership check needed.
                base, active, created = self._ensure_locked(conversation_id, now, set_head=False)
                if not isinstance(expected_head, AnyHead) and (
                    (None if created else base) != expected_head
                ):
                    raise HeadMoved(
                        f"conversation {conversation_id} moved to revision "
                        f"{None if created else base}, expected {expected_head}"
                    )
                parent = (EMPTY_STATE_DIGEST, 0) if created else self._digest_and_count(base)
            else:
                locked = self._lock_conversation(conversation_id)
                if locked is None:
                    raise ConversationNotFound(f"no conversation {conversation_id}")
                _, active = locked
                base, created = base_revision_id, False
                parent = self._require_revision_of(conversation_id, base)
            existing = self._claimable(run_id, conversation_id)
            wanted = check_message(message)
            # append_once on the claimed head (``base``); a conversation created by this
            # transaction holds no message and no revision but its root, so nothing to look up.
            recorded = {} if created else self._recorded(conversation_id, [wanted])
            found = [recorded[m] for m in sorted(self._in_history(base, recorded))]
            if found:
                if found != [wanted]:
                    raise MessageConflict(
                        f"message {wanted.message_id} (runtime event {wanted.runtime_event_id}) "
                        "is already in this history with different content"
                    )
                head, inserted = base, False
            else:
                head = self._append(
                    conversation_id, base, [wanted], recorded, now, parent, reuse=not created
                )
                inserted = True
            # begin_provider_call: a claimed run is running, so it gets the next index.
            call_index = 0 if existing is None else existing + 1
            superseded = self._write_claim(
                run_id, conversation_id, active, existing, base, head, call_index, now, user_id
            )
        return StartedTurn(
            ClaimedRun(run_id, conversation_id, base, superseded),
            head,
            inserted,
            call_index,
            parent[1],
        )

    def append_messages(
        self, run_id: str, expected_head: int, messages: Sequence[StoredMessage]
    ) -> int:
        """Append ``messages`` as one new revision on ``expected_head``; returns it (the new head).

        ``StaleRun`` unless ``run_id`` still owns the conversation and its head is
        ``expected_head``. A message already in this history, or recorded in the conversation
        with different content, is refused (``MessageConflict``).
        """
        additions = check_messages(messages)
        if not additions:
            raise InvalidInput("append_messages needs at least one message")
        now = now_ms()
        with self._db.atomic():
            conversation_id, _ = self._own(run_id, expected_head)
            revision_id = self._extend(conversation_id, expected_head, additions, now)
            self._move_head(conversation_id, run_id, revision_id, now)
            return revision_id

    def append_once(
        self, run_id: str, expected_head: int, message: StoredMessage
    ) -> tuple[int, bool]:
        """Append ``message`` unless the history already holds it; returns (head, inserted).

        Looks in the current head's history for the same message id or runtime event id:
        identical → (head, False), nothing written; different → ``MessageConflict``; absent →
        appended on ``expected_head`` like ``append_messages`` → (new head, True). The check and
        the insert share one transaction, so concurrent callers insert once. The head returned
        for an existing message is the run's current head, which is ``expected_head`` unless
        another append of the same run moved it meanwhile.

        ``inserted`` says the message joined the head's history (the head moved, so a new state
        must be published). A retry from the same base may land on the revision its first
        attempt made (same history, same digest): the head moves, no row is written.
        """
        wanted = check_message(message)
        event = wanted.runtime_event_id
        now = now_ms()
        with self._db.atomic():
            conversation_id, head = self._own(run_id, None)
            recorded = self._recorded(conversation_id, [wanted])
            held = self._in_history(head, recorded)
            found = [recorded[message_id] for message_id in sorted(held)]
            if found:
                if found == [wanted]:
                    return head, False
                raise MessageConflict(
                    f"message {wanted.message_id} (runtime event {event}) is already in this "
                    "history with different content"
                )
            if head != expected_head:
                raise StaleRun(self._moved(run_id, conversation_id, expected_head, head))
            revision_id = self._append(conversation_id, head, [wanted], recorded, now)
            self._move_head(conversation_id, run_id, revision_id, now)
            return revision_id, True
