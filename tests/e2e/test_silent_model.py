"""A model silent for longer than a client's cap on visible silence (a reasoning model whose
reasoning is not streamed, a provider that queues the request) no longer loses the turn: the
editor sees the model thinking every ``silent_model_keepalive_s`` until its first event, on
both transports, and what the model streams afterwards is unchanged.

The client here ends a turn after ``CAP_S`` without visible activity, heartbeats not
counting (``CursorSession(visible_silence_cap_s=...)``), as a third-party client does with
60 s; every span is shortened in proportion."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec
import pytest

from actors.server.compose import RunningServer
from tests.conftest import TEST_LIMITS, StartServer
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, updates, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events, encode_events
from tests.support.h2_client import H2Cursor
from tests.support.h2_servers import connect
from wire.http.limits import EdgeLimits
from wire.proto import agent_v1_pb2 as agent

CAP_S = 1.2
SILENCE_S = 3.0  # the model says nothing for 2.5 caps
KEEPALIVE_S = 0.4  # a third of the cap, as 20 s is of 60 s
LIMITS = msgspec.structs.replace(
    TEST_LIMITS, silent_model_keepalive_s=KEEPALIVE_S, run_request_timeout_s=10.0
)


# One turn with these limits, this message and run id; its log.
Turn = Callable[[EdgeLimits, agent.AgentClientMessage, str], Awaitable[TurnLog]]


@pytest.fixture(params=["http1", "h2"])
async def turn(request: pytest.FixtureRequest, make_server: StartServer) -> AsyncIterator[Turn]:
    """Runs one turn over RunSSE+BidiAppend or over HTTP/2 ``Run`` with the capped client."""
    closers: list[RunningServer | FakeCursor | H2Cursor] = []

    async def run(limits: EdgeLimits, message: agent.AgentClientMessage, run_id: str) -> TurnLog:
        cursor: FakeCursor | H2Cursor
        if request.param == "http1":
            server: RunningServer = await make_server(limits=limits)
            cursor = FakeCursor(f"http://{server.address}")
        else:
            from actors.server.compose import ServerConfig, start_server

            config = ServerConfig(
                host="127.0.0.1",
                port=0,
                upstream_url="http://127.0.0.1:9",
                limits=limits,
                h2_listen=("127.0.0.1", 0),
            )
            server = await start_server(config, store=request.getfixturevalue("server_store"))
            closers.append(server)
            # A CLI-style client: the context comes as the answer to request_context_args.
            cursor = H2Cursor(await connect(server), context=agent.RequestContext())
        closers.append(cursor)
        session = CursorSession(cursor, run_id, visible_silence_cap_s=CAP_S)
        return await session.run(message, timeout=10, total_timeout=30)

    yield run
    for item in reversed(closers):
        if isinstance(item, RunningServer):
            await item.stop()
        else:
            await item.aclose()


def thinking_texts(log: TurnLog) -> list[str]:
    return [u.text for u in updates(log, "thinking_delta")]


def text_of(log: TurnLog) -> str:
    return "".join(u.text for u in updates(log, "text_delta"))


async def test_a_silent_model_is_shown_thinking_and_its_answer_is_unchanged(
    turn: Turn, fake: FakeProvider, public_id: str
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["Took ", "a while."])).delayed(SILENCE_S))
    log = await turn(LIMITS, user_turn_message("think hard", public_id), "silent-text")
    assert not log.stalled and log.end == {}
    assert text_of(log) == "Took a while."
    kept_alive = thinking_texts(log)
    assert kept_alive and set(kept_alive) == {""}
    assert len(kept_alive) >= int(SILENCE_S / KEEPALIVE_S) - 2
    # The shown thinking ends when the model speaks, having lasted the silence.
    kinds = log.kinds()
    assert kinds.index("thinking_completed") < kinds.index("text_delta")
    (completed,) = updates(log, "thinking_completed")
    assert completed.thinking_duration_ms >= (SILENCE_S - 0.5) * 1000
    assert "turn_ended" in kinds


async def test_a_model_whose_headers_come_at_once_but_says_nothing_is_shown_thinking(
    turn: Turn, fake: FakeProvider, public_id: str
) -> None:
    """A reasoning model that does not stream its reasoning answers 200 and its first chunk
    at once, then nothing for a long while: that is silence too."""
    events = chat_events(text=["Here it is."])
    first, rest = encode_events(events[:1]), encode_events(events[1:])
    fake.enqueue(Script.raw([first, rest], delay_between=SILENCE_S))
    log = await turn(LIMITS, user_turn_message("think hard", public_id), "silent-body")
    assert not log.stalled and log.end == {}
    assert text_of(log) == "Here it is."
    kept_alive = thinking_texts(log)
    assert kept_alive and set(kept_alive) == {""}
    assert len(updates(log, "thinking_completed")) == 1


async def test_a_model_that_thinks_after_its_silence_keeps_its_own_thinking(
    turn: Turn, fake: FakeProvider, public_id: str
) -> None:
    events = chat_events(thinking=["Let me ", "see."], text=["Done."])
    fake.enqueue(Script.sse(events).delayed(SILENCE_S))
    log = await turn(LIMITS, user_turn_message("think hard", public_id), "silent-think")
    assert not log.stalled and log.end == {}
    texts = thinking_texts(log)
    # Empty deltas while silent, then the model's own thinking, as it streamed it.
    assert [t for t in texts if t] == ["Let me ", "see."]
    assert set(texts[: texts.index("Let me ")]) == {""}
    (completed,) = updates(log, "thinking_completed")  # one block: the model's
    # ... lasting from the request: the silence was thinking the provider did not stream.
    assert completed.thinking_duration_ms >= (SILENCE_S - 0.5) * 1000
    assert text_of(log) == "Done."


async def test_without_the_keepalive_the_capped_client_gives_the_turn_up(
    turn: Turn, fake: FakeProvider, public_id: str
) -> None:
    """The control: the client's rule bites, heartbeats notwithstanding."""
    limits = msgspec.structs.replace(LIMITS, silent_model_keepalive_s=3600.0)
    fake.enqueue(Script.sse(chat_events(text=["Too late."])).delayed(SILENCE_S))
    log = await turn(limits, user_turn_message("think hard", public_id), "silent-lost")
    assert log.stalled
    assert "heartbeat" in log.kinds()  # heartbeats came, and did not count
    assert text_of(log) == ""
