"""Canonical messages <-> Cursor's checkpoint JSON: exact bytes, hydration, regrouping, pending.

Expected JSON is written out literally from the reference notes (state.md §3.2-§3.4, §3.8;
tools.md §4.7), never produced by the code under test.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json

import msgspec
import pytest

from actors.codecs.checkpoint_json import (
    CheckpointJsonError,
    decode_pending,
    decode_root,
    encode_pending,
    encode_root,
    encode_system_root,
    hydrated_message_id,
    regroup_rounds,
    replay_signature,
    replay_state_from_signature,
    root_messages_json,
    tool_identifier,
)
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    ImagePart,
    Origin,
    PartsContent,
    ReplayState,
    Role,
    TextPart,
    ToolResultContent,
)
from store.blobs import blob_id_of

MODEL = "gpt-test"
REPLAY = ReplayState(
    "anthropic", {"blocks": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]}
)
# base64 of {"provider_kind":"anthropic","value":{"blocks":[{"type":"thinking",
#                                                    "thinking":"hmm","signature":"sig"}]}}
REPLAY_B64 = (
    "eyJwcm92aWRlcl9raW5kIjoiYW50aHJvcGljIiwidmFsdWUiOnsiYmxvY2tzIjpbeyJ0eXBlIjoidGhpbmtpbmciLCJ0aGl"
    "ua2luZyI6ImhtbSIsInNpZ25hdHVyZSI6InNpZyJ9XX19"
)
INTERNAL = "cursor-root:internal:0"


def runtime_user(request_id: str = "req-1", text: str = "hi") -> CanonicalMessage:
    return CanonicalMessage(
        f"runtime:run-request:{request_id}",
        Role.USER,
        Origin.RUNTIME,
        PartsContent((TextPart(text),)),
        runtime_event_id=f"run-request:{request_id}",
    )


def call(index: int, call_id: str, name: str = "Read") -> CanonicalToolCall:
    return CanonicalToolCall(index, call_id, name, f'{{"path":"/{call_id}"}}', "req-1:0")


def pair(
    round_id: str, c: CanonicalToolCall, first: bool, is_error: bool = False
) -> list[CanonicalMessage]:
    """One committed (assistant, result) pair; only the round's first pair has text/thinking."""
    assistant = AssistantContent(
        text="let me look" if first else "",
        thinking="hmm" if first else "",
        tool_round_id=round_id,
        replay_state=REPLAY if first else None,
        tool_calls=(c,),
    )
    result = ToolResultContent(c.call_id, c.name, f"contents of {c.call_id}", is_error)
    return [
        CanonicalMessage(
            f"{round_id}:{c.call_id}:assistant", Role.ASSISTANT, Origin.ASSISTANT, assistant
        ),
        CanonicalMessage(f"{round_id}:{c.call_id}:result", Role.TOOL, Origin.TOOL, result),
    ]


def final(
    text: str,
    message_id: str = "req-1:assistant:1",
    *,
    thinking: str = "",
    replay_state: ReplayState | None = None,
) -> CanonicalMessage:
    content = AssistantContent(text=text, thinking=thinking, replay_state=replay_state)
    return CanonicalMessage(message_id, Role.ASSISTANT, Origin.ASSISTANT, content)


# ---- exact bytes ---------------------------------------------------------------------------


def test_system_root_bytes() -> None:
    assert encode_system_root("You are helpful.") == (
        b'{"role":"system","content":[{"type":"text","text":"You are helpful."}],"id":"system"}'
    )


def test_runtime_user_message_bytes() -> None:
    message = CanonicalMessage(
        "runtime:run-request:req-1",
        Role.USER,
        Origin.RUNTIME,
        PartsContent(
            (
                TextPart('<user_query>\nh\u00e9 "x"\n</user_query>'),
                ImagePart("image/png", b"\x89PNG"),
            )
        ),
        runtime_event_id="run-request:req-1",
    )
    expected = (
        '{"role":"user","content":[{"type":"text",'
        '"text":"<user_query>\\nh\u00e9 \\"x\\"\\n</user_query>"},'
        '{"type":"image","data":"iVBORw==","mimeType":"image/png"}],"id":"runtime:run-request:req-1"}'
    ).encode()
    assert encode_root(message, MODEL) == expected


def test_final_assistant_with_reasoning_and_text_bytes() -> None:
    message = final("The answer.", thinking="Let me think.", replay_state=REPLAY)
    expected = (
        '{"role":"assistant","content":[{"type":"reasoning","text":"Let me think.",'
        '"providerOptions":{"cursor":{"modelName":"gpt-test"}},'
        f'"signature":"cursor-server:v1:{REPLAY_B64}"}},'
        '{"type":"text","text":"The answer."}],"id":"1"}'
    ).encode()
    assert encode_root(message, MODEL) == expected


def test_reasoning_part_only_when_thinking_or_replay() -> None:
    assert encode_root(final("ok"), MODEL) == (
        b'{"role":"assistant","content":[{"type":"text","text":"ok"}],"id":"1"}'
    )
    replay_only = encode_root(final("", replay_state=REPLAY), MODEL)
    assert replay_only.startswith(b'{"role":"assistant","content":[{"type":"reasoning","text":"",')


def test_tool_result_bytes() -> None:
    result = CanonicalMessage(
        "r1:a:result",
        Role.TOOL,
        Origin.TOOL,
        ToolResultContent("call_a", "Read", "line 1\nline 2", True),
    )
    assert encode_root(result, MODEL) == (
        b'{"role":"tool","content":[{"type":"tool-result","toolCallId":"call_a","toolName":"Read",'
        b'"result":"line 1\\nline 2",'
        b'"experimental_content":[{"type":"text","text":"line 1\\nline 2"}],'
        b'"isError":true}],"id":"call_a"}'
    )


def test_regrouped_tool_round_bytes() -> None:
    """A round whose results completed b, a becomes one assistant (calls by index) + results."""
    a, b = call(0, "a"), call(1, "b", "Grep")
    history = [runtime_user(), *pair("r1", b, first=True), *pair("r1", a, first=False)]
    roots = root_messages_json("", history, MODEL)
    assert roots[1:] == [
        (
            '{"role":"assistant","content":[{"type":"reasoning","text":"hmm",'
            '"providerOptions":{"cursor":{"modelName":"gpt-test"}},'
            f'"signature":"cursor-server:v1:{REPLAY_B64}"}},'
            '{"type":"text","text":"let me look"},'
            '{"type":"tool-call","toolCallId":"a","toolName":"Read","args":{"path":"/a"}},'
            '{"type":"tool-call","toolCallId":"b","toolName":"Grep","args":{"path":"/b"}}],"id":"1"}'
        ).encode(),
        (
            b'{"role":"tool","content":[{"type":"tool-result","toolCallId":"b","toolName":"Grep",'
            b'"result":"contents of b",'
            b'"experimental_content":[{"type":"text","text":"contents of b"}],'
            b'"isError":false}],"id":"b"}'
        ),
        (
            b'{"role":"tool","content":[{"type":"tool-result","toolCallId":"a","toolName":"Read",'
            b'"result":"contents of a",'
            b'"experimental_content":[{"type":"text","text":"contents of a"}],'
            b'"isError":false}],"id":"a"}'
        ),
    ]
    assert roots[0] == (
        b'{"role":"user","content":[{"type":"text","text":"hi"}],"id":"runtime:run-request:req-1"}'
    )


def test_root_list_starts_with_the_system_root_only_when_there_are_instructions() -> None:
    history = [runtime_user()]
    assert root_messages_json("", history, MODEL) == [encode_root(history[0], MODEL)]
    with_system = root_messages_json("sys", history, MODEL)
    assert with_system == [encode_system_root("sys"), encode_root(history[0], MODEL)]


@pytest.mark.parametrize("arguments", ["[1]", '{"path": "/a', '"text"', ""])
def test_arguments_that_are_not_an_object_are_kept_as_their_text_and_come_back(
    arguments: str,
) -> None:
    """The model's unusable arguments (answered with an error result) round-trip exactly."""
    bad = AssistantContent(
        tool_round_id="r", tool_calls=(CanonicalToolCall(0, "a", "Read", arguments, "m"),)
    )
    message = CanonicalMessage("x", Role.ASSISTANT, Origin.ASSISTANT, bad)
    root = json.loads(encode_root(message, MODEL))
    (part,) = [p for p in root["content"] if p["type"] == "tool-call"]
    assert part["args"] == arguments
    decoded = decode_root(encode_root(message, MODEL), "x").content
    assert isinstance(decoded, AssistantContent)
    (back,) = decoded.tool_calls
    assert back.arguments == arguments


# ---- regrouping and prefix stability --------------------------------------------------------


def test_regrouping_a_round_completed_in_reverse_order() -> None:
    calls = [call(0, "a"), call(1, "b"), call(2, "c")]
    history = [runtime_user()]
    for position, c in enumerate(reversed(calls)):  # results arrived c, b, a
        history += pair("r1", c, first=position == 0, is_error=c.call_id == "b")
    regrouped = regroup_rounds(history)
    assert regrouped[0] == history[0]
    assistant = regrouped[1]
    assert assistant.message_id == "r1:c:assistant"  # the round's first committed pair
    assert isinstance(assistant.content, AssistantContent)
    assert assistant.content.tool_calls == tuple(calls)  # by index, model_call_id kept
    assert assistant.content.text == "let me look" and assistant.content.thinking == "hmm"
    assert assistant.content.replay_state == REPLAY
    assert assistant.content.tool_round_id == "r1"
    assert regrouped[2:] == [history[2], history[4], history[6]]  # completion order, is_error kept
    assert len(regrouped) == 5


def test_regrouping_refuses_a_call_without_result() -> None:
    with pytest.raises(CheckpointJsonError, match="no result"):
        regroup_rounds([runtime_user(), pair("r1", call(0, "a"), True)[0]])


def test_root_list_of_a_history_is_a_prefix_of_the_list_after_more_rounds() -> None:
    history = [runtime_user()]
    history += pair("r1", call(1, "b"), True) + pair("r1", call(0, "a"), False)
    history += [final("done", "f1"), runtime_user("req-2", "again")]
    history += pair("r2", call(0, "c"), True)
    history += pair("r3", call(0, "d"), True) + pair("r3", call(1, "e"), False)
    history += [final("done again", "f2")]
    settled = [1, 5, 6, 7, 9, 13, 14]  # lengths at which every round is complete
    lists = [root_messages_json("sys", history[:n], MODEL) for n in settled]
    for shorter, longer in itertools.pairwise(lists):
        assert longer[: len(shorter)] == shorter
        assert len(longer) > len(shorter)


# ---- decoding ---------------------------------------------------------------------------------


def _round_trip(message: CanonicalMessage, internal_id: str = INTERNAL) -> CanonicalMessage:
    return decode_root(encode_root(message, MODEL), internal_id)


def test_runtime_user_round_trips_exactly() -> None:
    message = CanonicalMessage(
        "runtime:run-request:req-9",
        Role.USER,
        Origin.RUNTIME,
        PartsContent((TextPart("x"), ImagePart("image/jpeg", b"\x00\xff"))),
        runtime_event_id="run-request:req-9",
    )
    assert _round_trip(message) == message


@pytest.mark.parametrize(
    ("role", "wire_id", "origin"),
    [
        (Role.USER, "u-7", Origin.USER),
        (Role.USER, "request-context:rules", Origin.PROMPT),
        (Role.USER, "selected-context:file", Origin.PROMPT),
        (Role.SYSTEM, "system", Origin.PROMPT),
    ],
)
def test_parts_messages_hydrate_with_their_origin(role: Role, wire_id: str, origin: Origin) -> None:
    message = CanonicalMessage(wire_id, role, origin, PartsContent((TextPart("t"),)))
    assert _round_trip(message) == CanonicalMessage(INTERNAL, role, origin, message.content)


def test_final_assistant_round_trips() -> None:
    message = final("answer", thinking="think", replay_state=REPLAY)
    assert _round_trip(message) == CanonicalMessage(
        INTERNAL, Role.ASSISTANT, Origin.ASSISTANT, message.content
    )


def test_tool_round_assistant_round_trips_with_derived_ids() -> None:
    content = AssistantContent(
        text="t",
        tool_round_id="run:round:0",
        tool_calls=(
            CanonicalToolCall(3, "a", "Read", '{"path":"/a","n":[1,2.5,true,null]}', "run:0"),
            CanonicalToolCall(7, "b", "Shell", '{"command":"ls"}', "run:0"),
        ),
    )
    decoded = _round_trip(CanonicalMessage("m", Role.ASSISTANT, Origin.ASSISTANT, content))
    assert decoded == CanonicalMessage(
        INTERNAL,
        Role.ASSISTANT,
        Origin.ASSISTANT,
        AssistantContent(
            text="t",
            tool_round_id=f"{INTERNAL}:tool-round",
            tool_calls=(
                CanonicalToolCall(0, "a", "Read", '{"path":"/a","n":[1,2.5,true,null]}', INTERNAL),
                CanonicalToolCall(1, "b", "Shell", '{"command":"ls"}', INTERNAL),
            ),
        ),
    )


def test_tool_result_round_trips() -> None:
    message = CanonicalMessage(
        "r", Role.TOOL, Origin.TOOL, ToolResultContent("a", "Read", "out", True)
    )
    assert _round_trip(message) == CanonicalMessage(
        INTERNAL, Role.TOOL, Origin.TOOL, message.content
    )


def test_a_tool_results_images_go_into_its_experimental_content_and_come_back() -> None:
    image = ImagePart("image/png", b"\x89PNG\r\n\x1a\n")
    content = ToolResultContent("a", "Read", "an image", False, (image,))
    message = CanonicalMessage("r", Role.TOOL, Origin.TOOL, content)
    assert b'"experimental_content":[{"type":"text","text":"an image"},{"type":"image",' in (
        encode_root(message, MODEL)
    )
    assert _round_trip(message) == CanonicalMessage(INTERNAL, Role.TOOL, Origin.TOOL, content)


def test_a_tool_result_without_images_encodes_as_before_the_field_existed() -> None:
    content = ToolResultContent("a", "Read", "out", False)
    assert msgspec.json.encode(content) == (
        b'{"kind":"tool_result","call_id":"a","name":"Read","content":"out","is_error":false}'
    )


def test_hydrated_rounds_never_merge() -> None:
    """Every assistant's wire id is "1": the internal ids keep two rounds apart."""
    first = [*pair("r1", call(0, "a"), True)]
    second = [*pair("r2", call(0, "b"), True)]
    wire = [encode_root(m, MODEL) for m in [runtime_user(), *first, *second]]
    hydrated = [
        decode_root(data, hydrated_message_id(blob_id_of(data), i)) for i, data in enumerate(wire)
    ]
    regrouped = regroup_rounds(hydrated)
    assistants = [m.content for m in regrouped if isinstance(m.content, AssistantContent)]
    assert [[c.call_id for c in a.tool_calls] for a in assistants] == [["a"], ["b"]]
    assert assistants[0].tool_round_id != assistants[1].tool_round_id
    assert root_messages_json("", hydrated, MODEL) == wire


def test_hydrated_message_id_shape() -> None:
    blob_id = bytes(range(32))
    assert hydrated_message_id(blob_id, 3) == f"cursor-root:{base64.b64encode(blob_id).decode()}:3"


def test_user_content_may_be_a_plain_string() -> None:
    decoded = decode_root(b'{"role":"user","content":"hello","id":"u"}', INTERNAL)
    assert decoded.content == PartsContent((TextPart("hello"),))


def test_decoding_refusals() -> None:
    cases = {
        b'{"role":"robot","content":[],"id":"x"}': "unknown Cursor message role",
        b'{"role":"user","content":[{"type":"file"}],"id":"x"}': "unsupported .* part: file",
        b'{"role":"user","content":[{"text":"x"}],"id":"x"}': "missing type",
        b'{"role":"user","content":{},"id":"x"}': "not an array",
        b'{"role":"tool","content":[],"id":"x"}': "no result part",
        b'{"role":"assistant","content":[{"type":"tool-call"}]}': "missing toolCallId",
        b"[1]": "not a JSON object",
        b"{": "not JSON",
    }
    for data, message in cases.items():
        with pytest.raises(CheckpointJsonError, match=message):
            decode_root(data, INTERNAL)


def test_two_reasoning_signatures_are_refused() -> None:
    data = json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "a", "signature": "s1"},
                {"type": "reasoning", "text": "b", "signature": "s2"},
            ],
            "id": "1",
        }
    )
    with pytest.raises(CheckpointJsonError, match="multiple reasoning signatures"):
        decode_root(data.encode(), INTERNAL)


def test_unknown_assistant_parts_are_ignored_and_texts_concatenated() -> None:
    data = (
        b'{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"source","url":"u"},'
        b'{"type":"reasoning","text":"x"},{"type":"text","text":"b"}],"id":"1"}'
    )
    assert decode_root(data, INTERNAL).content == AssistantContent(text="ab", thinking="x")


# ---- replay signatures ------------------------------------------------------------------------


def test_replay_signature_uses_our_prefix_and_accepts_the_reference_prefix() -> None:
    assert replay_signature(REPLAY) == f"cursor-server:v1:{REPLAY_B64}"
    assert replay_state_from_signature(f"cursor-server:v1:{REPLAY_B64}") == REPLAY
    assert replay_state_from_signature(f"cursor-byok:v1:{REPLAY_B64}") == REPLAY


def test_a_foreign_signature_is_kept_verbatim() -> None:
    state = replay_state_from_signature("EqQBCkYIBxgCKkB...")
    assert state == ReplayState("cursor_opaque", {"signature": "EqQBCkYIBxgCKkB..."})
    assert replay_signature(state) == "EqQBCkYIBxgCKkB..."
    message = final("x", thinking="t", replay_state=state)
    assert b'"signature":"EqQBCkYIBxgCKkB..."' in encode_root(message, MODEL)
    assert _round_trip(message).content == message.content


def test_a_broken_envelope_is_refused() -> None:
    with pytest.raises(CheckpointJsonError, match="invalid replay state envelope"):
        replay_state_from_signature("cursor-server:v1:!!!")
    bad_json = base64.b64encode(b'{"provider_kind":1}').decode()
    with pytest.raises(CheckpointJsonError, match="invalid replay state envelope"):
        replay_state_from_signature(f"cursor-byok:v1:{bad_json}")


# ---- tool identifiers and pending tool calls ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "identifier"),
    [
        ("Read", "READ"),
        ("StrReplace", "STR_REPLACE"),
        ("GetMcpTools", "GET_MCP_TOOLS"),
        ("TodoWrite", "TODO_WRITE"),
        ("ReadLints", "READ_LINTS"),
        ("AwaitShell", "AWAIT"),
        ("CallMcpTool", "MCP"),
        ("CreatePlan", "CREATE_PLAN_V2"),
        ("UpdateCurrentStep", "COMMUNICATE_UPDATE"),
    ],
)
def test_tool_identifier(name: str, identifier: str) -> None:
    assert tool_identifier(name) == identifier


def test_dynamic_tool_identifier_is_the_raw_name() -> None:
    assert tool_identifier("linear_searchIssues", {"linear_searchIssues"}) == "linear_searchIssues"
    assert tool_identifier("linear_searchIssues") == "LINEAR_SEARCH_ISSUES"


def _pending_round() -> str:
    content = AssistantContent(
        text="checking",
        tool_round_id="req-1:round:0",
        tool_calls=(
            CanonicalToolCall(1, "b", "linear_search", '{"q":"x"}', "req-1:0"),
            CanonicalToolCall(0, "a", "StrReplace", '{"path":"/a"}', "req-1:0"),
        ),
    )
    return encode_pending(
        content,
        model_name=MODEL,
        allowed_tools=["Read", "StrReplace", "linear_search"],
        dynamic_tools={"linear_search"},
        started_at_ms=1700000000123,
    )


def test_pending_tool_round_json() -> None:
    allowed = '"allowedToolNames":["Read","StrReplace","linear_search"]'
    assert _pending_round() == (
        '{"role":"assistant","content":[{"type":"text","text":"checking"},'
        '{"type":"tool-call","toolCallId":"a","toolName":"StrReplace","args":{"path":"/a"}},'
        '{"type":"tool-call","toolCallId":"b","toolName":"linear_search","args":{"q":"x"}}],'
        '"id":"1","providerOptions":{"cursor":{"pendingToolCallStartedAtMs":1700000000123,'
        '"pendingToolExecutionContracts":{'
        '"a":{"toolCallId":"a","outerToolName":"StrReplace","toolIdentifier":"STR_REPLACE",'
        f'"isDynamic":false,{allowed}}},'
        '"b":{"toolCallId":"b","outerToolName":"linear_search","toolIdentifier":"linear_search",'
        f'"isDynamic":true,{allowed}}}}}}}}}}}'
    )


def test_pending_final_answer_json() -> None:
    pending = encode_pending(
        AssistantContent(text="hello"),
        model_name=MODEL,
        allowed_tools=["Read"],
        dynamic_tools=(),
        started_at_ms=5,
    )
    assert pending == (
        '{"role":"assistant","content":[{"type":"text","text":"hello"}],"id":"1",'
        '"providerOptions":{"cursor":{"pendingToolCallStartedAtMs":5,'
        '"pendingToolExecutionContracts":{}}}}'
    )


def test_decode_pending_recovers_the_round() -> None:
    value = _pending_round()
    internal = (
        "cursor-pending:" + base64.b64encode(hashlib.sha256(value.encode()).digest()).decode()
    )
    recovered = decode_pending(value)
    assert recovered.internal_id == internal
    assert recovered.model_call_id == internal
    assert recovered.started_at_ms == 1700000000123
    assert recovered.text == "checking" and recovered.thinking == ""
    assert recovered.replay_state is None
    assert recovered.calls == (
        CanonicalToolCall(0, "a", "StrReplace", '{"path":"/a"}', internal),
        CanonicalToolCall(1, "b", "linear_search", '{"q":"x"}', internal),
    )


def test_decode_pending_keeps_replay_state_and_provider_message_id() -> None:
    wire = json.loads(
        encode_pending(
            AssistantContent(thinking="t", replay_state=REPLAY, tool_calls=(call(0, "a"),)),
            model_name=MODEL,
            allowed_tools=[],
            dynamic_tools=(),
            started_at_ms=9,
        )
    )
    wire["providerOptions"]["cursor"]["modelProviderMessageId"] = "msg_123"
    recovered = decode_pending(json.dumps(wire))
    assert recovered.model_call_id == "msg_123"
    assert recovered.replay_state == REPLAY and recovered.thinking == "t"
    assert recovered.calls == (CanonicalToolCall(0, "a", "Read", '{"path":"/a"}', "msg_123"),)


def test_decode_pending_refusals() -> None:
    no_time = (
        '{"role":"assistant","content":'
        '[{"type":"tool-call","toolCallId":"a","toolName":"Read","args":{}}],"id":"1"}'
    )
    with pytest.raises(CheckpointJsonError, match="pendingToolCallStartedAtMs"):
        decode_pending(no_time)
    final_answer = encode_pending(
        AssistantContent(text="x"),
        model_name=MODEL,
        allowed_tools=[],
        dynamic_tools=(),
        started_at_ms=1,
    )
    with pytest.raises(CheckpointJsonError, match="no tool calls"):
        decode_pending(final_answer)
    user = (
        '{"role":"user","content":"x","id":"u",'
        '"providerOptions":{"cursor":{"pendingToolCallStartedAtMs":1}}}'
    )
    with pytest.raises(CheckpointJsonError, match="not an assistant"):
        decode_pending(user)
