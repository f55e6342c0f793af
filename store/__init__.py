"""Persistence: one SQL database (SQLite by default, PostgreSQL optional) through peewee.

``connect_store(url, secret_key)`` opens ``CURSOR_DATABASE_URL``, applies the numbered
migrations and binds the key the stored secrets are sealed with (``store.base.secrets``); the
content-addressed blob store is ``Store.blobs``.
"""

from store.blobs import (
    BLOB_ID_SIZE,
    BlobHashMismatch,
    BlobStore,
    InvalidBlobId,
    blob_id_of,
)
from store.database import (
    DEFAULT_DATABASE_URL,
    DatabaseDriverMissing,
    Store,
    connect_store,
    open_database,
)
from store.migrations import MigrationError, apply_migrations, latest_version

__all__ = [
    "BLOB_ID_SIZE",
    "DEFAULT_DATABASE_URL",
    "BlobHashMismatch",
    "BlobStore",
    "DatabaseDriverMissing",
    "InvalidBlobId",
    "MigrationError",
    "Store",
    "apply_migrations",
    "blob_id_of",
    "connect_store",
    "latest_version",
    "open_database",
]
