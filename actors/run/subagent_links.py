"""Which Task call of which parent run started each subagent run, so the user's
``cancel_subagent_action`` (which names the subagent) reaches the parent's call.

A child run may run on another server instance than its parent (each is a request of its own,
and a balancer may send them apart), so with a database the links are rows every instance
reads (``SharedSubagentLinks`` over ``store.subagent_links``); ``SubagentLinks`` keeps them in
this process only (a server without a database, and the actor tests). A child run links once at
its start and unlinks at its end; the parent reads a link only when the user cancels a subagent.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

import peewee

from actors.protocols.call_actions import CallAction, UserActedOnCall
from store.database import log_store_failure
from store.subagent_links import SubagentLinkRows
from wire.proto import agent_v1_pb2 as agent

logger = logging.getLogger("cursor_server.subagent_links")


class SubagentLinkTable(Protocol):
    """(parent request id, child conversation id) -> the parent's Task call id. A child run's
    conversation id is its subagent's id, which ``cancel_subagent_action`` names. Safe to use
    from every actor thread."""

    def link(self, parent_request_id: str, conversation_id: str, tool_call_id: str) -> None: ...

    def unlink(self, parent_request_id: str, conversation_id: str) -> None: ...

    def tool_call(self, parent_request_id: str, subagent_id: str) -> str | None: ...


class SubagentLinks:
    """The links of the subagent runs this process runs, in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._links: dict[tuple[str, str], str] = {}

    def link(self, parent_request_id: str, conversation_id: str, tool_call_id: str) -> None:
        with self._lock:
            self._links[(parent_request_id, conversation_id)] = tool_call_id

    def unlink(self, parent_request_id: str, conversation_id: str) -> None:
        with self._lock:
            self._links.pop((parent_request_id, conversation_id), None)

    def tool_call(self, parent_request_id: str, subagent_id: str) -> str | None:
        with self._lock:
            return self._links.get((parent_request_id, subagent_id))


class SharedSubagentLinks:
    """The links in the database every instance shares. A store failure is logged and never
    reaches the run: a link not written or not read leaves a cancel naming only the subagent
    (as for a subagent the parent is not waiting on), an unlink not made leaves a row that a
    later link prunes."""

    def __init__(self, rows: SubagentLinkRows) -> None:
        self._rows = rows

    def link(self, parent_request_id: str, conversation_id: str, tool_call_id: str) -> None:
        try:
            self._rows.link(parent_request_id, conversation_id, tool_call_id)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "subagent link of %s not written", parent_request_id)

    def unlink(self, parent_request_id: str, conversation_id: str) -> None:
        try:
            self._rows.unlink(parent_request_id, conversation_id)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "subagent link of %s not removed", parent_request_id)

    def tool_call(self, parent_request_id: str, subagent_id: str) -> str | None:
        try:
            return self._rows.tool_call(parent_request_id, subagent_id)
        except peewee.DatabaseError as exc:
            log_store_failure(logger, exc, "subagent link of %s not read", parent_request_id)
            return None


def read_call_action(
    action: agent.ConversationAction, links: SubagentLinkTable, request_id: str
) -> UserActedOnCall:
    """One of ``CALL_ACTIONS``, received on the stream of run ``request_id``."""
    which = CallAction(action.WhichOneof("action"))
    if which is CallAction.CANCEL_SUBAGENT:
        ident = action.cancel_subagent_action.subagent_id
        linked = links.tool_call(request_id, ident)
        return UserActedOnCall(which, ident, (ident,) if linked is None else (ident, linked))
    ident = getattr(action, which.value).tool_call_id
    return UserActedOnCall(which, ident, (ident,))
