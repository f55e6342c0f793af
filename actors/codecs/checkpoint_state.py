"""The protobuf pieces of a checkpoint (sans-IO): step, turn, user-message and todo blobs, the
token details with their 8-category breakdown, and the ``ConversationStateStructure`` itself.

Everything here is a pure function of its inputs, and every blob is serialized
deterministically: a blob id is the SHA-256 of these bytes, so equal content must give equal
bytes for a re-sent blob to be recognised (and for step id lists to stay an immutable prefix).
Storing and uploading the blobs is the caller's job.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

import msgspec
from google.protobuf.message import DecodeError, Message

from actors.codecs.checkpoint_json import regroup_rounds
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    TextPart,
    ToolResultContent,
    is_summary,
    starts_turn,
    summary_text,
)
from wire.json_input import decode_json
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs, ToolArgumentError
from wire.tools.base import Todo
from wire.tools.registry import normalize_tool_name
from wire.tools.switch_mode import MODE_IDS
from wire.tools.todo_write import (
    TodoUpdate,
    apply_todo_update,
    parse_todo_update,
    todo_item,
)

BLOB_ID_SIZE = 32  # SHA-256, as in store.blobs
_UINT32_MAX = 2**32 - 1

Step = agent.AssistantMessage | agent.ThinkingMessage | agent.ToolCall


class CheckpointStateError(ValueError):
    """Inputs a checkpoint cannot be built from (a malformed TodoWrite, a bad blob id, ...)."""


# ---- steps, user message, turn ---------------------------------------------------------------


def step_blob(step: Step) -> bytes:
    """A ``ConversationStep`` blob wrapping one assistant text, thinking or tool call."""
    if isinstance(step, agent.AssistantMessage):
        wrapper = agent.ConversationStep(assistant_message=step)
    elif isinstance(step, agent.ThinkingMessage):
        wrapper = agent.ConversationStep(thinking_message=step)
    elif isinstance(step, agent.ToolCall):
        wrapper = agent.ConversationStep(tool_call=step)
    else:
        raise TypeError(f"not a conversation step: {type(step).__name__}")
    return _serialize(wrapper)


def assistant_step_blob(text: str) -> bytes:
    """The step for a text block that ended; empty text is not a step."""
    if not text:
        raise CheckpointStateError("an assistant step needs text")
    return step_blob(agent.AssistantMessage(text=text))


def thinking_step_blob(text: str, duration_ms: int) -> bytes:
    """The step for a thinking block that ended (duration clamped to uint32)."""
    if not text:
        raise CheckpointStateError("a thinking step needs text")
    duration = min(max(duration_ms, 0), _UINT32_MAX)
    return step_blob(agent.ThinkingMessage(text=text, duration_ms=duration))


def user_message_blob(user_message: agent.UserMessage, mode: int) -> bytes:
    """The turn's ``UserMessage`` blob: the client's message with ``mode`` set to the run's mode
    (every other field, unknown ones included, kept)."""
    copy = agent.UserMessage()
    copy.CopyFrom(user_message)
    copy.mode = mode  # type: ignore[assignment]
    return _serialize(copy)


def turn_blob(user_message_blob_id: bytes, step_ids: Sequence[bytes], request_id: str) -> bytes:
    """A ``ConversationTurnStructure`` blob for an agent turn."""
    turn = agent.AgentConversationTurnStructure(
        user_message=_blob_id(user_message_blob_id, "user_message"),
        steps=[_blob_id(step, "step") for step in step_ids],
        request_id=request_id,
    )
    return _serialize(agent.ConversationTurnStructure(agent_conversation_turn=turn))


def shell_turn_blob(shell_command_blob_id: bytes, shell_output_blob_id: bytes) -> bytes:
    """A ``ConversationTurnStructure`` blob for a command the user ran from the chat: the blob
    ids of its ``ShellCommand`` and its ``ShellOutput``."""
    turn = agent.ShellConversationTurnStructure(
        shell_command=_blob_id(shell_command_blob_id, "shell_command"),
        shell_output=_blob_id(shell_output_blob_id, "shell_output"),
    )
    return _serialize(agent.ConversationTurnStructure(shell_conversation_turn=turn))


def _agent_turn_wrapper(data: bytes) -> agent.ConversationTurnStructure:
    """The client's turn blob, which must hold an agent turn (a shell or unknown turn, or bytes
    that do not parse, cannot be resumed: the client's state, not our bug)."""
    try:
        wrapper = agent.ConversationTurnStructure.FromString(data)
    except DecodeError as exc:
        raise CheckpointStateError(f"current Cursor turn blob does not parse: {exc}") from None
    if wrapper.WhichOneof("turn") != "agent_conversation_turn":
        raise CheckpointStateError("current Cursor turn is not an agent conversation turn")
    return wrapper


def decode_turn(data: bytes) -> agent.AgentConversationTurnStructure:
    """The agent turn of a turn blob; a shell (or unknown) turn cannot be resumed."""
    return _agent_turn_wrapper(data).agent_conversation_turn


def turn_step_ids(data: bytes) -> list[bytes]:
    """The step blob ids of a turn blob (none for a turn that is not an agent turn)."""
    wrapper = agent.ConversationTurnStructure.FromString(data)
    if wrapper.WhichOneof("turn") != "agent_conversation_turn":
        return []
    return list(wrapper.agent_conversation_turn.steps)


def extend_turn_blob(data: bytes, new_step_ids: Sequence[bytes]) -> bytes:
    """A resumed turn with more steps: the client's turn blob (fields we do not declare kept)
    with ``new_step_ids`` appended, so the old step list stays a prefix."""
    wrapper = _agent_turn_wrapper(data)
    wrapper.agent_conversation_turn.steps.extend(_blob_id(step, "step") for step in new_step_ids)
    return _serialize(wrapper)


# ---- the state -------------------------------------------------------------------------------


def build_state(
    base: agent.ConversationStateStructure | None,
    *,
    roots: Sequence[bytes],
    turns: Sequence[bytes],
    pending: Sequence[str],
    mode: int,
    read_paths: Iterable[str] = (),
    todos: Sequence[bytes] | None = None,
    plan: bytes | None = None,
    token_details: agent.ConversationTokenDetails | None = None,
    progress: tuple[str, agent.CommunicateUpdateTurnState | None] | None = None,
    summaries: SummaryBlobs | None = None,
) -> agent.ConversationStateStructure:
    """The checkpoint: ``base`` (the client's state) with the fields the server owns replaced.

    Everything else in ``base`` (file states, summaries, subagent state, fields this subset
    does not declare) is copied through unchanged. ``read_paths`` are added to the base's,
    keeping order and dropping repeats; ``todos``, ``plan`` (a ``ConversationPlan`` blob id)
    and ``token_details`` replace the base's when given and keep it when ``None``.
    ``progress`` (a subagent run's parent Task call id and its UpdateCurrentStep state, or
    ``None`` for none yet) replaces the whole ``communicate_update_states_by_parent_tool_call_id``
    map; ``None`` keeps the base's. ``summaries`` (the history's compactions) sets ``summary``,
    adds the archives the base lacks to ``summary_archives`` and counts them in
    ``self_summary_count``; ``None`` keeps the base's.
    """
    state = agent.ConversationStateStructure()
    if base is not None:
        state.CopyFrom(base)
    _replace(state.root_prompt_messages_json, [_blob_id(r, "root") for r in roots])
    _replace(state.turns, [_blob_id(t, "turn") for t in turns])
    _replace(state.pending_tool_calls, list(pending))
    state.mode = mode  # type: ignore[assignment]
    seen = set(state.read_paths)
    for path in read_paths:
        if path not in seen:
            seen.add(path)
            state.read_paths.append(path)
    if todos is not None:
        _replace(state.todos, [_blob_id(t, "todo") for t in todos])
    if plan is not None:
        state.plan = _blob_id(plan, "plan")
    if token_details is not None:
        state.token_details.CopyFrom(token_details)
    if progress is not None:
        states = state.communicate_update_states_by_parent_tool_call_id
        states.clear()
        parent_call_id, turn_state = progress
        if turn_state is not None:
            states[parent_call_id].CopyFrom(turn_state)
    if summaries is not None:
        state.summary = _blob_id(summaries.summary, "summary")
        known = set(state.summary_archives)
        for archive in summaries.archives:
            if _blob_id(archive, "summary archive") not in known:
                state.summary_archives.append(archive)
                state.self_summary_count += 1
    return state


class SummaryBlobs(msgspec.Struct, frozen=True):
    """The blob ids of the newest summary (a ``ConversationSummary``) and of one
    ``ConversationSummaryArchive`` per summary, oldest first."""

    summary: bytes
    archives: tuple[bytes, ...]


def summary_blobs(
    messages: Sequence[CanonicalMessage], roots: Sequence[bytes]
) -> tuple[bytes, list[bytes]] | None:
    """The checkpoint's summary blobs for a history (None: it holds no summary): the newest
    summary's ``ConversationSummary``, then one archive per summary naming the roots it
    condensed, the summary's own root and how many roots of the tail it kept verbatim
    (``window_tail``). ``roots`` are the state's roots (the system root first), one per
    regrouped message."""
    summaries = [m for m in messages if is_summary(m)]
    if not summaries:
        return None
    # A staged state's roots may stop short of ``messages`` (the final answer not yet a root).
    regrouped = regroup_rounds(messages)[: len(roots) - 1]
    if len(regrouped) != len(roots) - 1:
        raise CheckpointStateError(f"{len(roots)} roots for {len(regrouped)} messages")
    at = {m.message_id: i + 1 for i, m in enumerate(regrouped)}
    summaries = [m for m in summaries if m.message_id in at]
    if not summaries:
        return None
    archives: list[bytes] = []
    for message in summaries:
        own = at[message.message_id]
        start = at[message.summary_tail] if message.summary_tail else own
        archive = agent.ConversationSummaryArchive(
            summarized_messages=roots[1:start],
            summary=summary_text(message),
            window_tail=own - start,
            summary_message=roots[own],
        )
        archives.append(archive.SerializeToString())
    newest = agent.ConversationSummary(summary=summary_text(summaries[-1]))
    return newest.SerializeToString(), archives


def _replace(field: Any, values: list[Any]) -> None:
    del field[:]
    field.extend(values)


# ---- token details ---------------------------------------------------------------------------


class ToolDefinition(Protocol):
    """What the breakdown measures of a tool (``actors.conversation.request.ToolSpec`` fits)."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...


# id, label; the order is the one Cursor's context panel shows.
BREAKDOWN_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("system_prompt", "System prompt"),
    ("tools", "Tool definitions"),
    ("rules", "Rules"),
    ("skills", "Skills"),
    ("mcp", "MCP & dynamic tools"),
    ("subagents", "Subagent definitions"),
    ("summarized_conversation", "Summarized conversation"),
    ("conversation", "Conversation"),
)
_SYSTEM, _TOOLS, _RULES, _SKILLS, _MCP, _SUBAGENTS, _SUMMARY, _CONVERSATION = range(8)

# Tagged ranges of the runtime user message and the category each belongs to.
_RUNTIME_TAGS = (
    ("rules", _RULES),
    ("rule", _RULES),
    ("agent_skills", _SKILLS),
    ("skill", _SKILLS),
    ("subagents", _SUBAGENTS),
    ("mcp_meta_tools", _MCP),
)


class _Measure:
    """UTF-16 length and estimated milli-tokens of the text added to one category."""

    __slots__ = ("characters", "milli_tokens")

    def __init__(self) -> None:
        self.characters = 0
        self.milli_tokens = 0

    def add(self, text: str) -> None:
        for char in text:
            units = 2 if ord(char) > 0xFFFF else 1
            self.characters += units
            self.milli_tokens += units * (273 if char.isascii() else 550)

    def tokens(self) -> int:
        return -(-self.milli_tokens // 1000)


def token_details(
    base: agent.ConversationTokenDetails | None,
    *,
    used_tokens: int | None,
    context_window: int | None,
    instructions: str,
    tools: Sequence[ToolDefinition],
    dynamic_tools: Collection[str],
    messages: Sequence[CanonicalMessage],
) -> agent.ConversationTokenDetails | None:
    """The checkpoint's ``token_details``, or ``None`` to leave the base's untouched.

    ``used_tokens`` is input + output of the latest model call (``None`` when unknown);
    ``max_tokens`` is the base's when non-zero, else the model's ``context_window``. With a new
    count the details are rebuilt (dropping the client's usage tree and snapshot blob, which
    describe an older prompt); without one the base's are kept. Either way the breakdown is
    recomputed so its categories sum exactly to ``used_tokens``.
    """
    max_tokens = base.max_tokens if base is not None and base.max_tokens else context_window
    details = agent.ConversationTokenDetails()
    if used_tokens is not None and max_tokens is not None:
        details.used_tokens = _clamp_u32(used_tokens)
        details.max_tokens = _clamp_u32(max_tokens)
    elif base is not None:
        details.CopyFrom(base)
    else:
        return None
    baseline = base.breakdown if base is not None and base.HasField("breakdown") else None
    details.breakdown.CopyFrom(
        token_breakdown(
            used_tokens=details.used_tokens,
            max_tokens=details.max_tokens,
            baseline=baseline,
            instructions=instructions,
            tools=tools,
            dynamic_tools=dynamic_tools,
            messages=messages,
        )
    )
    return details


def token_breakdown(
    *,
    used_tokens: int,
    max_tokens: int,
    baseline: agent.PromptTokenBreakdownSnapshot | None,
    instructions: str,
    tools: Sequence[ToolDefinition],
    dynamic_tools: Collection[str],
    messages: Sequence[CanonicalMessage],
) -> agent.PromptTokenBreakdownSnapshot:
    """The 8 categories of Cursor's context panel, estimated from characters (ASCII 0.273,
    other 0.55 tokens per UTF-16 unit) and fitted to the provider's count: the special ones are
    scaled down proportionally (largest remainder) if they exceed it, and ``conversation`` takes
    the rest, so the categories always sum to ``used_tokens``."""
    measures = [_Measure() for _ in BREAKDOWN_CATEGORIES]
    measures[_SYSTEM].add(instructions)
    for tool in tools:
        encoded = msgspec.json.encode(
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        ).decode("utf-8")
        measures[_MCP if tool.name in dynamic_tools else _TOOLS].add(encoded)
    for message in messages:
        _measure_message(message, measures)
    estimates = [measure.tokens() for measure in measures]
    summary = _baseline_summary(baseline)
    if summary is not None:
        measures[_SUMMARY].characters = summary.character_count
        estimates[_SUMMARY] = summary.estimated_tokens
    estimates[:_CONVERSATION] = _fit(estimates[:_CONVERSATION], used_tokens)
    estimates[_CONVERSATION] = max(used_tokens - sum(estimates[:_CONVERSATION]), 0)
    snapshot = agent.PromptTokenBreakdownSnapshot(
        total_used_tokens=_clamp_u32(used_tokens), max_tokens=_clamp_u32(max_tokens)
    )
    for (category_id, label), estimate, measure in zip(
        BREAKDOWN_CATEGORIES, estimates, measures, strict=True
    ):
        category = snapshot.categories.add(
            id=category_id, label=label, estimated_tokens=_clamp_u32(estimate)
        )
        if measure.characters:
            category.character_count = _clamp_u32(measure.characters)
    return snapshot


def _baseline_summary(
    baseline: agent.PromptTokenBreakdownSnapshot | None,
) -> agent.PromptTokenBreakdownCategory | None:
    """The previous snapshot's summarized-conversation category: the server does not
    summarize, so the client's figure is carried over."""
    if baseline is None:
        return None
    for category in baseline.categories:
        if category.id == BREAKDOWN_CATEGORIES[_SUMMARY][0]:
            return category
    return None


def _measure_message(message: CanonicalMessage, measures: list[_Measure]) -> None:
    content = message.content
    conversation = measures[_CONVERSATION]
    if isinstance(content, PartsContent):
        for part in content.parts:
            if not isinstance(part, TextPart):
                continue
            if message.origin is Origin.RUNTIME:
                _measure_runtime(part.text, measures)
            else:
                conversation.add(part.text)
    elif isinstance(content, AssistantContent):
        conversation.add(content.text)
        conversation.add(content.thinking)
        if content.tool_calls:
            conversation.add(msgspec.json.encode(content.tool_calls).decode("utf-8"))
    else:
        conversation.add(msgspec.json.encode(content).decode("utf-8"))


def _measure_runtime(text: str, measures: list[_Measure]) -> None:
    """Split the rendered runtime message: tagged context blocks go to their categories, the
    rest (the user's query, open files, ...) is conversation."""
    ranges: list[tuple[int, int, int]] = []
    for tag, category in _RUNTIME_TAGS:
        ranges.extend(_tag_ranges(text, tag, category))
    ranges.sort(key=lambda r: r[0])
    cursor = 0
    for start, end, category in ranges:
        if start < cursor:
            continue
        measures[_CONVERSATION].add(text[cursor:start])
        measures[category].add(text[start:end])
        cursor = end
    measures[_CONVERSATION].add(text[cursor:])


def _tag_ranges(text: str, tag: str, category: int) -> list[tuple[int, int, int]]:
    """``(start, end, category)`` of each ``<tag ...>...</tag>`` block, outermost first."""
    opening, closing = f"<{tag}", f"</{tag}>"
    out: list[tuple[int, int, int]] = []
    cursor = 0
    while (start := text.find(opening, cursor)) != -1:
        open_end = text.find(">", start)
        if open_end == -1:
            break
        close = text.find(closing, open_end + 1)
        if close == -1:
            break
        end = close + len(closing)
        out.append((start, end, category))
        cursor = end
    return out


def _fit(estimates: list[int], total: int) -> list[int]:
    """Scale ``estimates`` down to sum to ``total`` when they exceed it: floor of the
    proportional share, then one more to the largest remainders (ties: category order)."""
    special = sum(estimates)
    if special <= total or special == 0:
        return estimates
    scaled = [value * total // special for value in estimates]
    remainder = total - sum(scaled)
    order = sorted(range(len(estimates)), key=lambda i: -(estimates[i] * total % special))
    for index in order[:remainder]:
        scaled[index] += 1
    return scaled


def _clamp_u32(value: int) -> int:
    return min(max(value, 0), _UINT32_MAX)


# ---- todos -----------------------------------------------------------------------------------

_TASK_LIST_TOOLS = frozenset({"todowrite", "updatetodos"})


def is_todo_list_tool(name: str) -> bool:
    """Whether a call of ``name`` sets the todo list (ours, or UpdateTodos in an imported
    history)."""
    return normalize_tool_name(name) in _TASK_LIST_TOOLS


def todo_list(messages: Sequence[CanonicalMessage]) -> tuple[Todo, ...] | None:
    """The todo list the history derives, ``None`` when no TodoWrite succeeded in it.

    Each successful call, in result order, replaces the list or merges into it by id
    (``apply_todo_update``); a failed call never changed it."""
    todos: tuple[Todo, ...] | None = None
    for call in _successful_calls(messages):
        if is_todo_list_tool(call.name):
            todos = apply_todo_update(todos or (), todo_update(call.arguments))
    return todos


def todos_from_messages(messages: Sequence[CanonicalMessage]) -> list[bytes] | None:
    """TodoItem blobs of the list the history derives, or ``None`` (keep the client's todos)
    when the history has no successful TodoWrite."""
    todos = todo_list(messages)
    return None if todos is None else [_serialize(todo_item(todo)) for todo in todos]


def todo_update(arguments_json: str) -> TodoUpdate:
    """A history's TodoWrite arguments; an unknown status or a missing id/content/status is an
    error, never a guess."""
    try:
        return parse_todo_update(ToolArgs(arguments_json), merge_required=False)
    except ToolArgumentError as error:
        raise CheckpointStateError(f"TodoWrite arguments: {error}") from error


# ---- what the model's interaction calls leave behind: the plan, the mode -------------------


def _successful_calls(messages: Sequence[CanonicalMessage]) -> Iterable[CanonicalToolCall]:
    """Every call whose result succeeded, in result order."""
    calls: dict[str, CanonicalToolCall] = {}
    for message in messages:
        content = message.content
        if isinstance(content, AssistantContent):
            calls.update((call.call_id, call) for call in content.tool_calls)
        elif isinstance(content, ToolResultContent) and not content.is_error:
            call = calls.get(content.call_id)
            if call is not None:
                yield call


def _arguments(call: CanonicalToolCall) -> dict[str, Any]:
    try:
        arguments = decode_json(call.arguments)
    except msgspec.DecodeError as error:
        raise CheckpointStateError(f"{call.name} arguments are not JSON") from error
    if not isinstance(arguments, dict):
        raise CheckpointStateError(f"{call.name} arguments are not an object")
    return arguments


def latest_plan(messages: Sequence[CanonicalMessage]) -> dict[str, Any] | None:
    """The arguments of the last CreatePlan whose result succeeded (a later plan replaces an
    earlier one), ``None`` without one. Its ``plan`` text is always there: a call without it
    is refused before it reaches the editor."""
    latest: dict[str, Any] | None = None
    for call in _successful_calls(messages):
        if normalize_tool_name(call.name) == "createplan":
            latest = _arguments(call)
            if not isinstance(latest.get("plan"), str):
                raise CheckpointStateError("a successful CreatePlan has no plan text")
    return latest


def plan_blob(messages: Sequence[CanonicalMessage]) -> bytes | None:
    """The ``ConversationPlan`` blob of the conversation's plan, or ``None`` (keep the
    client's) when the history has none."""
    arguments = latest_plan(messages)
    if arguments is None:
        return None
    return _serialize(agent.ConversationPlan(plan=arguments["plan"]))


def switched_mode(messages: Sequence[CanonicalMessage]) -> int | None:
    """The AgentMode of the last approved SwitchMode of the current turn (after the last user
    message: a new message carries its own mode), ``None`` without one."""
    start = 0
    for position, message in enumerate(messages):
        if starts_turn(message):
            start = position
    mode: int | None = None
    for call in _successful_calls(messages[start:]):
        if normalize_tool_name(call.name) == "switchmode":
            target = _arguments(call).get("target_mode_id")
            if target not in MODE_IDS:
                raise CheckpointStateError(f"an approved SwitchMode names no mode: {target!r}")
            mode = MODE_IDS[target]
    return mode


# ---- a subagent's progress: UpdateCurrentStep ----------------------------------------------

_PROGRESS_TOOL = "updatecurrentstep"


def progress_state(messages: Sequence[CanonicalMessage]) -> agent.CommunicateUpdateTurnState | None:
    """What the subagent's successful UpdateCurrentStep calls leave behind, ``None`` without
    one: each call's ``current_step`` with its 1-based step in its turn (counted as
    ``actors.turn.tool_round.message_indexes`` counts it when the call runs: every thinking,
    text and tool call of the turn's earlier rounds, the round's own thinking and text, then
    the call's place in the round), and the last ``final_summary`` and ``completed_subtitle``
    given. Derived from the history alone, so a restart or a rollback gives the same state."""
    before: dict[str, int] = {}  # round id -> steps of its turn before the round
    lead: dict[str, int] = {}  # round id -> the round's thinking and text (0 to 2)
    places: dict[str, list[int]] = {}  # round id -> its calls' provider indexes
    calls: dict[str, tuple[CanonicalToolCall, str]] = {}
    steps = 0
    for message in messages:
        content = message.content
        if starts_turn(message):
            steps = 0
        elif isinstance(content, AssistantContent):
            said = bool(content.thinking) + bool(content.text)
            round_id = content.tool_round_id
            if round_id is not None:
                before.setdefault(round_id, steps)
                lead[round_id] = lead.get(round_id, 0) + said
                for call in content.tool_calls:
                    calls[call.call_id] = (call, round_id)
                    places.setdefault(round_id, []).append(call.index)
            steps += said + len(content.tool_calls)
    state: agent.CommunicateUpdateTurnState | None = None
    for call in _successful_calls(messages):
        if normalize_tool_name(call.name) != _PROGRESS_TOOL or call.call_id not in calls:
            continue
        round_id = calls[call.call_id][1]
        place = sorted(places[round_id]).index(call.index)
        state = state or agent.CommunicateUpdateTurnState()
        _fold_progress(state, _arguments(call), before[round_id] + lead[round_id] + 1 + place)
    return state


def _fold_progress(
    state: agent.CommunicateUpdateTurnState, arguments: dict[str, Any], message_index: int
) -> None:
    step = arguments.get("current_step")
    if isinstance(step, str) and step:
        state.history.add(step=step, message_index=min(message_index, _UINT32_MAX))
    summary, subtitle = arguments.get("final_summary"), arguments.get("completed_subtitle")
    if isinstance(summary, str) and summary:
        state.final_summary = summary
    if isinstance(subtitle, str) and subtitle:
        state.completed_subtitle = subtitle


# ---- helpers ---------------------------------------------------------------------------------


def _serialize(message: Message) -> bytes:
    return message.SerializeToString(deterministic=True)


def _blob_id(value: bytes, what: str) -> bytes:
    """``value`` if it is a 32-byte blob id (catches a hex string or a blob passed by mistake)."""
    if not isinstance(value, bytes) or len(value) != BLOB_ID_SIZE:
        raise CheckpointStateError(f"{what} blob id must be {BLOB_ID_SIZE} raw bytes")
    return value
