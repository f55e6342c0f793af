"""The one table of the tools this server runs, and every lookup by name; nothing else is run.

Each tool module declares its ``ToolDefinition``; this table lists them in the order Cursor's
reference lists the tools. Everything keyed by tool name (channels, ToolCall oneofs, streamed
content fields, the execution to start) is read from here, never written down again.
"""

from __future__ import annotations

from wire.tools.ask_question import ASK_QUESTION
from wire.tools.await_shell import AWAIT_SHELL
from wire.tools.base import ExecContext, ModeTools, ToolChannel, ToolDefinition
from wire.tools.call_mcp_tool import CALL_MCP_TOOL
from wire.tools.create_plan import CREATE_PLAN
from wire.tools.delete import DELETE
from wire.tools.edit import STR_REPLACE, WRITE
from wire.tools.edit_notebook import EDIT_NOTEBOOK
from wire.tools.fetch_mcp_resource import FETCH_MCP_RESOURCE
from wire.tools.generate_image import GENERATE_IMAGE
from wire.tools.get_mcp_tools import GET_MCP_TOOLS
from wire.tools.read import READ
from wire.tools.read_lints import READ_LINTS
from wire.tools.search import GLOB, GREP
from wire.tools.shell import SHELL
from wire.tools.switch_mode import SWITCH_MODE
from wire.tools.task import TASK
from wire.tools.todo_write import TODO_WRITE
from wire.tools.update_current_step import UPDATE_CURRENT_STEP
from wire.tools.web_fetch import WEB_FETCH
from wire.tools.web_search import WEB_SEARCH

REGISTRY: dict[str, ToolDefinition] = {
    definition.name: definition
    for definition in (
        READ,
        WRITE,
        STR_REPLACE,
        EDIT_NOTEBOOK,
        DELETE,
        GREP,
        GLOB,
        SHELL,
        READ_LINTS,
        TODO_WRITE,
        ASK_QUESTION,
        AWAIT_SHELL,
        WEB_SEARCH,
        WEB_FETCH,
        SWITCH_MODE,
        CREATE_PLAN,
        GENERATE_IMAGE,
        TASK,
        UPDATE_CURRENT_STEP,
        GET_MCP_TOOLS,
        CALL_MCP_TOOL,
        FETCH_MCP_RESOURCE,
    )
}

# The argument each edit tool's card shows as it streams (the field ``EditArgs.stream_content``
# is built from at dispatch, see ``EditExecution._ui_args``).
STREAMED_CONTENT_FIELDS: dict[str, str] = {
    name: definition.streamed_content_field
    for name, definition in REGISTRY.items()
    if definition.streamed_content_field is not None
}


# Tools whose Cursor identifier (a pending call's ``toolIdentifier``) is not the UPPER_SNAKE
# form of their name; kept with the tools, for the rows they will have.
_CURSOR_IDENTIFIER_EXCEPTIONS = {
    "AwaitShell": "AWAIT",
    "CallMcpTool": "MCP",
    "CreatePlan": "CREATE_PLAN_V2",
    "UpdateCurrentStep": "COMMUNICATE_UPDATE",
}


def cursor_identifier(name: str) -> str:
    """Cursor's identifier of a built-in tool: fixed for four, else the CamelCase name in
    UPPER_SNAKE (``StrReplace`` -> ``STR_REPLACE``). A name the model made up is rendered by
    the same rule; its call is refused when the round runs."""
    fixed = _CURSOR_IDENTIFIER_EXCEPTIONS.get(name)
    if fixed is not None:
        return fixed
    out: list[str] = []
    for position, char in enumerate(name):
        if position and "A" <= char <= "Z":
            out.append("_")
        out.append(char.upper() if char.isascii() else char)
    return "".join(out)


def normalize_tool_name(name: str) -> str:
    """ASCII letters and digits only, lowercased (``str_replace`` and ``StrReplace`` agree)."""
    return "".join(ch for ch in name if ch.isascii() and ch.isalnum()).lower()


_BY_NORMALIZED = {normalize_tool_name(name): definition for name, definition in REGISTRY.items()}


def unknown_tool_result(name: str) -> str:
    """What the model reads after calling a tool that does not exist (no card is shown)."""
    return (
        f"Error: there is no tool named {name!r}. Call only the tools you were given, with "
        "their exact names."
    )


def unavailable_tool_result(name: str, mode: ModeTools) -> str:
    """What the model reads after calling a tool its run's mode does not offer (no card)."""
    return (
        f"Error: {name} is not available in {mode.label} mode. The tools you can call in this "
        f"mode are: {', '.join(mode.tools)}. If the task needs {name}, say so to the user, who "
        "can switch to a mode that offers it."
    )


def refused_call(name: str, context: ExecContext) -> str | None:
    """The error result of a call the model may not make in this run (a tool that does not
    exist, or one outside the run's mode), or None when the call may run. A dynamic MCP tool
    the run offers (its exact name) may run; any other name is looked up among the built-ins."""
    if context.dynamic.find(name) is not None:
        return None
    definition = find_tool(name)
    if definition is None:
        return unknown_tool_result(name)
    if context.mode is not None and definition.name not in context.mode.tools:
        return unavailable_tool_result(definition.name, context.mode)
    return None


class UnsupportedTool(Exception):
    """The model called a tool this server does not run; the run fails with ``message``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.message = f"unsupported tool: {name}"
        super().__init__(self.message)


def find_tool(name: str) -> ToolDefinition | None:
    """The definition of the tool ``name`` designates, None when we do not run it."""
    return _BY_NORMALIZED.get(normalize_tool_name(name))


def tool_definition(name: str) -> ToolDefinition:
    """The definition of the tool ``name`` designates, or ``UnsupportedTool``."""
    definition = find_tool(name)
    if definition is None:
        raise UnsupportedTool(name)
    return definition


def resolve_tool(name: str) -> str:
    """The canonical name of the tool ``name`` designates, or ``UnsupportedTool``."""
    return tool_definition(name).name


def tool_channel(name: str) -> ToolChannel:
    return tool_definition(name).channel
