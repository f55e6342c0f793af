"""The image model (GenerateImage): which saved model generates images, set only to an image
model (``model_kinds``) whose provider has OpenAI's ``POST /images/generations``, read when a
run starts to decide the tools it offers, and its connection when an image is generated."""

from __future__ import annotations

import peewee

from actors.conversation.request import IMAGE_PROVIDER_TYPES
from store.base.typed_peewee import RuntimeModel
from store.catalog.connections import ProviderConnection, connection
from store.catalog.errors import Invalid
from store.catalog.image_mark import IMAGE_MODEL_KEY, ImageModelSetting
from store.catalog.model_kinds import generates_images, kind_by_name
from store.catalog.models import has_model, models_query
from store.catalog.setting_rows import locked_setting, read_setting, write_setting
from store.catalog.tables import tables_of


def get_image_model(db: peewee.Database) -> ImageModelSetting:
    """The marked image model (a model deleted since is no longer one)."""
    found = _image_model_row(db)
    return ImageModelSetting(None if found is None else found[0].public_id)


def _image_model_row(db: peewee.Database) -> tuple[RuntimeModel, RuntimeModel] | None:
    """The marked model's row and its provider's row, or None."""
    public_id = read_setting(db, IMAGE_MODEL_KEY, ImageModelSetting).public_id
    if public_id is None:
        return None
    query = models_query(db, whole_provider=True)
    model = query.where(tables_of(db).model.public_id == public_id).first()
    return None if model is None else (model, model.provider)


def has_image_model(db: peewee.Database) -> bool:
    """Whether GenerateImage can run: read when a run starts, to decide the tools it offers
    (so its SQL is written, as the route's)."""
    public_id = read_setting(db, IMAGE_MODEL_KEY, ImageModelSetting).public_id
    return public_id is not None and has_model(db, public_id)


def image_model_connection(db: peewee.Database) -> tuple[str, ProviderConnection] | None:
    """The image model's id at its provider and the provider's real connection values."""
    found = _image_model_row(db)
    return None if found is None else (found[0].model_id, connection(db, found[1]))


def set_image_model(db: peewee.Database, public_id: str | None) -> ImageModelSetting:
    """Mark ``public_id`` as the image model (None: no image model). ``Invalid`` names a
    model that does not exist, whose provider has no OpenAI images API, or that does not
    generate images (its kind, ``store.catalog.model_kinds``)."""
    with db.atomic():
        # Locked: a model delete in flight (which unmarks it) commits first or waits.
        locked_setting(db, IMAGE_MODEL_KEY, ImageModelSetting)
        if public_id is not None:
            model = models_query(db).where(tables_of(db).model.public_id == public_id).first()
            if model is None:
                raise Invalid("public_id", f"there is no model {public_id}")
            if model.provider.type not in IMAGE_PROVIDER_TYPES:
                raise Invalid(
                    "public_id",
                    f"model {public_id} is on an {model.provider.type} provider; the image "
                    "model must be on an OpenAI-compatible one "
                    f"({', '.join(IMAGE_PROVIDER_TYPES)})",
                )
            kind = model.kind or kind_by_name(model.model_id)
            if not generates_images(kind):
                raise Invalid(
                    "public_id",
                    f"model {model.model_id!r} ({public_id}) does not generate images (it is "
                    f"a {kind} model); mark an image model such as gpt-image-1, dall-e-3 or "
                    "imagen-4.0-generate-001",
                )
        write_setting(db, IMAGE_MODEL_KEY, ImageModelSetting(public_id))
    return ImageModelSetting(public_id)
