"""The messages the edge tells a SessionActor: one frozen msgspec Struct per message.

Facts are named for what happened (``ClientMessageReceived``), commands for what to do
(``CancelRun``). The edge builds them from HTTP; actors never see aiohttp objects. The rest of
the SessionActor's protocol (what its own actors tell it) is ``actors.protocols.session``.
"""

from __future__ import annotations

import msgspec

from wire.bidi import ParentLink
from wire.identity import ANONYMOUS_USER
from wire.proto import agent_v1_pb2 as agent


class ClientMessageReceived(msgspec.Struct, frozen=True):
    """A BidiAppend message, released by the ordering inbox in ``append_seqno`` order."""

    seqno: int
    message: agent.AgentClientMessage
    parent: ParentLink | None = None  # the request's parent headers, once any append had them
    # Who sent this append, read from its ``authorization`` header (``wire.identity``; never
    # the token): the RunRequest's is the run's user.
    user_id: str = ANONYMOUS_USER


class CancelRun(msgspec.Struct, frozen=True):
    """Stop the run now and end its stream with ``canceled``."""

    reason: str


class RunRequestDeadlinePassed(msgspec.Struct, frozen=True):
    """The request has existed for its whole grace time; without a RunRequest it expires."""

    waited_seconds: float


class AppendGapDeadlinePassed(msgspec.Struct, frozen=True):
    """Appends after ``seqno`` have waited ``waited_seconds`` for it: the client lost it."""

    seqno: int
    waited_seconds: float


class RunSseStalled(msgspec.Struct, frozen=True):
    """The client took nothing of its RunSSE stream for ``waited_seconds``: it was cut."""

    waited_seconds: float


# What the edge may tell a run, and nothing else.
class ModelSilenceDue(msgspec.Struct, frozen=True):
    """The model call ``model_call_id`` may have been silent for the keep-alive interval
    (told by its timer; the run checks whether it still is)."""

    model_call_id: str


EdgeMessage = (
    ClientMessageReceived
    | CancelRun
    | RunRequestDeadlinePassed
    | AppendGapDeadlinePassed
    | RunSseStalled
)
