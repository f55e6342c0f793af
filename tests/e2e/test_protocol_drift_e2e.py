"""Protocol drift end to end: the fake Cursor client sends a RunRequest with a field and an
enum value our schema does not know, and a request for an RPC this server does not serve; the
console's connection API reports each with its client version and counts, on SQLite and
PostgreSQL, from another instance on the same database too, and the first sighting is logged
once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from store import Store
from tests.conftest import StartServer
from tests.support.fake_cursor import FakeCursor, user_turn_message
from tests.support.h2_client import H2Cursor
from tests.support.h2_servers import StartH2, connect, make_h2, upstream_config
from tests.support.wire_bytes import varint_field
from wire.proto import agent_v1_pb2 as agent

__all__ = ["make_h2", "upstream_config"]  # fixtures used by name

VERSION = "2.1.3"
UNSERVED = "/aiserver.v1.DriftTestService/NotHere"


def drifting_run_request(conversation_id: str) -> agent.AgentClientMessage:
    """A RunRequest as a newer Cursor might send it: field 99 of ``AgentRunRequest`` and
    ``UserMessage.mode`` 42 are not in our schema."""
    message = user_turn_message("hi", "", conversation_id=conversation_id)
    message.run_request.MergeFromString(varint_field(99, 1))
    message.run_request.action.user_message_action.user_message.mode = 42  # type: ignore[assignment]
    return message


async def connection(address: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10.0) as console:
        answer = await console.get("/console/api/connection")
    assert answer.status_code == 200, answer.text
    status: dict[str, Any] = answer.json()
    return status


def rows_of(status: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [row for row in status["drift"] if row["kind"] == kind]


async def send_drift(address: str, runs: int) -> None:
    cursor = FakeCursor(f"http://{address}", headers={"x-cursor-client-version": VERSION})
    try:
        for n in range(runs):
            answer = await cursor.append(f"drift-{n}", 0, drifting_run_request(f"c{n}"))
            assert answer.status_code == 200, answer.text
    finally:
        await cursor.aclose()
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10.0) as client:
        for _ in range(3):
            relayed = await client.post(
                UNSERVED, content=b"", headers={"x-cursor-client-version": VERSION}
            )
            assert relayed.status_code == 299  # the upstream's answer, relayed
        assert (await client.get("/not/an/rpc")).status_code == 299


async def drift_samples(address: str) -> dict[tuple[str, ...], float]:
    """The protocol drift series of a scrape of ``/metrics``, read by prometheus-client."""
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=10.0) as client:
        answer = await client.get("/metrics")
    assert answer.status_code == 200, answer.text
    labels = ("kind", "message_type", "name", "value", "client_version")
    return {
        tuple(sample.labels[name] for name in labels): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.name == "cursor_server_protocol_drift_total"
    }


async def test_unknown_fields_enum_values_and_relayed_paths_are_counted(
    make_server: StartServer, opened: Store, caplog: pytest.LogCaptureFixture
) -> None:
    server = await make_server(store=opened)
    other = await make_server(store=opened)  # another instance on the same database
    assert rows_of(await connection(server.address), "field") == []
    caplog.set_level(logging.INFO, logger="cursor_server.protocol_drift")
    await send_drift(server.address, runs=2)

    status = await connection(server.address)
    (field,) = rows_of(status, "field")
    assert field["message_type"] == "agent.v1.AgentRunRequest"
    assert (field["name"], field["value"]) == ("99", 0)
    assert (field["client_version"], field["count"]) == (VERSION, 2)
    assert field["first_seen_ms"] <= field["last_seen_ms"]
    (enum,) = rows_of(status, "enum")
    assert (enum["message_type"], enum["name"], enum["value"]) == (
        "agent.v1.UserMessage",
        "mode",
        42,
    )
    assert enum["count"] == 2
    (path,) = rows_of(status, "path")  # "/not/an/rpc" is no RPC path: not counted
    assert (path["name"], path["count"], path["client_version"]) == (UNSERVED, 3, VERSION)

    # The other instance shows the same counts once this one has added them to the record.
    for _ in range(100):
        seen = {
            (r["kind"], r["name"]): r["count"] for r in (await connection(other.address))["drift"]
        }
        if seen == {("field", "99"): 2, ("enum", "mode"): 2, ("path", UNSERVED): 3}:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"the other instance saw {seen}")

    # /metrics exports this instance's counts (the other instance counted none).
    exported = await drift_samples(server.address)
    assert exported == {
        ("field", "agent.v1.AgentRunRequest", "99", "0", VERSION): 2,
        ("enum", "agent.v1.UserMessage", "mode", "42", VERSION): 2,
        ("path", "", UNSERVED, "0", VERSION): 3,
    }
    assert await drift_samples(other.address) == {}

    firsts = [r.getMessage() for r in caplog.records if "first sighting" in r.getMessage()]
    assert len([line for line in firsts if "name=99" in line]) == 1  # two sightings, one line
    assert len([line for line in firsts if UNSERVED in line]) == 1
    assert len(firsts) == 3
    assert all(f"client_version={VERSION}" in line for line in firsts)


async def test_a_message_our_schema_knows_counts_nothing(make_server: StartServer) -> None:
    server = await make_server()
    cursor = FakeCursor(f"http://{server.address}", headers={"x-cursor-client-version": VERSION})
    try:
        message = user_turn_message("hi", "", conversation_id="plain")
        assert (await cursor.append("plain", 0, message)).status_code == 200
    finally:
        await cursor.aclose()
    assert (await connection(server.address))["drift"] == []


async def test_a_run_over_http2_and_an_unserved_http2_path_are_counted(make_h2: StartH2) -> None:
    server = await make_h2()
    client = await connect(server)
    cursor = H2Cursor(
        client, headers={"x-cursor-client-version": VERSION}, context=agent.RequestContext()
    )
    try:
        stream = await cursor.open_run_sse("h2-drift")
        assert (await cursor.append("h2-drift", 0, drifting_run_request("h2"))).status_code == 200
        while await stream.next_envelope() is not None:  # the run ends (no model named)
            pass
        relayed = client.open(UNSERVED, {"x-cursor-client-version": VERSION}, end=True)
        assert (await relayed.headers())[":status"] == "200"  # the upstream's echo
        await relayed.body()
    finally:
        await cursor.aclose()
    status = await connection(server.address)
    counts = {(r["kind"], r["name"], r["client_version"]): r["count"] for r in status["drift"]}
    assert counts == {
        ("field", "99", VERSION): 1,
        ("enum", "mode", VERSION): 1,
        ("path", UNSERVED, VERSION): 1,
    }
