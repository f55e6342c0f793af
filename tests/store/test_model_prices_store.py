"""A model's kind and where its prices came from, on SQLite and PostgreSQL: a new model of a
listed id gets the shipped price list's prices marked ``list``; a price the user sets is marked
``user`` and survives the model being added again; the kind is the given one or the name's; an
older row (before kinds and sources were stored) reads as its name and as the user's prices."""

from __future__ import annotations

import msgspec
import peewee
import pytest

from store import Store
from store import catalog as cat
from store.base.typed_peewee import execute_sql
from store.migrations import (
    apply_migrations,
    model_kind_and_price_source,
    model_price_list_date_and_image_kind,
)


def provider(db: peewee.Database, provider_type: str = "openai-chat") -> int:
    return cat.create_provider(
        db,
        cat.ProviderInput(name=provider_type, type=provider_type, base_url="https://p.test/v1"),
    ).id


def one(db: peewee.Database, provider_id: int, **fields: object) -> cat.ModelRecord:
    fields.setdefault("display_name", str(fields["model_id"]))
    (saved,) = cat.save_models(db, provider_id, [cat.ModelInput(**fields)])  # type: ignore[arg-type]
    return saved


def prices_of(record: cat.ModelRecord) -> tuple[float | None, ...]:
    return tuple(getattr(record, field) for field in cat.PRICE_FIELDS)


def test_the_shipped_list_has_its_source_date_and_the_main_models() -> None:
    listed = cat.price_list()
    assert "OpenAI" in listed.source and "Anthropic" in listed.source and "Google" in listed.source
    assert len(listed.as_of) == 10 and listed.as_of[4] == "-"  # an ISO date
    for model_id in ("gpt-4o", "gpt-4.1", "claude-sonnet-4-5", "gemini-2.5-pro"):
        prices = cat.listed_prices(model_id)
        assert prices is not None and prices.price_input_per_mtok, model_id
        assert prices.price_output_per_mtok and prices.price_output_per_mtok > 0
    # Gemini lists its ids as models/<id>; an unknown id has no list price.
    assert cat.listed_prices("models/gemini-2.5-pro") == cat.listed_prices("gemini-2.5-pro")
    assert cat.listed_prices("my-local-llama") is None


def test_a_new_listed_model_gets_the_list_price_marked_list(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    saved = one(db, pid, model_id="gpt-4o")
    listed = cat.listed_prices("gpt-4o")
    assert listed is not None
    assert prices_of(saved) == prices_of_listed(listed) and saved.price_source == cat.FROM_LIST
    unknown = one(db, pid, model_id="my-local-llama")
    assert prices_of(unknown) == (None, None, None, None) and unknown.price_source is None
    # Saving the list's own prices back (the editor does) keeps them marked as the list's.
    again = one(db, pid, model_id="gpt-4o", **msgspec_dict(listed))
    assert again.price_source == cat.FROM_LIST


def listed_input(listed: cat.Prices) -> cat.ModelInput:
    """A model input carrying the list's prices, as an add-by-id form used to send them."""
    return cat.ModelInput(
        model_id="x",
        display_name="x",
        price_input_per_mtok=listed.price_input_per_mtok,
        price_output_per_mtok=listed.price_output_per_mtok,
        price_cache_read_per_mtok=listed.price_cache_read_per_mtok,
        price_cache_write_per_mtok=listed.price_cache_write_per_mtok,
    )


def prices_of_listed(listed: cat.Prices) -> tuple[float | None, ...]:
    return tuple(getattr(listed, field) for field in cat.PRICE_FIELDS)


def msgspec_dict(listed: cat.Prices) -> dict[str, float | None]:
    return {field: getattr(listed, field) for field in cat.PRICE_FIELDS}


def test_a_price_the_user_set_is_kept_when_the_model_is_added_again(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    one(db, pid, model_id="gpt-4o")
    mine = {"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0}
    edited = one(db, pid, model_id="gpt-4o", **mine)
    assert prices_of(edited) == (1.0, 2.0, None, None) and edited.price_source == cat.FROM_USER
    # Discovered and added again (no prices given): the user's prices stay, still the user's.
    (again,) = cat.save_models(
        db, pid, [cat.ModelInput(model_id="gpt-4o", display_name="GPT-4o", sort_order=3)]
    )
    assert prices_of(again) == (1.0, 2.0, None, None) and again.price_source == cat.FROM_USER
    assert (again.display_name, again.sort_order) == ("GPT-4o", 3)
    # A user who clears every price chooses unknown; adding the model again does not refill it.
    cleared = one(db, pid, model_id="gpt-4o", **dict.fromkeys(cat.PRICE_FIELDS))
    assert prices_of(cleared) == (None,) * 4 and cleared.price_source == cat.FROM_USER
    assert one(db, pid, model_id="gpt-4o").price_source == cat.FROM_USER
    assert prices_of(cat.all_models(db)[0]) == (None,) * 4


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        ("gpt-4o", "chat"),
        ("claude-sonnet-4-5", "chat"),
        ("gpt-image-1", "image"),
        ("dall-e-3", "image"),
        ("imagen-4.0-generate-001", "image"),
        ("gemini-2.5-flash-image", "image"),
        ("text-embedding-3-small", "embedding"),
        ("models/gemini-embedding-001", "embedding"),
        ("tts-1-hd", "speech"),
        ("gpt-4o-mini-tts", "speech"),
        ("whisper-1", "transcription"),
        ("gpt-4o-transcribe", "transcription"),
        ("omni-moderation-latest", "moderation"),
        ("gpt-realtime", "other"),
        ("babbage-002", "other"),
        # Audio chat models exist to speak and listen: speech, never offered as chat.
        ("gpt-4o-audio-preview", "speech"),
        ("gpt-4o-mini-audio-preview", "speech"),
        ("gpt-audio", "speech"),
        ("gemini-2.5-flash-preview-tts", "speech"),
        ("BAAI/bge-m3", "embedding"),
        ("BAAI/bge-large-en-v1.5", "embedding"),
        ("BAAI/bge-reranker-v2-m3", "other"),
        ("intfloat/multilingual-e5-large", "embedding"),
        ("intfloat/e5-mistral-7b-instruct", "embedding"),
        ("nomic-embed-text", "embedding"),
        ("mxbai-embed-large", "embedding"),
        # Completions only: no chat endpoint.
        ("gpt-3.5-turbo-instruct", "other"),
        ("davinci-002", "other"),
        ("flux.1-schnell", "image"),
        ("stabilityai/stable-diffusion-xl-base-1.0", "image"),
        ("sdxl-turbo", "image"),
        # Names that only look close stay chat.
        ("Qwen/Qwen2.5-7B-Instruct", "chat"),
        ("gpt-3.5-turbo", "chat"),
    ],
)
def test_the_kind_a_name_says(model_id: str, kind: str) -> None:
    assert cat.kind_by_name(model_id) == kind


def test_the_kind_is_given_or_the_names_and_kept_by_an_upsert_without_it(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    assert one(db, pid, model_id="text-embedding-3-small").kind == "embedding"
    assert one(db, pid, model_id="my-painter", kind="image").kind == "image"
    assert one(db, pid, model_id="my-painter").kind == "image"  # kept
    assert one(db, pid, model_id="my-llm", kind="chat").kind == "chat"
    with pytest.raises(cat.Invalid, match=r"models\[0\]\.kind") as refused:
        one(db, pid, model_id="my-llm", kind="painting")
    assert "painting" not in str(refused.value)  # the value is never echoed


def test_only_an_image_model_can_be_marked_for_images(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    chat = one(db, pid, model_id="gpt-4o")
    with pytest.raises(cat.Invalid, match="does not generate images") as refused:
        cat.set_image_model(db, chat.public_id)
    assert refused.value.field == "public_id"
    image = one(db, pid, model_id="sd-local", kind="image", enabled=False)
    assert cat.set_image_model(db, image.public_id).public_id == image.public_id
    one(db, pid, model_id="sd-local", enabled=False)  # saved without a kind: still marked
    assert cat.get_image_model(db).public_id == image.public_id
    # Saved as a chat model, it stops being the image model.
    one(db, pid, model_id="sd-local", kind="chat", enabled=False)
    assert cat.get_image_model(db).public_id is None


def test_rows_saved_before_kinds_and_sources_read_as_their_name_and_the_users(
    opened: Store,
) -> None:
    db = opened.database
    pid = provider(db)
    one(db, pid, model_id="text-embedding-3-small")
    one(db, pid, model_id="my-llm", price_input_per_mtok=1.0)
    execute_sql(db, 'UPDATE "models" SET "kind" = NULL, "price_source" = NULL')
    by_id = {m.model_id: m for m in cat.all_models(db)}
    assert by_id["text-embedding-3-small"].kind == "embedding"
    assert by_id["text-embedding-3-small"].price_source is None  # never priced
    assert by_id["my-llm"].price_source == cat.FROM_USER
    # The migration is re-runnable.
    model_kind_and_price_source(db)
    apply_migrations(db)
    assert {m.model_id for m in cat.all_models(db)} == {"text-embedding-3-small", "my-llm"}


def test_adding_an_id_already_saved_is_refused_and_the_saved_model_stays(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    mine = one(
        db, pid, model_id="gpt-4o", display_name="Mine", sort_order=4, price_input_per_mtok=1.5
    )
    listed = cat.listed_prices("gpt-4o")
    assert listed is not None
    # As the form sent it before: the list's prices, all four.
    added = msgspec.structs.replace(listed_input(listed), model_id=" gpt-4o ")
    fresh = cat.ModelInput(model_id="my-new-llm", display_name="new")
    with pytest.raises(cat.Invalid) as refused:
        cat.save_models(db, pid, [fresh, added], only_new=True)
    assert refused.value.problems == (
        (
            "models[1].model_id",
            "this provider already has the model gpt-4o: edit it in the models table instead",
        ),
    )
    (kept,) = cat.all_models(db)  # nothing saved: the new one neither
    assert kept == mine and kept.price_source == cat.FROM_USER
    assert cat.save_models(db, pid, [fresh], only_new=True)[0].model_id == "my-new-llm"
    # A new listed model given some prices: the others are the list's, and the whole is the
    # user's (it is no longer exactly the list's).
    (part,) = cat.save_models(
        db,
        pid,
        [cat.ModelInput(model_id="gpt-4o-mini", display_name="m", price_output_per_mtok=0.7)],
        only_new=True,
    )
    mini = cat.listed_prices("gpt-4o-mini")
    assert mini is not None
    assert prices_of(part) == (
        mini.price_input_per_mtok,
        0.7,
        mini.price_cache_read_per_mtok,
        mini.price_cache_write_per_mtok,
    )
    assert (part.price_source, part.price_list_as_of) == (cat.FROM_USER, None)


def test_a_list_price_keeps_the_date_of_its_list_and_an_unchanged_save_keeps_it(
    opened: Store,
) -> None:
    db = opened.database
    pid = provider(db)
    saved = one(db, pid, model_id="gpt-4o")
    assert saved.price_list_as_of == cat.price_list().as_of
    # As if filled from an older list whose price differed from today's.
    execute_sql(
        db,
        'UPDATE "models" SET "price_input_per_mtok" = 9.0, "price_list_as_of" = \'2024-01-01\'',
    )
    older = cat.all_models(db)[0]
    assert (older.price_source, older.price_list_as_of) == (cat.FROM_LIST, "2024-01-01")
    # The editor saved unchanged: still the older list's, with its date.
    again = one(db, pid, model_id="gpt-4o", **{f: getattr(older, f) for f in cat.PRICE_FIELDS})
    assert (again.price_source, again.price_list_as_of) == (cat.FROM_LIST, "2024-01-01")
    assert again.price_input_per_mtok == 9.0
    # A price changed is the user's, without a list date.
    mine = one(db, pid, model_id="gpt-4o", price_input_per_mtok=8.0)
    assert (mine.price_source, mine.price_list_as_of) == (cat.FROM_USER, None)


def test_an_image_model_marked_before_kinds_stays_marked_when_edited(opened: Store) -> None:
    db = opened.database
    pid = provider(db)
    painter = one(db, pid, model_id="qwen-image-local", kind="image", enabled=False)
    cat.set_image_model(db, painter.public_id)
    listed = one(db, pid, model_id="gpt-4o")
    # The state before kinds and list dates were stored: no kind (the name reads as chat),
    # a list price without its date.
    execute_sql(db, 'UPDATE "models" SET "kind" = NULL, "price_list_as_of" = NULL')
    assert {m.model_id: m.kind for m in cat.all_models(db)}["qwen-image-local"] == "chat"
    model_price_list_date_and_image_kind(db)
    model_price_list_date_and_image_kind(db)  # re-runnable
    apply_migrations(db)
    by_id = {m.model_id: m for m in cat.all_models(db)}
    assert by_id["qwen-image-local"].kind == "image"
    assert by_id["qwen-image-local"].generates_images and not by_id["qwen-image-local"].chat
    assert by_id["gpt-4o"].price_list_as_of == "2025-11-30"
    assert by_id["gpt-4o"].price_source == listed.price_source == cat.FROM_LIST
    # Edited without a kind (the editor sends one only when its box changed): still marked.
    one(db, pid, model_id="qwen-image-local", display_name="Qwen image", enabled=False)
    assert cat.get_image_model(db).public_id == painter.public_id
