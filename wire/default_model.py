"""The default-model routes a CLI asks before its first run, answered with the user's models.

Sans-IO: model records and the Auto setting in, the response bytes out. The default is where
Auto runs (``wire.model_routing``): the Auto setting's model, or with none set the first
enabled user model (catalog order); no nudge ever switches away from it. With Auto set to
Cursor's backend the routes are relayed there (:func:`default_model`'s ``RELAY``), as every
other RPC of Cursor's is.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from wire.model_catalog import CatalogModel
from wire.model_routing import RELAY, AutoTarget, OurModel, Relay, auto_model
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver


class DefaultKind(StrEnum):
    FOR_CLI = "GetDefaultModelForCli"
    DEFAULT = "GetDefaultModel"
    NUDGE = "GetDefaultModelNudgeData"


DEFAULT_MODEL_ROUTES: Final[dict[str, DefaultKind]] = {
    "/agent.v1.AgentService/GetDefaultModelForCli": DefaultKind.FOR_CLI,
    "/aiserver.v1.AiService/GetDefaultModelForCli": DefaultKind.FOR_CLI,
    "/aiserver.v1.AiService/GetDefaultModel": DefaultKind.DEFAULT,
    "/aiserver.v1.AiService/GetDefaultModelNudgeData": DefaultKind.NUDGE,
}


class NoDefault(Exception):
    """There is no model to name; ``message`` says what the user can do."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def default_model(models: Sequence[CatalogModel], auto: AutoTarget) -> CatalogModel | Relay:
    """The model Auto runs on (``wire.model_routing.auto_model``) among the enabled ``models``
    (catalog order), or ``RELAY``; ``NoDefault`` when it names a model that is not enabled, or
    none is enabled."""
    target = auto_model(auto, [OurModel(m.public_id, True) for m in models])
    if isinstance(target, Relay):
        if auto.kind == "cursor":
            return RELAY
        raise NoDefault("no model is enabled: add and enable one in the console (Models)")
    chosen = next((m for m in models if m.public_id == target), None)
    if chosen is None:
        raise NoDefault(
            f"Auto runs on model {target}, which is not enabled: enable it in the console "
            "(Models) or change where Auto goes (Settings > Routing)"
        )
    return chosen


def default_model_answer(
    kind: DefaultKind, models: Sequence[CatalogModel], auto: AutoTarget | None = None
) -> bytes | Relay:
    """The encoded response, or ``RELAY`` when Auto goes to Cursor's backend; ``NoDefault``
    when there is no model to name."""
    auto = auto or AutoTarget()
    if auto.kind == "cursor":
        return RELAY
    if kind is DefaultKind.NUDGE:
        nudge = aiserver.GetDefaultModelNudgeDataResponse(
            nudge_date="0",
            should_default_switch_on_new_chat=False,
            models_with_no_default_switch=[m.public_id for m in models],
        )
        return nudge.SerializeToString()
    first = default_model(models, auto)
    if isinstance(first, Relay):
        return RELAY
    if kind is DefaultKind.DEFAULT:
        return aiserver.GetDefaultModelResponse(
            model=first.public_id, thinking_model=first.public_id, max_mode=False
        ).SerializeToString()
    details = agent.ModelDetails(
        model_id=first.public_id,
        display_model_id=first.public_id,
        display_name=first.display_name,
        display_name_short=first.display_name,
    )
    if first.reasoning_enabled:
        details.thinking_details.SetInParent()
    return agent.GetDefaultModelForCliResponse(model=details).SerializeToString()
