"""The summarize run's decisions without IO: what it summarises (everything before the newest
answer or round), when there is nothing to, and the summary call's history, which holds no
tool blocks and no reasoning (automatic compaction's too)."""

from __future__ import annotations

from actors.conversation.model import ReplayState
from actors.conversation.projection import project
from actors.conversation.request import (
    AssistantMessage,
    ProviderImagePart,
    ProviderTextPart,
    ProviderToolCall,
    ToolResultMessage,
    UserMessage,
)
from actors.turn.compaction import Compactor, summary_message
from actors.turn.summarize import nothing_to_summarize, summary_call
from actors.turn.summary_input import summary_input
from prompt.compaction import compaction_assets
from tests.actors.test_compaction import answer, history, pair, route, user


def test_summarize_keeps_only_the_newest_answer_whatever_the_window() -> None:
    messages = history()
    # With a window this large automatic compaction would keep everything from u0's answer
    # on; the user's command condenses all but the newest answer.
    phase = summary_call(Compactor("run", route(1_000_000)), 4, messages)
    assert phase is not None and phase.tail == "a1"
    assert phase.call.model_call_id == "run:4"
    assert phase.call.request.tools == ()
    assert not phase.call.route.reasoning.enabled
    roles = [type(m).__name__ for m in phase.call.request.messages]
    assert roles == [
        "UserMessage", "AssistantMessage", "UserMessage",  # u0, a0, u1
        "AssistantMessage", "UserMessage", "UserMessage",  # the round: both calls, two results
        "UserMessage",  # our request
    ]  # fmt: skip
    last = phase.call.request.messages[-1]
    assert isinstance(last, UserMessage)
    first_part = last.parts[0]
    assert isinstance(first_part, ProviderTextPart)
    assert first_part.text == compaction_assets().request
    # Not held: no checkpoint of the summarize run comes before its call.
    assert phase.release().frames == ()


def test_nothing_to_summarize_without_history_right_after_a_summary_or_with_one_message() -> None:
    assert nothing_to_summarize([]) == "the conversation has no messages yet"
    summarized = [*history(), summary_message("run", 3, "s", "a1")]
    assert nothing_to_summarize(summarized) == "nothing was added since the last summary"
    assert nothing_to_summarize([user(0)]) is not None
    assert nothing_to_summarize([user(0), answer(0)]) is None
    # Something added after a summary is something to summarise again.
    assert nothing_to_summarize([*summarized, user(5), answer(5)]) is None


def test_a_summary_call_writes_calls_and_results_out_and_drops_reasoning() -> None:
    call = ProviderToolCall(0, "c1", "Read", '{"path": "/a"}')
    image = ProviderImagePart("image/png", b"\x89PNG")
    replay = ReplayState("anthropic", {"signature": "sig"})
    written = summary_input(
        (
            UserMessage((ProviderTextPart("read /a"),)),
            AssistantMessage(text="Reading.", thinking="hmm", replay=replay, calls=(call,)),
            ToolResultMessage("c1", "Read", "alpha", (image,)),
            AssistantMessage(thinking="only thoughts", replay=replay),
            AssistantMessage(text="It holds alpha."),
        )
    )
    assert written == (
        UserMessage((ProviderTextPart("read /a"),)),
        AssistantMessage(text='Reading.\n[called Read (call c1) with {"path": "/a"}]'),
        UserMessage((ProviderTextPart("[result of Read (call c1)]\nalpha"), image)),
        AssistantMessage(text="It holds alpha."),
    )


def test_automatic_compaction_sends_no_tool_blocks_either() -> None:
    messages = [user(0), *pair("round-1", "c1", True), answer(0), user(1), answer(1)]
    phase = Compactor("run", route(100_000)).start(2, messages, shortest_tail=True)
    assert phase is not None
    sent = phase.call.request.messages
    assert not any(isinstance(m, ToolResultMessage) for m in sent)
    assistants = [m for m in sent if isinstance(m, AssistantMessage)]
    assert all(not m.calls and not m.thinking and m.replay is None for m in assistants)
    assert len(sent) == len(project(messages[:-1])) + 1
