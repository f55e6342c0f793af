"""One tool round of a turn: the model's message that made the calls, and the pairs committed
for it in completion order.

Each completed call becomes an ``assistant(call) -> tool(result)`` pair; the first pair of the
round carries the message's text, thinking and replay state, later pairs only their call, so
the committed history reads as the model wrote it. The driver commits each pair (``pair_for``
gives it) and then reports the commit (``committed``), which gives the card's completion frame.
"""

from __future__ import annotations

import contextlib
import itertools

import msgspec

from actors.codecs.checkpoint_state import todo_list
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    Role,
    ToolResultContent,
    starts_turn,
)
from actors.protocols.checkpoint import PublishStaged, Step, ToolCallStep
from actors.protocols.tool_runtime import StartToolRound, ToolCompleted
from store.conversations import ToolCallSpec, ToolCallStatus, ToolRoundRecord
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import Todo
from wire.tools.frames import tool_call_completed_frame
from wire.tools.registry import find_tool
from wire.tools.todo_write import TODO_WRITE, apply_todo_update, parse_todo_update
from wire.tools.update_current_step import UPDATE_CURRENT_STEP


class NewToolRound(msgspec.Struct, frozen=True):
    """The store write that opens a round on the run's head, every call pending."""

    round_id: str
    assistant_json: bytes
    calls: tuple[ToolCallSpec, ...]
    created_at_ms: int


class ToolPair(msgspec.Struct, frozen=True):
    """A completed call's two messages, to be committed as one revision."""

    call: CanonicalToolCall
    assistant: CanonicalMessage
    result: CanonicalMessage


class ToolRound:
    """A round's assistant message (every call in it), its pending calls and its tool steps.

    ``pending`` are the calls the editor still has to run (all of them for a new round, those
    without a committed result for an adopted one); ``steps`` are the completed calls' cards,
    for the settled checkpoint."""

    def __init__(
        self,
        round_id: str,
        assistant: AssistantContent,
        pending: tuple[CanonicalToolCall, ...],
        started_at_ms: int,
        *,
        first_pair: bool = True,
        cut: tuple[str, ...] = (),
    ) -> None:
        self.round_id = round_id
        self.assistant = assistant
        self.pending = pending
        self.started_at_ms = started_at_ms
        self.steps: list[Step] = []
        self._first_pair = first_pair
        self._cut = cut
        self._stable: int | None = None  # how many messages of the history precede the round

    @classmethod
    def opened(
        cls,
        round_id: str,
        calls: tuple[CanonicalToolCall, ...],
        message: AssistantContent,
        started_at_ms: int,
        cut: tuple[str, ...] = (),
    ) -> ToolRound:
        """A new round; ``message`` gives the text, thinking and replay state of the model's
        message that made the calls, ``cut`` the calls the output limit cut."""
        assistant = msgspec.structs.replace(message, tool_round_id=round_id, tool_calls=calls)
        return cls(round_id, assistant, calls, started_at_ms, cut=cut)

    @classmethod
    def adopted(
        cls, record: ToolRoundRecord, started_at_ms: int, cards: dict[str, bytes] | None = None
    ) -> ToolRound:
        """A round this server stored: only the calls without a result run again. The
        ``cards`` (by call id) of the calls completed before, by a run whose stream dropped or
        whose process died, are the round's first steps, in completion order, so its settled
        checkpoint shows every call."""
        assistant = msgspec.json.decode(record.assistant_json, type=AssistantContent)
        done = sorted(
            (c for c in record.calls if c.status is ToolCallStatus.COMPLETED),
            key=lambda c: c.completion_seq or 0,
        )
        pending = tuple(
            CanonicalToolCall(c.index, c.call_id, c.name, c.arguments, c.model_call_id)
            for c in record.calls
            if c.status is ToolCallStatus.PENDING
        )
        round_ = cls(record.round_id, assistant, pending, started_at_ms, first_pair=not done)
        held = cards or {}
        round_.steps.extend(ToolCallStep(held[c.call_id]) for c in done if c.call_id in held)
        return round_

    def new_round(self) -> NewToolRound:
        """The store write for a round opened here."""
        return NewToolRound(
            self.round_id,
            msgspec.json.encode(self.assistant),
            tuple(
                ToolCallSpec(c.index, c.call_id, c.model_call_id, c.name, c.arguments)
                for c in self.pending
            ),
            self.started_at_ms,
        )

    def start(self, history: tuple[CanonicalMessage, ...]) -> StartToolRound:
        """The runtime's order to run the pending calls after ``history`` (which holds the
        round's committed pairs). Each TodoWrite call merges onto the list the history derives
        as changed by the round's earlier TodoWrite calls: local calls complete in index order,
        so its result lands where the checkpoint's fold applies it."""
        todos = todo_list(history) or ()
        before: dict[str, tuple[Todo, ...]] = {}
        for call in sorted(self.pending, key=lambda c: c.index):
            if find_tool(call.name) is not TODO_WRITE:
                continue
            before[call.call_id] = todos
            # A call whose arguments do not fit gets an error result: it changes nothing.
            with contextlib.suppress(ToolArgumentError):
                todos = apply_todo_update(todos, parse_todo_update(ToolArgs(call.arguments)))
        indexes = message_indexes(history, self.round_id, self.assistant)
        return StartToolRound(self.round_id, self.pending, before, indexes, self._cut)

    def pair_for(self, completed: ToolCompleted) -> ToolPair:
        """The pair to commit for a completed call of this round."""
        images = tuple(ImagePart(image.mime_type, image.data) for image in completed.images)
        result = ToolResultContent(
            completed.call_id, completed.name, completed.content, completed.is_error, images
        )
        return self._pair(result)

    def prove(self, results: tuple[ToolResultContent, ...]) -> tuple[ToolPair, ...]:
        """The pairs of the calls the client's state proves completed (their results in its
        pending entries), in that order: they join the history as this round's first pairs,
        and only the other calls still run."""
        pairs = tuple(self._pair(result) for result in results)
        self._first_pair = self._first_pair and not pairs
        done = {result.call_id for result in results}
        self.pending = tuple(call for call in self.pending if call.call_id not in done)
        return pairs

    def _pair(self, result: ToolResultContent) -> ToolPair:
        call = next(c for c in self.assistant.tool_calls if c.call_id == result.call_id)
        first = self._first_pair
        message = self.assistant
        assistant = CanonicalMessage(
            message_id=f"{self.round_id}:{call.call_id}:assistant",
            role=Role.ASSISTANT,
            origin=Origin.ASSISTANT,
            content=AssistantContent(
                text=message.text if first else "",
                thinking=message.thinking if first else "",
                tool_round_id=self.round_id,
                replay_state=message.replay_state if first else None,
                tool_calls=(call,),
            ),
        )
        tool = CanonicalMessage(
            message_id=f"{self.round_id}:{call.call_id}:result",
            role=Role.TOOL,
            origin=Origin.TOOL,
            content=result,
        )
        return ToolPair(call, assistant, tool)

    def staged(
        self,
        job_id: int,
        history: tuple[CanonicalMessage, ...],
        used_tokens: int | None,
        steps: tuple[Step, ...] = (),
        stable: int | None = None,
    ) -> PublishStaged:
        """The round's staged checkpoint on ``history``: the roots stay the stable history
        (its first ``stable`` messages, given when the round starts), the whole assistant is
        pending, followed by each completed call's result, so the state the client keeps
        proves which calls ran. Published when the round starts and again after each result
        but the last."""
        if stable is not None:
            self._stable = stable
        assert self._stable is not None, "a round is first staged with its stable history"
        stable_history = history[: self._stable]
        results = self.round_results(history)
        return PublishStaged(
            job_id, stable_history, self.assistant, steps, used_tokens, self.started_at_ms, results
        )

    def round_results(self, history: tuple[CanonicalMessage, ...]) -> tuple[CanonicalMessage, ...]:
        """The tool messages of this round's committed pairs in ``history``, in order."""
        return tuple(
            result
            for before, result in itertools.pairwise(history)
            if isinstance(before.content, AssistantContent)
            and before.content.tool_round_id == self.round_id
            and isinstance(result.content, ToolResultContent)
        )

    def committed(self, pair: ToolPair, completed: ToolCompleted) -> bytes:
        """The pair is committed: later pairs no longer carry the message's text, the call's
        card joins the steps, and the frame that shows it completed is returned (empty for a
        call of a tool that does not exist: it has no card)."""
        self._first_pair = False
        if not completed.tool_call:
            return b""
        self.steps.append(ToolCallStep(completed.tool_call))
        call = pair.call
        return tool_call_completed_frame(call.call_id, call.model_call_id, completed.tool_call)


def message_indexes(
    history: tuple[CanonicalMessage, ...], round_id: str, message: AssistantContent
) -> dict[str, int]:
    """For each UpdateCurrentStep call of the round, its step in the turn as Cursor counts
    them, from 1: every thinking, every text and every tool call of the turn's assistant
    messages before this one (after the last user message), then this message's thinking and
    text, then its calls up to this one."""
    calls = [c for c in message.tool_calls if find_tool(c.name) is UPDATE_CURRENT_STEP]
    if not calls:
        return {}
    last_user = max((i for i, m in enumerate(history) if starts_turn(m)), default=-1)
    steps = 0
    for earlier in history[last_user + 1 :]:
        content = earlier.content
        if isinstance(content, AssistantContent) and content.tool_round_id != round_id:
            steps += bool(content.thinking) + bool(content.text) + len(content.tool_calls)
    steps += bool(message.thinking) + bool(message.text)
    position = {c.call_id: n for n, c in enumerate(message.tool_calls)}
    return {c.call_id: steps + 1 + position[c.call_id] for c in calls}
