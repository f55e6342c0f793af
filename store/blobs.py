"""Content-addressed blob store (CAS) over the ``blobs`` table.

Why content addressing: Cursor's Agent refers to conversation state by blob id, the raw 32-byte
SHA-256 of the bytes. Since the id is derived from the content, a blob is immutable (never
updated), a repeated put is harmless, and the store refuses data that does not hash to its id, so a
bad client can never make an id point at the wrong bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import peewee

from store.base.typed_peewee import Table, execute_sql

BLOB_ID_SIZE = 32  # SHA-256 digest length
BLOBS_TABLE = "blobs"
# Rows per INSERT in ``put_many`` (2 parameters each; well under every backend's limit).
PUT_MANY_ROWS = 250
# Ids per query in ``has_many`` (one parameter each).
HAS_MANY_IDS = 500


class InvalidBlobId(ValueError):
    """The id is not 32 raw bytes (e.g. a hex string was passed by mistake)."""


class BlobHashMismatch(ValueError):
    """The data does not hash to the id it was put under; nothing was stored."""

    def __init__(self, blob_id: bytes, actual: bytes) -> None:
        super().__init__(f"blob id {blob_id.hex()} does not match SHA-256 of data {actual.hex()}")
        self.blob_id = blob_id
        self.actual = actual


def blob_id_of(data: bytes) -> bytes:
    """The id a blob with this content has: its raw SHA-256 digest."""
    return hashlib.sha256(data).digest()


def check_blob_id(blob_id: object) -> bytes:
    """Return ``blob_id`` if it is 32 raw bytes, else raise ``InvalidBlobId``."""
    if not isinstance(blob_id, bytes) or len(blob_id) != BLOB_ID_SIZE:
        size = len(blob_id) if isinstance(blob_id, bytes | str) else "?"
        raise InvalidBlobId(
            f"blob id must be {BLOB_ID_SIZE} raw bytes (SHA-256), "
            f"got {type(blob_id).__name__} of length {size}"
        )
    return blob_id


class BlobStore:
    """Put/get immutable blobs by SHA-256 id; safe to share between threads.

    Each thread uses its own peewee connection (the database is thread-safe), so the store holds no
    per-connection state of its own.
    """

    def __init__(self, database: peewee.Database) -> None:
        self._db = database
        # A Table bound to this database only (not a global Model), so several stores can coexist.
        self._table = Table(BLOBS_TABLE, ("id", "data"), _database=database)

    def put(self, blob_id: bytes, data: bytes) -> bool:
        """Store ``data`` under ``blob_id``; True if newly stored, False if it was already there.

        Refuses (``BlobHashMismatch``) data whose SHA-256 is not ``blob_id``, and a malformed id
        (``InvalidBlobId``). Concurrent puts of one blob are safe: INSERT ... ON CONFLICT DO NOTHING
        makes exactly one of them store it.
        """
        check_blob_id(blob_id)
        actual = blob_id_of(data)
        if actual != blob_id:
            raise BlobHashMismatch(blob_id, actual)
        t = self._table
        query = (
            t.insert(id=blob_id, data=data)
            .on_conflict(conflict_target=(t.id,), action="nothing")
            .as_rowcount()
        )
        written: int = query.execute()  # ``as_rowcount()``: the rows the INSERT wrote
        return written == 1

    def put_many(self, blobs: Mapping[bytes, bytes]) -> None:
        """Store many blobs in as few statements as possible (``PUT_MANY_ROWS`` per INSERT); a
        blob already stored is left as it is. Every id and hash is checked before anything is
        written, so a bad one (``InvalidBlobId``/``BlobHashMismatch``) stores none of them.

        Why not ``put`` in a loop: a checkpoint of a long history acknowledges hundreds of blobs,
        and building one INSERT per blob held SQLite's single write lock long enough to stall
        the next turn's commit."""
        for blob_id, data in blobs.items():
            check_blob_id(blob_id)
            actual = blob_id_of(data)
            if actual != blob_id:
                raise BlobHashMismatch(blob_id, actual)
        rows = list(blobs.items())
        param = self._db.param
        with self._db.atomic():
            for start in range(0, len(rows), PUT_MANY_ROWS):
                chunk = rows[start : start + PUT_MANY_ROWS]
                values = ", ".join([f"({param}, {param})"] * len(chunk))
                sql = (
                    f'INSERT INTO "{BLOBS_TABLE}" ("id", "data") VALUES {values} '
                    'ON CONFLICT ("id") DO NOTHING'
                )
                execute_sql(self._db, sql, [value for row in chunk for value in row])

    def get(self, blob_id: bytes) -> bytes | None:
        """The blob's bytes, or None if no blob has this id."""
        t = self._table
        rows = t.select(t.data).where(t.id == check_blob_id(blob_id)).tuples()
        for (data,) in rows:
            return bytes(data)  # PostgreSQL drivers return memoryview for BYTEA
        return None

    def has(self, blob_id: bytes) -> bool:
        """Whether a blob with this id is stored (without reading its data)."""
        t = self._table
        return t.select(t.id).where(t.id == check_blob_id(blob_id)).exists()

    def has_many(self, blob_ids: Iterable[bytes]) -> set[bytes]:
        """The subset of ``blob_ids`` that is stored (for "which do you lack?"), in one query
        per ``HAS_MANY_IDS`` ids."""
        wanted = list({check_blob_id(b) for b in blob_ids})
        found: set[bytes] = set()
        param = self._db.param
        # Written SQL (asked after every acknowledged checkpoint): peewee built it in 0.2 ms.
        for start in range(0, len(wanted), HAS_MANY_IDS):
            chunk = wanted[start : start + HAS_MANY_IDS]
            marks = ", ".join([param] * len(chunk))
            cursor = execute_sql(
                self._db, f'SELECT "id" FROM "{BLOBS_TABLE}" WHERE "id" IN ({marks})', chunk
            )
            found.update(bytes(blob_id) for (blob_id,) in cursor.fetchall())
        return found
