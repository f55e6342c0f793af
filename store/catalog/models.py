"""Models under a provider: the console's input and the saved record, their checks, the upsert
and the deletes, and the reads Cursor's model list and every run's route make. Those reads run
on the path of every run, so their SQL is written once instead of built by peewee at each
call (~0.3-1 ms of Python each)."""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Sequence
from typing import Any, cast

import msgspec
import peewee

from actors.conversation.request import REASONING_EFFORTS
from store.base.clock import now_ms
from store.base.typed_peewee import execute_sql
from store.catalog.budgets import forget_budget_models
from store.catalog.checks import check_length
from store.catalog.connections import ProviderConnection, open_provider_secrets, provider_pool
from store.catalog.errors import Conflict, Invalid, NotFound, Problems
from store.catalog.fallbacks import (
    check_fallbacks,
    decode_fallbacks,
    forget_fallbacks,
    write_fallbacks,
)
from store.catalog.image_mark import forget_image_model
from store.catalog.limits import (
    INT32_MAX,
    INT32_MIN,
    MAX_MODEL_ID_CHARS,
    MAX_NAME_CHARS,
)
from store.catalog.listing_prices import fresh_listing
from store.catalog.model_kinds import KINDS, generates_images, is_chat, kind_by_name
from store.catalog.price_list import (
    FROM_LIST,
    FROM_PROVIDER,
    FROM_USER,
    Prices,
    listed_prices,
    price_list,
)
from store.catalog.providers import ANTHROPIC
from store.catalog.routing import forget_routing
from store.catalog.tables import lock_row, tables_of
from store.catalog.urls import public_model_id

# The efforts each type takes, by the type as a provider row stores it.
_EFFORTS = {kind.value: efforts for kind, efforts in REASONING_EFFORTS.items()}

# A model's prices, USD per million tokens, one per usage bucket (migration 8). None is
# "unknown": a call that used a bucket without a price has an unknown cost, never a zero one.
PRICE_FIELDS: tuple[str, ...] = Prices.__struct_fields__
# Where the stored prices came from, and the date of the price list for a ``list`` source.
_SOURCE_FIELDS = ("price_source", "price_list_as_of")

# A price absent from an input: keep the stored one (a new model gets the price list's).
_Price = float | None | msgspec.UnsetType


class ModelInput(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One model to save under a provider, keyed on (provider, trimmed ``model_id``)."""

    model_id: str
    display_name: str
    enabled: bool = True
    # Plain ints: ``_check_model`` names a value below 1 with the model's other problems.
    max_output_tokens: int | None = None
    context_window_tokens: int | None = None
    reasoning_enabled: bool = False
    reasoning_effort: str | None = None
    sort_order: int = 0
    # USD per million tokens (``PRICE_FIELDS``); None is unknown. Unlike the other fields,
    # the prices are one group: all absent keeps the stored prices (a new model gets its
    # provider's listing's, marked ``provider``, else the price list's, marked ``list``), so
    # adding a model again never drops a price the user set; any given replaces them all (an
    # absent one is then unknown, or for a new model the listing's or the list's), marked
    # ``user`` unless they are exactly the listing's or the list's.
    price_input_per_mtok: _Price = msgspec.UNSET
    price_output_per_mtok: _Price = msgspec.UNSET
    price_cache_read_per_mtok: _Price = msgspec.UNSET
    price_cache_write_per_mtok: _Price = msgspec.UNSET
    # What the model is for (``store.catalog.model_kinds.KINDS``); absent keeps the stored kind
    # (a new model's is what its name says).
    kind: str | msgspec.UnsetType = msgspec.UNSET
    # The ordered fallback models' public ids (``store.catalog.fallbacks``). Unlike the other
    # fields, absent or None keeps the stored list (an upsert of discovered models must not
    # wipe it); ``[]`` clears it.
    fallbacks: list[str] | None = None


class ModelRecord(msgspec.Struct, frozen=True):
    """A saved model with its provider's name and type; ``public_id`` is what Cursor sees."""

    public_id: str
    provider_id: int
    provider_name: str
    provider_type: str
    model_id: str
    display_name: str
    enabled: bool
    sort_order: int
    max_output_tokens: int | None
    context_window_tokens: int | None
    reasoning_enabled: bool
    reasoning_effort: str | None
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    price_cache_read_per_mtok: float | None = None
    price_cache_write_per_mtok: float | None = None
    fallbacks: tuple[str, ...] = ()
    # ``chat``, ``image``, ``embedding``, … (``model_kinds``); a row saved before kinds were
    # stored reads as its name says.
    kind: str = "chat"
    # Where the prices came from: ``provider`` (the provider's own model listing), ``list`` (the
    # shipped price list), ``user``, or None (never priced; a row priced before sources were
    # stored reads as ``user``).
    price_source: str | None = None
    # The date of the price list a ``list`` row's prices were read from (the list shipped
    # then, not the one shipped now); None for any other source.
    price_list_as_of: str | None = None
    # Derived from ``kind`` (``model_kinds``), so clients never restate the rule: whether a
    # turn can run on the model, and whether it can be the image model.
    chat: bool = True
    generates_images: bool = False


def models_query(db: peewee.Database, *, whole_provider: bool = False) -> peewee.Select:
    """Models with their provider: only the columns a model record shows, unless the whole
    provider row is wanted (to connect to it)."""
    tables = tables_of(db)
    model, provider = tables.model, tables.provider
    columns = (provider,) if whole_provider else (provider.id, provider.name, provider.type)
    return (
        model.select(model, *columns)
        .join(provider)
        .order_by(model.sort_order, model.display_name, model.public_id)
    )


def all_models(db: peewee.Database) -> list[ModelRecord]:
    """Every model, enabled or not, ordered by sort_order then display_name."""
    return [_record_of(row) for row in execute_sql(db, _models_sql("")).fetchall()]


def enabled_models(db: peewee.Database) -> list[ModelRecord]:
    """The models Cursor may list and use, ordered by sort_order then display_name."""
    # Read when every run starts (the Task tool's model list): written SQL, as the route's.
    cursor = execute_sql(db, _ENABLED_SQL.format(param=db.param), (True,))
    return [_record_of(row) for row in cursor.fetchall()]


def has_model(db: peewee.Database, public_id: str) -> bool:
    """Whether a model (enabled or not) has this public id: its runs are served here."""
    cursor = execute_sql(
        db, f'SELECT 1 FROM "models" WHERE "public_id" = {db.param} LIMIT 1', (public_id,)
    )
    return cursor.fetchone() is not None


def model_route_parts(
    db: peewee.Database, public_id: str
) -> tuple[ModelRecord, ProviderConnection] | None:
    """The model behind a public id and its provider's real connection values, or None.

    Disabled models are returned too (``record.enabled`` is False) so the caller can say
    "disabled" rather than "unknown"; the caller must refuse to route to them. A provider
    secret that does not open under this server's key raises ``KeyUnreadable`` naming it.
    """
    # Read on the path of every run, so its SQL is written once instead of built by peewee
    # each time (~1 ms of Python per call).
    cursor = execute_sql(db, _ROUTE_SQL.format(param=db.param), (public_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    record = _record_of(row)
    base_url, api_key, headers_json, replay_reasoning, prompt_cache_key, key_label = row[
        len(_RECORD_COLUMNS) :
    ]
    key, headers, public = open_provider_secrets(
        db, record.provider_name, api_key, msgspec.json.decode(headers_json, type=dict[str, str])
    )
    connection = ProviderConnection(
        provider_id=record.provider_id,
        name=record.provider_name,
        type=record.provider_type,
        base_url=base_url,
        api_key=key,
        headers=headers,
        replay_reasoning=bool(replay_reasoning),
        prompt_cache_key=prompt_cache_key,
        public_headers=public,
        keys=provider_pool(db, record.provider_id, record.provider_name, key_label, key),
    )
    return record, connection


# The hot reads' SQL, written once instead of built by peewee at each call (~0.3-1 ms of
# Python each): a model record's columns, in ``_record_of``'s order.
_RECORD_COLUMNS = (
    'm."public_id"',
    'm."provider_id"',
    'p."name"',
    'p."type"',
    'm."model_id"',
    'm."display_name"',
    'm."enabled"',
    'm."sort_order"',
    'm."max_output_tokens"',
    'm."context_window_tokens"',
    'm."reasoning_enabled"',
    'm."reasoning_effort"',
    *(f'm."{field}"' for field in PRICE_FIELDS),
    'm."fallbacks_json"',
    'm."kind"',
    'm."price_source"',
    'm."price_list_as_of"',
)
_MODELS_FROM = ' FROM "models" AS m JOIN "providers" AS p ON p."id" = m."provider_id" '


def _models_sql(where: str) -> str:
    """Model records (``_record_of``'s rows) matching ``where``, in the order Cursor lists them."""
    return (
        f"SELECT {', '.join(_RECORD_COLUMNS)}{_MODELS_FROM}{where}"
        ' ORDER BY m."sort_order", m."display_name", m."public_id"'
    )


# Compared with a parameter, so SQLite uses the (enabled, sort_order, display_name) index.
_ENABLED_SQL = _models_sql('WHERE m."enabled" = {param}')
_ROUTE_SQL = (
    f"SELECT {', '.join(_RECORD_COLUMNS)}, "
    'p."base_url", p."api_key", p."headers_json", p."replay_reasoning", p."prompt_cache_key", '
    'p."key_label"' + _MODELS_FROM + 'WHERE m."public_id" = {param}'
)


def _record_of(row: tuple[Any, ...]) -> ModelRecord:
    """The record from a row that starts with ``_RECORD_COLUMNS``."""
    # The prices, then the fallbacks, the kind, the price source and the list's date.
    fixed = len(_RECORD_COLUMNS) - len(PRICE_FIELDS) - 4
    (
        public_id,
        provider_id,
        provider_name,
        provider_type,
        model_id,
        display_name,
        enabled,
        sort_order,
        max_output,
        context,
        reasoning,
        effort,
    ) = row[:fixed]
    prices = row[fixed : fixed + len(PRICE_FIELDS)]
    fallbacks_json, kind, price_source, list_as_of = row[
        fixed + len(PRICE_FIELDS) : len(_RECORD_COLUMNS)
    ]
    if price_source is None and any(price is not None for price in prices):
        price_source = FROM_USER
    kind = kind or kind_by_name(model_id)
    return ModelRecord(
        public_id=public_id,
        provider_id=provider_id,
        provider_name=provider_name,
        provider_type=provider_type,
        model_id=model_id,
        display_name=display_name,
        enabled=bool(enabled),
        sort_order=sort_order,
        max_output_tokens=max_output,
        context_window_tokens=context,
        reasoning_enabled=bool(reasoning),
        reasoning_effort=effort,
        **dict(zip(PRICE_FIELDS, prices, strict=True)),
        fallbacks=decode_fallbacks(fallbacks_json),
        kind=kind,
        price_source=price_source,
        price_list_as_of=list_as_of if price_source == FROM_LIST else None,
        chat=is_chat(kind),
        generates_images=generates_images(kind),
    )


def delete_model(db: peewee.Database, public_id: str) -> None:
    """Delete one model by public id; ``NotFound`` if there is none."""
    model = tables_of(db).model
    with db.atomic():
        forget_image_model(db, [public_id])
        forget_fallbacks(db, [public_id])
        forget_routing(db, [public_id])
        forget_budget_models(db, [public_id])
        if not model.delete().where(model.public_id == public_id).execute():
            raise NotFound(f"model {public_id} not found")


def _check_model(index: int, item: ModelInput, provider_type: str) -> ModelInput:
    """Trimmed, validated copy of one input model; fields are named ``models[i].field`` and
    every broken one is named in the one ``Invalid``."""
    prefix = f"models[{index}]"
    problems = Problems()
    model_id = item.model_id.strip()
    if not model_id:
        problems.add(f"{prefix}.model_id", "model id cannot be empty")
    elif any(char.isspace() or not char.isprintable() for char in model_id):
        # A provider's model ids never hold them; typed by hand, one is a paste gone wrong.
        problems.add(f"{prefix}.model_id", "model id cannot contain spaces or control characters")
    else:
        problems.check(check_length, f"{prefix}.model_id", model_id, MAX_MODEL_ID_CHARS)
    display_name = item.display_name.strip()
    if not display_name:
        problems.add(f"{prefix}.display_name", "display name cannot be empty")
    else:
        problems.check(check_length, f"{prefix}.display_name", display_name, MAX_NAME_CHARS)
    for field in ("max_output_tokens", "context_window_tokens"):
        value = getattr(item, field)
        if value is not None and (isinstance(value, bool) or not 1 <= value <= INT32_MAX):
            problems.add(f"{prefix}.{field}", f"must be a positive integer up to {INT32_MAX}")
    if not INT32_MIN <= item.sort_order <= INT32_MAX:
        problems.add(f"{prefix}.sort_order", f"must be an integer from {INT32_MIN} to {INT32_MAX}")
    if item.kind is not msgspec.UNSET and item.kind not in KINDS:
        problems.add(f"{prefix}.kind", f"must be one of {', '.join(KINDS)}")
    for field in PRICE_FIELDS:
        price = getattr(item, field)
        if (
            price is not None
            and price is not msgspec.UNSET
            and (
                isinstance(price, bool)
                or not isinstance(price, int | float)
                or not math.isfinite(price)
                or price < 0
            )
        ):
            problems.add(
                f"{prefix}.{field}",
                "must be a number of USD per million tokens, at least 0 (empty: unknown)",
            )
    effort = None if item.reasoning_effort is None else item.reasoning_effort.strip().lower()
    allowed = _EFFORTS.get(provider_type, ())
    if effort is not None and effort not in allowed:
        problems.add(
            f"{prefix}.reasoning_effort",
            f"must be null (the provider's default) or one of {', '.join(allowed)} "
            f"for an {provider_type} provider",
        )
    if provider_type == ANTHROPIC and item.enabled and item.max_output_tokens is None:
        problems.add(
            f"{prefix}.max_output_tokens",
            "required to enable an Anthropic model (the server never guesses a limit)",
        )
    problems.raise_any()
    return msgspec.structs.replace(
        item,
        model_id=model_id,
        display_name=display_name,
        reasoning_effort=effort,
    )


class _CheckedOnly(Exception):
    """Raised at the end of a check-only save to roll its transaction back."""

    def __init__(self, records: list[ModelRecord]) -> None:
        super().__init__("check only")
        self.records = records


def save_models(
    db: peewee.Database,
    provider_id: int,
    models: Sequence[ModelInput],
    *,
    only_new: bool = False,
    check_only: bool = False,
) -> list[ModelRecord]:
    """Upsert models under a provider in one transaction: all are saved or none.

    Keyed on (provider, model_id): an existing model keeps its public id and creation time.
    A public id that already belongs to another (provider, model) is a ``Conflict``. With
    ``only_new`` (a model added by hand) a model id the provider already has is ``Invalid``,
    naming it, so adding never overwrites a saved model. A new model gets the prices the
    provider's own listing gave in its last discovery (``listing_prices``, read here, in the
    save's transaction, while fresh and of the provider's base URL now) over the price list's.

    With ``check_only`` the save runs as it would (every rule, the fallbacks' too, which may
    name a model saved in the same request) and is then rolled back: it raises what the save
    would raise, else answers the records it would have saved, and writes nothing.
    """
    try:
        with db.atomic():
            records = _upsert_models(db, provider_id, models, only_new=only_new)
            if check_only:
                raise _CheckedOnly(records)
    except _CheckedOnly as checked:
        return checked.records
    return records


def _upsert_models(
    db: peewee.Database,
    provider_id: int,
    models: Sequence[ModelInput],
    *,
    only_new: bool,
) -> list[ModelRecord]:
    """``save_models``'s work, inside its transaction."""
    tables = tables_of(db)
    model = tables.model
    columns = (tables.provider.id, tables.provider.type, tables.provider.base_url)
    query = tables.provider.select(*columns).where(tables.provider.id == provider_id)
    provider = lock_row(query, db).first()
    if provider is None:
        raise NotFound(f"provider {provider_id} not found")
    problems = Problems()
    found = [problems.check(_check_model, i, item, provider.type) for i, item in enumerate(models)]
    problems.raise_any()
    checked = [item for item in found if item is not None]
    _refuse_duplicates(checked)
    stamp = now_ms()
    public_ids = []
    existing = _existing_ids(db, provider_id, [item.model_id for item in checked])
    by_provider = fresh_listing(db, provider_id, provider.base_url, at_ms=stamp)
    if only_new:
        _refuse_saved(checked, existing)
    for item in checked:
        public_id = public_model_id(provider.base_url, provider.type, item.model_id)
        _refuse_collision(db, public_id, provider_id, item.model_id)
        stored = existing.get(item.model_id)
        is_new = stored is None
        fields = {
            "display_name": item.display_name,
            "enabled": item.enabled,
            "sort_order": item.sort_order,
            "max_output_tokens": item.max_output_tokens,
            "context_window_tokens": item.context_window_tokens,
            "reasoning_enabled": item.reasoning_enabled,
            "reasoning_effort": item.reasoning_effort,
            **_price_fields(item, stored, by_provider.get(item.model_id)),
            **_kind_field(item, is_new),
            "updated_at_ms": stamp,
        }
        updated = (
            model.update(**fields)
            .where((model.provider == provider_id) & (model.model_id == item.model_id))
            .execute()
        )
        if not updated:
            model.insert(
                public_id=public_id,
                provider=provider_id,
                model_id=item.model_id,
                created_at_ms=stamp,
                **fields,
            ).execute()
        public_ids.append(public_id)
    # A model saved as one that does not make images stops being the image model.
    forget_image_model(
        db,
        [
            public_id
            for item, public_id in zip(checked, public_ids, strict=True)
            if item.kind is not msgspec.UNSET and not generates_images(item.kind)
        ],
    )
    # After every upsert, so a list may name a model saved in the same request.
    for index, (item, public_id) in enumerate(zip(checked, public_ids, strict=True)):
        if item.fallbacks is not None:
            field = f"models[{index}].fallbacks"
            fallbacks = problems.check(check_fallbacks, db, field, public_id, item.fallbacks)
            if fallbacks is not None:
                write_fallbacks(db, public_id, fallbacks)
    problems.raise_any()  # rolls the upserts back
    if not public_ids:  # PostgreSQL refuses an empty IN ()
        return []
    marks = ", ".join([db.param] * len(public_ids))
    saved = execute_sql(db, _models_sql(f'WHERE m."public_id" IN ({marks})'), public_ids)
    records = {record.public_id: record for record in map(_record_of, saved.fetchall())}
    return [records[public_id] for public_id in public_ids]


def _existing_ids(
    db: peewee.Database, provider_id: int, model_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """Which of these model ids the provider already has (their upsert is an update), each
    with its stored price columns (prices, source and the list's date)."""
    if not model_ids:
        return {}
    model = tables_of(db).model
    columns = [getattr(model, field) for field in (*PRICE_FIELDS, *_SOURCE_FIELDS)]
    query = model.select(model.model_id, *columns).where(
        (model.provider == provider_id) & (model.model_id.in_(model_ids))
    )
    rows = cast("list[dict[str, Any]]", list(query.dicts()))
    return {row.pop("model_id"): row for row in rows}


def _refuse_saved(models: Sequence[ModelInput], existing: Container[str]) -> None:
    """Adding by hand never overwrites: every model id the provider already has is named."""
    problems = Problems()
    for index, item in enumerate(models):
        if item.model_id in existing:
            problems.add(
                f"models[{index}].model_id",
                f"this provider already has the model {item.model_id}: edit it in the models "
                "table instead",
            )
    problems.raise_any()


def _price_fields(
    item: ModelInput, stored: dict[str, Any] | None, provider_prices: Prices | None
) -> dict[str, Any]:
    """The price columns an upsert writes (``stored``: the saved model's, None for a new one;
    ``provider_prices``: the provider's listing's): none (kept) when no price is given for a
    saved model, or when the given ones are exactly the stored ones (an editor saved unchanged
    keeps a ``list`` or ``provider`` source and a list's date, even after the shipped list
    changed); for a new model the listing's, else the price list's (or unknown); else the given
    ones (a new model's absent ones the listing's, else the list's), marked ``provider`` when
    they are exactly the listing's, ``list`` with the list's date when exactly the list's, and
    ``user`` otherwise."""
    given = {field: getattr(item, field) for field in PRICE_FIELDS}
    listed = listed_prices(item.model_id)
    as_of = price_list().as_of
    if all(price is msgspec.UNSET for price in given.values()):
        if stored is not None:
            return {}
        if provider_prices is not None:
            return {**msgspec.structs.asdict(provider_prices), **_sourced(FROM_PROVIDER)}
        if listed is None:
            return {**dict.fromkeys(PRICE_FIELDS), **dict.fromkeys(_SOURCE_FIELDS)}
        return {**msgspec.structs.asdict(listed), **_sourced(FROM_LIST, as_of)}
    default = provider_prices if provider_prices is not None else listed
    fallback = msgspec.structs.asdict(default) if stored is None and default is not None else {}
    prices = {field: fallback.get(field) if v is msgspec.UNSET else v for field, v in given.items()}
    if stored is not None and prices == {field: stored[field] for field in PRICE_FIELDS}:
        return {}
    if provider_prices is not None and prices == msgspec.structs.asdict(provider_prices):
        return {**prices, **_sourced(FROM_PROVIDER)}
    if listed is not None and prices == msgspec.structs.asdict(listed):
        return {**prices, **_sourced(FROM_LIST, as_of)}
    return {**prices, **_sourced(FROM_USER)}


def _sourced(source: str, list_as_of: str | None = None) -> dict[str, Any]:
    return {"price_source": source, "price_list_as_of": list_as_of}


def _kind_field(item: ModelInput, is_new: bool) -> dict[str, Any]:
    """The kind column an upsert writes: the given one, else (a new model) the name's."""
    if item.kind is not msgspec.UNSET:
        return {"kind": item.kind}
    return {"kind": kind_by_name(item.model_id)} if is_new else {}


def _refuse_duplicates(models: Iterable[ModelInput]) -> None:
    seen: set[str] = set()
    for index, item in enumerate(models):
        if item.model_id in seen:
            raise Invalid(f"models[{index}].model_id", f"{item.model_id!r} is given twice")
        seen.add(item.model_id)


def _refuse_collision(db: peewee.Database, public_id: str, provider_id: int, model_id: str) -> None:
    model = tables_of(db).model
    holder = model.get_or_none(model.public_id == public_id)
    if holder is not None and (holder.provider_id, holder.model_id) != (provider_id, model_id):
        raise Conflict(
            f"public model id {public_id} already belongs to model {holder.model_id!r} "
            f"of provider {holder.provider_id} (8-hex id collision)",
            code="already_exists",
        )
