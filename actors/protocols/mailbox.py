"""An actor as the code that tells it sees it: the messages it accepts, and its stop.

``pykka.ActorRef`` is generic in the actor's class, not in what its mailbox takes, so an
``ActorRef`` annotation says nothing about which messages may be told. These protocols say it:
``Mailbox[ToolRuntimeMessage]`` accepts exactly that union, and a ``pykka.ActorRef`` (or any
object with a thread-safe ``tell``) is one.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

M = TypeVar("M", contravariant=True)


class Mailbox(Protocol[M]):
    """What may be told: one of the messages ``M`` names."""

    def tell(self, message: M) -> None: ...


class ActorHandle(Mailbox[M], Protocol[M]):
    """A started actor as its owner holds it: told its messages, and stopped."""

    def stop(self, *, block: bool = True, timeout: float | None = None) -> Any: ...
