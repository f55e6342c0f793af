"""The catalog's tables (migration 2, with migration 5's ``replay_reasoning``, migration 8's
model prices, migration 11's ``prompt_cache_key``, migration 14's key pools, migration 15's
fallbacks and the later model kind, price source and price list date) as peewee models bound
to one database, built once per database: the store opens several databases in one process
(tests, a restart), and a model class binds exactly one."""

from __future__ import annotations

import threading
import weakref

import msgspec
import peewee

from store.base.typed_peewee import RuntimeModel

# ``prompt_cache_key``: "auto" (only to OpenAI's own API), "on" or "off".
CACHE_KEY_AUTO = "auto"
CACHE_KEY_SETTINGS = (CACHE_KEY_AUTO, "on", "off")
# The label of a provider's own key (its first key) until the user renames it (migration 14).
MAIN_KEY_LABEL = "main"

# One setting's value, read by key at the start of every run or provider call: SQL written once
# instead of built by peewee each time.
SETTING_SQL = 'SELECT "value_json" FROM "settings" WHERE "key" = {param}'


class Tables(msgspec.Struct, frozen=True):
    """The model classes of one database: built at run time, so their fields are read
    through ``RuntimeModel`` (``store.base.typed_peewee``)."""

    provider: type[RuntimeModel]
    model: type[RuntimeModel]
    setting: type[RuntimeModel]
    provider_key: type[RuntimeModel]


_TABLES: weakref.WeakKeyDictionary[peewee.Database, Tables] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def tables_of(db: peewee.Database) -> Tables:
    """peewee models of the migration-2 tables bound to ``db`` (built once per database)."""
    with _TABLES_LOCK:
        tables = _TABLES.get(db)
        if tables is None:
            tables = _TABLES[db] = _build_tables(db)
        return tables


def _build_tables(db: peewee.Database) -> Tables:
    class Provider(RuntimeModel):
        id = peewee.AutoField()
        name = peewee.TextField()
        type = peewee.TextField()
        base_url = peewee.TextField()
        api_key = peewee.TextField()
        headers_json = peewee.TextField()
        replay_reasoning = peewee.BooleanField(default=True)
        prompt_cache_key = peewee.TextField(default=CACHE_KEY_AUTO)
        key_label = peewee.TextField(default=MAIN_KEY_LABEL)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "providers"

    class Model(RuntimeModel):
        public_id = peewee.CharField(max_length=8, primary_key=True)
        provider = peewee.ForeignKeyField(Provider, column_name="provider_id", on_delete="CASCADE")
        model_id = peewee.TextField()
        display_name = peewee.TextField()
        enabled = peewee.BooleanField()
        sort_order = peewee.IntegerField()
        max_output_tokens = peewee.IntegerField(null=True)
        context_window_tokens = peewee.IntegerField(null=True)
        reasoning_enabled = peewee.BooleanField()
        reasoning_effort = peewee.TextField(null=True)
        price_input_per_mtok = peewee.FloatField(null=True)
        price_output_per_mtok = peewee.FloatField(null=True)
        price_cache_read_per_mtok = peewee.FloatField(null=True)
        price_cache_write_per_mtok = peewee.FloatField(null=True)
        fallbacks_json = peewee.TextField(default="[]")
        kind = peewee.TextField(null=True)
        price_source = peewee.TextField(null=True)
        price_list_as_of = peewee.TextField(null=True)
        created_at_ms = peewee.BigIntegerField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "models"

    class Setting(RuntimeModel):
        key = peewee.TextField(primary_key=True)
        value_json = peewee.TextField()
        updated_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "settings"

    class ProviderKey(RuntimeModel):
        id = peewee.AutoField()
        provider = peewee.ForeignKeyField(Provider, column_name="provider_id", on_delete="CASCADE")
        label = peewee.TextField()
        api_key = peewee.TextField()
        position = peewee.IntegerField()
        created_at_ms = peewee.BigIntegerField()

        class Meta:
            database = db
            table_name = "provider_keys"

    return Tables(provider=Provider, model=Model, setting=Setting, provider_key=ProviderKey)


def lock_row(query: peewee.Select, db: peewee.Database) -> peewee.Select:
    """``FOR UPDATE`` where supported (PostgreSQL); SQLite's IMMEDIATE transactions already lock."""
    return query.for_update() if db.for_update else query
