"""The checkpoint index: which revision a checkpoint we published shows.

Why checkpoint states: the editor hands back the conversation state of a checkpoint it got from
us. ``roots_digest`` (SHA-256 of its stable root blob ids, in order) identifies that state, and
``record_checkpoint`` remembers which revision it showed (the first mapping of a digest wins),
so ``revision_for_checkpoint`` maps a client's state back to a revision without decoding it.
"""

from __future__ import annotations

from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.conversations.checks import check_id, check_revision_id
from store.conversations.digests import check_digest
from store.conversations.errors import ConversationNotFound
from store.conversations.revisions import Revisions


class CheckpointIndex(Revisions):
    """Checkpoint digests mapped to revisions of the conversation."""

    def record_checkpoint(
        self, conversation_id: str, roots_digest: bytes, revision_id: int
    ) -> None:
        """Remember that a checkpoint whose stable history has ``roots_digest`` (see
        ``digests.roots_digest``) shows ``revision_id``, so the client's conversation state
        maps back to it without being decoded.

        Idempotent, and the first mapping of a digest wins: recording it again for another
        revision (the same roots published from two branches, say) keeps the first one and is
        no error. ``InvalidInput`` unless the digest is 32 bytes; ``ConversationNotFound``,
        ``RevisionNotFound`` unless the revision is the conversation's.
        """
        check_id(conversation_id, "conversation_id")
        check_digest(roots_digest, "roots_digest")
        check_revision_id(revision_id)
        with self._db.atomic():
            if self._lock_conversation(conversation_id) is None:
                raise ConversationNotFound(f"no conversation {conversation_id}")
            self._require_revision_of(conversation_id, revision_id)
            execute_sql(
                self._db,
                self._sql.insert_checkpoint,
                (conversation_id, roots_digest, revision_id, now_ms()),
            )

    def revision_for_checkpoint(self, conversation_id: str, roots_digest: bytes) -> int | None:
        """The revision first recorded for this checkpoint digest, or None."""
        check_id(conversation_id, "conversation_id")
        check_digest(roots_digest, "roots_digest")
        row = execute_sql(
            self._db, self._sql.checkpoint_revision, (conversation_id, roots_digest)
        ).fetchone()
        return None if row is None else int(row[0])
