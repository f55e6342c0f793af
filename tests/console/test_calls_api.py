"""The console's call listing, filtered and paged, over a real socket."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import pytest

from console.call_answer import MAX_ANSWER_CHARS
from store import Store
from store.catalog import (
    ModelInput,
    ModelRecord,
    ProviderInput,
    ProviderKeyInput,
    add_provider_key,
    create_provider,
    save_models,
)
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
    # The cut body ends with the event that carried the first fragment of the arguments.
    first_fragment = body.index(b"\n\n", body.index(b"ci")) + 2
    for call_id, data in ((whole, body), (cut, body[:first_fragment])):
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

    # Cut in the middle of the tool call: the text that came before is there, the decoder's
    # reason for stopping beside it, and the tool call the cut fell into is shown as far as
    # its arguments came, never completed into a call it was not.
    partial = (await get_json(server, f"/calls/{cut}"))["answer"]
    assert partial["complete"] is False and partial["problem"] is not None
    assert partial["text"] and "Let me check.".startswith(partial["text"])
    assert partial["finish"] is None
    (half_sent,) = partial["tool_calls"]
    assert (half_sent["call_id"], half_sent["name"]) == ("call_1", "get_weather")
    if provider_format.type == "gemini":  # Gemini's arguments come whole in one event
        assert json.loads(half_sent["arguments"]) == {"city": "Paris"}
    else:
        assert half_sent["arguments"] == '{"ci'  # as far as it came, not completed


def fake_model(server_store: Store, provider_id: int) -> ModelRecord:
    (model,) = save_models(
        server_store.database, provider_id, [ModelInput(model_id="fake-model", display_name="Fake")]
    )
    return model


def chat_call(provider_id: int, public_id: str) -> NewCall:
    return NewCall(
        "r8", "r8:0", provider_id, "fake", "openai-chat", "http://x/v1",
        public_id, "fake-model", "Fake", True,
    )  # fmt: skip


def recorded(
    records: CallRecords, call: NewCall, body: bytes, end: CallEnd | None, size: int = 7
) -> int:
    """A call whose response ``body`` is recorded in chunks of ``size`` bytes, finished with ``end``
    (None: still running)."""
    call_id = records.start(call)
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    records.record_chunks(
        call_id, [RecordedChunk(seq, float(seq), piece) for seq, piece in enumerate(pieces)]
    )
    if end is not None:
        records.finish(call_id, end)
    return call_id


ANSWERED = CallEnd(CallStatus.COMPLETED, 10.0, 0, http_status=200)


async def test_a_key_split_over_deltas_is_scrubbed_from_the_assembled_answer(
    make_server: StartServer, server_store: Store
) -> None:
    key, pooled = "sk-live-ABCDEFGH12345678", "sk-pool-ZYXWVUTS87654321"
    database = server_store.database
    provider = create_provider(
        database,
        ProviderInput(name="fake", type="openai-chat", base_url="http://x/v1", api_key=key),
    )
    add_provider_key(database, provider.id, ProviderKeyInput("second", pooled))
    model = fake_model(server_store, provider.id)
    # Each raw chunk holds only a piece of each key, so the recorder's scrub of each chunk
    # found nothing to replace; the key comes whole only once the deltas are joined.
    tool = FakeToolCall("call_1", "echo", ('{"k": "sk-pool-ZYXW', 'VUTS87654321"}'))
    events = chat_events(
        text=["your key is sk-live-ABCD", "EFGH12345678 ok"],
        thinking=["the key sk-live-ABCDEF", "GH12345678"],
        tools=[tool],
    )
    call = chat_call(provider.id, model.public_id)
    call_id = recorded(CallRecords(database), call, encode_events(events), ANSWERED)
    server = str((await make_server()).address)

    async with httpx.AsyncClient() as client:
        raw = (await client.get(f"http://{server}/console/api/calls/{call_id}")).text
    assert key not in raw and pooled not in raw
    answer = json.loads(raw)["answer"]
    assert answer["text"] == "your key is [redacted] ok"
    assert answer["thinking"] == "the key [redacted]"
    assert answer["tool_calls"][0]["arguments"] == '{"k": "[redacted]"}'


async def test_a_refused_running_or_unknown_format_call_has_no_answer(
    make_server: StartServer, server_store: Store
) -> None:
    provider = create_provider(
        server_store.database,
        ProviderInput(name="fake", type="openai-chat", base_url="http://x/v1"),
    )
    model = fake_model(server_store, provider.id)
    records = CallRecords(server_store.database)
    call = chat_call(provider.id, model.public_id)
    refused_body = b'{"error": {"message": "overloaded"}}'
    refused = CallEnd(CallStatus.FAILED, 10.0, 0, http_status=503, error_message="overloaded")
    stream = encode_events(chat_events(text=["Hel", "lo"]))
    ids = {
        "refused": recorded(records, call, refused_body, refused),
        "running": recorded(records, call, stream[: len(stream) // 2], None),
        "answered": recorded(records, call, stream, ANSWERED),
        "unknown format": recorded(
            records, msgspec.structs.replace(call, provider_type="future-api"), stream, ANSWERED
        ),
    }
    server = str((await make_server()).address)
    answers = {name: (await get_json(server, f"/calls/{i}"))["answer"] for name, i in ids.items()}
    assert answers["refused"] is None and answers["running"] is None
    assert answers["unknown format"] is None
    assert answers["answered"]["text"] == "Hello" and answers["answered"]["complete"] is True


async def test_an_answer_past_the_cap_is_cut_and_says_so(
    make_server: StartServer, server_store: Store
) -> None:
    provider = create_provider(
        server_store.database,
        ProviderInput(name="fake", type="openai-chat", base_url="http://x/v1"),
    )
    model = fake_model(server_store, provider.id)
    half = MAX_ANSWER_CHARS // 2 + 10
    stream = encode_events(chat_events(text=["a" * half, "b" * half, "c" * 10]))
    call = chat_call(provider.id, model.public_id)
    call_id = recorded(CallRecords(server_store.database), call, stream, ANSWERED, size=65536)
    server = str((await make_server()).address)
    answer = (await get_json(server, f"/calls/{call_id}"))["answer"]
    assert answer["text"] == "a" * half + "b" * (MAX_ANSWER_CHARS - half)
    assert answer["complete"] is False and "cut" in answer["problem"]
