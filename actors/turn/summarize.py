"""The user's "summarize" command (``ConversationAction.summarize_action``), as decisions
without IO.

A summarize run condenses the conversation on demand with the compaction assets and phase
(``actors.turn.compaction``): the visible history up to its newest answer or tool round (the
shortest tail, whatever the window: the user asked for the context to shrink now) is
summarised, the summary becomes a new message after everything (append-only), and the run
ends; no model call follows it. The next user turn is sent on summary + that tail.

Nothing to summarise (no message yet, nothing added since the last summary, or a history
without a second exchange to keep) is not an error: the editor sees ``summary_started``,
``summary_completed`` and ``turn_ended``, no provider is called, nothing is stored or
published, and the run ends with EndStream ``{}``.
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.conversation.model import CanonicalMessage, is_summary
from actors.conversation.projection import visible
from actors.turn.compaction import Compaction, Compactor, tail_start
from actors.turn.model_call import turn_ended
from wire.interaction_updates import summary_completed_frame, summary_started_frame
from wire.proto import agent_v1_pb2 as agent

SUMMARIZE_ACTION = "summarize_action"


def runs_summarize(request: agent.AgentRunRequest) -> bool:
    """Whether the request asks for a summary (its run is ``SummarizeRun``'s)."""
    kind: str | None = request.action.WhichOneof("action")
    return kind == SUMMARIZE_ACTION


def nothing_to_summarize(history: Sequence[CanonicalMessage]) -> str | None:
    """Why ``history`` has nothing to summarise (None: it has something)."""
    if not history:
        return "the conversation has no messages yet"
    if is_summary(history[-1]):
        return "nothing was added since the last summary"
    if tail_start(visible(history), None) is None:
        return "the conversation has nothing before its newest message to summarise"
    return None


def summary_call(
    compactor: Compactor, call_index: int, history: Sequence[CanonicalMessage]
) -> Compaction | None:
    """The summary call of a summarize run (None: nothing to summarise after all). It is not
    held: no checkpoint of this run comes before it."""
    compaction = compactor.start(call_index, history, shortest_tail=True)
    if compaction is not None:
        compaction.release()
    return compaction


def nothing_frames() -> tuple[bytes, ...]:
    """What the editor sees of a summarize run with nothing to summarise."""
    return (summary_started_frame(), summary_completed_frame(), turn_ended(None))
