"""The SessionActor's protocol: every message it takes, as one closed union.

The edge tells it the ``EdgeMessage``s; the run's own actors tell it facts (a provider's
events and end, a checkpoint published or failed, a blob fetched or its sync failed, a tool
completed, the tool runtime failed or stopped). ``SessionActor.on_receive`` matches every member
and raises on anything else; ``tests/actors/test_actor_protocols.py`` keeps the two equal.
"""

from __future__ import annotations

from actors.protocols.blob_sync import BlobFetched, BlobSyncFailed
from actors.protocols.checkpoint import CheckpointFailed, CheckpointPublished
from actors.protocols.edge import (
    AppendGapDeadlinePassed,
    CancelRun,
    ClientMessageReceived,
    EdgeMessage,
    ModelSilenceDue,
    RunRequestDeadlinePassed,
    RunSseStalled,
)
from actors.protocols.provider import ProviderCallEnded, ProviderEventsReceived
from actors.protocols.tool_runtime import ToolCompleted, ToolRuntimeFailed, ToolRuntimeStopped

__all__ = [
    "AppendGapDeadlinePassed",
    "BlobFetched",
    "BlobSyncFailed",
    "CancelRun",
    "CheckpointFailed",
    "CheckpointPublished",
    "ClientMessageReceived",
    "ModelSilenceDue",
    "ProviderCallEnded",
    "ProviderEventsReceived",
    "RunRequestDeadlinePassed",
    "RunSseStalled",
    "SessionMessage",
    "ToolCompleted",
    "ToolRuntimeFailed",
    "ToolRuntimeStopped",
]

# Facts the run's own actors report to it.
RunFact = (
    ProviderEventsReceived
    | ModelSilenceDue
    | ProviderCallEnded
    | CheckpointPublished
    | CheckpointFailed
    | BlobSyncFailed
    | BlobFetched
    | ToolCompleted
    | ToolRuntimeFailed
    | ToolRuntimeStopped
)

SessionMessage = EdgeMessage | RunFact
