"""The image model's mark: a setting naming one model (no column, so a second image model cannot
exist), and its removal when that model is deleted. Apart from ``image_model.py``, which reads
and sets it, because deleting a model or a provider must unmark it in its own transaction."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import peewee

from store.catalog.setting_rows import locked_saved_setting, write_setting

IMAGE_MODEL_KEY = "image_model"


class ImageModelSetting(msgspec.Struct, frozen=True):
    """Which saved model generates images (GenerateImage); None: none, so the tool is not
    offered. One setting names one model, so there is never more than one image model."""

    public_id: str | None = None


def forget_image_model(db: peewee.Database, public_ids: Iterable[str]) -> None:
    """Unmark the image model when it is among the models being deleted (in their
    transaction), so a model added again later is not an image model by surprise."""
    gone = set(public_ids)
    if not gone:
        return
    current = locked_saved_setting(db, IMAGE_MODEL_KEY, ImageModelSetting)
    if current is not None and current.public_id in gone:
        write_setting(db, IMAGE_MODEL_KEY, ImageModelSetting())
