"""Task: the model starts a subagent; one ``subagent_args`` request, and the editor runs it.

The editor answers the request by starting a child run of its own (a RunRequest with
``subagent_type_name`` set, on a RunSSE/BidiAppend pair that names this run and this call in
its parent headers); the server sees that child as any other run, in Subagent mode. The parent's
call completes when the editor sends ``subagent_result``: at the child's end for a foreground
Task, at once (with ``background_reason``) for a background one.

The child's model is the user's choice for that subagent type when they made one
(``subagent_model_overrides``: a model, the parent's model, or the type disabled), else the
model the Task names, else the parent's model. A disabled type, or a model this server does
not have, is the model's to hear about: the Task ends with an error result naming it, and
nothing is sent.
"""

from __future__ import annotations

import posixpath

from wire.model_routing import is_auto, mapped_model
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    SendExec,
    SubagentModels,
    ToolChannel,
    ToolDefinition,
    ToolExecution,
    ToolOutcome,
    WrongResult,
    new_exec,
)

GENERAL_PURPOSE = "generalPurpose"
INHERIT = "inherit"

# Cursor's built-in subagent types by their normalised name (lowercase, no '-' or '_'); any
# other name is a custom subagent, shown under its own name.
_BUILT_IN_TYPES = {
    "": "unspecified",
    "generalpurpose": "unspecified",
    "explore": "explore",
    "browseruse": "browser_use",
    "shell": "shell",
    "bash": "bash",
    "debug": "debug",
    "cursorguide": "cursor_guide",
    "computeruse": "computer_use",
}
_ENVIRONMENTS = {
    "local": agent.SUBAGENT_EXECUTION_ENVIRONMENT_LOCAL,
    "cloud": agent.SUBAGENT_EXECUTION_ENVIRONMENT_CLOUD,
}
_VIDEO_EXTENSIONS = frozenset({".mp4", ".mov", ".webm", ".mkv"})


class SubagentModelRefused(Exception):
    """The Task's child model cannot be used; ``message`` is for the model to read."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def child_model(models: SubagentModels, subagent_type: str, requested: str | None) -> str:
    """The public id of the model the child runs on, or ``SubagentModelRefused``.

    The user's setting for the type wins over the Task's ``model``; ``inherit`` and no model
    mean the parent's model. A model is named by its public id, its provider model id or its
    display name (case ignored), or by Auto or one of Cursor's ids the routing settings map
    to one of ours."""
    key = subagent_type or GENERAL_PURPOSE
    overrides = dict(models.overrides)
    if key in overrides:
        chosen = overrides[key]
        if chosen is None:
            raise SubagentModelRefused(
                f"the {key} subagent is disabled in the user's Cursor settings; do the work "
                "yourself or use another subagent type"
            )
        return _configured(models, chosen, f"the model the user's settings give the {key} subagent")
    if requested is None or requested.strip().lower() in ("", INHERIT):
        return models.parent
    return _configured(models, requested, "the model")


def _configured(models: SubagentModels, name: str, what: str) -> str:
    """A model of ours by any of its names; else Auto or one of Cursor's ids, through the
    routing settings (``wire.model_routing``), as a run asking for it would be."""
    by_name = dict(models.configured)
    public_id = by_name.get(name.strip().lower())
    if public_id is not None:
        return public_id
    routed = models.auto if is_auto(name) else mapped_model(name.strip(), models.routes)
    if routed:
        return routed
    names = sorted({key for key, _ in models.configured})
    known = f" (configured: {', '.join(names)})" if names else ""
    raise SubagentModelRefused(
        f"{what}, {name!r}, is not configured on this server{known}; leave model out to run "
        "the subagent on your own model"
    )


def subagent_type_card(name: str) -> agent.SubagentType:
    """The card's subagent type: a built-in one, or a custom one under its own name."""
    field = _BUILT_IN_TYPES.get(name.lower().replace("-", "").replace("_", ""))
    if field is None:
        return agent.SubagentType(custom=agent.SubagentTypeCustom(name=name))
    subagent_type = agent.SubagentType()
    getattr(subagent_type, field).SetInParent()
    return subagent_type


def _attachments(paths: list[str]) -> agent.SelectedContext:
    """Videos by their extension, everything else as an image."""
    context = agent.SelectedContext()
    for path in paths:
        if posixpath.splitext(path)[1].lower() in _VIDEO_EXTENSIONS:
            context.selected_videos.add(
                path=path, filename=posixpath.basename(path), materialize_to_filesystem=True
            )
        else:
            context.selected_images.add(path=path)
    return context


class TaskExecution(ToolExecution):
    """One subagent: its request, and the editor's result as the card and the model's text."""

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(TASK, call_id)
        self.description = args.required_string("description")
        self.prompt = args.required_string("prompt")
        self.subagent_type = args.string("subagent_type") or ""
        self.model = args.string("model")
        self.resume = args.string("resume")
        self.interrupt = args.boolean("interrupt")
        self.background = args.boolean("run_in_background")
        self.attachments = args.string_list("file_attachments") or []
        environment = args.string("environment") or "local"
        if environment not in _ENVIRONMENTS:
            raise ToolArgumentError('\'environment\' must be "local" or "cloud"')
        self.environment = _ENVIRONMENTS[environment]
        self.cloud_base_branch = args.string("cloud_base_branch")
        self.context = context
        self.refused: str | None = None
        self.model_id = ""
        try:
            self.model_id = child_model(context.subagent_models, self.subagent_type, self.model)
        except SubagentModelRefused as exc:
            self.refused = exc.message

    def _card_args(self) -> agent.TaskArgs:
        return agent.TaskArgs(
            description=self.description,
            prompt=self.prompt,
            subagent_type=subagent_type_card(self.subagent_type),
            model=self.model,
            resume=self.resume,
            attachments=self.attachments,
            environment=self.environment,
        )

    def _card(self, result: agent.TaskResult | None = None) -> agent.ToolCall:
        return agent.ToolCall(
            task_tool_call=agent.TaskToolCall(args=self._card_args(), result=result)
        )

    def _request(self) -> agent.SubagentArgs:
        context = self.context
        request = agent.SubagentArgs(
            tool_call_id=self.call_id,
            subagent_type=self.subagent_type,
            model_id=self.model_id,
            prompt=self.prompt,
            readonly=False,
            resume_agent_id=self.resume,
            run_in_background=self.background,
            parent_conversation_id=context.conversation_id,
            interrupt=self.interrupt,
            root_parent_conversation_id=context.root_conversation_id or context.conversation_id,
            environment=self.environment,
            cloud_base_branch=self.cloud_base_branch,
        )
        if self.attachments:
            request.selected_context.CopyFrom(_attachments(self.attachments))
        return request

    def started(self) -> agent.ToolCall:
        return self._card()

    def begin(self) -> SendExec | ToolOutcome:
        if self.refused is not None:
            return self._error(self.refused)
        return SendExec(
            new_exec(
                self.call_id, accept_hook_additional_contexts=False, subagent_args=self._request()
            )
        )

    def _error(self, text: str) -> ToolOutcome:
        return ToolOutcome(
            text, True, self._card(agent.TaskResult(error=agent.TaskError(error=text)))
        )

    def cancelled_by_user(self, subagent_id: str) -> ToolOutcome:
        """The user cancelled this subagent from the editor (``cancel_subagent_action``)
        before it ended: an error result the model reads, so it neither waits for the
        subagent nor starts it again on its own."""
        return self._error(
            f"the user cancelled this subagent ({subagent_id}) before it finished, so it has "
            "no report; do not start it again unless the user asks, and go on with the rest "
            "of the task"
        )

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if variant != "subagent_result":
            return WrongResult(variant)
        result = message.subagent_result
        match result.WhichOneof("result"):
            case "success":
                return self._success(result.success)
            case "error":
                error = result.error.error or "the subagent failed without saying why"
                return self._error(f"the subagent failed: {error}")
            case _:
                return self._error("the editor returned no result for the subagent")

    def _success(self, success: agent.SubagentSuccess) -> ToolOutcome:
        final = success.final_message
        background = bool(self.background) or bool(success.background_reason)
        card = agent.TaskResult(
            success=agent.TaskSuccess(
                agent_id=success.agent_id,
                is_background=background,
                result_suffix=final,
                background_reason=success.background_reason,
                transcript_path=success.transcript_path
                if success.HasField("transcript_path")
                else None,
            )
        )
        if self.resume is not None and self.resume != "self":
            text = final or "the subagent ended without a final message"
        else:
            lines = [f"Subagent name: {self.description}"]
            if success.agent_id:
                lines.append(f"Subagent ID: {success.agent_id}")
            text = "\n".join(lines)
            if final:
                text += f"\n\n{final}"
            elif background:
                text += "\n\nIt runs in the background; its result arrives later as a new message."
        return ToolOutcome(text, False, self._card(card))


# The registry row (``wire.tools.registry.REGISTRY``).
TASK = ToolDefinition(
    name="Task",
    channel=ToolChannel.EXEC,
    tool_call_field="task_tool_call",
    execution=TaskExecution,
    error_path="result.error",
    error_fields=("error",),
)
