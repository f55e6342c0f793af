"""The default-model routes a CLI asks before its first run, answered with the user's models.

Sans-IO: model records in, the response bytes out. Cursor's own answer would name a hosted
model this server cannot run, so these are answered here, never forwarded: the first enabled
user model (catalog order) is the default, and no nudge ever switches away from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Final

from wire.model_catalog import CatalogModel
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


def default_model_answer(kind: DefaultKind, models: Sequence[CatalogModel]) -> bytes | None:
    """The encoded response; None when the user has no enabled model (nothing to name)."""
    if kind is DefaultKind.NUDGE:
        nudge = aiserver.GetDefaultModelNudgeDataResponse(
            nudge_date="0",
            should_default_switch_on_new_chat=False,
            models_with_no_default_switch=[m.public_id for m in models],
        )
        return nudge.SerializeToString()
    if not models:
        return None
    first = models[0]
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
