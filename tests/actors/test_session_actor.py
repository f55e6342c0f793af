"""The SessionActor at actor level: typed messages in (``ClientMessageReceived``, ``CancelRun``,
``RunRequestDeadlinePassed``), frames and exactly one end of the stream out.

The actor under test is the real one; its RunOutput double (``StreamOutput``) decodes every
frame and queues the end behind the frames, so order is observable. The first group needs no
provider: no store, a resolver double, or the real ``StoreModelResolver`` on an empty SQLite
store. The second group gives the actor the server's real ``AgentDeps`` (SQLite store, prompt
assets, run owners, an asyncio loop on its own thread for timers and provider calls) and a fake
provider on loopback. Every wait is bounded: an item within ``WAIT_S``, silence checked over
``QUIET_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pykka
import pytest

from actors.blob_sync import BlobSyncActor
from actors.checkpoint import CheckpointActor
from actors.conversation.request import ModelRoute, ProviderType
from actors.conversation.secret import Secret
from actors.loop.bridge import LoopTasks
from actors.protocols.edge import CancelRun, ClientMessageReceived, RunRequestDeadlinePassed
from actors.protocols.mailbox import ActorHandle
from actors.providers.actor import ProviderActor, ProviderDeps
from actors.providers.recorder import start_call_recorder
from actors.providers.transport import new_provider_client
from actors.run.children import AgentDeps
from actors.run.model_selection import ModelResolver, ModelSelectionError, StoreModelResolver
from actors.run.owners import RunOwners
from actors.run.session import AGENT_LOOP_UNAVAILABLE, SessionActor
from prompt import load_prompt_assets
from store import Store, connect_store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.conversations import ConversationStore
from tests.support.actor_doubles import QUIET_S, WAIT_S, Ended, StreamOutput
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage
from wire.errors import Code, ConnectError
from wire.proto import agent_v1_pb2 as agent

REQUEST_ID = "req-session"
CONVERSATION_ID = "conv-session"
UNKNOWN_MODEL = "deadbeef"


# ---- client messages ----


def run_request(
    text: str = "say hello",
    model: str = UNKNOWN_MODEL,
    mode: agent.AgentMode = agent.AGENT_MODE_AGENT,
) -> agent.AgentClientMessage:
    user = agent.UserMessage(text=text, message_id="msg-1", mode=mode)
    request = agent.AgentRunRequest(
        conversation_id=CONVERSATION_ID,
        action=agent.ConversationAction(
            user_message_action=agent.UserMessageAction(user_message=user)
        ),
        requested_model=agent.RequestedModel(model_id=model),
    )
    return agent.AgentClientMessage(run_request=request)


def cancel_action(reason: str = "user pressed stop") -> agent.AgentClientMessage:
    action = agent.ConversationAction(cancel_action=agent.CancelAction(reason=reason))
    return agent.AgentClientMessage(conversation_action=action)


def kv_ack(kv_id: int) -> agent.AgentClientMessage:
    ack = agent.KvClientMessage(id=kv_id, set_blob_result=agent.SetBlobResult())
    return agent.AgentClientMessage(kv_client_message=ack)


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# ---- doubles ----


class Session:
    """One started SessionActor, told messages as the edge tells them (seqno from 1)."""

    def __init__(self, ref: pykka.ActorRef[Any], output: StreamOutput) -> None:
        self.ref = ref
        self.output = output
        self._seqno = itertools.count(1)

    def client(self, message: agent.AgentClientMessage) -> None:
        self.ref.tell(ClientMessageReceived(next(self._seqno), message))

    def tell(self, message: object) -> None:
        self.ref.tell(message)

    def ended_with(self, code: Code, message: str) -> ConnectError:
        """The next item is the end, with exactly this error; then the actor stops."""
        error = self.output.end()
        assert error is not None and (error.code, error.message) == (code, message), error
        self.stopped()
        return error

    def stopped(self) -> None:
        assert self.ref.actor_stopped.wait(WAIT_S), "the SessionActor did not stop"
        assert len(self.output.finished) == 1, self.output.finished

    def drain(self) -> list[Any]:
        """Every item that arrives until the output is quiet for ``QUIET_S``."""
        items: list[Any] = []
        with contextlib.suppress(queue.Empty):
            while True:
                items.append(self.output.frames.get(timeout=QUIET_S))
        return items


class RecordingResolver:
    """A ModelResolver double: records each request, then returns ``route`` or raises."""

    def __init__(self, result: ModelRoute | ModelSelectionError) -> None:
        self.result = result
        self.requests: list[agent.AgentRunRequest] = []

    def __call__(self, request: agent.AgentRunRequest) -> ModelRoute:
        self.requests.append(request)
        if isinstance(self.result, ModelSelectionError):
            raise self.result
        return self.result


class CountingResolver:
    """Wraps a real resolver and counts its calls."""

    def __init__(self, inner: ModelResolver) -> None:
        self.inner = inner
        self.calls = 0

    def __call__(self, request: agent.AgentRunRequest) -> ModelRoute:
        self.calls += 1
        return self.inner(request)


class GatedOutput(StreamOutput):
    """Holds the actor inside its first ``finish`` until ``release`` is set, so the test can
    queue more messages before the actor gets to stop itself."""

    def __init__(self) -> None:
        super().__init__()
        self.finishing = threading.Event()
        self.release = threading.Event()

    def finish(self, error: ConnectError | None) -> None:
        self.finishing.set()
        self.release.wait(WAIT_S)
        super().finish(error)


ROUTE = ModelRoute(
    provider_id=1,
    provider_name="double",
    provider_type=ProviderType.OPENAI_CHAT,
    base_url="http://127.0.0.1:9/v1",
    api_key=Secret(""),
    headers=(),
    public_id="0123abcd",
    model_id="double-model",
    display_name="Double",
)


# ---- fixtures ----

StartSession = Callable[..., Session]


def stop_actors(refs: Sequence[ActorHandle[Any]]) -> None:
    for ref in refs:
        with contextlib.suppress(pykka.ActorDeadError):
            ref.stop(timeout=WAIT_S)


@pytest.fixture
def session_refs() -> Iterator[list[pykka.ActorRef[Any]]]:
    """Every SessionActor a test started; stopped at teardown (before ``deps`` goes)."""
    refs: list[pykka.ActorRef[Any]] = []
    yield refs
    stop_actors(refs)


@pytest.fixture
def start_session(session_refs: list[pykka.ActorRef[Any]]) -> StartSession:
    def start(
        resolve_model: ModelResolver | None = None,
        deps: AgentDeps | None = None,
        output: StreamOutput | None = None,
    ) -> Session:
        output = output if output is not None else StreamOutput()
        ref = SessionActor.start(REQUEST_ID, output, resolve_model, deps)
        session_refs.append(ref)
        return Session(ref, output)

    return start


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = connect_store(f"sqlite:///{tmp_path}/session.db")
    yield opened
    opened.close()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The server's shape: an asyncio loop on its own thread, actors on theirs."""
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    yield running
    running.call_soon_threadsafe(running.stop)
    thread.join(WAIT_S)
    running.close()


@pytest.fixture
def fake(loop: asyncio.AbstractEventLoop) -> Iterator[FakeProvider]:
    async def started() -> FakeProvider:
        provider = FakeProvider()
        await provider.start()
        return provider

    provider = asyncio.run_coroutine_threadsafe(started(), loop).result(WAIT_S)
    yield provider
    asyncio.run_coroutine_threadsafe(provider.close(), loop).result(WAIT_S)


@pytest.fixture
def deps(
    store: Store, loop: asyncio.AbstractEventLoop, session_refs: list[pykka.ActorRef[Any]]
) -> Iterator[AgentDeps]:
    """``AgentDeps`` built as ``actors.server.compose.start_server`` builds them."""
    tasks = LoopTasks(loop)
    recorder = start_call_recorder(store.database)
    provider = ProviderDeps(recorder=recorder, tasks=tasks, client=new_provider_client())
    yield AgentDeps(
        store=store,
        prompts=load_prompt_assets(),
        provider=provider,
        owners=RunOwners(),
        tasks=tasks,
    )
    # A run's actors stop before the HTTP client and the loop they use go away.
    stop_actors(session_refs)
    for actor_class in (ProviderActor, CheckpointActor, BlobSyncActor):
        stop_actors(pykka.ActorRegistry.get_by_class(actor_class))
    stop_actors([recorder])  # last: the ProviderActors' ends are recorded through it
    asyncio.run_coroutine_threadsafe(provider.client.aclose(), loop).result(WAIT_S)


@pytest.fixture
def public_id(store: Store, fake: FakeProvider) -> str:
    """An enabled model on the fake provider (which answers 500 unless a script is queued)."""
    provider = create_provider(
        store.database,
        ProviderInput(name="fake", type="openai-chat", base_url=fake.base_url, api_key="sk-x"),
    )
    models = [ModelInput(model_id="fake-model", display_name="Fake", context_window_tokens=128000)]
    return save_models(store.database, provider.id, models)[0].public_id


# ---- without a provider: refusals and the end of the stream ----


def test_without_a_store_a_run_request_ends_unimplemented(start_session: StartSession) -> None:
    session = start_session()
    session.client(run_request())
    session.ended_with(Code.UNIMPLEMENTED, AGENT_LOOP_UNAVAILABLE)  # no frame before the end
    assert session.output.started == 1


def test_a_resolved_model_without_agent_deps_ends_unimplemented(
    start_session: StartSession,
) -> None:
    resolver = RecordingResolver(ROUTE)
    session = start_session(resolve_model=resolver)
    session.client(run_request(text="which model?", model=ROUTE.public_id))
    session.ended_with(Code.UNIMPLEMENTED, AGENT_LOOP_UNAVAILABLE)
    (request,) = resolver.requests
    assert request.requested_model.model_id == ROUTE.public_id
    assert request.action.user_message_action.user_message.text == "which model?"


def test_a_model_that_does_not_resolve_ends_with_the_resolvers_error(
    start_session: StartSession,
) -> None:
    error = ConnectError(Code.UNAVAILABLE, "provider error: model 0123abcd (X) is disabled")
    session = start_session(resolve_model=RecordingResolver(ModelSelectionError(error)))
    session.client(run_request())
    assert session.output.end() is error
    session.stopped()
    assert session.output.started == 1


@pytest.mark.parametrize(
    ("model", "code", "fragment"),
    [
        (UNKNOWN_MODEL, Code.UNAVAILABLE, f"provider error: unknown model: {UNKNOWN_MODEL} "),
        ("", Code.INVALID_ARGUMENT, "protocol error: Cursor Run does not select a model"),
    ],
    ids=["unknown-model", "no-model"],
)
def test_the_store_resolver_refusal_ends_the_run(
    start_session: StartSession, store: Store, model: str, code: Code, fragment: str
) -> None:
    session = start_session(resolve_model=StoreModelResolver(store.database))
    session.client(run_request(model=model))
    error = session.output.end()
    assert error is not None and error.code is code and error.message.startswith(fragment)
    session.stopped()


def test_the_deadline_before_any_run_request_ends_deadline_exceeded(
    start_session: StartSession,
) -> None:
    session = start_session()
    session.tell(RunRequestDeadlinePassed(120.0))
    session.ended_with(Code.DEADLINE_EXCEEDED, "no RunRequest arrived within 120 s")
    assert session.output.started == 0


def test_cancel_run_before_the_run_request_ends_canceled(start_session: StartSession) -> None:
    session = start_session()
    session.tell(CancelRun("shutdown"))
    session.ended_with(Code.CANCELED, "run was cancelled")
    assert session.output.started == 0


def test_a_client_cancel_action_ends_canceled(start_session: StartSession) -> None:
    session = start_session()
    session.client(cancel_action())
    session.ended_with(Code.CANCELED, "run was cancelled")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            agent.AgentClientMessage(exec_client_message=agent.ExecClientMessage(id=7)),
            "protocol error: unknown ExecClientMessage id: 7",
        ),
        (
            agent.AgentClientMessage(
                exec_client_control_message=agent.ExecClientControlMessage(
                    throw=agent.ExecClientThrow(id=3)
                )
            ),
            "protocol error: unknown ExecClientThrow id: 3",
        ),
        (
            agent.AgentClientMessage(
                exec_client_control_message=agent.ExecClientControlMessage(
                    stream_close=agent.ExecClientStreamClose(id=4)
                )
            ),
            "protocol error: unknown ExecClientStreamClose id: 4",
        ),
        (
            agent.AgentClientMessage(interaction_response=agent.InteractionResponse(id=5)),
            "protocol error: unknown InteractionResponse id: 5",
        ),
    ],
    ids=["exec-message", "exec-throw", "exec-stream-close", "interaction-response"],
)
def test_an_answer_for_an_unknown_id_before_any_run_is_invalid_argument(
    start_session: StartSession, message: agent.AgentClientMessage, expected: str
) -> None:
    session = start_session()
    session.client(message)
    session.ended_with(Code.INVALID_ARGUMENT, expected)


def test_kv_heartbeats_and_other_actions_without_a_run_end_nothing(
    start_session: StartSession,
) -> None:
    session = start_session()
    session.client(kv_ack(1))
    session.client(agent.AgentClientMessage(client_heartbeat=agent.ClientHeartbeat()))
    session.client(agent.AgentClientMessage(prewarm_request=agent.PrewarmRequest()))
    heartbeat = agent.ExecClientControlMessage(heartbeat=agent.ExecClientHeartbeat())
    session.client(agent.AgentClientMessage(exec_client_control_message=heartbeat))
    resume = agent.ConversationAction(resume_action=agent.ResumeAction())
    session.client(agent.AgentClientMessage(conversation_action=resume))
    session.output.assert_silent()
    assert session.output.finished == []
    # Still alive and still waiting for its RunRequest: a cancel is handled.
    session.tell(CancelRun("done"))
    session.ended_with(Code.CANCELED, "run was cancelled")


def test_the_stream_is_finished_exactly_once(start_session: StartSession) -> None:
    output = GatedOutput()
    session = start_session(output=output)
    session.tell(CancelRun("first"))
    assert output.finishing.wait(WAIT_S)
    # The actor is inside its first finish: these are queued before it can stop itself.
    session.tell(CancelRun("second"))
    session.client(cancel_action("again"))
    session.tell(RunRequestDeadlinePassed(1.0))
    session.client(agent.AgentClientMessage(exec_client_message=agent.ExecClientMessage(id=9)))
    session.client(run_request())
    output.release.set()
    session.ended_with(Code.CANCELED, "run was cancelled")
    output.assert_silent()
    assert len(output.finished) == 1 and output.started == 0
    with pytest.raises(pykka.ActorDeadError):  # what the edge answers 404 for
        session.tell(CancelRun("after the end"))
    assert len(output.finished) == 1


# ---- with the server's real dependencies ----


def open_run(session: Session, message: agent.AgentClientMessage) -> list[Any]:
    """Send the RunRequest and return what it produced until it is quiet; the run is open."""
    session.client(message)
    first = session.output.next()
    items = [first, *session.drain()]
    assert not any(isinstance(item, Ended) for item in items), items
    assert all(item.WhichOneof("message") == "kv_server_message" for item in items), items
    return items


@pytest.mark.parametrize(
    ("mode", "label"),
    [(agent.AGENT_MODE_PROJECT, "AGENT_MODE_PROJECT"), (42, "42")],
    ids=["project", "unknown-number"],
)
def test_a_mode_without_assets_ends_invalid_argument_naming_it(
    start_session: StartSession,
    deps: AgentDeps,
    store: Store,
    public_id: str,
    fake: FakeProvider,
    mode: int,
    label: str,
) -> None:
    session = start_session(StoreModelResolver(store.database), deps)
    session.client(run_request(model=public_id, mode=mode))  # type: ignore[arg-type]  # 42: no mode, refused
    error = session.output.end()  # refused before any frame
    assert error is not None and error.code is Code.INVALID_ARGUMENT, error
    assert error.message.startswith(f"protocol error: unsupported agent mode: {label} "), error
    session.stopped()
    assert fake.requests == []


def test_a_run_request_without_a_user_message_ends_without_crashing(
    start_session: StartSession, deps: AgentDeps, store: Store, public_id: str
) -> None:
    # Resuming is being implemented: only that it ends, once, and not by the crash handler.
    session = start_session(StoreModelResolver(store.database), deps)
    request = agent.AgentRunRequest(
        conversation_id=CONVERSATION_ID, requested_model=agent.RequestedModel(model_id=public_id)
    )
    session.client(agent.AgentClientMessage(run_request=request))
    while not isinstance(item := session.output.next(), Ended):
        pass
    assert item.error is None or not item.error.message.startswith("internal error"), item
    session.stopped()


def on_loop(loop: asyncio.AbstractEventLoop, coroutine: Any) -> Any:
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(WAIT_S + 1)


def provider_disconnected(loop: asyncio.AbstractEventLoop, fake: FakeProvider) -> None:
    """The run's (only) provider request was cut by the client, within ``WAIT_S``."""

    async def wait() -> None:
        await asyncio.wait_for(fake.disconnected(0).wait(), WAIT_S)

    on_loop(loop, wait())


def test_the_deadline_after_the_run_request_is_ignored(
    start_session: StartSession,
    deps: AgentDeps,
    store: Store,
    public_id: str,
    fake: FakeProvider,
    loop: asyncio.AbstractEventLoop,
) -> None:
    fake.enqueue(Script.hang_before_headers())  # the call stays open until the run ends
    session = start_session(StoreModelResolver(store.database), deps)
    open_run(session, run_request(model=public_id))  # waiting for the client's KV ACKs
    on_loop(loop, fake.wait_for_request(1))
    session.tell(RunRequestDeadlinePassed(120.0))
    session.output.assert_silent()
    assert session.output.finished == []
    session.tell(CancelRun("test over"))
    session.ended_with(Code.CANCELED, "run was cancelled")
    provider_disconnected(loop, fake)


def test_a_repeated_run_request_is_ignored(
    start_session: StartSession,
    deps: AgentDeps,
    store: Store,
    public_id: str,
    fake: FakeProvider,
    loop: asyncio.AbstractEventLoop,
) -> None:
    fake.enqueue(Script.hang_before_headers(), Script.hang_before_headers())
    resolver = CountingResolver(StoreModelResolver(store.database))
    session = start_session(resolver, deps)
    open_run(session, run_request(text="first", model=public_id))
    on_loop(loop, fake.wait_for_request(1))
    session.client(run_request(text="second", model=public_id))
    session.output.assert_silent()
    assert (resolver.calls, session.output.started, session.output.finished) == (1, 1, [])
    assert len(fake.requests) == 1  # no second model call either
    session.client(cancel_action())
    session.ended_with(Code.CANCELED, "run was cancelled")
    provider_disconnected(loop, fake)
    conversations = ConversationStore(store.database)
    messages = conversations.messages_at(conversations.ensure_conversation(CONVERSATION_ID))
    assert len(messages) == 1 and "first" in messages[0].payload.decode()


def test_a_cancel_after_the_provider_call_ended_behind_the_barrier_ends_canceled(
    start_session: StartSession,
    deps: AgentDeps,
    store: Store,
    public_id: str,
    fake: FakeProvider,
    loop: asyncio.AbstractEventLoop,
) -> None:
    # No script: the fake answers 500 at once, the ProviderActor reports the failure and stops;
    # the failure is held until the initial checkpoint (never acknowledged here) is published.
    session = start_session(StoreModelResolver(store.database), deps)
    open_run(session, run_request(model=public_id))
    on_loop(loop, fake.wait_for_request(1))
    deadline = time.monotonic() + WAIT_S
    while pykka.ActorRegistry.get_by_class(ProviderActor):
        assert time.monotonic() < deadline, "the ProviderActor did not stop"
        time.sleep(0.01)
    session.tell(CancelRun("user pressed stop"))
    session.ended_with(Code.CANCELED, "run was cancelled")


def test_a_text_turn_ends_ok_after_every_blob_is_acknowledged(
    start_session: StartSession,
    deps: AgentDeps,
    store: Store,
    public_id: str,
    fake: FakeProvider,
) -> None:
    fake.enqueue(Script.sse(chat_events(text=["Hel", "lo!"], usage=chat_usage(20, 8))))
    session = start_session(StoreModelResolver(store.database), deps)
    session.client(run_request(model=public_id))
    kinds: list[str] = []
    acked: dict[bytes, bytes] = {}
    checkpoints: list[agent.ConversationStateStructure] = []
    while not isinstance(item := session.output.next(), Ended):
        variant = item.WhichOneof("message")
        if variant == "kv_server_message":
            kv = item.kv_server_message
            assert kv.HasField("set_blob_args"), kv
            assert kv.set_blob_args.blob_id == sha(kv.set_blob_args.blob_data)
            assert kv.set_blob_args.blob_id not in acked  # each blob is SET once
            acked[kv.set_blob_args.blob_id] = kv.set_blob_args.blob_data
            session.client(kv_ack(kv.id))
            kinds.append("kv_set")
        elif variant == "conversation_checkpoint_update":
            state = item.conversation_checkpoint_update
            # Published only after every blob it names was SET (and acknowledged, above).
            for blob_id in [*state.root_prompt_messages_json, *state.turns]:
                assert blob_id in acked
            checkpoints.append(state)
            kinds.append("checkpoint")
        else:
            assert variant == "interaction_update", item
            kinds.append(item.interaction_update.WhichOneof("message") or "?")
    assert item.error is None, item.error
    session.stopped()

    first_text = kinds.index("text_delta")
    assert kinds[0] == "kv_set" and "checkpoint" in kinds[:first_text]
    assert [k for k in kinds[first_text:] if k != "kv_set"] == [
        "text_delta",
        "text_delta",
        "token_delta",
        "turn_ended",
        "checkpoint",
        "checkpoint",
        "checkpoint",
    ]
    staged, settled, again = checkpoints[-3:]
    assert len(staged.pending_tool_calls) == 1 and list(settled.pending_tool_calls) == []
    assert settled.SerializeToString() == again.SerializeToString()
    assert len(settled.root_prompt_messages_json) == len(staged.root_prompt_messages_json) + 1
    assert b"Hello!" in acked[settled.root_prompt_messages_json[-1]]
    assert len(fake.requests) == 1
    run = ConversationStore(store.database).run(REQUEST_ID)
    assert run is not None and run.status == "completed"
