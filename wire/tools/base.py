"""What every tool shares: its registry row, the steps a call yields, and the call itself.

Each tool name maps to exactly one channel (``ToolChannel``): Exec tools become one or more
``ExecServerMessage`` requests the editor answers with ``ExecClientMessage`` results;
Interaction tools start with an ``InteractionQuery`` the editor answers with an
``InteractionResponse`` (an approval may then lead to an Exec request, as WebFetch's does);
Local tools finish on the server. A ``ToolExecution`` is one call's state machine: ``begin``
gives its first step (a request, a query, a pause, or for a local tool or bad arguments its
outcome at once); ``feed`` takes each exec message for it, ``respond`` each interaction
response, ``wake`` the end of a pause it asked for, ``answered`` the result of server work
it asked for (a search, an image: IO the server does off the mailbox), and each says what
happens next.

An outcome holds both views of a finished call: the string the LLM reads (the real output:
file text, matches, diagnostics, command output) with its ``is_error`` flag, and the typed
``agent.ToolCall`` (args and result) the editor shows in the tool card. Bad arguments from the
model are an error result the model can correct (``InvalidCall``), never a failed run.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

import msgspec
from google.protobuf import unknown_fields

from wire.model_routing import RouteEntry
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.mcp_catalog import McpCatalog, McpToolsUpdate
from wire.tools.mcp_names import DynamicMcpTools

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1

# ExecClientMessage fields outside its oneof; any other unknown field is a result variant this
# subset does not declare, so it is a result, just not one any of our tools expects.
_EXEC_CLIENT_NON_RESULT_FIELDS = frozenset({1, 15, 39, 45})


class ToolChannel(StrEnum):
    """How a tool runs: an Exec request, an Interaction query, or on the server."""

    EXEC = "exec"
    INTERACTION = "interaction"
    LOCAL = "local"


class ModeTools(msgspec.Struct, frozen=True):
    """The run's mode as the user knows it ("Ask") and the tools it offers, in order: a call
    of any other tool is refused with an error the model reads."""

    label: str
    tools: tuple[str, ...]


class Todo(msgspec.Struct, frozen=True):
    """One item of the todo list (TodoWrite's, and the checkpoint's ``todos``)."""

    id: str
    content: str
    status: str  # one of ``wire.tools.todo_write.TODO_STATUSES``
    dependencies: tuple[str, ...] = ()


class SubagentModels(msgspec.Struct, frozen=True):
    """What a Task's child model is chosen from (``wire.tools.task.child_model``): the run's
    own model, the user's per-subagent-type settings (``subagent_model_overrides``: a model
    id as Cursor names it, or None for a disabled type; an inherited type is the run's
    model), the models the server has, by every name a Task may give one (lowercased) ->
    public id, and the routing settings for a name that is none of those: the table's
    entries (one of Cursor's ids -> a public id) and where Auto runs (a public id; "" when
    Auto goes to Cursor's backend)."""

    parent: str = ""
    overrides: tuple[tuple[str, str | None], ...] = ()
    configured: tuple[tuple[str, str], ...] = ()
    routes: tuple[RouteEntry, ...] = ()
    auto: str = ""


class ExecContext(msgspec.Struct, frozen=True):
    """What a run's requests carry besides the model's arguments (from the RunRequest), and
    ``todos``, the list a TodoWrite call merges onto, and ``message_index``, the step an
    UpdateCurrentStep call stands at in its turn (the round gives both per call)."""

    conversation_id: str = ""
    root_conversation_id: str = ""  # the conversation group's id, else ``conversation_id``
    subagent_models: SubagentModels = SubagentModels()
    message_index: int = 0
    terminals_folder: str = ""
    admin_command_denylist: tuple[str, ...] = ()
    mode: ModeTools | None = None
    """Set by every run; None only for a context built outside one (every tool may run)."""
    todos: tuple[Todo, ...] = ()
    workspace_root: str = ""  # the first workspace path, where relative files a tool makes go
    mcp: McpCatalog = McpCatalog()
    """The MCP tool definitions the run knows so far (the request's, then GetMcpTools')."""
    dynamic: DynamicMcpTools = DynamicMcpTools()
    """The request's MCP tools offered as tools of their own, fixed for the run."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool's row in ``wire.tools.registry.REGISTRY``: everything a lookup by name needs.

    ``execution`` builds the call from parsed arguments and the run's context (every tool takes
    it; Shell, AwaitShell and GenerateImage read it) and raises ``ToolArgumentError`` when they
    do not fit; the card then holds only an error result, the message at ``error_path`` under
    the tool's card with each of ``error_fields`` set to the error text.
    ``streamed_content_field`` names the argument whose text fills the edit card while the
    model streams it, and ``streamed_path_field`` the one naming the edited file, shown once
    its string is complete.
    """

    name: str
    channel: ToolChannel
    tool_call_field: str  # the agent.ToolCall oneof field of this tool's card
    execution: Callable[[str, ToolArgs, ExecContext], ToolExecution]
    error_path: str  # dotted, e.g. "result.error"
    error_fields: tuple[str, ...]
    streamed_content_field: str | None = None
    streamed_path_field: str = "path"

    def invalid_card(self, error: str) -> agent.ToolCall:
        """The card of a call whose arguments do not fit: an error result and nothing else."""
        return self.error_card(agent.ToolCall(), error)

    def error_card(self, card: agent.ToolCall, error: str) -> agent.ToolCall:
        """``card`` (its args, say) with an error result; ``card`` itself is left as it was."""
        tool_call = agent.ToolCall()
        tool_call.CopyFrom(card)
        node = getattr(tool_call, self.tool_call_field)
        for name in self.error_path.split("."):
            node = getattr(node, name)
        for name in self.error_fields:
            setattr(node, name, error)
        return tool_call


# ---- what feeding a client message yields ----


class Waiting(msgspec.Struct, frozen=True):
    """Nothing terminal yet (an empty message, a shell start event)."""


class ShellOutput(msgspec.Struct, frozen=True):
    """A chunk of a running command's output, for a ``tool_call_delta``."""

    stream: Literal["stdout", "stderr"]
    text: str


class SendExec(msgspec.Struct, frozen=True):
    """Send this request (its ``id`` is unset: the caller allocates one)."""

    message: agent.ExecServerMessage


class SendQuery(msgspec.Struct, frozen=True):
    """Ask the editor this interaction query (its ``id`` is unset: the caller allocates one)."""

    query: agent.InteractionQuery


class WakeAfter(msgspec.Struct, frozen=True):
    """Send nothing now; call ``wake`` once ``delay_ms`` have passed (a poll's pause, a timer)."""

    delay_ms: int


class ServerWork(msgspec.Struct, frozen=True):
    """Work only the server can do for this call (a web search, an image generation): the
    runtime hands ``request``, a typed request of the tool's own module, to the handler the
    server registered for its type, off the mailbox, and calls ``answered`` with the typed
    answer (or ``ServerWorkFailed``)."""

    request: Any


class ServerWorkFailed(msgspec.Struct, frozen=True):
    """Server work ended without an answer (the handler raised, or none was registered);
    ``error`` is safe to show the model (no key, no header)."""

    error: str


class ToolImage(msgspec.Struct, frozen=True):
    """An image a result shows the model (a Read of an image file), with its mime type."""

    mime_type: str
    data: bytes


class ToolOutcome(msgspec.Struct, frozen=True):
    """The finished call: what the LLM reads (text, and images for a vision model) and the
    typed ToolCall (args + result) for the UI.

    ``tool_call`` has no id or timestamps; ``stamp_tool_call`` adds them.
    """

    content: str
    is_error: bool
    tool_call: agent.ToolCall
    images: tuple[ToolImage, ...] = ()
    mcp_update: McpToolsUpdate | None = None
    """What a GetMcpTools learnt, for the runtime to apply to the run's ``ExecContext.mcp``."""


class WrongResult(msgspec.Struct, frozen=True):
    """A terminal result of a kind this call never asked for."""

    variant: str


ExecStep = (
    Waiting
    | ShellOutput
    | SendExec
    | SendQuery
    | WakeAfter
    | ServerWork
    | ToolOutcome
    | WrongResult
)
FirstStep = SendExec | SendQuery | WakeAfter | ServerWork | ToolOutcome


def exec_result_variant(message: agent.ExecClientMessage) -> str | None:
    """The result variant a client message carries, None when it carries none.

    A variant this subset does not declare arrives as an unknown field; it is still a result
    (``field N``), so it cannot be mistaken for an empty, non-terminal message.
    """
    variant: str | None = message.WhichOneof("message")
    if variant is not None:
        return variant
    unknowns = unknown_fields.UnknownFieldSet(message)
    for i in range(len(unknowns)):
        if unknowns[i].field_number not in _EXEC_CLIENT_NON_RESULT_FIELDS:
            return f"field {unknowns[i].field_number}"
    return None


def interaction_result_variant(response: agent.InteractionResponse) -> str | None:
    """The result variant a response carries (``field N`` for one this subset lacks), or None."""
    variant: str | None = response.WhichOneof("result")
    if variant is not None:
        return variant
    unknowns = unknown_fields.UnknownFieldSet(response)
    for i in range(len(unknowns)):
        if unknowns[i].field_number != 1:
            return f"field {unknowns[i].field_number}"
    return None


def new_query(**query: Any) -> agent.InteractionQuery:
    """An interaction query (the wire id is the runtime's to set)."""
    return agent.InteractionQuery(**query)


def new_exec(
    call_id: str, *, accept_hook_additional_contexts: bool | None, **request: Any
) -> agent.ExecServerMessage:
    """An Exec request for ``call_id`` (the wire id is the runtime's to set).

    Whether the editor may attach its hooks' additional context to the result is each
    request's own (``tools.md`` §1.2), so every caller says it: true for the tools' own
    requests, false for requests whose result is not the tool's answer (a terminal file polled
    for AwaitShell, a subagent, the MCP state), None leaves the field unset.
    """
    message = agent.ExecServerMessage(exec_id=call_id, **request)
    if accept_hook_additional_contexts is not None:
        message.accept_hook_additional_contexts = accept_hook_additional_contexts
    return message


def empty_tool_call(definition: ToolDefinition) -> agent.ToolCall:
    """The tool's ToolCall with its oneof set and nothing in it (the placeholder card)."""
    tool_call = agent.ToolCall()
    getattr(tool_call, definition.tool_call_field).SetInParent()
    return tool_call


# ---- one call ----


class ToolExecution(abc.ABC):
    """One tool call from dispatch to outcome: pure state, no IO."""

    def __init__(self, definition: ToolDefinition, call_id: str) -> None:
        self.definition = definition
        self.tool = definition.name
        self.call_id = call_id
        self.channel = definition.channel

    @abc.abstractmethod
    def started(self) -> agent.ToolCall:
        """The typed args the ``tool_call_started`` card shows (no result yet)."""

    @abc.abstractmethod
    def begin(self) -> FirstStep:
        """The first request or query, a pause, or the outcome when nothing needs the editor."""

    def feed(self, message: agent.ExecClientMessage) -> ExecStep:
        """One client message for this call's current request."""
        variant = exec_result_variant(message)
        if variant is None:
            return Waiting()
        return self._on_result(variant, message)

    @abc.abstractmethod
    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        """Each tool's reading of a terminal result variant."""

    def respond(self, response: agent.InteractionResponse) -> ExecStep:
        """The editor's answer to this call's query. A tool that sends none gets ``WrongResult``
        for any answer; a response with no result at all is never a valid answer."""
        variant = interaction_result_variant(response)
        if variant is None:
            return WrongResult("no result")
        return self._on_response(variant, response)

    def _on_response(self, variant: str, response: agent.InteractionResponse) -> ExecStep:
        """Each interaction tool's reading of a response variant."""
        return WrongResult(variant)

    def wake(self) -> ExecStep:
        """The pause this call asked for (``WakeAfter``) is over."""
        raise AssertionError(f"{self.tool} never asked to be woken")

    def answered(self, answer: Any) -> ExecStep:
        """The answer to the ``ServerWork`` this call asked for, or ``ServerWorkFailed``."""
        raise AssertionError(f"{self.tool} never asked for server work")


class InteractionExecution(ToolExecution):
    """A call that starts with one interaction query, the ``query_field`` variant of
    ``InteractionQuery``. Only the answer of its own kind (the ``…_response`` variant of that
    name) reaches ``_on_answer``; any other answer, and any exec result unless the tool sends
    an exec after the answer (it then overrides ``_on_result``), is ``WrongResult``."""

    query_field: ClassVar[str]

    def begin(self) -> SendQuery:
        return SendQuery(new_query(**{self.query_field: self._query()}))

    @abc.abstractmethod
    def _query(self) -> Any:
        """The query message (``AskQuestionInteractionQuery``, ``WebFetchRequestQuery``…)."""

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)

    def _on_response(self, variant: str, response: agent.InteractionResponse) -> ExecStep:
        field = self.query_field.removesuffix("query") + "response"
        if variant != field:
            return WrongResult(variant)
        return self._on_answer(getattr(response, field))

    @abc.abstractmethod
    def _on_answer(self, answer: Any) -> ExecStep:
        """The editor's answer to the query: the outcome, or the call's next step."""


class InvalidCall(ToolExecution):
    """A call whose arguments do not fit: it ends at once with an error the model reads."""

    def __init__(self, definition: ToolDefinition, call_id: str, error: str) -> None:
        super().__init__(definition, call_id)
        self.error = f"invalid arguments for {definition.name}: {error}"

    def started(self) -> agent.ToolCall:
        return empty_tool_call(self.definition)

    def begin(self) -> ToolOutcome:
        return ToolOutcome(self.error, True, self.definition.invalid_card(self.error))

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        return WrongResult(variant)
