"""Checkpoint protobuf pieces: step/turn/user-message/todo blobs, the state, token details."""

from __future__ import annotations

import hashlib

import msgspec
import pytest
from google.protobuf import unknown_fields
from google.protobuf.message import Message

from actors.codecs.checkpoint_state import (
    BREAKDOWN_CATEGORIES,
    CheckpointStateError,
    assistant_step_blob,
    build_state,
    decode_turn,
    extend_turn_blob,
    latest_plan,
    plan_blob,
    step_blob,
    switched_mode,
    thinking_step_blob,
    todo_list,
    todo_update,
    todos_from_messages,
    token_breakdown,
    token_details,
    turn_blob,
    user_message_blob,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
)
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import Todo


def _id(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _unknown(message: Message) -> list[tuple[int, int, object]]:
    fields = unknown_fields.UnknownFieldSet(message)
    found = [fields[index] for index in range(len(fields))]  # indexed: the stub has no __iter__
    return [(f.field_number, f.wire_type, f.data) for f in found]


# ---- steps ------------------------------------------------------------------------------------


def test_step_blobs_decode_to_their_kind() -> None:
    thinking = agent.ConversationStep.FromString(thinking_step_blob("pondering", 1234))
    assert thinking.WhichOneof("message") == "thinking_message"
    assert (thinking.thinking_message.text, thinking.thinking_message.duration_ms) == (
        "pondering",
        1234,
    )
    text = agent.ConversationStep.FromString(assistant_step_blob("hello"))
    assert text.WhichOneof("message") == "assistant_message"
    assert text.assistant_message.text == "hello"
    tool = agent.ToolCall(tool_call_id="call_1", started_at_ms=10, completed_at_ms=20)
    step = agent.ConversationStep.FromString(step_blob(tool))
    assert step.WhichOneof("message") == "tool_call"
    assert step.tool_call == tool


def test_step_blob_bytes_are_exact() -> None:
    # ConversationStep{assistant_message(1){text(1)="hi"}}; thinking(3){text(1), duration_ms(2)}
    assert assistant_step_blob("hi") == b"\x0a\x04\x0a\x02hi"
    assert thinking_step_blob("t", 5) == b"\x1a\x05\x0a\x01t\x10\x05"


def test_a_tool_call_step_keeps_the_typed_fields_we_do_not_declare() -> None:
    typed = _len_field(22, _len_field(1, b"args")) + _len_field(
        57, b"call_1"
    )  # apply_agent_diff_tool_call (undeclared)
    tool = agent.ToolCall.FromString(typed)
    step = agent.ConversationStep.FromString(step_blob(tool))
    assert step.tool_call.SerializeToString() == tool.SerializeToString()
    assert _unknown(step.tool_call) == [(22, 2, _len_field(1, b"args"))]


def test_empty_steps_are_refused_and_durations_clamped() -> None:
    with pytest.raises(CheckpointStateError):
        assistant_step_blob("")
    with pytest.raises(CheckpointStateError):
        thinking_step_blob("", 3)
    step = agent.ConversationStep.FromString(thinking_step_blob("t", 2**40))
    assert step.thinking_message.duration_ms == 2**32 - 1


# ---- user message and turn --------------------------------------------------------------------


def test_user_message_blob_sets_the_mode_and_keeps_everything_else() -> None:
    rich_text = _len_field(8, b"abc")  # rich_text (8) is not declared by our subset
    wire = _len_field(1, b"hello") + _len_field(2, b"m-1") + _tag(4, 0) + b"\x01"
    client = agent.UserMessage.FromString(wire + rich_text)
    blob = user_message_blob(client, agent.AGENT_MODE_PLAN)
    decoded = agent.UserMessage.FromString(blob)
    assert (decoded.text, decoded.message_id, decoded.mode) == ("hello", "m-1", 3)
    assert _unknown(decoded) == [(8, 2, b"abc")]
    assert client.mode == agent.AGENT_MODE_AGENT  # the input is not modified


def test_turn_blob_decodes_to_the_given_ids_and_request_id() -> None:
    user, steps = _id("user"), [_id("s1"), _id("s2")]
    blob = turn_blob(user, steps, "req-1")
    wrapper = agent.ConversationTurnStructure.FromString(blob)
    assert wrapper.WhichOneof("turn") == "agent_conversation_turn"
    turn = wrapper.agent_conversation_turn
    assert turn.user_message == user
    assert list(turn.steps) == steps
    assert turn.HasField("request_id") and turn.request_id == "req-1"
    assert decode_turn(blob) == turn
    assert turn_blob(user, [], "req-1") != blob
    assert list(decode_turn(turn_blob(user, [], "req-1")).steps) == []


def test_turn_blob_refuses_ids_that_are_not_32_bytes() -> None:
    with pytest.raises(CheckpointStateError, match="blob id"):
        turn_blob(_id("user").hex().encode(), [], "r")
    with pytest.raises(CheckpointStateError, match="blob id"):
        turn_blob(_id("user"), [b"short"], "r")


def test_extend_turn_blob_appends_steps_and_keeps_client_fields() -> None:
    client_turn = (
        _len_field(1, _id("user"))
        + _len_field(2, _id("s1"))
        + _len_field(3, b"req-0")
        + _len_field(4, b"encrypted")  # encrypted_model, not declared
        + _tag(5, 0)
        + _varint(7)  # dynamic_tool_count, not declared
    )
    blob = _len_field(1, client_turn)
    extended = decode_turn(extend_turn_blob(blob, [_id("s2")]))
    assert list(extended.steps) == [_id("s1"), _id("s2")]
    assert extended.request_id == "req-0"
    assert _unknown(extended) == [(4, 2, b"encrypted"), (5, 0, 7)]


def test_a_shell_turn_cannot_be_resumed() -> None:
    shell_turn = _len_field(2, b"")
    with pytest.raises(CheckpointStateError, match="not an agent conversation turn"):
        decode_turn(shell_turn)
    with pytest.raises(CheckpointStateError, match="not an agent conversation turn"):
        extend_turn_blob(shell_turn, [_id("s")])


# ---- build_state ------------------------------------------------------------------------------


def _base_with_unknown_fields() -> tuple[agent.ConversationStateStructure, bytes]:
    """A client state: known fields, then fields our subset does not declare."""
    token = (
        _tag(1, 0) + _varint(100) + _tag(2, 0) + _varint(200_000) + _len_field(4, b"\x08\x01")
    )  # prompt_context_usage_tree (4) is not declared
    known = (
        _len_field(1, _id("old-root"))
        + _len_field(3, _id("old-todo"))
        + _len_field(4, b"old pending")
        + _len_field(5, token)
        + _len_field(7, _id("plan"))
        + _len_field(8, _id("old-turn"))
        + _tag(10, 0)
        + _varint(1)
        + _len_field(18, b"/a")
        + _len_field(6, _id("summary"))  # summary, declared for compaction
        + _tag(17, 0)
        + _varint(4)  # self_summary_count
    )
    unknown = (
        _len_field(12, _len_field(1, b"/f") + _len_field(2, b"state"))  # file_states entry
        + _len_field(22, b"agent-type")
        + _tag(33, 0)
        + _varint(1)  # is_root_project_conversation
    )
    return agent.ConversationStateStructure.FromString(known + unknown), unknown


def test_build_state_keeps_unknown_base_fields_byte_for_byte() -> None:
    base, unknown = _base_with_unknown_fields()
    state = build_state(
        base,
        roots=[_id("r0"), _id("r1")],
        turns=[_id("t0")],
        pending=['{"role":"assistant"}'],
        mode=agent.AGENT_MODE_ASK,
        read_paths=["/b", "/a", "/b"],
    )
    wire = state.SerializeToString()
    assert wire.endswith(unknown)
    assert _unknown(state) == _unknown(base)
    assert list(state.root_prompt_messages_json) == [_id("r0"), _id("r1")]
    assert list(state.turns) == [_id("t0")]
    assert list(state.pending_tool_calls) == ['{"role":"assistant"}']
    assert state.mode == agent.AGENT_MODE_ASK
    assert list(state.read_paths) == ["/a", "/b"]
    # Fields the call does not replace are the base's, unknown sub-fields included.
    assert list(state.todos) == [_id("old-todo")]
    assert state.plan == _id("plan")
    assert (state.summary, state.self_summary_count) == (_id("summary"), 4)
    assert state.token_details == base.token_details
    assert _unknown(state.token_details) == [(4, 2, b"\x08\x01")]
    # The base itself is left alone.
    assert list(base.root_prompt_messages_json) == [_id("old-root")]


def test_build_state_replaces_todos_and_token_details_when_given() -> None:
    base, unknown = _base_with_unknown_fields()
    details = agent.ConversationTokenDetails(used_tokens=5, max_tokens=10)
    state = build_state(
        base,
        roots=[],
        turns=[],
        pending=[],
        mode=agent.AGENT_MODE_AGENT,
        todos=[_id("new-todo")],
        token_details=details,
    )
    assert list(state.todos) == [_id("new-todo")]
    assert state.token_details == details
    assert not _unknown(state.token_details)
    assert list(state.pending_tool_calls) == []
    assert state.SerializeToString().endswith(unknown)


def test_build_state_without_a_base() -> None:
    state = build_state(
        None, roots=[_id("r")], turns=[], pending=[], mode=agent.AGENT_MODE_AGENT, todos=[]
    )
    assert state.HasField("mode") and state.mode == agent.AGENT_MODE_AGENT
    assert not state.HasField("token_details")
    assert list(state.root_prompt_messages_json) == [_id("r")]
    with pytest.raises(CheckpointStateError, match="root blob id"):
        build_state(None, roots=[b"x"], turns=[], pending=[], mode=1)


# ---- token details and breakdown --------------------------------------------------------------


class Tool(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, object]


def _runtime(text: str) -> CanonicalMessage:
    return CanonicalMessage("runtime:x", Role.USER, Origin.RUNTIME, PartsContent((TextPart(text),)))


def _categories(snapshot: agent.PromptTokenBreakdownSnapshot) -> dict[str, tuple[int, int | None]]:
    return {
        c.id: (c.estimated_tokens, c.character_count if c.HasField("character_count") else None)
        for c in snapshot.categories
    }


def test_breakdown_categories_order_labels_and_estimates() -> None:
    rules = "<rules>" + "r" * 985 + "</rules>"  # 1000 chars -> 273 tokens
    skills = "<agent_skills>" + "s" * 471 + "</agent_skills>"  # 500 chars -> 136.5 -> 137
    subagents = '<subagents><subagent name="x">d</subagent></subagents>'
    mcp = "<mcp_meta_tools>m</mcp_meta_tools>"  # 34 chars -> 9.282 -> 10
    messages = [
        _runtime(f"before{rules}mid{skills}{subagents}{mcp}after"),
        CanonicalMessage(
            "u", Role.USER, Origin.USER, PartsContent((TextPart("\u00e9\U0001f600"),))
        ),
    ]
    tools = [Tool("Read", "reads", {}), Tool("mcp_x", "dyn", {})]
    snapshot = token_breakdown(
        used_tokens=5000,
        max_tokens=200_000,
        baseline=None,
        instructions="a" * 1000,
        tools=tools,
        dynamic_tools={"mcp_x"},
        messages=messages,
    )
    assert [(c.id, c.label) for c in snapshot.categories] == list(BREAKDOWN_CATEGORIES)
    assert (snapshot.total_used_tokens, snapshot.max_tokens) == (5000, 200_000)
    categories = _categories(snapshot)
    read_json = '{"name":"Read","description":"reads","parameters":{}}'  # 54 chars -> 14.742
    mcp_json = '{"name":"mcp_x","description":"dyn","parameters":{}}'  # 53 chars
    assert categories["system_prompt"] == (273, 1000)
    assert categories["tools"] == (15, len(read_json))
    assert categories["rules"] == (273, 1000)
    assert categories["skills"] == (137, 500)
    assert categories["subagents"] == (15, len(subagents))  # 54 chars -> 14.742 -> 15
    # mcp: the dynamic tool's JSON plus the runtime block, 53 + 34 chars -> 23.751 -> 24
    assert categories["mcp"] == (24, len(mcp_json) + len(mcp))
    assert categories["summarized_conversation"] == (0, None)
    # conversation: "before" + "mid" + "after" + é (1 unit) + 😀 (2 UTF-16 units)
    others = 273 + 15 + 273 + 137 + 15 + 24
    assert categories["conversation"] == (5000 - others, 14 + 3)
    assert sum(c.estimated_tokens for c in snapshot.categories) == 5000


def test_non_ascii_costs_more_per_utf16_unit() -> None:
    snapshot = token_breakdown(
        used_tokens=100,
        max_tokens=1000,
        baseline=None,
        instructions="\u00e9\U0001f600",  # 3 UTF-16 units * 550 = 1650 milli-tokens -> 2
        tools=[],
        dynamic_tools=(),
        messages=[],
    )
    assert _categories(snapshot)["system_prompt"] == (2, 3)
    assert _categories(snapshot)["conversation"] == (98, None)


def test_breakdown_scales_special_categories_down_to_used_tokens() -> None:
    rules = "<rules>" + "r" * 985 + "</rules>"  # 273 tokens
    skills = "<agent_skills>" + "s" * 471 + "</agent_skills>"  # 137 tokens
    snapshot = token_breakdown(
        used_tokens=100,
        max_tokens=1000,
        baseline=None,
        instructions="a" * 1000,  # 273 tokens
        tools=[],
        dynamic_tools=(),
        messages=[_runtime(rules + skills + "hi")],
    )
    categories = _categories(snapshot)
    # 683 estimated > 100 used: floors 39, 39, 20 (sum 98); remainders 663, 663, 40 give the
    # two extra tokens to system_prompt and rules (equal remainders: category order).
    assert categories["system_prompt"] == (40, 1000)
    assert categories["rules"] == (40, 1000)
    assert categories["skills"] == (20, 500)
    assert categories["conversation"] == (0, 2)
    assert sum(c.estimated_tokens for c in snapshot.categories) == 100


def test_breakdown_sums_to_used_tokens_across_sizes() -> None:
    messages = [_runtime("<rules>" + "x" * 4000 + "</rules>" + "q" * 500)]
    for used in (0, 1, 7, 100, 999, 1093, 1094, 5000):
        snapshot = token_breakdown(
            used_tokens=used,
            max_tokens=10_000,
            baseline=None,
            instructions="i" * 3000,
            tools=[Tool("Read", "d" * 300, {"type": "object"})],
            dynamic_tools=(),
            messages=messages,
        )
        assert sum(c.estimated_tokens for c in snapshot.categories) == used, used


def test_breakdown_carries_the_summarized_conversation_over() -> None:
    baseline = agent.PromptTokenBreakdownSnapshot()
    baseline.categories.add(
        id="summarized_conversation", label="Summarized conversation", estimated_tokens=300
    )
    baseline.categories[0].character_count = 1200
    snapshot = token_breakdown(
        used_tokens=1000,
        max_tokens=2000,
        baseline=baseline,
        instructions="",
        tools=[],
        dynamic_tools=(),
        messages=[],
    )
    categories = _categories(snapshot)
    assert categories["summarized_conversation"] == (300, 1200)
    assert categories["conversation"] == (700, None)


def _details(
    base: agent.ConversationTokenDetails | None,
    used: int | None,
    window: int | None,
) -> agent.ConversationTokenDetails | None:
    return token_details(
        base,
        used_tokens=used,
        context_window=window,
        instructions="sys",
        tools=[],
        dynamic_tools=(),
        messages=[],
    )


def test_token_details_max_comes_from_the_base_then_the_context_window() -> None:
    base = agent.ConversationTokenDetails(used_tokens=1, max_tokens=256_000)
    details = _details(base, 20_008, 128_000)
    assert details is not None
    assert (details.used_tokens, details.max_tokens) == (20_008, 256_000)
    assert sum(c.estimated_tokens for c in details.breakdown.categories) == 20_008
    assert details.breakdown.total_used_tokens == 20_008
    assert details.breakdown.max_tokens == 256_000
    no_max = _details(agent.ConversationTokenDetails(), 50, 128_000)
    assert no_max is not None and no_max.max_tokens == 128_000
    fresh = _details(None, 50, 128_000)
    assert fresh is not None and (fresh.used_tokens, fresh.max_tokens) == (50, 128_000)


def test_token_details_without_a_count_or_a_maximum() -> None:
    assert _details(None, None, 128_000) is None
    assert _details(None, 50, None) is None
    base = agent.ConversationTokenDetails.FromString(
        _tag(1, 0) + _varint(10) + _tag(2, 0) + _varint(100) + _len_field(5, b"snap")
    )
    kept = _details(base, None, None)
    assert kept is not None
    assert (kept.used_tokens, kept.max_tokens) == (10, 100)
    assert _unknown(kept) == [(5, 2, b"snap")]  # untouched without a new count
    assert sum(c.estimated_tokens for c in kept.breakdown.categories) == 10
    updated = _details(base, 42, None)
    assert updated is not None and updated.used_tokens == 42 and updated.max_tokens == 100
    assert not _unknown(updated)  # the client's snapshot describes an older prompt


def test_token_details_keep_the_summary_of_the_previous_breakdown() -> None:
    base = agent.ConversationTokenDetails(used_tokens=10, max_tokens=1000)
    base.breakdown.categories.add(id="summarized_conversation", estimated_tokens=4)
    details = _details(base, 500, None)
    assert details is not None
    assert _categories(details.breakdown)["summarized_conversation"] == (4, None)


# ---- todos ------------------------------------------------------------------------------------


def _todo_args(*items: tuple[str, str, str]) -> str:
    return msgspec.json.encode(
        {"merge": False, "todos": [{"id": i, "content": c, "status": s} for i, c, s in items]}
    ).decode()


def _call_and_result(
    call_id: str, name: str, arguments: str, is_error: bool
) -> list[CanonicalMessage]:
    assistant = AssistantContent(
        tool_round_id=f"round-{call_id}",
        tool_calls=(CanonicalToolCall(0, call_id, name, arguments, "m"),),
    )
    result = ToolResultContent(call_id, name, "ok" if not is_error else "failed", is_error)
    return [
        CanonicalMessage(f"{call_id}:a", Role.ASSISTANT, Origin.ASSISTANT, assistant),
        CanonicalMessage(f"{call_id}:r", Role.TOOL, Origin.TOOL, result),
    ]


def _items(blobs: list[bytes] | None) -> list[tuple[str, str, int]]:
    assert blobs is not None
    items = [agent.TodoItem.FromString(blob) for blob in blobs]
    return [(i.id, i.content, i.status) for i in items]


def test_todos_come_from_the_successful_todo_writes_only() -> None:
    first = _todo_args(("1", "Read the code", "completed"), ("2", "Fix it", "in_progress"))
    failed = _todo_args(("9", "never applied", "pending"))
    history = [
        *_call_and_result("c1", "TodoWrite", first, is_error=False),
        *_call_and_result("c2", "Read", '{"path":"/x"}', is_error=False),
        *_call_and_result("c3", "TodoWrite", failed, is_error=True),
    ]
    assert _items(todos_from_messages(history)) == [
        ("1", "Read the code", agent.TODO_STATUS_COMPLETED),
        ("2", "Fix it", agent.TODO_STATUS_IN_PROGRESS),
    ]
    later = _todo_args(("3", "Ship", "cancelled"))
    history += _call_and_result("c4", "update_todos", later, is_error=False)
    assert _items(todos_from_messages(history)) == [("3", "Ship", agent.TODO_STATUS_CANCELLED)]


def test_a_merge_updates_named_ids_in_place_appends_new_ones_and_keeps_the_rest() -> None:
    first = _todo_args(
        ("a", "Read", "in_progress"), ("b", "Fix", "pending"), ("c", "Ship", "pending")
    )
    merge = msgspec.json.encode(
        {
            "merge": True,
            "todos": [
                {"id": "d", "content": "Write the notes", "status": "pending"},
                {"id": "a", "content": "Read the code", "status": "completed"},
            ],
        }
    ).decode()
    history = [
        *_call_and_result("c1", "TodoWrite", first, is_error=False),
        *_call_and_result("c2", "TodoWrite", merge, is_error=False),
    ]
    assert todo_list(history) == (
        Todo("a", "Read the code", "completed"),
        Todo("b", "Fix", "pending"),
        Todo("c", "Ship", "pending"),
        Todo("d", "Write the notes", "pending"),
    )
    # Without merge the next call replaces the whole list again.
    history += _call_and_result("c3", "TodoWrite", _todo_args(("z", "Only", "pending")), False)
    assert todo_list(history) == (Todo("z", "Only", "pending"),)


def test_a_merge_onto_no_list_is_its_own_items() -> None:
    merge = '{"merge":true,"todos":[{"id":"1","content":"x","status":"pending"}]}'
    assert todo_list(_call_and_result("c1", "TodoWrite", merge, False)) == (
        Todo("1", "x", "pending"),
    )


def test_no_successful_todo_write_keeps_the_client_todos() -> None:
    failed = _call_and_result("c1", "TodoWrite", _todo_args(("1", "x", "pending")), True)
    assert todos_from_messages(failed) is None
    assert todos_from_messages([_runtime("hi")]) is None


def test_a_call_without_result_does_not_count() -> None:
    pending = _call_and_result("c1", "TodoWrite", _todo_args(("1", "x", "pending")), False)[:1]
    assert todo_list(pending) is None


def test_todo_item_bytes_and_fields() -> None:
    arguments = msgspec.json.encode(
        {"todos": [{"id": "a", "content": "c", "status": "pending", "dependencies": ["b", 3]}]}
    ).decode()
    (blob,) = todos_from_messages(_call_and_result("c1", "TodoWrite", arguments, False)) or []
    # id(1)="a", content(2)="c", status(3)=1, dependencies(6)=["b"]; zero timestamps omitted
    assert blob == b"\x0a\x01a\x12\x01c\x18\x01\x32\x01b"
    item = agent.TodoItem.FromString(blob)
    assert (item.created_at, item.updated_at, list(item.dependencies)) == (0, 0, ["b"])


def test_todo_refusals() -> None:
    with pytest.raises(CheckpointStateError, match="status must be one of"):
        todo_update(_todo_args(("1", "x", "done")))
    with pytest.raises(CheckpointStateError, match=r"todos\[0\]\.id is required"):
        todo_update('{"todos":[{"content":"x","status":"pending"}]}')
    with pytest.raises(CheckpointStateError, match=r"todos\[0\]\.content is required"):
        todo_update('{"todos":[{"id":"1","status":"pending"}]}')
    with pytest.raises(CheckpointStateError, match=r"todos\[0\]\.status is required"):
        todo_update('{"todos":[{"id":"1","content":"x"}]}')
    with pytest.raises(CheckpointStateError, match="'todos' is required"):
        todo_update('{"items":[]}')
    with pytest.raises(CheckpointStateError, match="not valid JSON"):
        todo_update("{")


# ---- the plan and the mode the model's interaction calls leave ----


def _args(**values: object) -> str:
    return msgspec.json.encode(values).decode()


def test_the_plan_is_the_last_successful_create_plan_and_replaces_the_earlier_one() -> None:
    history = [
        *_call_and_result("p1", "CreatePlan", _args(name="Cache", plan="first"), False),
        *_call_and_result("p2", "CreatePlan", _args(plan="never saved"), True),
    ]
    blob = plan_blob(history)
    assert blob is not None and agent.ConversationPlan.FromString(blob).plan == "first"
    assert blob == agent.ConversationPlan(plan="first").SerializeToString(deterministic=True)
    history += _call_and_result("p3", "create_plan", _args(plan="second"), False)
    assert latest_plan(history) == {"plan": "second"}
    blob = plan_blob(history)
    assert blob is not None and agent.ConversationPlan.FromString(blob).plan == "second"


def test_no_successful_plan_keeps_the_clients_and_a_plan_without_text_is_refused() -> None:
    assert plan_blob([_runtime("hi")]) is None
    assert plan_blob(_call_and_result("p1", "CreatePlan", _args(plan="x"), True)) is None
    broken = _call_and_result("p1", "CreatePlan", _args(overview="only"), False)
    with pytest.raises(CheckpointStateError, match="no plan text"):
        plan_blob(broken)


def test_build_state_names_the_plan_blob_and_keeps_the_bases_without_one() -> None:
    base = agent.ConversationStateStructure(plan=_id("old-plan"))
    kept = build_state(base, roots=[], turns=[], pending=[], mode=agent.AGENT_MODE_AGENT)
    assert kept.plan == _id("old-plan")
    state = build_state(
        base, roots=[], turns=[], pending=[], mode=agent.AGENT_MODE_AGENT, plan=_id("new-plan")
    )
    assert state.plan == _id("new-plan")
    with pytest.raises(CheckpointStateError, match="plan blob id"):
        build_state(None, roots=[], turns=[], pending=[], mode=1, plan=b"plan text")


def test_the_mode_is_the_last_approved_switch_of_the_current_turn() -> None:
    def switch(call_id: str, target: str, approved: bool) -> list[CanonicalMessage]:
        return _call_and_result(call_id, "SwitchMode", _args(target_mode_id=target), not approved)

    turn = [_runtime("go"), *switch("s1", "plan", True), *switch("s2", "ask", False)]
    assert switched_mode(turn) == agent.AGENT_MODE_PLAN
    assert switched_mode([*turn, *switch("s3", "debug", True)]) == agent.AGENT_MODE_DEBUG
    # A later user message carries its own mode: an earlier turn's switch no longer counts.
    assert switched_mode([*turn, _runtime("next")]) is None
    assert switched_mode([_runtime("go"), *switch("s1", "plan", False)]) is None
    with pytest.raises(CheckpointStateError, match="names no mode"):
        switched_mode(switch("s1", "turbo", True))
