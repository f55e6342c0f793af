"""What a refused catalog operation raises: every message is safe to show a client (it never
holds a key or a header value), and each kind maps to one error code at the console API."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

# What the console shows for a secret that does not open under this server's key.
KEY_UNREADABLE = "key unreadable, set it again"


class CatalogError(Exception):
    """A refused catalog operation; ``message`` is safe to show (no key, no header value)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(CatalogError):
    """Input values break rules; ``problems`` names each field with its own message, so a form
    shows every problem at once. ``field`` is the first (``models[2].max_output_tokens``) and
    ``message`` reads ``field: message`` (problems joined by ``; ``)."""

    def __init__(self, field: str, message: str, *more: tuple[str, str]) -> None:
        self.problems: tuple[tuple[str, str], ...] = ((field, message), *more)
        super().__init__("; ".join(f"{name}: {text}" for name, text in self.problems))
        self.field = field


class Problems:
    """Collects the ``Invalid`` of several checks so one refusal names them all.

    ``check`` runs a check and answers its result, or ``None`` after noting its problems: call
    ``raise_any`` before using the results.
    """

    def __init__(self) -> None:
        self._found: list[tuple[str, str]] = []

    def check(self, check: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        try:
            return check(*args, **kwargs)
        except Invalid as exc:
            self._found.extend(exc.problems)
            return None

    def add(self, field: str, message: str) -> None:
        self._found.append((field, message))

    def __bool__(self) -> bool:
        return bool(self._found)

    def raise_any(self) -> None:
        """Raise one ``Invalid`` holding every problem noted so far, if any."""
        if self._found:
            (field, message), *more = self._found
            raise Invalid(field, message, *more)


class NotFound(CatalogError):
    """The provider or model does not exist."""


class KeyUnreadable(CatalogError):
    """A stored secret does not open under this server's key (a database copied without its
    key file, another ``CURSOR_SECRET_KEY``); the message names its owner, never the value."""

    def __init__(self, owner: str, field: str, reason: str) -> None:
        super().__init__(f"{owner}: {KEY_UNREADABLE} in the console ({field}: {reason})")
        self.owner = owner
        self.field = field


class Conflict(CatalogError):
    """The operation is valid in itself but the current data forbids it.

    ``code`` is the error code a client gets: ``failed_precondition`` when the data must change
    first, ``already_exists`` when the public id is taken by another model.
    """

    def __init__(self, message: str, code: str = "failed_precondition") -> None:
        super().__init__(message)
        self.code = code
