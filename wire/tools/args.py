"""The model's argument object, read with a message the model can act on for every misfit."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from wire.json_input import decode_json

ARGUMENT_PREVIEW_CHARS = 200
"""How much of unusable argument text the model is shown back."""


def _preview(text: str) -> str:
    if len(text) <= ARGUMENT_PREVIEW_CHARS:
        return text
    return f"{text[:ARGUMENT_PREVIEW_CHARS]}… ({len(text)} characters in all)"


class ToolArgumentError(Exception):
    """The model's arguments do not fit the tool; the model reads the message and can retry."""


class ToolArgs:
    """Typed reads of the model's argument object, each failing with a message for the model."""

    def __init__(self, text: str) -> None:
        try:
            value = decode_json(text.encode() if text.strip() else b"{}")
        except msgspec.DecodeError as exc:
            raise ToolArgumentError(
                f"the arguments are not valid JSON ({exc}); you sent: {_preview(text)}"
            ) from exc
        if not isinstance(value, dict):
            raise ToolArgumentError(
                f"the arguments must be a JSON object; you sent: {_preview(text)}"
            )
        self.raw: dict[str, Any] = value
        self._prefix = ""  # the dotted path of a nested object, for the messages

    def _name(self, key: str) -> str:
        return self._prefix + key

    def nested(self, key: str) -> ToolArgs | None:
        """A nested object, read the same way; its messages name ``key.field``."""
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ToolArgumentError(f"'{self._name(key)}' must be an object")
        inner = ToolArgs.__new__(ToolArgs)
        inner.raw, inner._prefix = value, f"{self._name(key)}."
        return inner

    def string(self, key: str, *, required: bool = False) -> str | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ToolArgumentError(f"'{self._name(key)}' is required (a string)")
            return None
        if not isinstance(value, str):
            raise ToolArgumentError(f"'{self._name(key)}' must be a string")
        return value

    def required_string(self, key: str) -> str:
        value = self.string(key, required=True)
        assert value is not None
        return value

    def integer(
        self, key: str, *, minimum: int, maximum: int, required: bool = False
    ) -> int | None:
        """An integer; a float with no fractional part (``3.0``) counts as one."""
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ToolArgumentError(f"'{self._name(key)}' is required (a whole number)")
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolArgumentError(f"'{self._name(key)}' must be a whole number")
        if not minimum <= value <= maximum:
            raise ToolArgumentError(f"'{self._name(key)}' must be between {minimum} and {maximum}")
        return value

    def number(self, key: str, *, minimum: float) -> float | None:
        """A finite number at least ``minimum`` (an integer or a fraction)."""
        value = self.raw.get(key)
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ToolArgumentError(f"'{self._name(key)}' must be a number")
        if value < minimum:
            raise ToolArgumentError(f"'{self._name(key)}' must be at least {minimum:g}")
        return float(value)

    def boolean(self, key: str, *, required: bool = False) -> bool | None:
        value = self.raw.get(key)
        if value is None:
            if required:
                raise ToolArgumentError(f"'{self._name(key)}' is required (true or false)")
            return None
        if not isinstance(value, bool):
            raise ToolArgumentError(f"'{self._name(key)}' must be true or false")
        return value

    def string_list(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ToolArgumentError(f"'{self._name(key)}' must be an array of strings")
        return value
