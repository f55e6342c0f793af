"""Custom header values are sealed unless marked public, over the console API of a real
server: a value under a name no filter recognises (``X-Credential``, ``X-Signature``) is
stored encrypted, answered as null, kept out of call records and redacted from a provider's
echoed error, like the key; ``public_headers`` names the values that may be shown."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from store import Store
from store.base.secrets import SEALED_PREFIX
from store.base.typed_peewee import execute_sql
from tests.conftest import StartServer
from tests.e2e.test_provider_actor import assert_only_in_provider_row
from tests.support.fake_provider import FakeProvider, Script
from wire.providers.redaction import credential_strings, scrub_text

CREDENTIAL = "cred-UNRECOGNISED-8842"
SIGNATURE = "sig-UNRECOGNISED-1177"
SECRETS = (CREDENTIAL, SIGNATURE)


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.bodies: list[str] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        if method in ("POST", "PUT", "DELETE"):
            kwargs["headers"] = {"content-type": "application/json"}
        response = await self.client.request(method, f"/console/api{path}", **kwargs)
        self.bodies.append(response.text)
        return response


@pytest.fixture
async def api(make_server: StartServer) -> AsyncIterator[Api]:
    server = await make_server()
    async with httpx.AsyncClient(base_url=f"http://{server.address}", timeout=10.0) as client:
        yield Api(client)


def provider_body(base_url: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": "Signed",
        "type": "openai-chat",
        "base_url": base_url,
        "headers": {"X-Credential": CREDENTIAL, "X-Signature": SIGNATURE, "X-Org": "team-1"},
        "public_headers": ["X-Org"],
        **fields,
    }


def stored_headers(store: Store) -> dict[str, str]:
    (headers_json,) = execute_sql(
        store.database, 'SELECT "headers_json" FROM "providers"'
    ).fetchone()
    return dict(msgspec.json.decode(headers_json))


def assert_error(response: httpx.Response, status: int, *fragments: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) - {"fields"} == {"code", "message"} and body["code"] == "invalid_argument"
    for fragment in fragments:
        assert fragment in body["message"], body["message"]


async def test_unrecognised_header_values_are_sealed_and_answered_null(
    api: Api, server_store: Store, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cursor_server")
    created = await api.call("POST", "/providers", json=provider_body(fake.base_url))
    assert created.status_code == 201, created.text
    record = created.json()
    assert record["headers"] == {"X-Credential": None, "X-Signature": None, "X-Org": "team-1"}
    assert record["public_headers"] == ["X-Org"]
    stored = stored_headers(server_store)
    assert stored["X-Credential"].startswith(SEALED_PREFIX)
    assert stored["X-Signature"].startswith(SEALED_PREFIX)
    assert stored["X-Org"] == "team-1"
    # The provider still gets the real values.
    saved = await api.call(
        "POST",
        f"/providers/{record['id']}/models",
        json={"models": [{"model_id": "fake-model", "display_name": "Fake"}]},
    )
    assert saved.status_code == 201, saved.text
    public_id = saved.json()[0]["public_id"]
    assert (await api.call("PUT", "/settings/observability", json={"verbose": True})).is_success
    # A provider that echoes the sealed values in its errors: discovery and a model test.
    fake.models_error = (401, {"error": {"message": f"bad {CREDENTIAL} / {SIGNATURE}"}})
    discovered = await api.call("POST", f"/providers/{record['id']}/models/discover")
    assert discovered.status_code == 502, discovered.text
    assert "bad [redacted] / [redacted]" in discovered.json()["message"]
    assert fake.requests[-1].header("x-credential") == CREDENTIAL
    fake.enqueue(Script.error(401, {"error": {"message": f"refused {CREDENTIAL}"}}))
    tested = await api.call("POST", f"/models/{public_id}/test")
    assert tested.status_code == 200, tested.text
    assert tested.json()["ok"] is False and "refused [redacted]" in tested.json()["error"]
    assert fake.requests[-1].header("x-signature") == SIGNATURE
    call = await api.call("GET", f"/calls/{tested.json()['call_id']}")
    assert call.status_code == 200, call.text
    recorded = call.json()["request"]["headers"]
    assert recorded["x-org"] == "team-1"
    assert recorded.get("x-credential") in (None, "[redacted]")
    await api.call("GET", "/providers")
    for body in api.bodies:
        for secret in SECRETS:
            assert secret not in body
    for secret in SECRETS:
        assert secret not in caplog.text
        assert_only_in_provider_row(server_store.database, secret)


async def test_the_public_flag_and_its_rules(
    api: Api, server_store: Store, fake: FakeProvider
) -> None:
    base = fake.base_url
    for public, field in (
        (["Authorization"], "headers.Authorization"),
        (["X-Api-Key"], "headers.X-Api-Key"),
        (["X-Missing"], "public_headers"),
    ):
        body = provider_body(base, public_headers=public)
        body["headers"] = {**body["headers"], "Authorization": "Bearer a", "X-Api-Key": "k"}
        assert_error(await api.call("POST", "/providers", json=body), 422, field)
    created = (await api.call("POST", "/providers", json=provider_body(base))).json()
    pid = created["id"]
    put_body = {k: v for k, v in provider_body(base).items() if k not in ("headers",)}
    # A sealed value is never revealed: making it public needs the value again.
    reveal = {**put_body, "headers": created["headers"], "public_headers": ["X-Credential"]}
    assert_error(
        await api.call("PUT", f"/providers/{pid}", json=reveal), 422, "headers.X-Credential"
    )
    reveal["headers"] = {**created["headers"], "X-Credential": "now-public"}
    shown = await api.call("PUT", f"/providers/{pid}", json=reveal)
    assert shown.status_code == 200, shown.text
    assert shown.json()["headers"]["X-Credential"] == "now-public"
    assert shown.json()["public_headers"] == ["X-Credential"]
    # Sent again without the flag (an older client): every value is sealed, none is lost.
    plain = {**put_body, "headers": {"X-Credential": None, "X-Org": None, "X-Signature": None}}
    del plain["public_headers"]
    sealed = await api.call("PUT", f"/providers/{pid}", json=plain)
    assert sealed.status_code == 200, sealed.text
    assert sealed.json()["headers"] == {"X-Credential": None, "X-Org": None, "X-Signature": None}
    assert sealed.json()["public_headers"] == []
    assert all(v.startswith(SEALED_PREFIX) for v in stored_headers(server_store).values())
    # public_headers without headers says what is missing.
    lone = {**put_body, "public_headers": ["X-Org"]}
    assert_error(await api.call("PUT", f"/providers/{pid}", json=lone), 422, "public_headers")
    for text in api.bodies:
        assert CREDENTIAL not in text and SIGNATURE not in text


async def test_an_older_plaintext_header_stays_public(
    api: Api, server_store: Store, fake: FakeProvider
) -> None:
    """Before values were sealed by default, a header whose name no filter recognised was
    stored in plaintext; it keeps working and is shown as public until saved without the flag."""
    created = (await api.call("POST", "/providers", json=provider_body(fake.base_url))).json()
    execute_sql(
        server_store.database,
        'UPDATE "providers" SET "headers_json" = ?',
        ('{"X-Legacy": "old-value"}',),
    )
    (listed,) = (await api.call("GET", "/providers")).json()
    assert listed["id"] == created["id"]
    assert (listed["headers"], listed["public_headers"]) == (
        {"X-Legacy": "old-value"},
        ["X-Legacy"],
    )


def test_sealed_values_are_scrubbed_from_text_but_a_short_one_is_not_everywhere() -> None:
    """A value sealed only by default is replaced in recorded text, whole and as a bearer
    token; one of a few characters (``X-Version: 2``) would rewrite every ``2`` of an answer,
    so it is left in text (it stays sealed at rest and null in answers). A credential-named
    header's value is replaced however short."""
    secrets = credential_strings(
        "sk-key",
        [("X-Credential", "Bearer cred-value"), ("X-Version", "2"), ("Authorization", "ab")],
        frozenset(),
    )
    text = scrub_text("sk-key Bearer cred-value cred-value v2 ab", secrets)
    assert text == "[redacted] [redacted] [redacted] v2 [redacted]"
