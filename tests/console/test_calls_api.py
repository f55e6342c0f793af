"""The console's call listing, filtered and paged, over a real socket."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models
from store.conversations import ConversationStore
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall, RecordedChunk
from tests.conftest import StartServer
from tests.support.fake_provider import (
    FakeProvider,
    FakeToolCall,
    anthropic_events,
    chat_events,
    encode_events,
    gemini_events,
    responses_events,
)
from tests.support.formats import FORMATS, ProviderFormat


def new_call(run_id: str | None, provider_id: int, public_id: str) -> NewCall:
    return NewCall(
        run_id, f"{run_id}:0", provider_id, f"p{provider_id}", "openai-chat",
        "http://x/v1", public_id, "m", "M", False,
    )  # fmt: skip


@pytest.fixture
def calls(server_store: Store) -> dict[str, int]:
    """Five calls: two runs of conversation c1, one of c2, one without a run, one failed."""
    conversations = ConversationStore(server_store.database)
    for claimed, conversation_id in (("r1", "c1"), ("r2", "c1"), ("r3", "c2")):
        root = conversations.ensure_conversation(conversation_id)
        conversations.claim_run(claimed, conversation_id, root)
    records = CallRecords(server_store.database)
    ids: dict[str, int] = {}
    for name, run_id, provider, model, status in (
        ("a", "r1", 1, "aaaa0001", CallStatus.COMPLETED),
        ("b", "r2", 1, "aaaa0001", CallStatus.FAILED),
        ("c", "r3", 2, "bbbb0002", CallStatus.COMPLETED),
        ("d", None, 2, "bbbb0002", CallStatus.COMPLETED),
        ("e", "r1", 1, "aaaa0001", CallStatus.CANCELLED),
    ):
        ids[name] = records.start(new_call(run_id, provider, model))
        records.finish(ids[name], CallEnd(status, 10.0, 0))
    return ids


async def listed(server: str, query: str) -> list[int]:
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"http://{server}/console/api/calls?{query}")
    assert answer.status_code == 200, answer.text
    return [call["id"] for call in answer.json()["calls"]]


async def test_calls_are_filtered_by_each_field_and_all_of_them_together(
    make_server: StartServer, calls: dict[str, int]
) -> None:
    server = str((await make_server()).address)
    a, b, c, d, e = (calls[n] for n in "abcde")
    assert await listed(server, "") == [e, d, c, b, a]
    assert await listed(server, "provider_id=2") == [d, c]
    assert await listed(server, "model=aaaa0001") == [e, b, a]
    assert await listed(server, "status=failed") == [b]
    assert await listed(server, "run_id=r1") == [e, a]
    assert await listed(server, "conversation_id=c1") == [e, b, a]
    assert await listed(server, "conversation_id=c1&status=completed") == [a]
    assert await listed(server, "conversation_id=nope") == []
    assert await listed(server, "since=0&until=1") == []
    assert await listed(server, "since=1") == [e, d, c, b, a]
    assert await listed(server, "limit=2&before=" + str(d)) == [c, b]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("status=done", "status must be one of"),
        ("since=9223372036854775808", "since must be an integer from 0 to"),
        ("provider_id=99999999999999999999", "provider_id"),
        ("since=yesterday", "since"),
        ("provider_id=-1", "provider_id"),
    ],
)
async def test_a_bad_filter_is_a_400_naming_it(
    make_server: StartServer, query: str, words: str
) -> None:
    server = (await make_server()).address
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"http://{server}/console/api/calls?{query}")
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "invalid_argument" and words in body["message"]


async def get_json(server: str, path: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"http://{server}/console/api{path}")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_each_listed_call_says_how_many_attempts_its_call_made_and_if_it_was_a_test(
    make_server: StartServer, server_store: Store, calls: dict[str, int]
) -> None:
    records = CallRecords(server_store.database)
    check = msgspec.structs.replace(new_call(None, 1, "aaaa0001"), model_call_id="console:ab12")
    tested = records.start(check)
    records.finish(tested, CallEnd(CallStatus.COMPLETED, 10.0, 0))
    server = str((await make_server()).address)
    listing = {c["id"]: c for c in (await get_json(server, "/calls"))["calls"]}
    # a and e are two attempts of the model call r1:0; the rest made one each.
    assert {i: c["attempts"] for i, c in listing.items()} == {
        calls["a"]: 2, calls["b"]: 1, calls["c"]: 1, calls["d"]: 1, calls["e"]: 2, tested: 1
    }  # fmt: skip
    assert [i for i, c in listing.items() if c["test"]] == [tested]
    detail = await get_json(server, f"/calls/{tested}")
    assert detail["call"]["test"] is True and detail["answer"] is None


@pytest.mark.parametrize("provider_format", FORMATS, ids=lambda f: f.type)
async def test_the_detail_has_the_cost_and_the_answer_put_together_from_the_chunks(
    make_server: StartServer,
    server_store: Store,
    fake: FakeProvider,
    provider_format: ProviderFormat,
) -> None:
    provider = create_provider(
        server_store.database,
        ProviderInput(name="fake", type=provider_format.type, base_url=fake.base_url),
    )
    priced = ModelInput(
        model_id="fake-model",
        display_name="Fake",
        max_output_tokens=1024,
        price_input_per_mtok=2.0,
        price_output_per_mtok=10.0,
    )
    (model,) = save_models(server_store.database, provider.id, [priced])
    public_id = model.public_id
    tool = FakeToolCall("call_1", "get_weather", ('{"ci', 'ty": "Pa', 'ris"}'))
    events = {
        "openai-chat": chat_events(text=["Let me ", "check."], tools=[tool]),
        "openai-responses": responses_events(text=["Let me ", "check."], tools=[tool]),
        "anthropic": anthropic_events(text=["Let me ", "check."], tools=[tool]),
        "gemini": gemini_events(text=["Let me ", "check."], tools=[tool]),
    }[provider_format.type]
    body = encode_events(events)
    records = CallRecords(server_store.database)
    call = NewCall(
        "r9", "r9:0", model.provider_id, "fake", provider_format.type, fake.base_url,
        public_id, "fake-model", "Fake", True,
    )  # fmt: skip
    whole, cut = records.start(call), records.start(call)
    for call_id, data in ((whole, body), (cut, body[: len(body) // 2])):
        pieces = [data[i : i + 7] for i in range(0, len(data), 7)]
        records.record_chunks(
            call_id, [RecordedChunk(seq, float(seq), piece) for seq, piece in enumerate(pieces)]
        )
        usage = {"input_tokens": 1000, "output_tokens": 100}
        records.finish(
            call_id, CallEnd(CallStatus.COMPLETED, 10.0, 0, usage=usage, http_status=200)
        )
    server = str((await make_server()).address)

    detail = await get_json(server, f"/calls/{whole}")
    # 1000 input tokens at $2 and 100 output at $10 per million: the Calls row's cost.
    assert detail["call"]["cost_usd"] == pytest.approx(0.003)
    listed = (await get_json(server, "/calls?run_id=r9"))["calls"]
    assert [c["cost_usd"] for c in listed] == [detail["call"]["cost_usd"]] * 2
    answer = detail["answer"]
    assert answer["text"] == "Let me check."
    assert answer["tool_calls"] == [
        {"call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
    ] or (
        provider_format.type == "gemini"  # Gemini sends parsed arguments, re-encoded here
        and [(t["name"], json.loads(t["arguments"])) for t in answer["tool_calls"]]
        == [("get_weather", {"city": "Paris"})]
    )
    assert answer["complete"] is True and answer["finish"] is not None
    assert len(detail["chunks"]) > 3  # the raw chunks stay beside it

    partial = (await get_json(server, f"/calls/{cut}"))["answer"]
    assert partial["complete"] is False
    assert "Let me check.".startswith(partial["text"])
