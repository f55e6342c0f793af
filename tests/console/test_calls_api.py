"""The console's call listing, filtered and paged, over a real socket."""

from __future__ import annotations

import httpx
import pytest

from store import Store
from store.conversations import ConversationStore
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from tests.conftest import StartServer


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
