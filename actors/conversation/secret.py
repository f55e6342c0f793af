"""A provider key that cannot leak through ``repr``, ``str``, logs or msgspec encoding, and the
rule that says which header names carry a credential."""

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


# Custom header names whose values are always sealed (never marked public) and always dropped
# from recorded requests: these exact names (case-insensitive) and any name containing one of
# the fragments (``x-goog-api-key``, ``x-auth-token``, ``x-secret``). Every other custom header
# is sealed too unless the user marks it public.
SECRET_HEADER_NAMES = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
SECRET_HEADER_FRAGMENTS = ("token", "secret", "key", "password", "auth")


def is_secret_header(name: str) -> bool:
    """Whether a header's name says it carries a credential: such a value is always sealed
    (it cannot be marked public) and the header is dropped from recorded requests."""
    lowered = name.lower()
    return lowered in SECRET_HEADER_NAMES or any(f in lowered for f in SECRET_HEADER_FRAGMENTS)
