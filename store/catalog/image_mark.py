"""The image model's mark: a setting naming one model (no column, so a second image model cannot
exist), and its removal when that model is deleted. Apart from ``image_model.py``, which reads
and sets it, because deleting a model or a provider must unmark it in its own transaction."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import peewee

from store.catalog.tables import tables_of

IMAGE_MODEL_KEY = "image_model"


class ImageModelSetting(msgspec.Struct, frozen=True):
    """Which saved model generates images (GenerateImage); None: none, so the tool is not
    offered. One setting names one model, so there is never more than one image model."""

    public_id: str | None = None


def forget_image_model(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Unmark the image model when it is among the models being deleted (in their
    transaction), so a model added again later is not an image model by surprise."""
    row = tables_of(db).setting.get_or_none(key=IMAGE_MODEL_KEY)
    if row is None:
        return
    if msgspec.json.decode(row.value_json, type=ImageModelSetting).public_id in set(public_ids):
        tables_of(db).setting.delete().where(tables_of(db).setting.key == IMAGE_MODEL_KEY).execute()
