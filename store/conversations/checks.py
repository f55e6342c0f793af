"""Argument checks shared by the conversation store's parts: msgspec Structs do not check
types on construction, and a bad id must be refused before any row is written."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from store.conversations.errors import InvalidInput
from store.conversations.records import ORIGINS, ROLES, StoredMessage


def check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be a non-empty string, got {value!r}")
    return value


def check_message(message: object) -> StoredMessage:
    """Validate one message (msgspec Structs do not check types on construction)."""
    if not isinstance(message, StoredMessage):
        raise InvalidInput(f"expected a StoredMessage, got {type(message).__name__}")
    check_id(message.message_id, "message_id")
    if message.role not in ROLES:
        raise InvalidInput(f"message {message.message_id}: unknown role {message.role!r}")
    if message.origin not in ORIGINS:
        raise InvalidInput(f"message {message.message_id}: unknown origin {message.origin!r}")
    if not isinstance(message.payload, bytes):
        raise InvalidInput(f"message {message.message_id}: payload must be bytes")
    if message.runtime_event_id is not None:
        check_id(message.runtime_event_id, f"message {message.message_id}: runtime_event_id")
    return message


def check_messages(messages: Iterable[object]) -> list[StoredMessage]:
    """Validate messages and refuse an id or runtime event id repeated among them."""
    checked = [check_message(m) for m in messages]
    ids: set[str] = set()
    events: set[str] = set()
    for message in checked:
        if message.message_id in ids:
            raise InvalidInput(f"repeated within one call: message {message.message_id}")
        ids.add(message.message_id)
        event = message.runtime_event_id
        if event is not None:
            if event in events:
                raise InvalidInput(f"repeated within one call: runtime event {event}")
            events.add(event)
    return checked


def check_call_ids(call_ids: object) -> set[str]:
    """A non-empty set of distinct call ids (a repeat would make the set ambiguous)."""
    if isinstance(call_ids, str | bytes) or not isinstance(call_ids, Sequence):
        raise InvalidInput(f"call_ids must be a sequence of call ids, got {call_ids!r}")
    checked = [check_id(call_id, "call_id") for call_id in call_ids]
    if not checked:
        raise InvalidInput("call_ids is empty: a tool round has at least one call")
    if len(set(checked)) != len(checked):
        raise InvalidInput(f"call_ids repeats a call id: {checked!r}")
    return set(checked)


def check_revision_id(value: object, what: str = "revision_id") -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{what} must be an integer, got {value!r}")
    return value
