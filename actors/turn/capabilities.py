"""Which tools a run offers: the mode's list, less the tools this server cannot carry out.

A tool that needs something of the server besides the editor (WebSearch needs a search
backend set in the console, GenerateImage an image model marked there) is left out of the
tools sent to the model when the server lacks it, rather than offered and then failing every
call. The run decides once, at its start; the checkpoint's allowed tools follow the same list.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from prompt.assets import ModeAssets


class ServerCapabilities(msgspec.Struct, frozen=True):
    """What the server can do for tools, read when a run starts."""

    web_search: bool = False  # a web search backend is configured
    image_generation: bool = False  # an image model is marked


# The tools only some servers can carry out: tool name -> whether these capabilities can.
_NEEDS: dict[str, Callable[[ServerCapabilities], bool]] = {
    "WebSearch": lambda capabilities: capabilities.web_search,
    "GenerateImage": lambda capabilities: capabilities.image_generation,
}


def offered_tools(mode: ModeAssets, capabilities: ServerCapabilities) -> ModeAssets:
    """``mode`` with only the tools the server can carry out, in the manifest's order."""
    tools = tuple(
        tool for tool in mode.tools if (need := _NEEDS.get(tool.name)) is None or need(capabilities)
    )
    if len(tools) == len(mode.tools):
        return mode
    return msgspec.structs.replace(mode, tools=tools)
