"""What a refused catalog operation raises: every message is safe to show a client (it never
holds a key or a header value), and each kind maps to one error code at the console API."""

from __future__ import annotations

# What the console shows for a secret that does not open under this server's key.
KEY_UNREADABLE = "key unreadable, set it again"


class CatalogError(Exception):
    """A refused catalog operation; ``message`` is safe to show (no key, no header value)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(CatalogError):
    """An input value breaks a rule; ``field`` names it (``models[2].max_output_tokens``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


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
