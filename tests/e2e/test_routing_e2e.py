"""Routing end to end: Cursor's Auto and Cursor's own model ids run on the user's models (the
real server, the fake Cursor client, the fake provider, and a fake Cursor backend for what is
still relayed). The routing settings are saved through the console API, as the Settings page
saves them, and each run's call record says what Cursor asked for and which model answered."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from actors.server.compose import RunningServer
from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from tests.conftest import FAKE_PROVIDER_KEY, StartServer
from tests.e2e.test_task_e2e import execs, task
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, user_turn_message
from tests.support.fake_provider import FakeProvider
from tests.support.fake_upstream import SCRIPTED, FakeUpstream, fake_upstream
from tests.support.formats import FORMAT_IDS, FORMATS, ProviderFormat
from wire.default_model import DEFAULT_MODEL_ROUTES, DefaultKind
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

__all__ = ["fake_upstream"]  # a fixture used by name

CHAT = FORMATS[0]


@pytest.fixture
def upstream(fake_upstream: FakeUpstream) -> str:
    """What is still relayed goes to the fake Cursor backend."""
    return fake_upstream.url


def two_models(store: Store, fake: FakeProvider, fmt: ProviderFormat = CHAT) -> tuple[str, str]:
    """Two models on the fake provider, ``model-a`` (first in catalog order) and ``model-b``."""
    provider = create_provider(
        store.database,
        ProviderInput(
            name=f"fake-{fmt.type}",
            type=fmt.type,
            base_url=fake.base_url,
            api_key=FAKE_PROVIDER_KEY,
        ),
    )
    models = [
        ModelInput(
            model_id=f"model-{x}",
            display_name=f"Model {x.upper()}",
            sort_order=i,
            context_window_tokens=128000,
            max_output_tokens=8192,
        )
        for i, x in enumerate("ab")
    ]
    first, second = save_models(store.database, provider.id, models)
    return first.public_id, second.public_id


async def console(
    server: RunningServer, method: str, path: str, body: Any = None
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        # Every console mutation is JSON, body or not.
        headers = {} if method == "GET" else {"content-type": "application/json"}
        content = None if body is None else json.dumps(body).encode()
        return await client.request(method, f"/console/api{path}", content=content, headers=headers)


async def save_routing(server: RunningServer, **body: Any) -> dict[str, Any]:
    answer = await console(server, "PUT", "/settings/routing", body)
    assert answer.status_code == 200, answer.text
    saved: dict[str, Any] = answer.json()
    return saved


def call_rows(store: Store) -> list[tuple[str, str | None, str]]:
    """Every call record's (public id, asked id, provider model id), oldest first."""
    rows = execute_sql(
        store.database,
        'SELECT "public_id", "asked_model_id", "model_id" FROM "llm_calls" ORDER BY "id"',
    ).fetchall()
    return [tuple(row) for row in rows]


def text_of(log: TurnLog) -> str:
    return "".join(m.interaction_update.text_delta.text for m in log.messages)


def run_message(model_id: str, request_id: str) -> agent.AgentClientMessage:
    return user_turn_message("hi", model_id, conversation_id=f"conv-{request_id}")


async def run_once(
    cursor: FakeCursor, request_id: str, model_id: str, details: bool = False
) -> TurnLog:
    message = run_message(model_id, request_id)
    if details:  # the id in model_details only, as an older client sends it
        message.run_request.ClearField("requested_model")
        message.run_request.model_details.model_id = model_id
    return await CursorSession(cursor, request_id).run(message)


# --- Auto ---------------------------------------------------------------------------------------


async def test_auto_runs_on_the_first_enabled_model_with_no_setting(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    """``default`` (the editor's Auto), a CLI's ``auto`` and an empty id run here, on the first
    enabled model, with nothing set: nothing of them reaches Cursor's backend."""
    first, _ = two_models(server_store, fake)
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}")
    asked = ["default", "auto", "", "default/high"]
    try:
        for i, model_id in enumerate(asked):
            fake.enqueue(CHAT.answer(f"answer {i}"))
            log = await run_once(cursor, f"auto-{i}", model_id, details=model_id == "")
            assert log.end == {}, log.end
            assert text_of(log) == f"answer {i}"
    finally:
        await cursor.aclose()
    assert fake_upstream.run_sse == [] and fake_upstream.appends == []
    assert [r.json["model"] for r in fake.requests] == ["model-a"] * 4
    # The CLI's reasoning suffix still applies to the model Auto chose.
    assert "reasoning_effort" not in fake.requests[0].json
    assert fake.requests[3].json["reasoning_effort"] == "high"
    assert call_rows(server_store) == [(first, a, "model-a") for a in asked]
    # The Calls API shows both the asked id and the model that answered.
    listed = (await console(server, "GET", "/calls")).json()["calls"]
    assert [(c["asked_model_id"], c["public_id"]) for c in reversed(listed)] == [
        (a, first) for a in asked
    ]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_auto_follows_its_setting_in_every_format(
    fmt: ProviderFormat,
    make_server: StartServer,
    fake: FakeProvider,
    server_store: Store,
) -> None:
    _first, second = two_models(server_store, fake, fmt)
    server = await make_server()
    saved = await save_routing(server, auto={"kind": "model", "public_id": second})
    assert saved["auto"] == {"kind": "model", "public_id": second}
    cursor = FakeCursor(f"http://{server.address}")
    try:
        fake.enqueue(fmt.answer("from B"))
        log = await run_once(cursor, "auto-set", "default")
    finally:
        await cursor.aclose()
    assert log.end == {} and text_of(log) == "from B"
    assert call_rows(server_store) == [(second, "default", "model-b")]
    # The run's timeline names the id asked for beside the model.
    for _ in range(100):  # the run's events are written within 100 ms of its end
        timeline = (await console(server, "GET", "/conversations/conv-auto-set")).json()
        if timeline.get("runs") and timeline["runs"][0]["code"] is not None:
            break
        await asyncio.sleep(0.02)
    (run,) = timeline["runs"]
    assert (run["model"], run["asked"]) == (second, "default")


async def test_auto_set_to_cursors_backend_is_relayed(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    two_models(server_store, fake)
    server = await make_server()
    await save_routing(server, auto={"kind": "cursor", "public_id": None})
    cursor = FakeCursor(f"http://{server.address}")
    try:
        for request_id, model_id in (("relay-default", "default"), ("relay-empty", "")):
            stream = await cursor.open_run_sse(request_id)
            await cursor.append(request_id, 0, run_message(model_id, request_id))
            assert (await stream.read_to_end()).raw == SCRIPTED
    finally:
        await cursor.aclose()
    assert len(fake_upstream.run_sse) == 2 and len(fake_upstream.appends) == 2
    assert fake.requests == [] and call_rows(server_store) == []


async def test_auto_on_a_disabled_model_is_a_clear_error_never_a_relay(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    _first, second = two_models(server_store, fake)
    server = await make_server()
    await save_routing(server, auto={"kind": "model", "public_id": second})
    provider_id = (await console(server, "GET", "/models")).json()[0]["provider_id"]
    disabled = {"model_id": "model-b", "display_name": "Model B", "enabled": False, "sort_order": 1}
    saved = await console(
        server, "POST", f"/providers/{provider_id}/models", {"models": [disabled]}
    )
    assert saved.status_code == 201, saved.text
    cursor = FakeCursor(f"http://{server.address}")
    try:
        log = await run_once(cursor, "auto-off", "default")
    finally:
        await cursor.aclose()
    assert isinstance(log.end, dict)
    error = log.end["error"]
    assert error["code"] == "unavailable"
    assert f"model {second} (Model B) is disabled" in error["message"]
    assert "'default'" in error["message"]
    assert fake_upstream.run_sse == [] and fake.requests == []


# --- Cursor's ids to ours ---------------------------------------------------------------------


async def test_mapped_cursor_ids_run_on_the_mapped_model_and_the_rest_is_relayed(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    first, second = two_models(server_store, fake)
    server = await make_server()
    await save_routing(
        server,
        routes=[
            {"pattern": "claude-*", "public_id": first},
            {"pattern": "claude-4.5-sonnet", "public_id": second},
            {"pattern": "gpt-5*", "public_id": first},
        ],
    )
    cursor = FakeCursor(f"http://{server.address}")
    runs = [
        ("claude-4.5-sonnet", "model-b"),
        ("claude-4-opus", "model-a"),
        ("gpt-5-codex", "model-a"),
    ]
    try:
        for i, (model_id, _) in enumerate(runs):
            fake.enqueue(CHAT.answer(f"mapped {i}"))
            log = await run_once(cursor, f"mapped-{i}", model_id)
            assert log.end == {} and text_of(log) == f"mapped {i}"
        # An id no entry maps still goes to Cursor's backend, unchanged.
        stream = await cursor.open_run_sse("relayed")
        await cursor.append("relayed", 0, run_message("composer-1", "relayed"))
        assert (await stream.read_to_end()).raw == SCRIPTED
    finally:
        await cursor.aclose()
    assert [r.json["model"] for r in fake.requests] == [m for _, m in runs]
    public = {"model-a": first, "model-b": second}
    assert call_rows(server_store) == [(public[m], asked, m) for asked, m in runs]
    assert len(fake_upstream.run_sse) == 1


async def test_cursors_parameters_for_its_own_model_do_not_fail_a_mapped_run(
    make_server: StartServer, fake: FakeProvider, server_store: Store
) -> None:
    """Parameters Cursor sends for one of its own models (an id we do not know, an effort our
    model's format does not take) are dropped when the run is mapped to ours; the same
    parameters on our own model's id are still refused."""
    first, _ = two_models(server_store, fake)
    server = await make_server()
    await save_routing(server, routes=[{"pattern": "claude-*", "public_id": first}])
    cursor = FakeCursor(f"http://{server.address}")
    parameters = [
        agent.RequestedModel.ModelParameterValue(id="cursor-only-switch", value="on"),
        agent.RequestedModel.ModelParameterValue(id="effort", value="ultra"),
    ]
    try:
        fake.enqueue(CHAT.answer("mapped with parameters"))
        mapped = run_message("claude-4.5-sonnet", "mapped-parameters")
        mapped.run_request.requested_model.parameters.extend(parameters)
        log = await CursorSession(cursor, "mapped-parameters").run(mapped)
        assert log.end == {} and text_of(log) == "mapped with parameters"
        own = run_message(first, "own-parameters")
        own.run_request.requested_model.parameters.extend(parameters)
        refused = await CursorSession(cursor, "own-parameters").run(own)
    finally:
        await cursor.aclose()
    assert refused.end is not None and refused.end["error"]["code"] == "invalid_argument"
    assert "cursor-only-switch" in refused.end["error"]["message"]
    (request,) = fake.requests
    assert request.json["model"] == "model-a"
    assert "reasoning_effort" not in request.json  # the stored setting (none), not "ultra"


async def test_a_mapped_id_on_a_disabled_model_is_a_clear_error(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    first, _ = two_models(server_store, fake)
    server = await make_server()
    await save_routing(server, routes=[{"pattern": "composer-1", "public_id": first}])
    provider_id = (await console(server, "GET", "/models")).json()[0]["provider_id"]
    disabled = {"model_id": "model-a", "display_name": "Model A", "enabled": False}
    saved = await console(
        server, "POST", f"/providers/{provider_id}/models", {"models": [disabled]}
    )
    assert saved.status_code == 201, saved.text
    cursor = FakeCursor(f"http://{server.address}")
    try:
        log = await run_once(cursor, "mapped-off", "composer-1")
    finally:
        await cursor.aclose()
    assert isinstance(log.end, dict) and log.end["error"]["code"] == "unavailable"
    assert f"model {first} (Model A) is disabled" in log.end["error"]["message"]
    assert "'composer-1'" in log.end["error"]["message"]
    assert fake_upstream.run_sse == [] and fake.requests == []


# --- subagents --------------------------------------------------------------------------------


async def test_a_tasks_cursor_model_runs_its_child_on_the_mapped_model(
    make_server: StartServer, fake: FakeProvider, server_store: Store
) -> None:
    """Cursor's own subagents are pinned to Cursor's ids: the user's setting for a type
    (``subagent_model_overrides``) and a Task's ``model`` both go through the table."""
    first, second = two_models(server_store, fake)
    server = await make_server()
    await save_routing(
        server,
        routes=[
            {"pattern": "composer-1", "public_id": second},
            {"pattern": "gpt-5*", "public_id": second},
        ],
    )
    fake.enqueue(
        CHAT.tool_round(
            [
                task("call_set", subagent_type="explore"),
                task("call_arg", model="gpt-5-mini"),
            ]
        )
    )
    # Each child (run on model-b) answers; then the parent (model-a) ends the turn.
    fake.enqueue(CHAT.answer("child report"))
    fake.enqueue(CHAT.answer("child report"))
    fake.enqueue(CHAT.answer("done"))
    message = user_turn_message("delegate", first)
    message.run_request.subagent_model_overrides.add(
        subagent_type="explore", model=agent.RequestedModel(model_id="composer-1")
    )
    cursor = FakeCursor(f"http://{server.address}")
    try:
        session = CursorSession(cursor, "turn-parent", run_subagents=True)
        log = await session.run(message)
    finally:
        await cursor.aclose()
    assert log.end == {}
    requests = {e.exec_id: e.subagent_args.model_id for e in execs(log, "subagent_args")}
    assert requests == {"call_set": second, "call_arg": second}
    assert sorted(child.log.end == {} for child in session.subagents) == [True, True]
    models = [r.json["model"] for r in fake.requests]
    assert models == ["model-a", "model-b", "model-b", "model-a"]


# --- the CLI's default-model routes -----------------------------------------------------------


def default_answer(path: str, body: bytes) -> tuple[str, ...]:
    match DEFAULT_MODEL_ROUTES[path]:
        case DefaultKind.FOR_CLI:
            model = agent.GetDefaultModelForCliResponse.FromString(body).model
            return (model.model_id, model.display_name)
        case DefaultKind.DEFAULT:
            return (aiserver.GetDefaultModelResponse.FromString(body).model,)
        case DefaultKind.NUDGE:
            nudge = aiserver.GetDefaultModelNudgeDataResponse.FromString(body)
            return tuple(nudge.models_with_no_default_switch)


async def post_default(server: RunningServer, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        return await client.post(path, content=b"", headers={"content-type": "application/proto"})


async def test_the_default_model_routes_answer_where_auto_goes(
    make_server: StartServer, fake: FakeProvider, server_store: Store, fake_upstream: FakeUpstream
) -> None:
    first, second = two_models(server_store, fake)
    server = await make_server()
    for_cli = "/agent.v1.AgentService/GetDefaultModelForCli"
    default = "/aiserver.v1.AiService/GetDefaultModel"
    # Unset: the first enabled model.
    answer = await post_default(server, for_cli)
    assert answer.status_code == 200
    assert default_answer(for_cli, answer.content) == (first, "Model A")
    # Set to a model: that model.
    await save_routing(server, auto={"kind": "model", "public_id": second})
    for path in (for_cli, default):
        answer = await post_default(server, path)
        assert answer.status_code == 200
        assert default_answer(path, answer.content)[0] == second
    # Set to Cursor's backend: every default-model route is relayed there.
    await save_routing(server, auto={"kind": "cursor"})
    for path in DEFAULT_MODEL_ROUTES:
        answer = await post_default(server, path)
        assert (answer.status_code, answer.content) == (299, b"upstream-other")
    assert fake_upstream.others == [f"POST {path}" for path in DEFAULT_MODEL_ROUTES]


async def test_the_default_model_route_names_a_disabled_auto_model_as_the_error(
    make_server: StartServer, fake: FakeProvider, server_store: Store
) -> None:
    _, second = two_models(server_store, fake)
    server = await make_server()
    await save_routing(server, auto={"kind": "model", "public_id": second})
    provider_id = (await console(server, "GET", "/models")).json()[0]["provider_id"]
    disabled = {"model_id": "model-b", "display_name": "Model B", "enabled": False}
    await console(server, "POST", f"/providers/{provider_id}/models", {"models": [disabled]})
    answer = await post_default(server, "/agent.v1.AgentService/GetDefaultModelForCli")
    assert answer.status_code == 400
    assert answer.json()["code"] == "failed_precondition"
    assert f"Auto runs on model {second}, which is not enabled" in answer.json()["message"]


# --- the console API --------------------------------------------------------------------------


async def test_the_routing_api_reads_saves_and_refuses_naming_the_field(
    make_server: StartServer, fake: FakeProvider, server_store: Store
) -> None:
    first, second = two_models(server_store, fake)
    server = await make_server()
    got = (await console(server, "GET", "/settings/routing")).json()
    assert got == {
        "auto": {"kind": "first-enabled", "public_id": None},
        "routes": [],
        "max_routes": 100,
    }
    refusals = [
        ({"auto": {"kind": "model", "public_id": "ffff0000"}}, "auto.public_id: there is no model"),
        ({"auto": {"kind": "somewhere"}}, "auto.kind: must be one of cursor, first-enabled, model"),
        ({"routes": [{"pattern": "", "public_id": first}]}, "routes[0].pattern: must not be empty"),
        (
            {
                "routes": [
                    {"pattern": "a", "public_id": first},
                    {"pattern": "a", "public_id": first},
                ]
            },
            "routes[1].pattern: 'a' is already in the table",
        ),
        ({"routes": [{"pattern": second, "public_id": first}]}, "routes[0].pattern: "),
        ({"routes": [{"pattern": "x", "public_id": "nope"}]}, "routes[0].public_id: "),
        ({"routes": [{"pattern": "x"}]}, "routes[0].public_id: is required"),
        ({"routes": "x"}, "routes: must be a list"),
        ({"other": 1}, "other: is not a field this form takes"),
    ]
    for body, fragment in refusals:
        answer = await console(server, "PUT", "/settings/routing", body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["code"] == "invalid_argument"
        assert fragment in answer.json()["message"], (fragment, answer.json())
        assert "somewhere" not in answer.text  # a choice's value is never echoed
    assert (await console(server, "GET", "/settings/routing")).json() == got
    # Deleting a model forgets the settings that name it.
    await save_routing(
        server,
        auto={"kind": "model", "public_id": second},
        routes=[{"pattern": "x", "public_id": second}, {"pattern": "y*", "public_id": first}],
    )
    assert (await console(server, "DELETE", f"/models/{second}")).status_code == 204
    assert (await console(server, "GET", "/settings/routing")).json() == {
        "auto": {"kind": "first-enabled", "public_id": None},
        "routes": [{"pattern": "y*", "public_id": first}],
        "max_routes": 100,
    }


async def test_the_connect_status_says_where_auto_goes(
    make_server: StartServer, fake: FakeProvider, server_store: Store
) -> None:
    first, second = two_models(server_store, fake)
    server = await make_server()

    async def auto() -> dict[str, Any]:
        status: dict[str, Any] = (await console(server, "GET", "/connection")).json()["auto"]
        return status

    assert await auto() == {
        "goes_to": "model",
        "because": "first-enabled",
        "public_id": first,
        "display_name": "Model A",
        "enabled": True,
    }
    await save_routing(server, auto={"kind": "model", "public_id": second})
    assert (await auto())["display_name"] == "Model B"
    await save_routing(server, auto={"kind": "cursor"})
    assert (await auto())["goes_to"] == "cursor"
