"""The model-list splice: sans-IO byte vectors, then the three routes over real HTTP.

The HTTP tests put a recording aiohttp upstream on 127.0.0.1:0 behind the in-process server
(``start_server`` with a real SQLite store holding the user models) and check what the
upstream received as well as what the client got back.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import msgspec
import pytest
from aiohttp import web

from store import Store
from store.base.typed_peewee import execute_sql
from store.catalog import (
    ModelInput,
    ModelRecord,
    ProviderInput,
    create_provider,
    enabled_models,
    save_models,
)
from tests.conftest import StartServer
from wire.connect import encode_envelope
from wire.errors import Code, ConnectError
from wire.http import catalog_routes
from wire.model_catalog import (
    CATALOG_ROUTES,
    INT32_MAX,
    CatalogKind,
    available_models_addition,
    catalog_addition,
    splice,
    usable_models_addition,
)
from wire.proto import agent_v1_pb2 as agent
from wire.proto import aiserver_v1_pb2 as aiserver

AVAILABLE = "/aiserver.v1.AiService/AvailableModels"
USABLE_AGENT = "/agent.v1.AgentService/GetUsableModels"
USABLE_AISERVER = "/aiserver.v1.AiService/GetUsableModels"

# An official answer holding only a field our subset does not know: field 99, varint 7.
UNKNOWN_ONLY = bytes.fromhex("980607")


def record(public_id: str, name: str, **changes: object) -> ModelRecord:
    base = ModelRecord(
        public_id=public_id,
        provider_id=1,
        provider_name="Local",
        provider_type="openai-chat",
        model_id=f"upstream-{public_id}",
        display_name=name,
        enabled=True,
        sort_order=0,
        max_output_tokens=None,
        context_window_tokens=None,
        reasoning_enabled=False,
        reasoning_effort=None,
    )
    return msgspec.structs.replace(base, **changes)


USER_MODELS = (
    record("aaaa0001", "Alpha", reasoning_enabled=True, context_window_tokens=200_000),
    record("bbbb0002", "Beta"),
)


# ---- sans-IO: the addition and the splice ---------------------------------------------------


def test_raw_unknown_official_bytes_stay_a_byte_exact_prefix() -> None:
    addition = available_models_addition(USER_MODELS)
    merged = splice(UNKNOWN_ONLY, addition)
    assert merged == UNKNOWN_ONLY + addition
    decoded = aiserver.AvailableModelsResponse.FromString(merged)
    assert list(decoded.model_names) == ["aaaa0001", "bbbb0002"]
    assert decoded.SerializeToString().endswith(UNKNOWN_ONLY), "unknown field 99 survives"


def test_framed_catalog_gets_its_length_rewritten() -> None:
    addition = usable_models_addition(USER_MODELS)
    framed = encode_envelope(0, UNKNOWN_ONLY)
    assert framed[:5] == bytes.fromhex("0000000003")
    merged = splice(framed, addition)
    assert merged[0] == 0
    assert int.from_bytes(merged[1:5], "big") == 3 + len(addition) == len(merged) - 5
    assert merged[5:8] == UNKNOWN_ONLY
    assert merged[8:] == addition


@pytest.mark.parametrize("flags", [0x01, 0x02, 0x03])
def test_framed_catalog_with_flags_is_refused(flags: int) -> None:
    with pytest.raises(ConnectError) as caught:
        splice(encode_envelope(flags, b"{}"), b"\x0a\x00")
    assert caught.value.code is Code.UNAVAILABLE
    assert caught.value.http_status == 502
    assert f"flags=0x{flags:02x}" in caught.value.message


@pytest.mark.parametrize(
    "body",
    [b"", b"\x0a", b"\x0a\x03abc", b"\x00\x00\x00\x00\x09abc"],
    ids=["empty", "short", "raw", "length-mismatch"],
)
def test_bodies_that_are_not_one_envelope_are_raw(body: bytes) -> None:
    assert splice(body, b"\x0a\x00") == body + b"\x0a\x00"


def test_available_models_official_then_user_entries_in_order() -> None:
    official = aiserver.AvailableModelsResponse(model_names=["gpt-5"])
    official.models.add(name="gpt-5", supports_agent=True)
    official_bytes = official.SerializeToString()
    merged = splice(official_bytes, catalog_addition(CatalogKind.AVAILABLE_MODELS, USER_MODELS))
    assert merged.startswith(official_bytes)
    decoded = aiserver.AvailableModelsResponse.FromString(merged)
    assert list(decoded.model_names) == ["gpt-5", "aaaa0001", "bbbb0002"]
    assert [m.name for m in decoded.models] == ["gpt-5", "aaaa0001", "bbbb0002"]
    alpha, beta = decoded.models[1], decoded.models[2]
    assert (alpha.client_display_name, alpha.inputbox_short_model_name) == ("Alpha", "Alpha")
    assert alpha.server_model_name == "aaaa0001"
    assert alpha.supports_agent and alpha.is_user_added and alpha.supports_thinking
    assert alpha.context_token_limit == 200_000
    assert beta.server_model_name == "bbbb0002"


def test_available_model_optional_bools_are_present_when_false() -> None:
    entry_bytes = available_models_addition([record("bbbb0002", "Beta")])
    decoded = aiserver.AvailableModelsResponse.FromString(entry_bytes).models[0]
    assert decoded.HasField("supports_thinking") and decoded.supports_thinking is False
    assert decoded.HasField("supports_agent") and decoded.HasField("is_user_added")
    assert bytes.fromhex("4800") in entry_bytes  # field 9, varint 0, on the wire


def test_context_limit_omitted_when_unknown_and_clamped_when_huge() -> None:
    unknown = aiserver.AvailableModelsResponse.FromString(
        available_models_addition([record("bbbb0002", "Beta")])
    ).models[0]
    assert not unknown.HasField("context_token_limit")
    huge = aiserver.AvailableModelsResponse.FromString(
        available_models_addition([record("cccc0003", "Huge", context_window_tokens=10**12)])
    ).models[0]
    assert huge.context_token_limit == INT32_MAX


def test_usable_models_official_then_user_entries() -> None:
    official = agent.GetUsableModelsResponse()
    official.models.add(model_id="gpt-5", display_name="GPT-5")
    official_bytes = official.SerializeToString()
    addition = usable_models_addition(USER_MODELS)
    merged = splice(official_bytes, addition)
    decoded = agent.GetUsableModelsResponse.FromString(merged)
    assert [m.model_id for m in decoded.models] == ["gpt-5", "aaaa0001", "bbbb0002"]
    alpha, beta = decoded.models[1], decoded.models[2]
    assert (alpha.display_model_id, alpha.display_name, alpha.display_name_short) == (
        "aaaa0001",
        "Alpha",
        "Alpha",
    )
    assert alpha.HasField("thinking_details") and not beta.HasField("thinking_details")
    assert not alpha.HasField("max_mode")
    assert bytes.fromhex("1200") in addition  # the empty thinking_details of Alpha


def test_catalog_routes_map_to_their_messages() -> None:
    assert CATALOG_ROUTES == {
        AVAILABLE: CatalogKind.AVAILABLE_MODELS,
        USABLE_AGENT: CatalogKind.USABLE_MODELS,
        USABLE_AISERVER: CatalogKind.USABLE_MODELS,
    }


# ---- over HTTP: a recording upstream and the in-process server -------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name]


@dataclass
class FakeUpstream:
    """Answers every request with the configured status, headers and body; records requests."""

    runner: web.AppRunner
    url: str = ""
    status: int = 200
    headers: list[tuple[str, str]] = field(
        default_factory=lambda: [("Content-Type", "application/proto")]
    )
    body: bytes = UNKNOWN_ONLY
    seen: list[Seen] = field(default_factory=list)
    hang: bool = False

    async def answer(self, request: web.Request) -> web.Response:
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers]
        self.seen.append(Seen(request.method, request.raw_path, raw, await request.read()))
        if self.hang:
            await asyncio.sleep(3600)
        response = web.Response(status=self.status, body=self.body)
        for name, value in self.headers:
            response.headers.add(name, value)
        return response


@pytest.fixture
async def fake_upstream() -> AsyncIterator[FakeUpstream]:
    app = web.Application()
    runner = web.AppRunner(app, auto_decompress=False, shutdown_timeout=0.5)
    fake = FakeUpstream(runner)
    app.router.add_route("*", "/{tail:.*}", fake.answer)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    fake.url = f"http://{host}:{port}"
    yield fake
    await runner.cleanup()


@pytest.fixture
def upstream(fake_upstream: FakeUpstream) -> str:
    """Overrides conftest's upstream: the servers of this module forward to the fake."""
    return fake_upstream.url


@pytest.fixture
def stored_models(server_store: Store) -> list[ModelRecord]:
    """Two enabled models and a disabled one in the server's store; returns the enabled."""
    provider = create_provider(
        server_store.database,
        ProviderInput(
            name="Local", type="openai-chat", base_url="http://127.0.0.1:1/v1", api_key="sk-x"
        ),
    )
    save_models(
        server_store.database,
        provider.id,
        [
            ModelInput(model_id="beta", display_name="Beta", sort_order=2),
            ModelInput(model_id="off", display_name="Off", enabled=False),
            ModelInput(
                model_id="alpha",
                display_name="Alpha",
                sort_order=1,
                reasoning_enabled=True,
                context_window_tokens=200_000,
            ),
        ],
    )
    enabled = enabled_models(server_store.database)
    assert [m.display_name for m in enabled] == ["Alpha", "Beta"]
    return enabled


@pytest.fixture
async def cursor_http(
    make_server: StartServer, stored_models: list[ModelRecord]
) -> AsyncIterator[httpx.AsyncClient]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=5.0) as client:
        yield client


CLIENT_HEADERS = {
    "content-type": "application/proto",
    "accept-encoding": "gzip, br",
    "connect-accept-encoding": "gzip",
    "x-cursor-marker": "kept",
}


async def test_raw_catalog_is_spliced_and_the_request_forwarded(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream, stored_models: list[ModelRecord]
) -> None:
    request_body = b"\x0a\x05hello"
    response = await cursor_http.post(
        AVAILABLE + "?q=1", content=request_body, headers=CLIENT_HEADERS
    )
    assert response.status_code == 200
    body = response.content
    assert body == UNKNOWN_ONLY + available_models_addition(stored_models)
    decoded = aiserver.AvailableModelsResponse.FromString(body)
    assert [m.client_display_name for m in decoded.models] == ["Alpha", "Beta"]
    assert response.headers["content-length"] == str(len(body))
    assert "content-encoding" not in response.headers
    assert response.headers["content-type"] == "application/proto"
    (seen,) = fake_upstream.seen
    assert (seen.method, seen.path, seen.body) == ("POST", AVAILABLE + "?q=1", request_body)
    assert seen.values("accept-encoding") == ["identity"]
    assert seen.values("connect-accept-encoding") == ["identity"]
    assert seen.values("x-cursor-marker") == ["kept"]
    assert seen.values("content-length") == [str(len(request_body))]
    assert seen.values("host") == [fake_upstream.url.removeprefix("http://")]


@pytest.mark.parametrize("path", [USABLE_AGENT, USABLE_AISERVER])
async def test_framed_catalog_is_spliced_with_a_new_length(
    cursor_http: httpx.AsyncClient,
    fake_upstream: FakeUpstream,
    stored_models: list[ModelRecord],
    path: str,
) -> None:
    official = agent.GetUsableModelsResponse()
    official.models.add(model_id="gpt-5", display_name="GPT-5")
    payload = official.SerializeToString()
    fake_upstream.body = encode_envelope(0, payload)
    fake_upstream.headers = [("Content-Type", "application/connect+proto")]
    response = await cursor_http.post(path, content=encode_envelope(0, b""), headers=CLIENT_HEADERS)
    assert response.status_code == 200
    body = response.content
    assert response.headers["content-length"] == str(len(body))
    assert int.from_bytes(body[1:5], "big") == len(body) - 5 > len(fake_upstream.body) - 5
    assert body[0] == 0
    assert body[5:] == payload + usable_models_addition(stored_models)
    decoded = agent.GetUsableModelsResponse.FromString(body[5:])
    assert [m.model_id for m in decoded.models] == ["gpt-5"] + [m.public_id for m in stored_models]
    assert [m.HasField("thinking_details") for m in decoded.models] == [False, True, False]
    assert fake_upstream.seen[0].body == encode_envelope(0, b"")


async def test_gzip_request_body_is_forwarded_decompressed(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    plain = b"\x0a\x08aaaa0001" * 50
    headers = {**CLIENT_HEADERS, "content-encoding": "gzip"}
    response = await cursor_http.post(USABLE_AGENT, content=gzip.compress(plain), headers=headers)
    assert response.status_code == 200
    (seen,) = fake_upstream.seen
    assert seen.body == plain
    assert seen.values("content-encoding") == []
    assert seen.values("content-length") == [str(len(plain))]


async def test_non_2xx_passes_through_unchanged(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.status = 403
    fake_upstream.body = b'{"code":"permission_denied","message":"log in"}'
    fake_upstream.headers = [("Content-Type", "application/json"), ("X-Upstream", "yes")]
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 403
    assert response.content == fake_upstream.body
    assert response.headers["x-upstream"] == "yes"
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-length"] == str(len(fake_upstream.body))


async def test_compressed_non_2xx_keeps_its_encoding(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.status = 500
    fake_upstream.body = gzip.compress(b"upstream broke")
    fake_upstream.headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")]
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 500
    assert response.headers["content-encoding"] == "gzip"
    assert response.text == "upstream broke"  # httpx decodes: header and bytes still agree


async def test_gzipped_2xx_is_decompressed_before_the_splice(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream, stored_models: list[ModelRecord]
) -> None:
    fake_upstream.body = gzip.compress(UNKNOWN_ONLY)
    fake_upstream.headers = [("Content-Type", "application/proto"), ("Content-Encoding", "gzip")]
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 200
    assert "content-encoding" not in response.headers
    assert response.content == UNKNOWN_ONLY + available_models_addition(stored_models)


async def test_broken_gzip_2xx_is_502(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.body = gzip.compress(UNKNOWN_ONLY)[:-4]
    fake_upstream.headers = [("Content-Type", "application/proto"), ("Content-Encoding", "gzip")]
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 502
    assert response.json()["message"].startswith("upstream model catalog: invalid gzip body")


async def test_2xx_in_another_encoding_is_refused(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.headers = [("Content-Type", "application/proto"), ("Content-Encoding", "br")]
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 502
    assert response.json()["code"] == "unavailable"
    assert "encoded with br" in response.json()["message"]


async def test_framed_2xx_with_flags_is_refused(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.body = encode_envelope(0x01, b"compressed?")
    response = await cursor_http.post(USABLE_AGENT, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 502
    assert response.json()["code"] == "unavailable"
    assert "flags=0x01" in response.json()["message"]


async def test_upstream_down_is_502(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    await fake_upstream.runner.cleanup()
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 502
    body = response.json()
    assert body["code"] == "unavailable"
    assert body["message"].startswith("http error: ")


async def test_hung_upstream_is_502_after_the_time_limit(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_routes, "CATALOG_UPSTREAM_TIMEOUT_S", 0.3)
    fake_upstream.hang = True
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 502
    assert response.json() == {
        "code": "unavailable",
        "message": "http error: no complete answer within 0.3 s",
    }


async def test_store_failure_is_500(cursor_http: httpx.AsyncClient, server_store: Store) -> None:
    execute_sql(server_store.database, "DROP TABLE models")
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.status_code == 500
    assert response.json() == {"code": "internal", "message": "store error: no such table: models"}


async def test_no_user_models_leaves_the_official_body(
    cursor_http: httpx.AsyncClient, server_store: Store
) -> None:
    execute_sql(server_store.database, "DELETE FROM models")
    response = await cursor_http.post(AVAILABLE, content=b"", headers=CLIENT_HEADERS)
    assert response.content == UNKNOWN_ONLY
    assert response.headers["content-length"] == str(len(UNKNOWN_ONLY))


async def test_other_methods_go_through_the_proxy(
    cursor_http: httpx.AsyncClient, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.body = b"plain"
    response = await cursor_http.get(AVAILABLE, headers={"accept-encoding": "gzip"})
    assert response.content == b"plain"
    assert fake_upstream.seen[0].values("accept-encoding") == ["gzip"]
