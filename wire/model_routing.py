"""Which model a run's asked-for model id runs on: one of ours, or Cursor's backend; pure.

Cursor names a model by an id: one of our models' public ids (8 hex,
``store.catalog.urls.public_model_id``), Auto (``default``, a CLI's ``auto``, or no id), or one
of Cursor's own ids (``claude-4.5-sonnet``, ``composer-1``, …). The user's routing settings
(stored by ``store.catalog.routing``, read here as :class:`Routing`) say where Auto goes and
which of Cursor's ids run on which of our models. The order, first match wins:

1. the id is one of our public ids: that model (enabled or not: a disabled one is refused by
   the run's model resolution, never silently relayed);
2. Auto: the Auto setting's model, Cursor's backend, or (unset) the first enabled model in
   catalog order; with no enabled model, Cursor's backend (a request with no id at all then
   stays here and is refused as naming no model, :data:`NO_MODEL`, as it always was);
3. a routing entry: an exact id first, then the patterns (``*`` stands for any characters) in
   table order;
4. anything else: Cursor's backend (:data:`RELAY`), as it came.

Auto never reads the table (it has a setting of its own), so a ``*`` entry takes every id of
Cursor's but not Auto. A CLI id's ``/reasoning/context/fast`` suffixes are split off before
matching (they apply to whichever model the id runs on). The edge and the run's resolution
both decide with :func:`route_model`, so a run is relayed exactly when its resolution would
find no model of ours.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from enum import Enum
from typing import Final, Literal

import msgspec

from wire.proto import agent_v1_pb2 as agent

# What Cursor sends for Auto: the editor's ``default``, a CLI's ``auto``, or no id at all.
AUTO_IDS: Final = frozenset({"", "default", "auto"})
PUBLIC_ID: Final = re.compile(r"[0-9a-f]{8}")

AutoKind = Literal["first-enabled", "model", "cursor"]


class Relay(Enum):
    """Where a run goes when no model of ours takes it: ``RELAY`` to Cursor's backend, as it
    came; ``NO_MODEL`` stays here and is refused (a request naming no model at all while no
    model is enabled: Cursor's backend could do no better, and today's answer says why)."""

    RELAY = "relay"
    NO_MODEL = "no-model"


RELAY: Final = Relay.RELAY
NO_MODEL: Final = Relay.NO_MODEL


class AutoTarget(msgspec.Struct, frozen=True):
    """Where Auto goes: the first enabled model (``first-enabled``, the default), one model
    (``model`` with its ``public_id``), or Cursor's backend (``cursor``)."""

    kind: AutoKind = "first-enabled"
    public_id: str | None = None


class RouteEntry(msgspec.Struct, frozen=True):
    """One row of the routing table: a Cursor model id (or a pattern with ``*``) -> one of our
    models' public ids."""

    pattern: str
    public_id: str

    @property
    def is_pattern(self) -> bool:
        return "*" in self.pattern


class Routing(msgspec.Struct, frozen=True):
    """The user's routing settings as the decision reads them."""

    auto: AutoTarget = AutoTarget()
    routes: tuple[RouteEntry, ...] = ()


class OurModel(msgspec.Struct, frozen=True):
    """A model of ours as the decision needs it: its public id and whether it is enabled."""

    public_id: str
    enabled: bool


def requested_model_id(request: agent.AgentRunRequest) -> str:
    """The id Cursor asked for: ``requested_model.model_id``, else ``model_details.model_id``
    (empty: Auto)."""
    if request.HasField("requested_model") and request.requested_model.model_id:
        return request.requested_model.model_id
    return request.model_details.model_id


def model_head(model_id: str) -> str:
    """The id without a CLI's ``/reasoning/context/fast`` suffixes."""
    return model_id.split("/", 1)[0]


def is_auto(model_id: str) -> bool:
    """Whether the id (suffixes split off) asks for Auto."""
    return model_head(model_id).strip().lower() in AUTO_IDS


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def mapped_model(model_id: str, routes: Sequence[RouteEntry]) -> str | None:
    """The public id the routing table maps ``model_id`` (suffixes split off) to, or None:
    an exact entry first, then the patterns in table order."""
    head = model_head(model_id)
    for entry in routes:
        if not entry.is_pattern and entry.pattern == head:
            return entry.public_id
    for entry in routes:
        if entry.is_pattern and _pattern(entry.pattern).fullmatch(head):
            return entry.public_id
    return None


def auto_model(auto: AutoTarget, models: Sequence[OurModel]) -> str | Relay:
    """Where Auto runs: the setting's model, Cursor's backend, or (unset) the first enabled
    model; with no enabled model, Cursor's backend."""
    if auto.kind == "cursor":
        return RELAY
    if auto.kind == "model" and auto.public_id:
        return auto.public_id
    return next((model.public_id for model in models if model.enabled), RELAY)


def route_model(asked: str, routing: Routing, models: Sequence[OurModel]) -> str | Relay:
    """The public id of the model a run asking for ``asked`` runs on, :data:`RELAY`, or
    :data:`NO_MODEL`.

    ``models`` are all of ours, in catalog order. A public id it returns may name a disabled
    model (the caller refuses it, saying so); one the settings name but the store no longer
    has cannot happen: deleting a model removes the settings that name it.
    """
    head = model_head(asked)
    if PUBLIC_ID.fullmatch(head) and any(model.public_id == head for model in models):
        return head
    if is_auto(asked):
        target = auto_model(routing.auto, models)
        if target is RELAY and not head and routing.auto.kind != "cursor":
            return NO_MODEL
        return target
    mapped = mapped_model(head, routing.routes)
    return RELAY if mapped is None else mapped


__all__ = [
    "AUTO_IDS",
    "NO_MODEL",
    "PUBLIC_ID",
    "RELAY",
    "AutoKind",
    "AutoTarget",
    "OurModel",
    "Relay",
    "RouteEntry",
    "Routing",
    "auto_model",
    "is_auto",
    "mapped_model",
    "model_head",
    "requested_model_id",
    "route_model",
]
