"""Map Cursor's ``UserMessage`` and ``RequestContext`` onto the runtime user message.

Two pure functions of the protobuf messages, used once per user turn:

- ``runtime_context`` builds the renderer's ``RuntimeContext``. Every section the request
  carries is filled and a section it does not carry (an empty string, an empty list, an unset
  message) is left out, so the runtime message never shows an empty block. It reads
  ``RequestContext.env`` and ``git_repos`` (``<user_info>``, ``<git_status>``), ``rules``,
  ``non_file_rules`` and ``cloud_rule`` (``<rules>``), ``agent_skills`` (``<agent_skills>``,
  skipping a skill with ``disable_model_invocation``), ``custom_subagents`` (``<subagents>``),
  ``mcp_meta_tool_options`` (``<mcp_meta_tools>``), ``debug_mode_config`` (the ``DEBUG_*``
  values of Debug mode's template), and from
  ``UserMessage.selected_context``: ``invocation_context.ide_state`` (open and recently viewed
  files) and the attachments (``extra_context``, ``files``, ``code_selections``,
  ``terminals``, ``terminal_selections``, ``cursor_rules``, ``cursor_commands``,
  ``selected_skills``, ``external_links``). The time zone is checked when the message is
  rendered (``RuntimeContextError``), not here.
- ``runtime_images`` returns ``selected_context.selected_images`` as image parts, in order,
  appended after the rendered text. An image must have an ``image/…`` mime type and bytes:
  inline (``data``, or ``blob_id_with_data`` whose SHA-256 is its blob id), or by blob id
  alone, fetched beforehand by the caller (``image_blob_ids`` lists them; the BlobSyncActor
  checks what a KV GET returns). A malformed image is a ``RuntimeContextError``.
- ``context_parts`` and ``merged_context``: the parts of the RequestContext a
  ``ConversationAction.request_context_parts`` gives by blob id and byte length (rules,
  skills, subagents, MCP): the blobs to fetch, then the context with each fetched part laid
  over its base (``dynamic_context``, else the action's own context). A part with an empty id
  but a length, a blob of another length or one that does not decode is a
  ``RuntimeContextError``.

Fields are read by the names of Cursor's schema. A field our ``.proto`` subset
(``wire/proto/agent_v1.proto``) does not declare yet reads as absent, so each section starts
working as soon as its fields are added there. Not read: an ``invocation_context`` given by
blob id or as a Slack/Teams thread or GitHub PR, ``extra_context_entries``, folders, git diffs
and commits, documentation, pull requests, past chats, the MCP tool definitions and instructions
of ``tools``/``mcp_instructions``, and the skill descriptors of ``skill_options``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from google.protobuf.message import DecodeError, Message

from actors.conversation.model import ImagePart
from prompt.runtime_message import (
    DebugSession,
    Environment,
    ExternalLink,
    GitRepo,
    McpServer,
    OpenFiles,
    RecentFile,
    RuntimeContext,
    RuntimeContextError,
    SelectedCode,
    SelectedCommand,
    SelectedContext,
    SelectedFile,
    SelectedRule,
    SelectedSkill,
    Skill,
    Subagent,
    Terminal,
    TerminalSelection,
    VisibleFile,
)
from store.blobs import blob_id_of
from wire.proto import agent_v1_pb2 as agent


def runtime_context(
    user_message: agent.UserMessage,
    request_context: agent.RequestContext | None,
    now: datetime | None,
) -> RuntimeContext:
    """The runtime message's context for one user turn; ``now`` must carry a UTC offset."""
    selected = _message(user_message, "selected_context")
    context = agent.RequestContext() if request_context is None else request_context
    return RuntimeContext(
        user_query=user_message.text,
        environment=_environment(context),
        rules=_rules(context),
        skills=_skills(context),
        subagents=_subagents(context),
        mcp_servers=_mcp_servers(context),
        open_files=_open_files(selected),
        selected=_selected(selected),
        now=now,
        debug=_debug(context),
    )


def runtime_images(
    user_message: agent.UserMessage, blobs: Mapping[bytes, bytes] | None = None
) -> tuple[ImagePart, ...]:
    """The user's attached images, in order, as the runtime message's image parts.

    An image given only by blob id takes its bytes from ``blobs`` (fetched beforehand, see
    ``image_blob_ids``). Raises ``RuntimeContextError`` for an image without an ``image/…``
    mime type, without bytes, whose bytes do not hash to its blob id, or whose blob is missing.
    """
    selected = _message(user_message, "selected_context")
    return tuple(
        _image(number, image, blobs or {})
        for number, image in enumerate(_items(selected, "selected_images"), start=1)
    )


def image_blob_ids(user_message: agent.UserMessage) -> tuple[bytes, ...]:
    """The blob ids of the images sent without their bytes: to fetch before rendering."""
    selected = _message(user_message, "selected_context")
    ids = []
    for image in _items(selected, "selected_images"):
        source = _which(image, "data_or_blob_id")
        if source == "blob_id":
            ids.append(image.blob_id)
        elif source == "blob_id_with_data" and not image.blob_id_with_data.data:
            ids.append(image.blob_id_with_data.blob_id)
    return tuple(ids)


def shell_command_context(
    action: agent.ShellCommandAction, output: agent.ShellOutput, status: str | None = None
) -> str:
    """The ``ACTION_CONTEXT`` of a command the user ran from the chat, with what it printed:
    the model reads it as context, not as a request. The command and its output are element
    bodies, kept verbatim; an empty stream is left out. ``status`` says how a command that
    did not exit ended (backgrounded, refused, not started); it replaces the exit code."""
    ended = f"<status>{status}</status>" if status else f"<exit_code>{output.exit_code}</exit_code>"
    lines = [
        "<user_ran_command>",
        "The user ran this command from the chat; it and its output are context for their "
        "next message, not a task.",
        f"<command>{action.shell_command.command}</command>",
        ended,
    ]
    for name, text in (("stdout", output.stdout), ("stderr", output.stderr)):
        if text:
            lines.append(f"<{name}>\n{text.rstrip(chr(10))}\n</{name}>")
    lines.append("</user_ran_command>")
    return "\n".join(lines)


# ---- request context ----


def _environment(context: agent.RequestContext) -> Environment | None:
    env = context.env
    environment = Environment(
        os_version=env.os_version,
        shell=env.shell,
        workspace_paths=tuple(path for path in env.workspace_paths if path),
        git_repos=tuple(
            GitRepo(path=repo.path, status=repo.status) for repo in context.git_repos if repo.path
        ),
        terminals_folder=env.terminals_folder,
        time_zone=env.time_zone,
    )
    return None if environment == Environment() else environment


def _rules(context: agent.RequestContext) -> tuple[str, ...]:
    texts = [rule.content for rule in (*context.rules, *context.non_file_rules)]
    if context.HasField("cloud_rule"):
        texts.append(context.cloud_rule)
    return tuple(text for text in texts if text.strip())


def _skills(context: agent.RequestContext) -> tuple[Skill, ...]:
    return tuple(
        Skill(path=skill.full_path, description=skill.description)
        for skill in _items(context, "agent_skills")
        if skill.full_path and not skill.disable_model_invocation
    )


def _subagents(context: agent.RequestContext) -> tuple[Subagent, ...]:
    return tuple(
        Subagent(name=subagent.name, description=subagent.description)
        for subagent in _items(context, "custom_subagents")
        if subagent.name
    )


def _mcp_servers(context: agent.RequestContext) -> tuple[McpServer, ...]:
    options = _message(context, "mcp_meta_tool_options")
    return tuple(
        McpServer(
            name=server.server_identifier,
            tools=tuple(tool.tool_name for tool in server.tools if tool.tool_name),
            use_instructions=server.server_use_instructions,
        )
        for server in _items(options, "mcp_descriptors")
        if server.server_identifier
    )


def _debug(context: agent.RequestContext) -> DebugSession | None:
    config = _message(context, "debug_mode_config")
    if config is None:
        return None
    return DebugSession(
        server_endpoint=config.server_endpoint,
        log_path=config.log_path,
        session_id=config.session_id,
    )


# ---- request context parts given by blob id ----

# Each part: its name in error messages, its field prefix in RequestContextPartReferences,
# and the message its blob holds.
_PARTS: tuple[tuple[str, type[Message]], ...] = (
    ("rules", agent.RequestContextRulesPart),
    ("skills", agent.RequestContextSkillsPart),
    ("subagents", agent.RequestContextSubagentsPart),
    ("mcps", agent.RequestContextMcpsPart),
)


def context_parts(refs: agent.RequestContextPartReferences | None) -> tuple[tuple[str, bytes], ...]:
    """(part name, blob id) of every part given by blob id: the blobs to fetch. An empty id
    with a non-zero byte length is a ``RuntimeContextError``."""
    if refs is None:
        return ()
    parts = []
    for name, _ in _PARTS:
        blob_id: bytes = getattr(refs, f"{name}_blob_id")
        length: int = getattr(refs, f"{name}_byte_length")
        if blob_id:
            parts.append((name, blob_id))
        elif length:
            raise RuntimeContextError(
                f"request_context_parts: the {name} part has {length} bytes but no blob id"
            )
    return tuple(parts)


def merged_context(
    base: agent.RequestContext | None,
    refs: agent.RequestContextPartReferences | None,
    blobs: Mapping[bytes, bytes],
) -> agent.RequestContext | None:
    """``base`` with each part of ``refs`` laid over it: every field of the part replaces
    the RequestContext field of the same name. The blobs were fetched (and their SHA-256
    checked) beforehand; a blob missing, of another length than declared, or that does not
    decode as its part is a ``RuntimeContextError``."""
    ids = dict(context_parts(refs))
    if not ids:
        return base
    assert refs is not None
    merged = agent.RequestContext()
    if base is not None:
        merged.CopyFrom(base)
    for name, part_type in _PARTS:
        if name in ids:
            length = getattr(refs, f"{name}_byte_length")
            _overlay(merged, _decoded_part(name, ids[name], length, part_type, blobs))
    return merged


def _decoded_part(
    name: str, blob_id: bytes, length: int, part_type: type[Message], blobs: Mapping[bytes, bytes]
) -> Message:
    label = f"request_context_parts: the {name} part (blob {blob_id.hex()})"
    data = blobs.get(blob_id)
    if data is None:
        raise RuntimeContextError(f"{label} was not fetched")
    if len(data) != length:
        raise RuntimeContextError(f"{label} is {len(data)} bytes, not the {length} declared")
    part = part_type()
    try:
        part.ParseFromString(data)
    except DecodeError as exc:
        raise RuntimeContextError(f"{label} does not decode: {exc}") from None
    return part


def _overlay(context: agent.RequestContext, part: Message) -> None:
    """Replace each RequestContext field the part declares by the part's value."""
    fields = context.DESCRIPTOR.fields_by_name
    for field in part.DESCRIPTOR.fields:
        if field.name not in fields:
            continue
        context.ClearField(field.name)
        value = getattr(part, field.name)
        if field.is_repeated:
            getattr(context, field.name).extend(value)
        elif field.message_type is not None:
            if part.HasField(field.name):
                getattr(context, field.name).CopyFrom(value)
        elif not field.has_presence or part.HasField(field.name):
            setattr(context, field.name, value)


# ---- selected context ----


def _open_files(selected: Message | None) -> OpenFiles | None:
    invocation = _message(selected, "invocation_context")
    ide_state = _message(invocation, "ide_state")
    if ide_state is None:
        return None
    open_files = OpenFiles(
        recently_viewed=tuple(
            RecentFile(path=file.path, total_lines=file.total_lines or None)
            for file in _items(ide_state, "recently_viewed_files")
            if file.path
        ),
        visible=tuple(
            VisibleFile(
                path=file.path,
                total_lines=file.total_lines or None,
                cursor_line=_cursor_line(file),
            )
            for file in _items(ide_state, "visible_files")
            if file.path
        ),
    )
    return None if open_files == OpenFiles() else open_files


def _cursor_line(file: Message) -> int | None:
    position = _message(file, "cursor_position")
    return None if position is None else position.line


def _selected(selected: Message | None) -> SelectedContext | None:
    if selected is None:
        return None
    context = SelectedContext(
        extra=tuple(text for text in _items(selected, "extra_context") if text.strip()),
        files=tuple(
            SelectedFile(path=file.path, content=file.content)
            for file in _items(selected, "files")
            if file.path
        ),
        code=tuple(_code(code) for code in _items(selected, "code_selections") if code.path),
        terminals=tuple(
            Terminal(title=_text(term, "title"), content=term.content)
            for term in _items(selected, "terminals")
            if term.content.strip()
        ),
        terminal_selections=tuple(
            TerminalSelection(title=_text(term, "title"), content=term.content)
            for term in _items(selected, "terminal_selections")
            if term.content.strip()
        ),
        rules=tuple(
            SelectedRule(path=rule.full_path, content=rule.content)
            for rule in (_message(item, "rule") for item in _items(selected, "cursor_rules"))
            if rule is not None and (rule.full_path or rule.content.strip())
        ),
        commands=tuple(
            SelectedCommand(name=command.name, content=command.content)
            for command in _items(selected, "cursor_commands")
            if command.name or command.content.strip()
        ),
        skills=tuple(
            SelectedSkill(
                path=skill.full_path, description=skill.description, content=skill.content
            )
            for skill in _items(selected, "selected_skills")
            if skill.full_path or skill.content.strip()
        ),
        links=tuple(
            ExternalLink(url=link.url, pdf_content=_text(link, "pdf_content"))
            for link in _items(selected, "external_links")
            if link.url.strip()
        ),
    )
    return None if context == SelectedContext() else context


def _code(code: agent.SelectedCodeSelection) -> SelectedCode:
    selection = _message(code, "range")
    start = _message(selection, "start")
    end = _message(selection, "end")
    return SelectedCode(
        path=code.path,
        content=code.content,
        start_line=None if start is None else start.line,
        end_line=None if end is None else end.line,
    )


# ---- images ----


def _image(number: int, image: agent.SelectedImage, blobs: Mapping[bytes, bytes]) -> ImagePart:
    mime_type = _text(image, "mime_type")
    if not mime_type.startswith("image/") or len(mime_type) == len("image/"):
        raise RuntimeContextError(
            f"selected image {number} has mime type {mime_type!r}, not an image/… type"
        )
    source = _which(image, "data_or_blob_id")
    if source == "data":
        data = image.data
    elif source == "blob_id_with_data":
        data = image.blob_id_with_data.data
        blob_id = image.blob_id_with_data.blob_id
        if not data and blob_id:
            data = _fetched(number, blob_id, blobs)
        elif data and blob_id_of(data) != blob_id:
            raise RuntimeContextError(
                f"selected image {number}: the SHA-256 of its data does not match its blob id"
            )
    elif source == "blob_id":
        data = _fetched(number, image.blob_id, blobs)
    elif source is None:
        raise RuntimeContextError(f"selected image {number} carries no image data")
    else:
        raise RuntimeContextError(f"selected image {number} is given as {source}, not supported")
    if not data:
        raise RuntimeContextError(f"selected image {number} has empty data")
    return ImagePart(mime_type=mime_type, data=data)


def _fetched(number: int, blob_id: bytes, blobs: Mapping[bytes, bytes]) -> bytes:
    data = blobs.get(blob_id)
    if data is None:
        raise RuntimeContextError(
            f"selected image {number} is given by blob id {blob_id.hex()}, which was not fetched"
        )
    return data


# ---- reading fields our proto subset may not declare yet ----


def _message(message: Message | None, name: str) -> Any:
    """The sub-message ``name`` if it is set; ``None`` when unset or not in our subset."""
    if message is None or name not in message.DESCRIPTOR.fields_by_name:
        return None
    return getattr(message, name) if message.HasField(name) else None


def _items(message: Message | None, name: str) -> Sequence[Any]:
    """The repeated field ``name``; empty when ``message`` is absent or our subset lacks it."""
    if message is None or name not in message.DESCRIPTOR.fields_by_name:
        return ()
    items: Sequence[Any] = getattr(message, name)
    return items


def _text(message: Message, name: str) -> str:
    """The string field ``name``; empty when our subset lacks it."""
    text: str = getattr(message, name) if name in message.DESCRIPTOR.fields_by_name else ""
    return text


def _which(message: Message, oneof: str) -> str | None:
    """The field set in ``oneof``; ``None`` when none is or our subset lacks the oneof."""
    if oneof not in message.DESCRIPTOR.oneofs_by_name:
        return None
    which: str | None = message.WhichOneof(oneof)
    return which
