"""What a refused catalog operation raises: every message is safe to show a client (it never
holds a key or a header value), and each kind maps to one error code at the console API."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

# What the console shows for a secret that does not open under this server's key.
KEY_UNREADABLE = "key unreadable, set it again"
# The problems one refusal names; beyond them it says how many more there are. A 1 MiB body of
# broken models would otherwise name each (twice: in the message and in the fields).
MAX_PROBLEMS = 50


class CatalogError(Exception):
    """A refused catalog operation; ``message`` is safe to show (no key, no header value)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(CatalogError):
    """Input values break rules; ``problems`` names each field with its own message, so a form
    shows every problem at once. ``field`` is the first (``models[2].max_output_tokens``) and
    ``message`` reads ``field: message`` (problems joined by ``; ``).

    Only the first ``MAX_PROBLEMS`` are kept; ``more`` counts the rest (``hidden`` of them
    were left out before this one was raised), and the message ends ``and 7 more problems``."""

    def __init__(self, field: str, message: str, *more: tuple[str, str], hidden: int = 0) -> None:
        found = ((field, message), *more)
        self.problems: tuple[tuple[str, str], ...] = found[:MAX_PROBLEMS]
        self.more = hidden + len(found) - len(self.problems)
        text = "; ".join(f"{name}: {words}" for name, words in self.problems)
        if self.more:
            text += f"; {more_problems(self.more)}"
        super().__init__(text)
        self.field = field


def more_problems(count: int) -> str:
    """The words for the problems a refusal left out."""
    return f"and {count} more problem{'' if count == 1 else 's'}"


class Problems:
    """Collects the ``Invalid`` of several checks so one refusal names them all.

    ``check`` runs a check and answers its result, or ``None`` after noting its problems: call
    ``raise_any`` before using the results.
    """

    def __init__(self) -> None:
        self._found: list[tuple[str, str]] = []
        self._hidden = 0  # problems beyond ``MAX_PROBLEMS``: only counted

    def check(self, check: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        try:
            return check(*args, **kwargs)
        except Invalid as exc:
            for field, message in exc.problems:
                self.add(field, message)
            self._hidden += exc.more
            return None

    def add(self, field: str, message: str) -> None:
        if len(self._found) < MAX_PROBLEMS:
            self._found.append((field, message))
        else:
            self._hidden += 1

    def __bool__(self) -> bool:
        return bool(self._found)

    def raise_any(self) -> None:
        """Raise one ``Invalid`` holding every problem noted so far (the first
        ``MAX_PROBLEMS`` of them, and how many more), if any."""
        if self._found:
            (field, message), *more = self._found
            raise Invalid(field, message, *more, hidden=self._hidden)


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
