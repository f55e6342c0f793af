"""Builders for the ``AgentServerMessage`` frames the transport itself emits."""

from __future__ import annotations

from wire.connect import data_frame
from wire.proto import agent_v1_pb2 as agent


def heartbeat_frame() -> bytes:
    """A data frame holding ``InteractionUpdate.heartbeat``: keeps the client from stalling."""
    message = agent.AgentServerMessage(
        interaction_update=agent.InteractionUpdate(heartbeat=agent.HeartbeatUpdate())
    )
    return data_frame(message)
