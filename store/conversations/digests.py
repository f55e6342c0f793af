"""Chained state digests and the checkpoint roots digest.

Why a chained digest: a revision's ``state_digest`` identifies its full history. The root's is
SHA-256 of nothing (``EMPTY_STATE_DIGEST``); adding message m to a history gives
SHA-256(digest of the history || len(m.payload) as 8 bytes big-endian || m.payload)
(``extend_digest``; ``state_digest`` folds a whole history). So a new revision needs only its
parent's digest, read from the parent row, and its own messages; the same full history gives
the same digest however it was split into revisions. The digest is unique per conversation, so
one full history exists at most once and landing on it again reuses it (migration 4 recomputed
the digests written with the earlier, whole-history formula).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from store.conversations.errors import InvalidInput

# The root revision's digest (the empty history): SHA-256 of nothing.
EMPTY_STATE_DIGEST = hashlib.sha256(b"").digest()
DIGEST_SIZE = 32


def extend_digest(digest: bytes, payloads: Iterable[bytes]) -> bytes:
    """The digest of a history extended by ``payloads``, from the digest of the history.

    Each message is one link: SHA-256(previous digest || 8-byte big-endian payload length ||
    payload). Chained so a new revision needs only its parent's digest and its own messages
    (appending costs O(new messages)); the length prefix keeps message boundaries in the digest.
    """
    for payload in payloads:
        link = hashlib.sha256(digest)
        link.update(len(payload).to_bytes(8, "big"))
        link.update(payload)
        digest = link.digest()
    return digest


def state_digest(payloads: Iterable[bytes]) -> bytes:
    """The digest of a full history: the chain from ``EMPTY_STATE_DIGEST``.

    The same payloads give the same digest however the history is split into revisions.
    """
    return extend_digest(EMPTY_STATE_DIGEST, payloads)


def roots_digest(root_ids: Sequence[bytes]) -> bytes:
    """The identity of a checkpoint's stable history (system root excluded by the caller):
    SHA-256 over the concatenation of its 32-byte root blob ids, in order.

    It keys ``record_checkpoint``/``revision_for_checkpoint``, so a client's conversation state
    maps back to a revision without decoding its blobs.
    """
    if isinstance(root_ids, bytes | str) or not isinstance(root_ids, Sequence):
        raise InvalidInput(
            f"root_ids must be a sequence of 32-byte blob ids, got {type(root_ids).__name__}"
        )
    digest = hashlib.sha256()
    for position, root_id in enumerate(root_ids):
        check_digest(root_id, f"root id {position}")
        digest.update(root_id)
    return digest.digest()


def check_digest(value: object, what: str) -> bytes:
    if not isinstance(value, bytes) or len(value) != DIGEST_SIZE:
        raise InvalidInput(f"{what} must be {DIGEST_SIZE} raw bytes, got {value!r}")
    return value
