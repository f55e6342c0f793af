"""Migrations 4 onward, each a change to a schema that has shipped. A new migration is one
function appended at the end of this module."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable

import peewee

from store.base.typed_peewee import execute_sql
from store.migrations.registry import MigrationError, migration

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

# The price columns as of migration 8 (a frozen copy: the catalog's names may change later).
_V8_PRICE_COLUMNS = (
    "price_input_per_mtok",
    "price_output_per_mtok",
    "price_cache_read_per_mtok",
    "price_cache_write_per_mtok",
)


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


@migration(13)
def shared_between_instances(db: peewee.Database) -> None:
    """What every instance of an active/active deployment must see, not one process's memory:

    - ``server_instances.internal_url``: where peers reach this instance's internal listener
      (requests forwarded to the owner of a run; NULL: an instance that takes no forwards);
    - ``run_routes``: which instance holds each agent request id (``request_id`` → its
      ``instance_id``, claimed by the first instance that heard of the id, ``claimed_at_ms``);
    - ``console_sessions``: console logins, by the SHA-256 digest of the cookie's session id
      (never the id), with their expiry in wall-clock milliseconds;
    - ``agent_activity``: the Connect page's record of Cursor's requests (one row, ``id`` 1);
    - ``subagent_links``: which Task call of which parent run started each subagent run.

    Re-runnable: tables are created and the column added only if missing.
    """
    if "internal_url" not in {column.name for column in db.get_columns("server_instances")}:
        execute_sql(db, 'ALTER TABLE "server_instances" ADD COLUMN "internal_url" TEXT')
    statements = (
        'CREATE TABLE IF NOT EXISTS "run_routes" ("request_id" TEXT PRIMARY KEY, '
        '"instance_id" TEXT NOT NULL, "claimed_at_ms" BIGINT NOT NULL)',
        'CREATE INDEX IF NOT EXISTS "run_routes_claimed_at_ms" ON "run_routes" ("claimed_at_ms")',
        'CREATE TABLE IF NOT EXISTS "console_sessions" ("digest" TEXT PRIMARY KEY, '
        '"expires_at_ms" BIGINT NOT NULL)',
        'CREATE TABLE IF NOT EXISTS "agent_activity" ("id" INTEGER PRIMARY KEY, '
        '"last_request_ms" BIGINT, "client_version" TEXT, "requests" BIGINT NOT NULL)',
        'CREATE TABLE IF NOT EXISTS "subagent_links" ("parent_request_id" TEXT NOT NULL, '
        '"conversation_id" TEXT NOT NULL, "tool_call_id" TEXT NOT NULL, '
        '"created_at_ms" BIGINT NOT NULL, PRIMARY KEY ("parent_request_id", "conversation_id"))',
    )
    for statement in statements:
        execute_sql(db, statement)


@migration(14)
def provider_key_pools(db: peewee.Database) -> None:
    """Several keys per provider. ``providers.key_label`` names the provider's own key (its
    first key, ``main`` for existing providers); ``provider_keys`` holds the others, each
    sealed like that key (``api_key``) under a ``label`` unique per provider, in ``position``
    order, and goes with its provider (``ON DELETE CASCADE``). ``llm_calls.key_label`` is the
    label of the key a call's attempt sent (never the key; NULL for calls recorded before, and
    for calls made outside a provider's pool). Re-runnable: the table is created and each
    column added only if missing.
    """
    if "key_label" not in {column.name for column in db.get_columns("providers")}:
        execute_sql(
            db, 'ALTER TABLE "providers" ADD COLUMN "key_label" TEXT NOT NULL DEFAULT \'main\''
        )
    serial = (
        "BIGSERIAL PRIMARY KEY"
        if isinstance(db, peewee.PostgresqlDatabase)
        else "INTEGER PRIMARY KEY AUTOINCREMENT"
    )
    execute_sql(
        db,
        f'CREATE TABLE IF NOT EXISTS "provider_keys" ("id" {serial}, '
        '"provider_id" INTEGER NOT NULL REFERENCES "providers" ("id") ON DELETE CASCADE, '
        '"label" TEXT NOT NULL, "api_key" TEXT NOT NULL, "position" INTEGER NOT NULL, '
        '"created_at_ms" BIGINT NOT NULL, UNIQUE ("provider_id", "label"))',
    )
    if "key_label" not in {column.name for column in db.get_columns("llm_calls")}:
        execute_sql(db, 'ALTER TABLE "llm_calls" ADD COLUMN "key_label" TEXT')


@migration(15)
def model_fallbacks(db: peewee.Database) -> None:
    """Fallbacks across models: ``models.fallbacks_json``, a model's ordered fallback models
    (a JSON array of public ids, ``[]`` for none), and on ``llm_calls`` each attempt's place in
    its call's chain: ``chain_position`` (0 the model asked for, n its n-th fallback) and
    ``attempt`` (1-based within that model); NULL on rows written before. Re-runnable: each
    column is added only if missing.
    """
    if "fallbacks_json" not in {column.name for column in db.get_columns("models")}:
        execute_sql(
            db, 'ALTER TABLE "models" ADD COLUMN "fallbacks_json" TEXT NOT NULL DEFAULT \'[]\''
        )
    calls = {column.name for column in db.get_columns("llm_calls")}
    for column in ("chain_position", "attempt"):
        if column not in calls:
            execute_sql(db, f'ALTER TABLE "llm_calls" ADD COLUMN "{column}" INTEGER')


@migration(16)
def asked_model_id(db: peewee.Database) -> None:
    """``llm_calls.asked_model_id``: the model id the run's request asked for, as Cursor sent
    it (``default``, one of Cursor's ids the routing settings map, or the public id itself),
    beside the model that answered; NULL for calls recorded before it, and for calls outside
    a run. Re-runnable: the column is added only if missing.
    """
    if "asked_model_id" not in {column.name for column in db.get_columns("llm_calls")}:
        execute_sql(db, 'ALTER TABLE "llm_calls" ADD COLUMN "asked_model_id" TEXT')


@migration(17)
def user_ids(db: peewee.Database) -> None:
    """Who each run and call was for: ``runs.user_id`` and ``llm_calls.user_id``, the user id
    read from the editor's token (``wire.identity``: a claim, never the token itself;
    ``anonymous`` when it names no one), with an index per table for the console's people
    totals and user filter (by user, then start time). NULL on rows written before, and on
    calls outside a run. Re-runnable: each column and index is added only if missing.
    """
    for table, started in (("runs", "created_at_ms"), ("llm_calls", "started_at_ms")):
        if "user_id" not in {column.name for column in db.get_columns(table)}:
            execute_sql(db, f'ALTER TABLE "{table}" ADD COLUMN "user_id" TEXT')
        execute_sql(
            db,
            f'CREATE INDEX IF NOT EXISTS "{table}_user_id" ON "{table}" ("user_id", "{started}")',
        )


@migration(18)
def protocol_drift(db: peewee.Database) -> None:
    """``protocol_drift``: what Cursor sent that this server's schema does not know, counted by
    every instance together: per ``kind`` (``field``: an unknown protobuf field, ``name`` its
    number and ``value`` its wire type; ``enum``: an enum value no name of ours names, ``name``
    the field and ``value`` the number; ``path``: an RPC path relayed upstream because it is
    not served here, ``name`` the path), ``message_type`` (the protobuf message's full name,
    empty for a path) and ``client_version`` (empty when the request named none), with the
    first and last sighting in wall-clock milliseconds and how many. Re-runnable.
    """
    execute_sql(
        db,
        'CREATE TABLE IF NOT EXISTS "protocol_drift" ("kind" TEXT NOT NULL, '
        '"message_type" TEXT NOT NULL, "name" TEXT NOT NULL, "value" BIGINT NOT NULL, '
        '"client_version" TEXT NOT NULL, "first_seen_ms" BIGINT NOT NULL, '
        '"last_seen_ms" BIGINT NOT NULL, "count" BIGINT NOT NULL, '
        'PRIMARY KEY ("kind", "message_type", "name", "value", "client_version"))',
    )


@migration(19)
def call_attempt_index(db: peewee.Database) -> None:
    """An index on ``llm_calls.model_call_id``: the console lists how many attempts (retries
    and fallbacks, one row each) each listed call's model call made, by that id. Re-runnable.
    """
    execute_sql(
        db,
        'CREATE INDEX IF NOT EXISTS "llm_calls_model_call_id" ON "llm_calls" ("model_call_id")',
    )


@migration(20)
def model_kind_and_price_source(db: peewee.Database) -> None:
    """``models`` gains ``kind`` (what the model is for: ``chat``, ``image``, ``embedding``, …,
    from the provider's metadata at discovery or the id's name; NULL for rows saved before,
    read as the name says) and ``price_source`` (where its prices came from: ``list``, the
    shipped price list, or ``user``; NULL for rows saved before, read as the user's, so the
    list never replaces a price that existed). Re-runnable: each column is added only if
    missing."""
    columns = {column.name for column in db.get_columns("models")}
    for name in ("kind", "price_source"):
        if name not in columns:
            execute_sql(db, f'ALTER TABLE "models" ADD COLUMN "{name}" TEXT')


# The shipped price list's date when ``price_list_as_of`` came (a frozen copy: every ``list``
# row saved before it was filled from that list).
_V21_PRICE_LIST_AS_OF = "2025-11-30"
# The image model's setting as of migration 21: its key and its JSON's field.
_V21_IMAGE_MODEL_KEY = "image_model"


@migration(21)
def model_price_list_date_and_image_kind(db: peewee.Database) -> None:
    """``models`` gains ``price_list_as_of`` (the date of the price list a ``list`` row's
    prices were read from, so the console shows that date, not the date of the list shipped
    now), filled in for the ``list`` rows saved before; and the model the image-model setting
    names gets ``kind = 'image'``: marked before kinds were stored, its NULL kind would read
    as its name says (``qwen-image-local`` reads as chat), so saving it would unmark it.
    Re-runnable: the column is added only if missing and both updates are idempotent."""
    columns = {column.name for column in db.get_columns("models")}
    if "price_list_as_of" not in columns:
        execute_sql(db, 'ALTER TABLE "models" ADD COLUMN "price_list_as_of" TEXT')
    execute_sql(
        db,
        f'UPDATE "models" SET "price_list_as_of" = {db.param} '
        f'WHERE "price_source" = {db.param} AND "price_list_as_of" IS NULL',
        (_V21_PRICE_LIST_AS_OF, "list"),
    )
    row = execute_sql(
        db, f'SELECT "value_json" FROM "settings" WHERE "key" = {db.param}', (_V21_IMAGE_MODEL_KEY,)
    ).fetchone()
    if row is None:
        return
    value = json.loads(row[0])
    public_id = value.get("public_id") if isinstance(value, dict) else None
    if isinstance(public_id, str):
        execute_sql(
            db,
            f'UPDATE "models" SET "kind" = {db.param} '
            f'WHERE "public_id" = {db.param} AND "kind" IS NULL',
            ("image", public_id),
        )


@migration(22)
def listing_prices(db: peewee.Database) -> None:
    """``listing_prices``: the prices each provider's last model discovery read from its own
    listing (OpenRouter's ``pricing``), so the add that follows uses them whichever instance
    or worker process it reaches: one row per provider (``provider_id``, going with its
    provider, ``ON DELETE CASCADE``), the ``base_url`` they were read from, when
    (``read_at_ms``, wall-clock) and ``prices_json`` (each model id's prices). Re-runnable.
    """
    execute_sql(
        db,
        'CREATE TABLE IF NOT EXISTS "listing_prices" ("provider_id" INTEGER PRIMARY KEY '
        'REFERENCES "providers" ("id") ON DELETE CASCADE, "base_url" TEXT NOT NULL, '
        '"read_at_ms" BIGINT NOT NULL, "prices_json" TEXT NOT NULL)',
    )
