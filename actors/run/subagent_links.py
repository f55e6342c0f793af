"""Which Task call of which parent run started each subagent run this server runs, so the
user's ``cancel_subagent_action`` (which names the subagent) reaches the parent's call."""

from __future__ import annotations

import threading

from actors.protocols.call_actions import CallAction, UserActedOnCall
from wire.proto import agent_v1_pb2 as agent


class SubagentLinks:
    """(parent request id, child conversation id) -> the parent's Task call id, for every
    subagent run this server is running; safe to use from every actor thread. A child run's
    conversation id is its subagent's id, which ``cancel_subagent_action`` names."""

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


def read_call_action(
    action: agent.ConversationAction, links: SubagentLinks, request_id: str
) -> UserActedOnCall:
    """One of ``CALL_ACTIONS``, received on the stream of run ``request_id``."""
    which = CallAction(action.WhichOneof("action"))
    if which is CallAction.CANCEL_SUBAGENT:
        ident = action.cancel_subagent_action.subagent_id
        linked = links.tool_call(request_id, ident)
        return UserActedOnCall(which, ident, (ident,) if linked is None else (ident, linked))
    ident = getattr(action, which.value).tool_call_id
    return UserActedOnCall(which, ident, (ident,))
