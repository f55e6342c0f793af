"""Resolving a RunRequest's model: parameters, errors, the store lookup, and the EndStream.

Pure cases call ``read_selection``; the rest use a real SQLite store filled through
``store.catalog`` and the in-process server with the production SessionActor.
"""

from __future__ import annotations

import pytest

from actors.conversation.request import ModelRoute, ProviderType, Reasoning
from actors.conversation.secret import Secret
from actors.run.model_selection import (
    ModelSelectionError,
    StoreModelResolver,
    parse_context_tokens,
    read_selection,
)
from actors.run.session import AGENT_LOOP_UNAVAILABLE
from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import ModelInput, ModelRecord, ProviderInput, create_provider, save_models
from tests.conftest import StartServer
from tests.support.fake_cursor import FakeCursor, StreamResult
from wire.errors import ERROR_DETAILS_TYPE, Code
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

API_KEY = "sk-test-secret-value"


def run_request(
    model_id: str = "",
    *parameters: tuple[str, str],
    max_mode: bool = False,
    details: agent.ModelDetails | None = None,
    requested: bool = True,
) -> agent.AgentRunRequest:
    request = agent.AgentRunRequest(conversation_id="conv-1")
    if requested:
        request.requested_model.model_id = model_id
        request.requested_model.max_mode = max_mode
        for key, value in parameters:
            request.requested_model.parameters.add(id=key, value=value)
    if details is not None:
        request.model_details.CopyFrom(details)
    return request


def selection_error(request: agent.AgentRunRequest) -> ModelSelectionError:
    with pytest.raises(ModelSelectionError) as caught:
        read_selection(request)
    return caught.value


# ---- which model, and the parameters (pure) --------------------------------------------------


def test_requested_model_wins_over_model_details() -> None:
    details = agent.ModelDetails(model_id="dddd0000")
    assert read_selection(run_request("aaaa0001", details=details)).public_id == "aaaa0001"
    assert read_selection(run_request("", details=details)).public_id == "dddd0000"
    assert read_selection(run_request(requested=False, details=details)).public_id == "dddd0000"


@pytest.mark.parametrize(
    "request_",
    [
        run_request(requested=False),
        run_request(""),
        run_request("", details=agent.ModelDetails(display_name="no id")),
    ],
    ids=["nothing", "empty-requested", "details-without-id"],
)
def test_no_model_selected_is_invalid_argument(request_: agent.AgentRunRequest) -> None:
    error = selection_error(request_).error
    assert error.code is Code.INVALID_ARGUMENT
    assert error.message == "protocol error: Cursor Run does not select a model"
    assert error.details == ()


@pytest.mark.parametrize(
    ("parameters", "reasoning", "effort", "effort_set"),
    [
        ((), False, None, False),
        ((("effort", "high"),), True, "high", True),
        ((("reasoning", "medium"),), True, "medium", True),
        ((("effort", "none"),), False, "none", True),
        ((("effort", "None"),), False, "none", True),
        ((("effort", ""),), False, None, False),
        ((("effort", "high"), ("reasoning", "none")), False, "none", True),
        ((("effort", "high"), ("reasoning", "")), True, "high", True),
        ((("thinking", "true"),), True, None, False),
        ((("thinking", "false"),), False, None, False),
    ],
    ids=[
        "none",
        "effort",
        "reasoning",
        "effort-none",
        "effort-None",
        "effort-empty",
        "last-wins",
        "empty-ignored",
        "thinking-true",
        "thinking-false",
    ],
)
def test_reasoning_parameters(
    parameters: tuple[tuple[str, str], ...],
    reasoning: bool,
    effort: str | None,
    effort_set: bool,
) -> None:
    selection = read_selection(run_request("aaaa0001", *parameters))
    assert (selection.reasoning, selection.effort, selection.effort_set) == (
        reasoning,
        effort,
        effort_set,
    )


@pytest.mark.parametrize(
    "request_",
    [
        run_request("aaaa0001", max_mode=True),
        run_request("aaaa0001", details=agent.ModelDetails(max_mode=True)),
        run_request(
            "aaaa0001", details=agent.ModelDetails(thinking_details=agent.ThinkingDetails())
        ),
    ],
    ids=["requested-max-mode", "details-max-mode", "thinking-details"],
)
def test_max_mode_and_thinking_details_enable_reasoning(request_: agent.AgentRunRequest) -> None:
    assert read_selection(request_).reasoning is True


def test_model_details_max_mode_false_does_not_enable_reasoning() -> None:
    details = agent.ModelDetails(model_id="aaaa0001", max_mode=False)
    assert read_selection(run_request(requested=False, details=details)).reasoning is False


@pytest.mark.parametrize(("value", "fast"), [("true", True), ("false", False)])
def test_fast_parameter(value: str, fast: bool) -> None:
    assert read_selection(run_request("aaaa0001", ("fast", value))).fast is fast


@pytest.mark.parametrize("parameter", ["thinking", "fast"])
@pytest.mark.parametrize("value", ["yes", "1", "True", "", " true"])
def test_bad_booleans_are_refused(parameter: str, value: str) -> None:
    error = selection_error(run_request("aaaa0001", (parameter, value))).error
    assert error.code is Code.INVALID_ARGUMENT
    assert error.message == (
        f"protocol error: Cursor model parameter {parameter} must be true or false, got {value!r}"
    )


@pytest.mark.parametrize(
    ("value", "tokens"),
    [("123", 123), ("272k", 272_000), ("272K", 272_000), ("1m", 1_000_000), ("2M", 2_000_000)],
)
def test_context_suffixes(value: str, tokens: int) -> None:
    assert parse_context_tokens(value) == tokens
    assert read_selection(run_request("aaaa0001", ("context", value))).context_tokens == tokens


@pytest.mark.parametrize("value", ["", "k", "abc", "0", "0k", "-5", "1.5m", "12g", "1 m"])
def test_bad_context_is_refused(value: str) -> None:
    error = selection_error(run_request("aaaa0001", ("context", value))).error
    assert error.code is Code.INVALID_ARGUMENT
    assert "Cursor model parameter context must be a positive token count" in error.message
    assert repr(value) in error.message


def test_unknown_parameter_is_refused_by_name() -> None:
    error = selection_error(run_request("aaaa0001", ("temperature", "0.2"))).error
    assert error.code is Code.INVALID_ARGUMENT
    assert error.message == "protocol error: unsupported Cursor model parameter: 'temperature'"


# ---- against a real store ---------------------------------------------------------------------


@pytest.fixture
def store(server_store: Store) -> Store:
    """The migrated SQLite store the in-process servers of these tests use too."""
    return server_store


def add_models(store: Store, *models: ModelInput, provider_type: str = "openai-chat") -> list[str]:
    provider = create_provider(
        store.database,
        ProviderInput(
            name="Local",
            type=provider_type,
            base_url="https://llm.example.test/v1",
            api_key=API_KEY,
            headers={"X-Org": "team-1"},
        ),
    )
    saved: list[ModelRecord] = save_models(store.database, provider.id, list(models))
    return [model.public_id for model in saved]


def resolve(store: Store, request: agent.AgentRunRequest) -> ModelRoute:
    return StoreModelResolver(store.database)(request)


def resolve_error(store: Store, request: agent.AgentRunRequest) -> ModelSelectionError:
    with pytest.raises(ModelSelectionError) as caught:
        resolve(store, request)
    return caught.value


def test_route_from_the_store(store: Store) -> None:
    (public_id,) = add_models(
        store,
        ModelInput(
            model_id="gpt-test",
            display_name="GPT Test",
            max_output_tokens=4096,
            context_window_tokens=200_000,
        ),
    )
    route = resolve(store, run_request(public_id, ("fast", "true")))
    assert route.public_id == public_id
    assert route.provider_type is ProviderType.OPENAI_CHAT
    assert (route.provider_name, route.base_url) == ("Local", "https://llm.example.test/v1")
    assert (route.model_id, route.display_name) == ("gpt-test", "GPT Test")
    assert route.headers == (("X-Org", "team-1"),)
    assert route.api_key == Secret(API_KEY)
    assert API_KEY not in repr(route)
    assert (route.max_output_tokens, route.context_window_tokens) == (4096, 200_000)
    assert route.reasoning == Reasoning(enabled=False, effort=None)
    assert route.fast is True


def test_stored_reasoning_defaults_and_request_overrides(store: Store) -> None:
    (public_id,) = add_models(
        store,
        ModelInput(
            model_id="thinker",
            display_name="Thinker",
            reasoning_enabled=True,
            reasoning_effort="medium",
        ),
    )
    assert resolve(store, run_request(public_id)).reasoning == Reasoning(True, "medium")
    high = resolve(store, run_request(public_id, ("effort", "high")))
    assert high.reasoning == Reasoning(True, "high")
    # Effort none means no reasoning at all, also on a model that stores reasoning on.
    cleared = resolve(store, run_request(public_id, ("reasoning", "none")))
    assert cleared.reasoning == Reasoning(False, "none")
    # An empty effort is no parameter: the stored default applies.
    assert resolve(store, run_request(public_id, ("effort", " "))).reasoning == Reasoning(
        True, "medium"
    )
    # thinking=false asks for nothing: the stored model still reasons.
    assert resolve(store, run_request(public_id, ("thinking", "false"))).reasoning.enabled


def test_an_effort_the_format_does_not_take_is_refused(store: Store) -> None:
    (public_id,) = add_models(store, ModelInput(model_id="plain", display_name="Plain"))
    with pytest.raises(ModelSelectionError) as raised:
        resolve(store, run_request(public_id, ("effort", "hihg")))
    error = raised.value.error
    assert error.code is Code.INVALID_ARGUMENT
    assert "'hihg'" in error.message and "none, minimal, low, medium, high" in error.message
    # Case is not a typo.
    assert resolve(store, run_request(public_id, ("effort", "HIGH"))).reasoning.effort == "high"


def test_a_stored_effort_from_before_the_check_is_read_or_refused(store: Store) -> None:
    """Efforts were free text once: a stored ``High`` is read as ``high``; a stored value the
    format does not take ends the run telling the user to save the model again."""
    (public_id,) = add_models(store, ModelInput(model_id="old", display_name="Old"))
    db = store.database
    for stored, expected in ((" High ", "high"), ("", None)):
        execute_sql(db, f"UPDATE models SET reasoning_effort = {db.param}", (stored,))
        assert resolve(store, run_request(public_id)).reasoning.effort == expected
    execute_sql(db, f"UPDATE models SET reasoning_effort = {db.param}", ("default",))
    error = resolve_error(store, run_request(public_id)).error
    assert error.code is Code.FAILED_PRECONDITION
    assert "'default'" in error.message and "save the model again" in error.message
    # An explicit effort from Cursor still wins over the stored one.
    assert resolve(store, run_request(public_id, ("effort", "low"))).reasoning.effort == "low"


def test_request_reasoning_on_a_plain_model(store: Store) -> None:
    (public_id,) = add_models(store, ModelInput(model_id="plain", display_name="Plain"))
    route = resolve(store, run_request(public_id, max_mode=True))
    assert route.reasoning == Reasoning(True, None)
    route = resolve(store, run_request(public_id, ("effort", "low")))
    assert route.reasoning == Reasoning(True, "low")


@pytest.mark.parametrize(
    ("stored", "requested", "expected"),
    [
        (200_000, None, 200_000),
        (200_000, "1m", 200_000),
        (200_000, "100k", 100_000),
        (None, "272k", 272_000),
        (None, None, None),
    ],
)
def test_context_parameter_narrows_the_stored_window(
    store: Store, stored: int | None, requested: str | None, expected: int | None
) -> None:
    (public_id,) = add_models(
        store, ModelInput(model_id="ctx", display_name="Ctx", context_window_tokens=stored)
    )
    parameters = () if requested is None else (("context", requested),)
    assert resolve(store, run_request(public_id, *parameters)).context_window_tokens == expected


def assert_unavailable(failure: ModelSelectionError, message: str) -> None:
    error = failure.error
    assert error.code is Code.UNAVAILABLE
    assert error.message == message
    (detail,) = error.details
    assert detail.type == ERROR_DETAILS_TYPE
    details = aiserver.ErrorDetails.FromString(detail.value)
    assert details.error == aiserver.ErrorDetails.ERROR_PROVIDER_ERROR
    assert details.details.detail == message


@pytest.mark.parametrize("model_id", ["abcdef12", "gpt-5"])
def test_unknown_model_is_unavailable(store: Store, model_id: str) -> None:
    add_models(store, ModelInput(model_id="other", display_name="Other"))
    assert_unavailable(
        resolve_error(store, run_request(model_id)),
        f"provider error: unknown model: {model_id} (no model with this id is configured on "
        "this server; add it in the console, or map the id under Settings > Routing)",
    )


def test_disabled_model_is_unavailable(store: Store) -> None:
    (public_id,) = add_models(
        store, ModelInput(model_id="off", display_name="Switched Off", enabled=False)
    )
    assert_unavailable(
        resolve_error(store, run_request(public_id)),
        f"provider error: model {public_id} (Switched Off) is disabled",
    )


def test_parameter_errors_come_before_the_lookup(store: Store) -> None:
    failure = resolve_error(store, run_request("abcdef12", ("bogus", "1")))
    assert failure.error.code is Code.INVALID_ARGUMENT


def test_store_failure_is_internal(store: Store) -> None:
    execute_sql(store.database, "DROP TABLE models")
    failure = resolve_error(store, run_request("abcdef12"))
    assert failure.error.code is Code.INTERNAL
    assert failure.error.message.startswith("store error: ")


# ---- the run's EndStream over HTTP ------------------------------------------------------------


def client_message(request: agent.AgentRunRequest) -> agent.AgentClientMessage:
    return agent.AgentClientMessage(run_request=request)


async def end_of_run(make_server: StartServer, request: agent.AgentRunRequest) -> StreamResult:
    """Send one RunRequest to a server with the production sessions; read its stream to the end."""
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("req-model")
        assert (await cursor.append("req-model", 0, client_message(request))).status_code == 200
        return await stream.read_to_end()
    finally:
        await cursor.aclose()


async def test_an_unknown_model_is_relayed_to_cursors_backend(
    make_server: StartServer, upstream: str
) -> None:
    """A model id that is not one of ours is Cursor's: the run goes upstream (whose stand-in
    here answers every request 299, so the relayed stream ends naming it)."""
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("req-model")
        answer = await cursor.append("req-model", 0, client_message(run_request("abcdef12")))
        assert (answer.status_code, answer.text) == (
            299,
            "upstream saw POST /aiserver.v1.BidiService/BidiAppend",
        )
        result = await stream.read_to_end()
    finally:
        await cursor.aclose()
    assert result.messages == []
    assert result.end == {
        "error": {
            "code": "unavailable",
            "message": f"Cursor upstream {upstream} answered RunSSE with HTTP 299: "
            "upstream saw POST /agent.v1.AgentService/RunSSE",
        }
    }


async def test_bad_parameter_ends_the_run_invalid_argument(
    make_server: StartServer, store: Store
) -> None:
    (public_id,) = add_models(store, ModelInput(model_id="m", display_name="M"))
    result = await end_of_run(make_server, run_request(public_id, ("fast", "maybe")))
    assert result.end == {
        "error": {
            "code": "invalid_argument",
            "message": "protocol error: Cursor model parameter fast must be true or false, "
            "got 'maybe'",
        }
    }


async def test_resolved_model_without_an_action_ends_unimplemented(
    make_server: StartServer, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    (public_id,) = add_models(store, ModelInput(model_id="m", display_name="M"))
    caplog.set_level("DEBUG", logger="cursor_server.session")
    result = await end_of_run(make_server, run_request(public_id))
    # Model resolution passed; a RunRequest with no action at all is refused next.
    assert result.end == {
        "error": {"code": "unimplemented", "message": "conversation action none is not available"}
    }
    resolved = [r.getMessage() for r in caplog.records if "run model resolved" in r.getMessage()]
    assert resolved == [
        f"run model resolved request_id=req-model public_id={public_id} provider_type=openai-chat"
    ]
    assert API_KEY not in caplog.text


async def test_without_a_store_no_model_is_resolved(make_server: StartServer) -> None:
    server = await make_server(store=None)
    cursor = FakeCursor(f"http://{server.address}")
    try:
        stream = await cursor.open_run_sse("req-none")
        message = client_message(run_request(requested=False))
        assert (await cursor.append("req-none", 0, message)).status_code == 200
        result = await stream.read_to_end()
    finally:
        await cursor.aclose()
    assert result.end == {"error": {"code": "unimplemented", "message": AGENT_LOOP_UNAVAILABLE}}
