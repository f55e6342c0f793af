"""A provider key that cannot leak through ``repr``, ``str``, logs or msgspec encoding."""

from __future__ import annotations


class Secret:
    """Holds a secret string; only ``reveal()`` gives it back (at the one place that sends it)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret(<redacted>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)
