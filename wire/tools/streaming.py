"""Edit content streamed into the card while the model is still writing the arguments.

A tool whose ``ToolDefinition`` names a ``streamed_content_field`` (Write's ``contents``,
StrReplace's and EditNotebook's ``new_string``) gets a ``StreamedArgsDecoder``; what it yields
becomes edit-card frames. Every other tool's argument deltas go out as raw ``args_text_delta``
partials.
"""

from __future__ import annotations

from wire.streamed_args import ArgsEvent, ContentDelta, FieldCompleted, StreamedArgsDecoder
from wire.tools.base import ToolDefinition
from wire.tools.frames import edit_content_delta_frame, edit_path_partial_frame
from wire.tools.registry import find_tool


def _streamed(tool_name: str) -> ToolDefinition | None:
    """The tool's definition when its card streams its content, else None."""
    definition = find_tool(tool_name)
    if definition is None or definition.streamed_content_field is None:
        return None
    return definition


def streamed_args_decoder(tool_name: str) -> StreamedArgsDecoder | None:
    """The decoder for a call's argument stream when its card shows the content as it streams.

    Write streams ``contents``, StrReplace and EditNotebook ``new_string``, LF-normalized like
    the content the call is dispatched with, and each reports its path field (``path``,
    EditNotebook's ``target_notebook``) once its string is complete. Any other tool, an unknown
    name included, gets None: its argument deltas go out as raw ``args_text_delta`` partials
    (``partial_tool_call_frame``).
    """
    definition = _streamed(tool_name)
    if definition is None or definition.streamed_content_field is None:
        return None
    return StreamedArgsDecoder(
        definition.streamed_content_field,
        report_fields=(definition.streamed_path_field,),
        normalize_newlines=True,
    )


def streamed_args_frames(
    call_id: str, tool_name: str, model_call_id: str, events: list[ArgsEvent]
) -> list[bytes]:
    """The interaction updates for what a call's ``streamed_args_decoder`` yielded, in order.

    For the edit tools: each ``ContentDelta`` becomes a ``tool_call_delta`` carrying
    ``edit_tool_call_delta.stream_content_delta`` (the client appends it to the card's content),
    and the completed path field a ``partial_tool_call`` whose placeholder holds
    ``edit_tool_call.args.path``, with an empty ``args_text_delta``; content may come before the
    path when the model writes that field first. The end of the content sends nothing. These
    tools send no raw ``args_text_delta`` partials: the streamed content replaces them. Any
    other tool gets no frames.
    """
    definition = _streamed(tool_name)
    if definition is None:
        return []
    frames: list[bytes] = []
    for event in events:
        match event:
            case ContentDelta(text=text):
                frames.append(edit_content_delta_frame(call_id, model_call_id, text))
            case FieldCompleted(name=name, value=path) if name == definition.streamed_path_field:
                frames.append(edit_path_partial_frame(call_id, model_call_id, path))
            case _:
                pass
    return frames
