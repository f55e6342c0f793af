"""The addresses a stored URL may not point at (``store/catalog/url_targets.py``): link-local and
cloud metadata addresses in every spelling a client connects to, the unspecified address, and the
server's own listeners; private and loopback addresses stay allowed. Over the console API of
a real server (both listeners), and the pure decision over many spellings."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from actors.conversation.secret import Secret
from actors.server.compose import RunningServer, ServerConfig, start_server
from store import Store
from store.catalog.url_targets import own_addresses, refused_target
from wire.http.listener import local_addresses

TOKEN = "url-targets-token-0123456789"

METADATA_SPELLINGS = [
    "http://169.254.169.254/v1",
    "http://169.254.169.254.:80/v1",
    "http://169.254.1.1:8080",
    "http://2852039166/latest",
    "http://0xa9fea9fe",
    "http://0XA9FEA9FE",
    "http://0251.0376.0251.0376",
    "http://0xa9.0xfe.0xa9.0xfe",
    "http://169.254.43518",
    "http://169.16689662",
    "http://[::ffff:169.254.169.254]",
    "http://[::ffff:a9fe:a9fe]",
    "http://[::169.254.169.254]",
    "http://[64:ff9b::a9fe:a9fe]",
    "http://[2002:a9fe:a9fe::1]",
    "http://[fe80::1]",
    "http://[fe80::1%25eth0]:11434",
    "http://[febf:ffff::1]",
    "http://[fd00:ec2::254]",
    "http://100.100.100.200",
    "http://metadata.google.internal/computeMetadata/v1",
    "http://0.0.0.0:11434/v1",
    "http://0/v1",
    "http://[::]:11434/v1",
    "http://[::ffff:0.0.0.0]",
]
ALLOWED = [
    "http://127.0.0.1:11434/v1",
    "http://localhost:1234/v1",
    "http://[::1]:8000/v1",
    "http://10.0.0.5:8000/v1",
    "http://192.168.1.20:11434/v1",
    "http://172.16.0.1/v1",
    "http://[fd12:3456::1]:8000/v1",
    "https://api.openai.com/v1",
    "https://169.254.example.com/v1",
    "http://170.254.169.254/v1",
    "http://[fec0::1]/v1",
]


@pytest.mark.parametrize("url", METADATA_SPELLINGS)
def test_every_spelling_of_link_local_metadata_and_unspecified_is_refused(url: str) -> None:
    assert refused_target(url) is not None


@pytest.mark.parametrize("url", ALLOWED)
def test_private_loopback_and_public_addresses_are_allowed(url: str) -> None:
    assert refused_target(url) is None


def _octal(n: int) -> str:
    return f"0{n:o}"


SPELL = st.sampled_from([str, hex, _octal])


@given(st.integers(0, 2**16 - 1), SPELL, SPELL, st.integers(1, 4))
def test_any_link_local_address_in_any_inet_aton_spelling(
    low: int, first: Any, rest: Any, parts: int
) -> None:
    value = int(ipaddress.IPv4Address("169.254.0.0")) + low
    octets = list(ipaddress.IPv4Address(value).packed)
    # ``parts`` numbers: the leading ones are single bytes, the last fills the rest.
    leading = octets[: parts - 1]
    last = int.from_bytes(bytes(octets[parts - 1 :]), "big")
    pieces = [first(leading[0]) if leading else None, *(rest(b) for b in leading[1:])]
    host = ".".join([p for p in pieces if p is not None] + [rest(last)])
    assert refused_target(f"http://{host}/v1") is not None, host
    mapped = ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(value)}")
    assert refused_target(f"http://[{mapped}]/v1") is not None
    assert refused_target(f"http://[{mapped.exploded}]/v1") is not None


@given(st.integers(0, 2**118 - 1))
def test_any_fe80_10_address_is_refused(low: int) -> None:
    address = ipaddress.IPv6Address((0xFE80 << 112) | low)
    assert refused_target(f"http://[{address}]:8080/v1") is not None


@given(st.ip_addresses(v=4))
def test_an_ordinary_ipv4_address_outside_the_refused_ranges_is_allowed(
    address: ipaddress.IPv4Address,
) -> None:
    refused = address in ipaddress.IPv4Network("169.254.0.0/16") or address in (
        ipaddress.IPv4Network("0.0.0.0/8")
    )
    refused = refused or str(address) == "100.100.100.200"
    assert (refused_target(f"http://{address}:8080/v1") is not None) is refused


def test_the_servers_own_listeners_are_refused() -> None:
    own = own_addresses([("127.0.0.1", 3000), ("0.0.0.0", 3443)], ["192.168.7.9"])
    for url in (
        "http://127.0.0.1:3000/v1",
        "http://127.9.9.9:3000/v1",
        "http://localhost:3000/v1",
        "http://app.localhost:3000/v1",
        "http://[::1]:3000/v1",
        "http://[::ffff:127.0.0.1]:3000/v1",
        "http://2130706433:3000/v1",
        "http://127.1:3443/v1",
        "http://192.168.7.9:3443/v1",
    ):
        assert refused_target(url, own) is not None, url
    for url in (
        "http://127.0.0.1:3001/v1",
        "http://192.168.7.9:3000/v1",  # the main listener is bound to loopback only
        "http://192.168.7.10:3443/v1",
        "http://127.0.0.1/v1",
    ):
        assert refused_target(url, own) is None, url
    on_80 = own_addresses([("127.0.0.1", 80)])
    assert refused_target("http://localhost/v1", on_80) is not None  # the default port


# --- over HTTP ---------------------------------------------------------------------------------


@pytest.fixture
async def server(upstream: str, server_store: Store) -> AsyncIterator[RunningServer]:
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        upstream_url=upstream,
        console_token=Secret(TOKEN),
        h2_listen=("0.0.0.0", 0),
    )
    running = await start_server(config, store=server_store)
    yield running
    await running.stop()


@pytest.fixture
async def api(server: RunningServer) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    base = f"http://{server.address}/console/api"
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=10.0) as client:
        yield client


def provider(base_url: str) -> dict[str, str]:
    return {"name": "Local", "type": "openai-chat", "base_url": base_url}


def assert_refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "invalid_argument"
    assert body["message"].startswith(f"{field}: the server does not send requests there"), body


async def test_the_console_refuses_metadata_and_own_listener_urls(
    server: RunningServer, api: httpx.AsyncClient
) -> None:
    assert server.h2 is not None
    h2_port = int(server.h2.address.rsplit(":", 1)[1])
    refused = [
        "http://169.254.169.254/v1",
        "http://2852039166/v1",
        "http://[::ffff:a9fe:a9fe]/v1",
        "http://[fd00:ec2::254]/v1",
        "http://0.0.0.0:11434/v1",
        f"http://{server.address}/v1",
        f"http://localhost:{server.port}/v1",
        f"http://127.0.0.1:{h2_port}/v1",
        f"http://[::1]:{h2_port}/v1",
    ]
    # The HTTP/2 listener is bound to 0.0.0.0: every address of this machine is its own.
    refused += [f"http://{a}:{h2_port}/v1" for a in local_addresses() if ":" not in a]
    for url in refused:
        assert_refused(await api.post("/providers", json=provider(url)), "base_url")
    created = await api.post("/providers", json=provider("http://127.0.0.1:11434/v1"))
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    for url in refused[:2] + refused[-2:]:
        assert_refused(await api.put(f"/providers/{pid}", json=provider(url)), "base_url")
    for url in ("http://192.168.1.20:11434/v1", f"http://127.0.0.1:{server.port + 1}/v1"):
        updated = await api.put(f"/providers/{pid}", json=provider(url))
        assert updated.status_code == 200, updated.text
    for url in refused:
        search = {"backend": "searxng", "url": url.removesuffix("/v1")}
        assert_refused(await api.put("/settings/web-search", json=search), "url")
    ok = await api.put(
        "/settings/web-search", json={"backend": "searxng", "url": "http://127.0.0.1:8888"}
    )
    assert ok.status_code == 200, ok.text
