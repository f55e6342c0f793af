"""Migrations 1 to 3: the first schema (blobs; providers, models and call records;
conversations, revisions, runs and tool rounds)."""

from __future__ import annotations

import peewee

from store.base.typed_peewee import execute
from store.migrations.registry import migration


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
