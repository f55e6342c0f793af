"""``GET /console/api/people`` and the ``user`` filter of the Calls and stats routes, over a
real socket against the in-process server, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from store import Store
from store.base.clock import now_ms
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.conversations import ConversationStore
from store.database import connect_store
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from tests.conftest import StartServer
from tests.console.test_console_api import assert_error
from wire.identity import ANONYMOUS_USER

ALICE, BOB = "alice@example.com", "auth0|bob-2"


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = connect_store(db_url)
    yield opened
    opened.close()


def seed(store: Store) -> None:
    """Alice: two runs, three calls (one failed 429, one of an unpriced model); Bob: one run
    and call; an anonymous run without a call; a console check's call (no run, no user); and
    a call of Alice's two days ago, outside ``day``."""
    db = store.database
    provider = create_provider(
        db, ProviderInput(name="p", type="openai-chat", base_url="https://p.example/v1")
    )
    priced, unpriced = save_models(
        db,
        provider.id,
        [
            ModelInput(
                model_id="priced",
                display_name="Priced",
                price_input_per_mtok=2.0,
                price_output_per_mtok=10.0,
                price_cache_read_per_mtok=0.5,
            ),
            ModelInput(model_id="unpriced", display_name="Unpriced"),
        ],
    )
    conversations = ConversationStore(db)
    for claimed, owner in (("a1", ALICE), ("a2", ALICE), ("b1", BOB), ("n1", ANONYMOUS_USER)):
        root = conversations.ensure_conversation(f"conv-{claimed}")
        conversations.claim_run(claimed, f"conv-{claimed}", root, owner)
    records = CallRecords(db)
    now = now_ms()
    for index, (run_id, user, model, http_status, usage, ago_ms) in enumerate(
        (
            ("a1", ALICE, priced, 200, {"input_tokens": 1000, "output_tokens": 100,
                                        "cache_read_tokens": 400}, 1_000),
            ("a1", ALICE, priced, 429, {}, 2_000),
            ("a2", ALICE, unpriced, 200, {"input_tokens": 10, "output_tokens": 1}, 3_000),
            ("b1", BOB, priced, 200, {"input_tokens": 100, "output_tokens": 10}, 4_000),
            (None, None, priced, 200, {"input_tokens": 5, "output_tokens": 5}, 5_000),
            ("a1", ALICE, priced, 200, {"input_tokens": 7, "output_tokens": 7}, 2 * 86_400_000),
        )
    ):  # fmt: skip
        call = NewCall(
            run_id, f"{run_id}:{index}", provider.id, "p", "openai-chat",
            "https://p.example/v1", model.public_id, model.model_id, model.display_name, False,
            user_id=user,
        )  # fmt: skip
        call_id = records.start(call, started_at_ms=now - ago_ms)
        status = CallStatus.COMPLETED if http_status == 200 else CallStatus.FAILED
        records.finish(call_id, CallEnd(status, 5.0, 10, usage=usage, http_status=http_status))


async def test_people_totals_and_the_user_filters(make_server: StartServer, store: Store) -> None:
    seed(store)
    server = await make_server(store=store)
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as api:
        answer = await api.get("/people", params={"range": "day"})
        assert answer.status_code == 200, answer.text
        people = answer.json()
        assert people["range"] == "day" and people["start_ms"] < people["end_ms"]
        rows = {p["user_id"]: p for p in people["people"]}
        # Ordered by cost: Alice, then Bob; anonymous has a run and no call.
        assert [p["user_id"] for p in people["people"]] == [ALICE, BOB, ANONYMOUS_USER]
        alice, bob, nobody = rows[ALICE], rows[BOB], rows[ANONYMOUS_USER]
        assert (alice["runs"], alice["calls"], alice["errors"]) == (2, 3, 1)
        # 600 uncached input (the OpenAI input counts its 400 cached tokens) + the unpriced 10.
        assert alice["tokens"] == {
            "input": 610, "output": 101, "cache_read": 400, "cache_write": 0
        }  # fmt: skip
        assert alice["cost_usd"] == pytest.approx((600 * 2.0 + 100 * 10.0 + 400 * 0.5) / 1e6)
        assert (alice["priced_calls"], alice["unknown_cost_calls"]) == (1, 1)
        assert bob["cost_usd"] == pytest.approx((100 * 2.0 + 10 * 10.0) / 1e6)
        assert (bob["runs"], bob["calls"]) == (1, 1)
        assert (nobody["runs"], nobody["calls"], nobody["cost_usd"]) == (1, 0, None)
        # The month also holds Alice's call of two days ago.
        month = (await api.get("/people", params={"range": "month"})).json()
        assert {p["user_id"]: p["calls"] for p in month["people"]}[ALICE] == 4
        default = (await api.get("/people")).json()
        assert default["range"] == "day"
        for bad in ("year", "", "DAY"):
            response = await api.get("/people", params={"range": bad})
            assert_error(response, 400, "invalid_argument", "hour, day, week, month")
        # The Calls listing and the stats narrowed to one user.
        listed = (await api.get("/calls", params={"user": BOB})).json()["calls"]
        assert [(c["run_id"], c["user_id"]) for c in listed] == [("b1", BOB)]
        assert len((await api.get("/calls", params={"user": ALICE})).json()["calls"]) == 4
        assert (await api.get("/calls", params={"user": "nobody"})).json()["calls"] == []
        stats = (await api.get("/stats", params={"range": "day", "user": ALICE})).json()
        assert stats["user"] == ALICE
        assert sum(b["calls"] for b in stats["buckets"]) == 3
        everyone = (await api.get("/stats", params={"range": "day"})).json()
        assert sum(b["calls"] for b in everyone["buckets"]) == 5 and everyone["user"] is None
        for route in ("/calls", "/stats"):
            for bad in ("a\tb", "x" * 255, " padded"):
                response = await api.get(route, params={"user": bad})
                assert_error(response, 400, "invalid_argument", "user must be a user id")
