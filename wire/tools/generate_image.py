"""GenerateImage: the user approves in the editor, the server generates, the editor writes.

Three phases under two wire ids: an Interaction query asks the user to approve the image
(``generate_image_request_query``); once approved, the server generates it (``ServerWork``
with an ``ImageRequest``: only the server holds the image model's key); the bytes are then
written through the editor with an Exec ``write_args`` (``file_bytes``), so the file appears
in the workspace like any edit. The model reads the path written, or why nothing was.

The file goes where ``filename`` says (relative to the workspace root, ``.png`` added when it
has no extension), else to ``images/<words of the description>-<call digest>.png``: the digest
of the call id keeps two images of one description apart.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any

import msgspec

from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import (
    ExecContext,
    ExecStep,
    InteractionExecution,
    SendExec,
    ServerWork,
    ServerWorkFailed,
    ToolChannel,
    ToolDefinition,
    ToolOutcome,
    WrongResult,
    new_exec,
)

# Each aspect ratio the tool takes -> the nearest of the sizes every GPT image model accepts
# (OpenAI's images API: 1024x1024, 1536x1024, 1024x1536). No ratio: the API's default size.
ASPECT_RATIO_SIZES: dict[str, str] = {
    "1:1": "1024x1024",
    "4:3": "1536x1024",
    "16:9": "1536x1024",
    "3:4": "1024x1536",
    "9:16": "1024x1536",
}
IMAGE_DIR = "images"
_SLUG_WORDS = 6
_SLUG_MAX_CHARS = 40
_WORD = re.compile(r"[a-z0-9]+")


class ImageRequest(msgspec.Struct, frozen=True):
    """Server work: one image of ``prompt`` at ``size`` (None: the image API's default)."""

    prompt: str
    size: str | None


class GeneratedImage(msgspec.Struct, frozen=True):
    """The answer to an ``ImageRequest``: the image file's bytes, as the API sent them."""

    data: bytes


def image_path(description: str, filename: str | None, call_id: str, workspace: str) -> str:
    """Where the image is written: ``filename`` or a name made from the description, under
    the workspace root when it is known (an absolute ``filename`` stays as it is)."""
    if filename:
        path = filename if posixpath.splitext(filename)[1] else f"{filename}.png"
    else:
        words = _WORD.findall(description.lower())[:_SLUG_WORDS]
        slug = "-".join(words)[:_SLUG_MAX_CHARS].strip("-") or "image"
        digest = hashlib.sha256(call_id.encode()).hexdigest()[:6]
        path = f"{IMAGE_DIR}/{slug}-{digest}.png"
    if workspace and not posixpath.isabs(path):
        return posixpath.join(workspace, path)
    return path


def _args(args: ToolArgs) -> agent.GenerateImageArgs:
    description = args.required_string("description").strip()
    if not description:
        raise ToolArgumentError("'description' must describe the image (it is empty)")
    ratio = args.string("aspect_ratio")
    if ratio is not None and ratio not in ASPECT_RATIO_SIZES:
        raise ToolArgumentError(f"'aspect_ratio' must be one of {', '.join(ASPECT_RATIO_SIZES)}")
    if args.string_list("reference_image_paths"):
        raise ToolArgumentError("reference images are not supported: describe the image instead")
    filename = args.string("filename")
    if filename is not None and (not filename.strip() or filename.endswith("/")):
        raise ToolArgumentError("'filename' must name a file")
    built = agent.GenerateImageArgs(description=description)
    if ratio is not None:
        built.aspect_ratio = ratio
    if filename is not None:
        built.file_path = filename.strip()
    return built


class GenerateImageExecution(InteractionExecution):
    """Approval query, then server work, then a Write exec of the image's bytes."""

    query_field = "generate_image_request_query"

    def __init__(self, call_id: str, args: ToolArgs, context: ExecContext) -> None:
        super().__init__(GENERATE_IMAGE, call_id)
        self.args = _args(args)
        filename = self.args.file_path if self.args.HasField("file_path") else None
        self.path = image_path(self.args.description, filename, call_id, context.workspace_root)
        ratio = self.args.aspect_ratio if self.args.HasField("aspect_ratio") else None
        self.size = ASPECT_RATIO_SIZES[ratio] if ratio is not None else None
        self._prompt = self.args.description
        self._bytes = 0
        self._writing = False

    def _card(self, result: agent.GenerateImageResult | None = None) -> agent.ToolCall:
        card = agent.GenerateImageToolCall(args=self.args, result=result)
        return agent.ToolCall(generate_image_tool_call=card)

    def _fail(self, text: str) -> ToolOutcome:
        error = agent.GenerateImageError(error=text)
        return ToolOutcome(text, True, self._card(agent.GenerateImageResult(error=error)))

    def started(self) -> agent.ToolCall:
        return self._card()

    def _query(self) -> Any:
        return agent.GenerateImageRequestQuery(args=self.args, tool_call_id=self.call_id)

    def _on_answer(self, answer: Any) -> ExecStep:
        match answer.WhichOneof("result"):
            case "approved":
                # The user may have changed the description when approving it.
                self._prompt = answer.approved.description.strip() or self.args.description
                return ServerWork(ImageRequest(self._prompt, self.size))
            case "rejected":
                reason = answer.rejected.reason
                return self._fail(
                    "the user declined to generate the image" + (f": {reason}" if reason else "")
                )
            case _:
                return WrongResult("GenerateImageRequestResponse with no result")

    def answered(self, answer: object) -> ExecStep:
        match answer:
            case GeneratedImage(data=data):
                self._bytes = len(data)
                self._writing = True
                write = agent.WriteArgs(
                    path=self.path,
                    file_bytes=data,
                    tool_call_id=self.call_id,
                    return_file_content_after_write=False,
                )
                return SendExec(
                    new_exec(self.call_id, accept_hook_additional_contexts=True, write_args=write)
                )
            case ServerWorkFailed(error=error):
                return self._fail(f"the image could not be generated: {error}")
            case _:
                raise AssertionError(f"GenerateImage got an answer of type {type(answer)}")

    def _on_result(self, variant: str, message: agent.ExecClientMessage) -> ExecStep:
        if not self._writing or variant != "write_result":
            return WrongResult(variant)
        write = message.write_result
        match write.WhichOneof("result"):
            case "success":
                pass
            case "permission_denied":
                return self._fail(write.permission_denied.error or f"cannot write {self.path}")
            case "no_space":
                return self._fail(f"no space left on the device to write {self.path}")
            case "error":
                return self._fail(write.error.error or f"could not write {self.path}")
            case "rejected":
                reason = write.rejected.reason
                text = f"the user declined to write {self.path}" + (f": {reason}" if reason else "")
                return self._fail(text)
            case _:
                return self._fail(f"the editor returned no write result for {self.path}")
        text = f"generated the image and wrote it to {self.path} ({self._bytes} bytes"
        text += f", {self.size})" if self.size is not None else ")"
        if self._prompt != self.args.description:
            text += f"; the user changed the description to: {self._prompt}"
        success = agent.GenerateImageSuccess(file_path=self.path)
        return ToolOutcome(text, False, self._card(agent.GenerateImageResult(success=success)))


# The registry row (``wire.tools.registry.REGISTRY``).
GENERATE_IMAGE = ToolDefinition(
    name="GenerateImage",
    channel=ToolChannel.INTERACTION,
    tool_call_field="generate_image_tool_call",
    execution=GenerateImageExecution,
    error_path="result.error",
    error_fields=("error",),
)
