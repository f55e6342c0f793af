"""Numbered schema migrations, applied in order at startup.

Why numbered and recorded: the server must upgrade an existing database in place (SQLite file or
PostgreSQL) without re-running work, so every migration runs once, in its own transaction, and
leaves a row ``(version, name, applied_at)`` in ``schema_version``.

Adding a migration is one function appended at the end of this module::

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
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

import peewee

from store.base.typed_peewee import RuntimeModel, execute, execute_sql

Migration = Callable[[peewee.Database], None]

SCHEMA_VERSION_TABLE = "schema_version"
# Arbitrary constant key for pg_advisory_xact_lock: serialises migrators across processes.
_PG_MIGRATION_LOCK_KEY = 0x637572736F72  # "cursor"

_MIGRATIONS: dict[int, Migration] = {}


class MigrationError(RuntimeError):
    """The migration list itself is inconsistent (a programming error, caught at startup)."""


def migration(version: int) -> Callable[[Migration], Migration]:
    """Register ``fn`` as migration ``version``; the explicit number makes gaps and clashes loud."""

    def register(fn: Migration) -> Migration:
        if version in _MIGRATIONS:
            raise MigrationError(f"migration {version} registered twice ({fn.__name__})")
        _MIGRATIONS[version] = fn
        return fn

    return register


def registered_migrations() -> list[tuple[int, Migration]]:
    """All migrations in order, checked to be numbered 1..N without gaps."""
    versions = sorted(_MIGRATIONS)
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"migration versions must be 1..N without gaps, got {versions}")
    return [(v, _MIGRATIONS[v]) for v in versions]


def latest_version() -> int:
    """The schema version a fully migrated database has."""
    return len(registered_migrations())


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


@migration(1)
def create_blobs(db: peewee.Database) -> None:
    """Content-addressed blob store: id is the raw 32-byte SHA-256 of data (BLOB / BYTEA)."""

    class Blob(peewee.Model):
        id = peewee.BlobField(primary_key=True)
        data = peewee.BlobField()

        class Meta:
            database = db
            table_name = "blobs"

    db.create_tables([Blob], safe=False)


@migration(2)
def create_providers_models_calls(db: peewee.Database) -> None:
    """Provider endpoints, their models, service settings and LLM call records.

    Call records snapshot the provider and model they used (name, type, URL, model id) and hold
    ``provider_id`` without a foreign key, so deleting a provider leaves its calls readable.
    Times are UTC milliseconds since the epoch; durations are monotonic milliseconds.
    """

    class Provider(peewee.Model):
        id = peewee.AutoField()
        name = peewee.TextField()
        type = peewee.TextField()
        base_url = peewee.TextField()
        api_key = peewee.TextField(default="")
        headers_json = peewee.TextField(default="{}")
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "providers"

    class Model(peewee.Model):
        public_id = peewee.CharField(max_length=8, primary_key=True)
        provider = peewee.ForeignKeyField(
            Provider, column_name="provider_id", on_delete="CASCADE", backref="models"
        )
        model_id = peewee.TextField()
        display_name = peewee.TextField()
        enabled = peewee.BooleanField(default=True)
        sort_order = peewee.IntegerField(default=0)
        max_output_tokens = peewee.IntegerField(null=True)
        context_window_tokens = peewee.IntegerField(null=True)
        reasoning_enabled = peewee.BooleanField(default=False)
        reasoning_effort = peewee.TextField(null=True)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "models"
            indexes = (
                (("provider", "model_id"), True),
                (("enabled", "sort_order", "display_name"), False),
            )

    class Setting(peewee.Model):
        key = peewee.TextField(primary_key=True)
        value_json = peewee.TextField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "settings"

    class LlmCall(peewee.Model):
        id = peewee.AutoField()
        run_id = peewee.TextField(null=True)
        model_call_id = peewee.TextField()
        provider_id = peewee.IntegerField(null=True)
        provider_name = peewee.TextField()
        provider_type = peewee.TextField()
        provider_url = peewee.TextField()
        public_id = peewee.TextField()
        model_id = peewee.TextField()
        display_name = peewee.TextField()
        status = peewee.TextField()
        finish_reason = peewee.TextField(null=True)
        started_at_ms = peewee.BigIntegerField()
        ended_at_ms = peewee.BigIntegerField(null=True)
        ttfb_ms = peewee.FloatField(null=True)
        duration_ms = peewee.FloatField(null=True)
        http_status = peewee.IntegerField(null=True)
        input_tokens = peewee.BigIntegerField(null=True)
        output_tokens = peewee.BigIntegerField(null=True)
        cache_read_tokens = peewee.BigIntegerField(null=True)
        cache_write_tokens = peewee.BigIntegerField(null=True)
        reasoning_tokens = peewee.BigIntegerField(null=True)
        error_message = peewee.TextField(null=True)
        verbose = peewee.BooleanField(default=False)
        request_bytes = peewee.BigIntegerField(null=True)
        response_bytes = peewee.BigIntegerField(default=0)

        class Meta:
            database = db
            table_name = "llm_calls"
            indexes = ((("run_id",), False), (("status",), False))

    class LlmCallRequest(peewee.Model):
        call = peewee.ForeignKeyField(
            LlmCall, column_name="call_id", primary_key=True, on_delete="CASCADE"
        )
        headers_json = peewee.TextField()
        body = peewee.TextField()

        class Meta:
            database = db
            table_name = "llm_call_requests"

    class LlmCallChunk(peewee.Model):
        call = peewee.ForeignKeyField(LlmCall, column_name="call_id", on_delete="CASCADE")
        seq = peewee.IntegerField()
        offset_ms = peewee.FloatField()
        data = peewee.BlobField()

        class Meta:
            database = db
            table_name = "llm_call_chunks"
            primary_key = peewee.CompositeKey("call", "seq")

    db.create_tables([Provider, Model, Setting, LlmCall, LlmCallRequest, LlmCallChunk], safe=False)


@migration(3)
def create_conversations(db: peewee.Database) -> None:
    """The conversation store: immutable messages in a revision chain, runs, tool rounds, anchors.

    Why this shape: a conversation's history is append-only. Messages are written once per
    conversation (``PK(conversation_id, message_id)``) and never updated; a revision holds only
    the messages it adds to its parent (``revision_messages``), so branching (rollback, edits,
    hydrated client history) shares rows instead of copying or editing them. ``state_digest``
    (SHA-256 of the full history) is unique per conversation, so one history exists once.
    ``runtime_event_id`` is unique per conversation (partial unique index, portable to SQLite and
    PostgreSQL), which makes a RunRequest's runtime turn exactly-once even across restarts.

    ``conversations.current_revision_id`` and ``active_run_id`` have no foreign key: they would
    make the tables mutually dependent; the store keeps them pointing at rows of the same
    conversation. Foreign keys get no index of their own (``index=False``): every lookup goes
    through a primary key or one of the composite indexes, and rows are never deleted. Times are
    UTC milliseconds since the epoch.
    """

    class Conversation(peewee.Model):
        conversation_id = peewee.TextField(primary_key=True)
        current_revision_id = peewee.BigIntegerField(null=True)
        active_run_id = peewee.TextField(null=True)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "conversations"

    class Revision(peewee.Model):
        revision_id = peewee.BigAutoField()
        conversation = peewee.ForeignKeyField(
            Conversation, column_name="conversation_id", index=False
        )
        parent = peewee.ForeignKeyField(
            "self", column_name="parent_revision_id", null=True, field="revision_id", index=False
        )
        state_digest = peewee.BlobField(constraints=[peewee.Check("length(state_digest) = 32")])
        message_count = peewee.IntegerField()
        created_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "conversation_revisions"
            indexes = (
                (("conversation", "state_digest"), True),
                (("conversation", "parent"), False),
            )

    class Message(peewee.Model):
        conversation = peewee.ForeignKeyField(
            Conversation, column_name="conversation_id", index=False
        )
        message_id = peewee.TextField()
        role = peewee.TextField(
            constraints=[peewee.Check("role IN ('system', 'user', 'assistant', 'tool')")]
        )
        origin = peewee.TextField(
            constraints=[
                peewee.Check("origin IN ('prompt', 'user', 'runtime', 'assistant', 'tool')")
            ]
        )
        payload = peewee.BlobField()
        runtime_event_id = peewee.TextField(null=True)
        created_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "conversation_messages"
            primary_key = peewee.CompositeKey("conversation", "message_id")

    class RevisionMessage(peewee.Model):
        revision = peewee.ForeignKeyField(
            Revision, column_name="revision_id", field="revision_id", index=False
        )
        ordinal = peewee.IntegerField()
        conversation_id = peewee.TextField()
        message_id = peewee.TextField()

        class Meta:
            database = db
            table_name = "revision_messages"
            primary_key = peewee.CompositeKey("revision", "ordinal")
            indexes = ((("revision", "message_id"), True),)
            constraints = (
                peewee.SQL(
                    "FOREIGN KEY (conversation_id, message_id) REFERENCES "
                    "conversation_messages (conversation_id, message_id)"
                ),
            )

    class Run(peewee.Model):
        run_id = peewee.TextField(primary_key=True)
        conversation = peewee.ForeignKeyField(
            Conversation, column_name="conversation_id", index=False
        )
        base_revision = peewee.ForeignKeyField(
            Revision, column_name="base_revision_id", field="revision_id", index=False
        )
        head_revision = peewee.ForeignKeyField(
            Revision, column_name="head_revision_id", field="revision_id", index=False
        )
        status = peewee.TextField(
            constraints=[peewee.Check("status IN ('running', 'completed', 'failed', 'cancelled')")]
        )
        provider_call_index = peewee.BigIntegerField(default=-1)
        usage_json = peewee.TextField(null=True)
        failure_category = peewee.TextField(null=True)
        failure_message = peewee.TextField(null=True)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()
        finished_at_ms = peewee.BigIntegerField(null=True)

        class Meta:
            database = db
            table_name = "runs"
            indexes = ((("conversation", "status"), False), (("status",), False))

    class ToolRound(peewee.Model):
        round_id = peewee.TextField(primary_key=True)
        run = peewee.ForeignKeyField(Run, column_name="run_id", index=False)
        base_revision = peewee.ForeignKeyField(
            Revision, column_name="base_revision_id", field="revision_id", index=False
        )
        assistant_json = peewee.BlobField()
        status = peewee.TextField(constraints=[peewee.Check("status IN ('pending', 'settled')")])
        next_completion_seq = peewee.IntegerField(default=0)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "tool_rounds"
            indexes = ((("run", "status"), False),)

    class ToolRoundCall(peewee.Model):
        round = peewee.ForeignKeyField(ToolRound, column_name="round_id", index=False)
        call_index = peewee.IntegerField()
        call_id = peewee.TextField()
        model_call_id = peewee.TextField()
        name = peewee.TextField()
        arguments = peewee.TextField()
        status = peewee.TextField(constraints=[peewee.Check("status IN ('pending', 'completed')")])
        completion_seq = peewee.IntegerField(null=True)
        result_content = peewee.TextField(null=True)
        result_is_error = peewee.BooleanField(null=True)
        committed_revision = peewee.ForeignKeyField(
            Revision,
            column_name="committed_revision_id",
            field="revision_id",
            null=True,
            index=False,
        )
        completed_at_ms = peewee.BigIntegerField(null=True)

        class Meta:
            database = db
            table_name = "tool_round_calls"
            primary_key = peewee.CompositeKey("round", "call_index")
            indexes = ((("round", "call_id"), True), (("round", "completion_seq"), True))

    class InputAnchor(peewee.Model):
        conversation = peewee.ForeignKeyField(
            Conversation, column_name="conversation_id", index=False
        )
        input_id = peewee.TextField()
        base_revision = peewee.ForeignKeyField(
            Revision, column_name="base_revision_id", field="revision_id", index=False
        )
        created_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "input_anchors"
            primary_key = peewee.CompositeKey("conversation", "input_id")

    db.create_tables(
        [
            Conversation,
            Revision,
            Message,
            RevisionMessage,
            Run,
            ToolRound,
            ToolRoundCall,
            InputAnchor,
        ],
        safe=False,
    )
    # Partial: only runtime-origin turns carry an event id (NULLs would be distinct anyway).
    execute(
        db,
        Message.index(
            Message.conversation,
            Message.runtime_event_id,
            unique=True,
            where=Message.runtime_event_id.is_null(False),
        ),
    )


# The root revision's digest, frozen as of migration 4: SHA-256 of nothing.
_V4_EMPTY_DIGEST = hashlib.sha256(b"").digest()

_V4_DELTA_PAYLOADS_SQL = """
SELECT m.payload
FROM revision_messages AS rm
JOIN conversation_messages AS m
    ON m.conversation_id = rm.conversation_id AND m.message_id = rm.message_id
WHERE rm.revision_id = {param}
ORDER BY rm.ordinal
"""


def _v4_chain(digest: bytes, payloads: Iterable[bytes]) -> bytes:
    """The chained digest as of migration 4 (a frozen copy: the store's may change later)."""
    for payload in payloads:
        digest = hashlib.sha256(digest + len(payload).to_bytes(8, "big") + payload).digest()
    return digest


def _v4_rechain_conversation(db: peewee.Database, conversation_id: str) -> None:
    """Recompute one conversation's revision digests, parents before children (walked from the
    root, so revision id order does not matter); only a differing digest is written."""
    rows = execute_sql(
        db,
        "SELECT revision_id, parent_revision_id, state_digest FROM conversation_revisions "
        f"WHERE conversation_id = {db.param}",
        (conversation_id,),
    ).fetchall()
    children: dict[int | None, list[int]] = defaultdict(list)
    stored: dict[int, bytes] = {}
    for revision_id, parent, digest in rows:
        children[parent].append(revision_id)
        stored[revision_id] = bytes(digest)
    payloads_sql = _V4_DELTA_PAYLOADS_SQL.format(param=db.param)
    update_sql = (
        f"UPDATE conversation_revisions SET state_digest = {db.param} "
        f"WHERE revision_id = {db.param}"
    )
    pending = [(root, _V4_EMPTY_DIGEST) for root in children[None]]
    visited = 0
    while pending:
        revision_id, parent_digest = pending.pop()
        visited += 1
        payloads = [bytes(p) for (p,) in execute_sql(db, payloads_sql, (revision_id,)).fetchall()]
        digest = _v4_chain(parent_digest, payloads)
        if digest != stored[revision_id]:
            execute_sql(db, update_sql, (digest, revision_id))
        pending.extend((child, digest) for child in children[revision_id])
    if visited != len(rows):
        raise MigrationError(
            f"conversation {conversation_id}: {len(rows) - visited} revisions are not reachable "
            "from its root"
        )


@migration(4)
def chain_digests_and_checkpoint_states(db: peewee.Database) -> None:
    """Chained revision digests, and the checkpoint index.

    Why chained: the migration-3 digest hashed a revision's full history, so every append read
    and hashed the whole history. Now digest(empty) = SHA-256(b"") and digest(history + [m]) =
    SHA-256(digest(history) || 8-byte big-endian len(m.payload) || m.payload): a child needs only
    its parent's digest and its own messages, and the same full history still gives one digest
    (``UNIQUE(conversation_id, state_digest)`` still dedupes). Every existing revision is
    recomputed from its messages, parents before children.

    ``checkpoint_states`` maps a client checkpoint (the SHA-256 of its stable root blob ids,
    ``store.conversations.roots_digest``) to the revision it shows, so a client's conversation
    state is mapped back to a revision without decoding it. One mapping per digest and
    conversation (the primary key); the first recorded wins.

    Re-runnable as a function: digests are recomputed from the messages and only differing ones
    written, and the table is created only if missing, so a second run changes nothing.
    """
    conversations = execute_sql(db, "SELECT conversation_id FROM conversations").fetchall()
    for (conversation_id,) in conversations:
        _v4_rechain_conversation(db, conversation_id)

    class Conversation(peewee.Model):  # referenced only; created by migration 3
        conversation_id = peewee.TextField(primary_key=True)

        class Meta:
            database = db
            table_name = "conversations"

    class Revision(peewee.Model):  # referenced only; created by migration 3
        revision_id = peewee.BigAutoField()

        class Meta:
            database = db
            table_name = "conversation_revisions"

    class CheckpointState(peewee.Model):
        conversation = peewee.ForeignKeyField(
            Conversation, column_name="conversation_id", index=False
        )
        roots_digest = peewee.BlobField(constraints=[peewee.Check("length(roots_digest) = 32")])
        revision = peewee.ForeignKeyField(
            Revision, column_name="revision_id", field="revision_id", index=False
        )
        created_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "checkpoint_states"
            primary_key = peewee.CompositeKey("conversation", "roots_digest")

    db.create_tables([CheckpointState], safe=True)


@migration(5)
def provider_replay_reasoning(db: peewee.Database) -> None:
    """``providers.replay_reasoning``: whether a streamed reasoning text (OpenAI Chat
    ``reasoning_content``) is sent back to the provider that streamed it. On by default, as it
    was before the column existed; a user whose server refuses unknown message keys turns it
    off. Re-runnable: the column is added only if missing.
    """
    if "replay_reasoning" in {column.name for column in db.get_columns("providers")}:
        return
    execute_sql(
        db, 'ALTER TABLE "providers" ADD COLUMN "replay_reasoning" BOOLEAN NOT NULL DEFAULT TRUE'
    )


@migration(6)
def drop_tool_result_content(db: peewee.Database) -> None:
    """``tool_round_calls.result_content`` goes: a result's text is the tool message of the pair
    committed with it (in the same transaction), so the copy on the call row was written and
    never read. Re-runnable: the column is dropped only if present. ``DROP COLUMN`` needs SQLite
    3.35; an older SQLite keeps the column, which nothing writes or reads any more, rather than
    refusing to start.
    """
    if "result_content" not in {column.name for column in db.get_columns("tool_round_calls")}:
        return
    if isinstance(db, peewee.SqliteDatabase) and db.server_version < (3, 35, 0):
        return
    execute_sql(db, 'ALTER TABLE "tool_round_calls" DROP COLUMN "result_content"')


@migration(7)
def drop_unread_copies(db: peewee.Database) -> None:
    """Two things nothing reads go. ``tool_round_calls.result_is_error``: whether a result is an
    error is in the pair's tool message, committed with it. ``input_anchors``: created with the
    first schema for rollback by input id and never written (a rollback is found from the
    client's checkpoint, ``checkpoint_states``). Re-runnable; an SQLite before 3.35 keeps the
    column, as in migration 6.
    """
    execute_sql(db, 'DROP TABLE IF EXISTS "input_anchors"')
    if "result_is_error" not in {column.name for column in db.get_columns("tool_round_calls")}:
        return
    if isinstance(db, peewee.SqliteDatabase) and db.server_version < (3, 35, 0):
        return
    execute_sql(db, 'ALTER TABLE "tool_round_calls" DROP COLUMN "result_is_error"')


# The price columns as of migration 8 (a frozen copy: the catalog's names may change later).
_V8_PRICE_COLUMNS = (
    "price_input_per_mtok",
    "price_output_per_mtok",
    "price_cache_read_per_mtok",
    "price_cache_write_per_mtok",
)


@migration(8)
def model_prices_and_time_to_first_token(db: peewee.Database) -> None:
    """What the console's statistics need. ``models`` gains four nullable prices in USD per
    million tokens (input, output, cache read, cache write; NULL = unknown, never 0), so a
    call's cost can be estimated from its usage. ``llm_calls.ttft_ms`` is the time from the
    request to the first text or thinking delta (NULL for calls recorded before, and for calls
    that streamed none). The index on ``llm_calls.started_at_ms`` serves the statistics' time
    range. Existing rows keep every value and get NULL in the new columns. Re-runnable: each
    column is added only if missing, the index only if absent.
    """
    model_columns = {column.name for column in db.get_columns("models")}
    for name in _V8_PRICE_COLUMNS:
        if name not in model_columns:
            execute_sql(db, f'ALTER TABLE "models" ADD COLUMN "{name}" FLOAT')
    if "ttft_ms" not in {column.name for column in db.get_columns("llm_calls")}:
        execute_sql(db, 'ALTER TABLE "llm_calls" ADD COLUMN "ttft_ms" FLOAT')
    execute_sql(
        db, 'CREATE INDEX IF NOT EXISTS "llm_calls_started_at_ms" ON "llm_calls" ("started_at_ms")'
    )


@migration(9)
def create_run_events(db: peewee.Database) -> None:
    """``run_events``: what each run did and when, for the console's turn timeline. One row per
    span of a run: the run itself (``run``: its model, whether it resumed, the user's typed
    text; its EndStream code and message once it ended), each checkpoint job (``checkpoint``:
    submitted to the CheckpointActor, then published) and each tool call the editor ran
    (``tool``: its wire ids and outcome). A span is written when it starts, with no end, so a
    run that stalls shows what it waits for; ``ended_at_ms`` is set when it ends. ``detail_json``
    is a small JSON object of the kind's facts. Provider calls are not here: they are
    ``llm_calls`` rows (with ``run_id``). Times are UTC milliseconds since the epoch.

    Indexes: a run's events in order (``run_id, id``), the run spans newest first for pruning
    and the conversation list (``kind, id``), and a conversation's runs (``conversation_id,
    kind``). No foreign keys: a run that ended before it claimed its conversation has no
    ``runs`` row, and events are pruned on their own. Re-runnable: created only if missing.
    """

    class RunEvent(peewee.Model):
        id = peewee.BigAutoField()
        run_id = peewee.TextField()
        conversation_id = peewee.TextField()
        kind = peewee.TextField(constraints=[peewee.Check("kind IN ('run', 'checkpoint', 'tool')")])
        started_at_ms = peewee.BigIntegerField()
        ended_at_ms = peewee.BigIntegerField(null=True)
        detail_json = peewee.TextField()

        class Meta:
            database = db
            table_name = "run_events"
            indexes = (
                (("run_id", "id"), False),
                (("kind", "id"), False),
                (("conversation_id", "kind"), False),
            )

    db.create_tables([RunEvent], safe=True)


@migration(10)
def tool_call_cards(db: peewee.Database) -> None:
    """``tool_round_calls.tool_call``: the serialized ``agent.ToolCall`` of a completed call (the
    completion card: typed arguments, typed result, both times), written with its result. A run
    that resumes a round rebuilds, from it, the checkpoint steps of the calls completed before
    the previous process died; the result the model reads stays in the pair's tool message.
    NULL for calls recorded before, for pending calls and for calls without a card (a tool that
    does not exist). Re-runnable: the column is added only if missing.
    """
    if "tool_call" in {column.name for column in db.get_columns("tool_round_calls")}:
        return
    kind = "BYTEA" if isinstance(db, peewee.PostgresqlDatabase) else "BLOB"
    execute_sql(db, f'ALTER TABLE "tool_round_calls" ADD COLUMN "tool_call" {kind}')


@migration(11)
def provider_prompt_cache_key(db: peewee.Database) -> None:
    """``providers.prompt_cache_key``: whether OpenAI requests carry a per-conversation
    ``prompt_cache_key``: ``auto`` (OpenAI's own API only, which documents the field), ``on``
    (a compatible server that takes it) or ``off``. Existing providers get ``auto``.
    Re-runnable: the column is added only if missing.
    """
    if "prompt_cache_key" in {column.name for column in db.get_columns("providers")}:
        return
    execute_sql(
        db, 'ALTER TABLE "providers" ADD COLUMN "prompt_cache_key" TEXT NOT NULL DEFAULT \'auto\''
    )


@migration(12)
def instance_leases(db: peewee.Database) -> None:
    """Two servers on one database: ``server_instances`` holds each live process's lease
    (``instance_id``, where it runs: ``host`` and ``pid``, ``started_at_ms``,
    ``lease_expires_at_ms``, refreshed by its heartbeat),
    and ``runs.instance_id`` / ``llm_calls.instance_id`` name the process that opened the row,
    so a sweep closes only the running rows of an instance whose lease expired (or of none:
    NULL, written before this migration or by a store used without a lease), never a live
    peer's. Re-runnable: the table is created and each column added only if missing.
    """
    execute_sql(
        db,
        'CREATE TABLE IF NOT EXISTS "server_instances" ("instance_id" TEXT PRIMARY KEY, '
        '"host" TEXT NOT NULL, "pid" BIGINT NOT NULL, '
        '"started_at_ms" BIGINT NOT NULL, "lease_expires_at_ms" BIGINT NOT NULL)',
    )
    for table in ("runs", "llm_calls"):
        if "instance_id" not in {column.name for column in db.get_columns(table)}:
            execute_sql(db, f'ALTER TABLE "{table}" ADD COLUMN "instance_id" TEXT')
