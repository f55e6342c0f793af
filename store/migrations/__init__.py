"""Numbered schema migrations, applied in order at startup.

Why numbered and recorded: the server must upgrade an existing database in place (SQLite file or
PostgreSQL) without re-running work, so every migration runs once, in its own transaction, and
leaves a row ``(version, name, applied_at)`` in ``schema_version``.

Adding a migration is one function appended at the end of ``later.py``::

    @migration(2)
    def create_providers(db: peewee.Database) -> None:
        # a docstring saying why the table exists
        class Provider(peewee.Model):
            ...
            class Meta:
                database = db
                table_name = "providers"

        db.create_tables([Provider], safe=False)

Rules: never edit or renumber a migration that has shipped; define the models a migration needs
inside the function (a frozen snapshot of the schema at that version, bound to ``db``) rather than
importing live models that will change later; use only portable peewee DDL (``create_tables``,
``playhouse.migrate.SchemaMigrator``) so it runs on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import peewee

from store.base.typed_peewee import RuntimeModel, execute_sql

# The steps register themselves as they are imported, in their modules' order.
from store.migrations.first import create_blobs, create_conversations, create_providers_models_calls
from store.migrations.later import (
    chain_digests_and_checkpoint_states,
    create_run_events,
    drop_tool_result_content,
    drop_unread_copies,
    instance_leases,
    model_kind_and_price_source,
    model_price_list_date_and_image_kind,
    model_prices_and_time_to_first_token,
    provider_prompt_cache_key,
    provider_replay_reasoning,
    tool_call_cards,
)
from store.migrations.registry import (
    SCHEMA_VERSION_TABLE,
    Migration,
    MigrationError,
    latest_version,
    migration,
    registered_migrations,
)

# Arbitrary constant key for pg_advisory_xact_lock: serialises migrators across processes.
_PG_MIGRATION_LOCK_KEY = 0x637572736F72  # "cursor"


def _schema_version_model(db: peewee.Database) -> type[RuntimeModel]:
    """A model for the version table bound to ``db`` (per database, so stores never share state)."""

    class SchemaVersion(RuntimeModel):
        version = peewee.IntegerField(primary_key=True)
        name = peewee.TextField()
        applied_at = peewee.DateTimeField()  # naive UTC: portable across SQLite and PostgreSQL

        class Meta:
            database = db
            table_name = SCHEMA_VERSION_TABLE

    return SchemaVersion


def _utc_now() -> datetime.datetime:
    """Naive UTC timestamp; DateTimeField round-trips naive values the same on both backends."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _lock_migrations(db: peewee.Database) -> None:
    """Serialise concurrent migrators inside the current transaction.

    SQLite needs nothing: the store opens ``BEGIN IMMEDIATE`` transactions, which already take the
    write lock. PostgreSQL takes a transaction-scoped advisory lock.
    """
    if isinstance(db, peewee.PostgresqlDatabase):
        execute_sql(db, "SELECT pg_advisory_xact_lock(%s)", (_PG_MIGRATION_LOCK_KEY,))


def applied_versions(db: peewee.Database) -> list[int]:
    """Versions recorded in ``schema_version``, ascending (empty if the table does not exist)."""
    if not db.table_exists(SCHEMA_VERSION_TABLE):
        return []
    model = _schema_version_model(db)
    return [row.version for row in model.select(model.version).order_by(model.version)]


def apply_migrations(
    db: peewee.Database, migrations: Sequence[tuple[int, Migration]] | None = None
) -> list[int]:
    """Apply every pending migration, each in its own transaction; return the versions applied.

    Idempotent: a second call applies nothing. A failing migration rolls back and raises, leaving
    earlier migrations committed, so a fixed build resumes where it stopped. ``migrations``
    defaults to the registered ones; tests pass their own list.
    """
    model = _schema_version_model(db)
    with db.atomic():
        _lock_migrations(db)  # concurrent CREATE TABLE IF NOT EXISTS can still clash on PostgreSQL
        db.create_tables([model], safe=True)
    applied: list[int] = []
    for version, fn in registered_migrations() if migrations is None else migrations:
        if _apply_one(db, model, version, fn):
            applied.append(version)
    return applied


def _apply_one(db: peewee.Database, model: type[RuntimeModel], version: int, fn: Migration) -> bool:
    """Run one migration and record it atomically, unless already recorded; True if it ran."""
    with db.atomic():
        _lock_migrations(db)
        if model.select().where(model.version == version).exists():
            return False
        fn(db)
        model.insert(version=version, name=fn.__name__, applied_at=_utc_now()).execute()
    return True


# --- migrations (append only) ----------------------------------------------------------------


__all__ = [
    "SCHEMA_VERSION_TABLE",
    "Migration",
    "MigrationError",
    "applied_versions",
    "apply_migrations",
    "chain_digests_and_checkpoint_states",
    "create_blobs",
    "create_conversations",
    "create_providers_models_calls",
    "create_run_events",
    "drop_tool_result_content",
    "drop_unread_copies",
    "instance_leases",
    "latest_version",
    "migration",
    "model_kind_and_price_source",
    "model_price_list_date_and_image_kind",
    "model_prices_and_time_to_first_token",
    "provider_prompt_cache_key",
    "provider_replay_reasoning",
    "registered_migrations",
    "tool_call_cards",
]
