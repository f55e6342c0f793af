"""The pure parts of compaction: when it is due, where the verbatim tail starts (never inside
a tool round), what the model sees of a history holding summaries, which provider errors
refuse a request for its length, and the compaction assets."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from actors.codecs.checkpoint_state import SummaryBlobs, build_state
from actors.conversation.events import FinishReason
from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
    ToolResultContent,
    encode_message,
    summary_text,
)
from actors.conversation.projection import ProjectionError, visible
from actors.conversation.request import (
    ModelRoute,
    ProviderTextPart,
    ProviderType,
    Reasoning,
    UserMessage,
)
from actors.conversation.secret import Secret
from actors.protocols.provider import ProviderCallEnded
from actors.turn.compaction import (
    ASCII_CHARS_PER_TOKEN,
    COMPACT_AT,
    TOKENS_PER_OTHER_CHAR,
    Compactor,
    boundaries,
    estimate,
    summary_message,
    tail_start,
    text_tokens,
)
from actors.turn.model_call import CallTooLong, ModelCall
from prompt.assets import load_prompt_assets
from prompt.compaction import COMPACTION_MODE, compaction_assets
from store.llm_calls import CallStatus
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent
from wire.providers.adapter import http_failure
from wire.providers.errors import is_length_refusal
from wire.providers.grammar import CallResult


def user(n: int, text: str = "hello") -> CanonicalMessage:
    return CanonicalMessage(f"u{n}", Role.USER, Origin.RUNTIME, PartsContent((TextPart(text),)))


def answer(n: int, text: str = "done") -> CanonicalMessage:
    return CanonicalMessage(f"a{n}", Role.ASSISTANT, Origin.ASSISTANT, AssistantContent(text))


def pair(round_id: str, call_id: str, first: bool) -> tuple[CanonicalMessage, CanonicalMessage]:
    """One committed pair of a round; only the round's first pair carries the thinking."""
    call = CanonicalToolCall(0, call_id, "Read", '{"path": "/a"}', "run:0")
    content = AssistantContent(
        thinking="hmm" if first else "", tool_round_id=round_id, tool_calls=(call,)
    )
    result = ToolResultContent(call_id, "Read", "alpha", False)
    return (
        CanonicalMessage(f"p-{call_id}", Role.ASSISTANT, Origin.ASSISTANT, content),
        CanonicalMessage(f"r-{call_id}", Role.TOOL, Origin.TOOL, result),
    )


def history() -> list[CanonicalMessage]:
    """user, answer, user, a round of two pairs, answer."""
    return [
        user(0),
        answer(0),
        user(1),
        *pair("round-1", "c1", True),
        *pair("round-1", "c2", False),
        answer(1),
    ]


def route(window: int | None, max_output: int | None = None) -> ModelRoute:
    return ModelRoute(
        provider_id=1,
        provider_name="p",
        provider_type=ProviderType.OPENAI_CHAT,
        base_url="http://127.0.0.1:1/v1",
        api_key=Secret("k"),
        headers=(),
        public_id="m",
        model_id="m",
        display_name="m",
        max_output_tokens=max_output,
        context_window_tokens=window,
        reasoning=Reasoning(enabled=True),
    )


def test_a_tail_never_starts_inside_a_tool_round() -> None:
    messages = history()
    # The round's second pair and both results are no boundary: a tail starting there would
    # leave a call without its result or the round without its thinking and replay state.
    assert [messages[i].message_id for i in boundaries(messages)] == [
        "a0", "u1", "p-c1", "a1"
    ]  # fmt: skip
    assert tail_start(messages, None) == 7  # the shortest tail: the last answer
    assert tail_start(messages, estimate(messages[3:])) == 3  # the whole round fits
    assert tail_start(messages, estimate(messages[3:]) - 1) == 7
    assert tail_start(messages[:1], 10_000) is None  # nothing before a tail to summarise


def test_the_model_sees_the_newest_summary_then_its_tail() -> None:
    messages = history()
    first = summary_message("run", 1, "one", tail="u1")
    later = [*messages, first, user(2)]
    assert visible(later) == (first, *messages[2:], user(2))
    second = summary_message("run", 2, "two", tail="a1")
    # The newest summary covers the older one, which is left out of what the model sees.
    assert visible([*later, second]) == (second, messages[-1], user(2))
    whole = summary_message("run", 3, "all", tail="")
    assert visible([*later, whole]) == (whole,)
    assert summary_text(second) == "two"
    with pytest.raises(ProjectionError):
        visible([*messages, summary_message("run", 4, "x", tail="nowhere")])


def test_a_summary_message_is_marked_and_other_messages_keep_their_bytes() -> None:
    message = summary_message("run", 7, "text", tail="u1")
    assert message.runtime_event_id == "summary:run:7"
    assert json.loads(encode_message(message))["summary_tail"] == "u1"
    assert "summary_tail" not in json.loads(encode_message(user(0)))


def test_compaction_is_due_past_the_threshold_of_the_window_only() -> None:
    messages = history()
    compactor = Compactor("run", route(100_000))
    compactor.observe(int(100_000 * COMPACT_AT) - estimate(messages[5:]) - 10, 5)
    assert not compactor.due(messages)
    compactor.observe(int(100_000 * COMPACT_AT), 5)
    assert compactor.due(messages)
    # With the output limit the input must leave room for the answer too.
    tight = Compactor("run", route(100_000, max_output=30_000))
    tight.observe(75_000, len(messages))
    assert tight.due(messages)
    # A model without a context window is never compacted before a call.
    unknown = Compactor("run", route(None))
    unknown.observe(10**9, len(messages))
    assert not unknown.due(messages)
    # Right after a summary the anchor is void and no second compaction is due.
    summarised = [*messages, summary_message("run", 1, "s", tail="a1")]
    assert compactor.projected(summarised) < 1000
    assert not compactor.due(summarised)


def test_the_summary_call_has_no_tools_no_reasoning_and_ends_on_our_request() -> None:
    messages = history()
    messages[2] = user(1, "x" * 35_000)
    # A quarter of the window holds the tail from u1 on, not from a0.
    window = 4 * estimate(messages[2:]) + 2
    phase = Compactor("run", route(window)).start(9, messages)
    assert phase is not None and phase.tail == "u1"
    request = phase.call.request
    assets = compaction_assets()
    assert (request.instructions, request.tools) == (assets.prompt, ())
    assert not phase.call.route.reasoning.enabled
    assert phase.call.model_call_id == "run:9"
    # u0 and a0 are summarised: the part ends on an answer, our request follows as the user.
    assert [type(m).__name__ for m in request.messages] == [
        "UserMessage", "AssistantMessage", "UserMessage"
    ]  # fmt: skip
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    first_part = last.parts[0]
    assert isinstance(first_part, ProviderTextPart)
    assert first_part.text == assets.request


def test_a_refusal_right_after_a_compaction_ends_the_run() -> None:
    compactor = Compactor("run", route(100_000))
    refusal = ConnectError(Code.UNAVAILABLE, "too long")
    compactor.refuse(refusal)
    assert compactor.before_call(3, history(), None) is not None
    compactor.refuse(refusal)
    ended = compactor.before_call(4, [*history(), summary_message("run", 3, "s", "a1")], None)
    assert isinstance(ended, ConnectError) and "too long" in ended.message


@pytest.mark.parametrize(
    "text",
    [
        '{"error": {"code": "context_length_exceeded", "message": "x"}}',
        "This model's maximum context length is 8192 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        '{"stop_reason": "model_context_window_exceeded"}',
        "model_max_prompt_tokens_exceeded",
    ],
)
def test_length_refusals_are_recognised(text: str) -> None:
    assert is_length_refusal(text)


def test_other_errors_are_no_length_refusal() -> None:
    assert not is_length_refusal("rate limit exceeded")
    body = b'{"error": {"code": "context_length_exceeded", "message": "too long"}}'
    assert http_failure("OpenAI Chat", 400, body, route(1)).too_long
    assert not http_failure("OpenAI Chat", 400, b'{"error": "bad tool"}', route(1)).too_long
    assert not http_failure("OpenAI Chat", 503, body, route(1)).too_long  # a server fault


def test_a_filled_context_window_is_a_call_too_long_not_a_cut_answer() -> None:
    call = ModelCall("run:0", 0, after=None)
    call.release()
    result = CallResult("partial", "", (), None, None, FinishReason.CONTEXT_WINDOW)
    step = call.receive(ProviderCallEnded("run:0", None, CallStatus.COMPLETED, result), 0.0)
    assert isinstance(step.outcome, CallTooLong)


def test_the_compaction_assets_offer_no_tool_and_the_loader_accepts_them() -> None:
    assets = compaction_assets()
    assert assets.prompt and assets.request
    assert "{{" not in assets.prompt + assets.request
    modes = {mode.name for mode in load_prompt_assets().modes}
    assert COMPACTION_MODE not in modes  # no mode a run can be in


def test_the_checkpoint_adds_only_new_archives_and_counts_them() -> None:
    old, new, summary = (bytes([n]) * 32 for n in (1, 2, 3))
    base = agent.ConversationStateStructure(summary_archives=[old], self_summary_count=1)
    blobs = SummaryBlobs(summary, (old, new))
    state = build_state(base, roots=[], turns=[], pending=[], mode=1, summaries=blobs)
    assert (state.summary, list(state.summary_archives)) == (summary, [old, new])
    assert state.self_summary_count == 2
    again = build_state(state, roots=[], turns=[], pending=[], mode=1, summaries=blobs)
    assert (list(again.summary_archives), again.self_summary_count) == ([old, new], 2)


# st.text() leaves lone surrogates out; a str may hold them (from "surrogateescape" decoding).
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])


@given(st.text(st.one_of(st.characters(), SURROGATES)))
def test_text_tokens_counts_ascii_and_other_characters_at_their_rates(text: str) -> None:
    """The estimate counts each character below U+0080 at one rate and every other (lone
    surrogates included) at the other, however it counts them."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 0x80)
    other = len(text) - ascii_chars
    expected = math.ceil(ascii_chars / ASCII_CHARS_PER_TOKEN + other * TOKENS_PER_OTHER_CHAR)
    assert text_tokens(text) == expected
