"""Prompt assets (tool schemas, system prompts, runtime templates) and the runtime message.

``load_prompt_assets()`` is called once at startup; a run picks its mode's assets with
``assets.mode(name)`` and renders its runtime user message from a ``RuntimeContext``.
"""

from prompt.assets import (
    MODES,
    ModeAssets,
    PromptAssetError,
    PromptAssets,
    UnknownModeError,
    load_prompt_assets,
    load_prompt_assets_from,
)
from prompt.runtime_message import (
    DEBUG_PLACEHOLDERS,
    RUNTIME_PLACEHOLDERS,
    DebugSession,
    Environment,
    GitRepo,
    OpenFiles,
    RecentFile,
    RuntimeContext,
    RuntimeContextError,
    SelectedCode,
    SelectedContext,
    SelectedFile,
    Skill,
    TerminalSelection,
    VisibleFile,
    render_runtime_message,
)

__all__ = [
    "DEBUG_PLACEHOLDERS",
    "MODES",
    "RUNTIME_PLACEHOLDERS",
    "DebugSession",
    "Environment",
    "GitRepo",
    "ModeAssets",
    "OpenFiles",
    "PromptAssetError",
    "PromptAssets",
    "RecentFile",
    "RuntimeContext",
    "RuntimeContextError",
    "SelectedCode",
    "SelectedContext",
    "SelectedFile",
    "Skill",
    "TerminalSelection",
    "UnknownModeError",
    "VisibleFile",
    "load_prompt_assets",
    "load_prompt_assets_from",
    "render_runtime_message",
]
