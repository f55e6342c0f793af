"""Which of a mode's tools a run offers: those whose server-side part this server can do.

A tool that needs something of the server besides the editor (GenerateImage needs an image
model) is left out of the run's tools when the server lacks it, so the model is never
offered a tool that can only fail. The run reads its ``ServerCapabilities`` once, when it
starts; the tools it offers then hold for the whole run (its checkpoints list them too).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from prompt.assets import ModeAssets


class ServerCapabilities(msgspec.Struct, frozen=True):
    """What the server can do for tools, as of a run's start."""

    image_generation: bool = False  # an image model is marked in the console


# Each tool that needs a capability -> whether a run's capabilities hold it.
_NEEDS: dict[str, Callable[[ServerCapabilities], bool]] = {
    "GenerateImage": lambda capabilities: capabilities.image_generation,
}


def no_capabilities() -> ServerCapabilities:
    """A server with nothing beyond the editor's tools (the default of ``AgentDeps``)."""
    return ServerCapabilities()


def _always(capabilities: ServerCapabilities) -> bool:
    return True


def offered_mode(mode: ModeAssets, capabilities: ServerCapabilities) -> ModeAssets:
    """``mode`` with only the tools ``capabilities`` can run, in the manifest's order."""
    tools = tuple(tool for tool in mode.tools if _NEEDS.get(tool.name, _always)(capabilities))
    if len(tools) == len(mode.tools):
        return mode
    return msgspec.structs.replace(mode, tools=tools)
