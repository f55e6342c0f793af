"""A key that does not open under the server's key (the database came without its key file)
is never a crash: the console's discovery and model checks answer 409 naming the provider, a
search or an image generation is an error the model reads naming the owner, a call's detail
shows no assembled answer (it could not be scrubbed of the key), and no answer holds the
key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from actors.services.image_generation import ImageGenerator
from actors.services.web_search import WebSearcher
from store import Store, connect_store
from store import catalog as cat
from store.base.secrets import new_secret_key
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall, RecordedChunk
from tests.conftest import StartServer
from tests.support.fake_provider import chat_events, encode_events
from wire.tools.base import ServerWorkFailed
from wire.tools.generate_image import ImageRequest
from wire.tools.web_search import WebSearchRequest

KEY = "sk-unreadable-0123456789"
SEARCH_KEY = "brave-unreadable-42"


@pytest.fixture
def moved_store(tmp_path: Path) -> Iterator[tuple[Store, int, str]]:
    """A store with a provider, a model marked for images and a Brave key, all saved under
    a key this store does not have; the provider's id and the model's public id."""
    url = f"sqlite:///{tmp_path}/moved.db"
    first = connect_store(url, new_secret_key())
    db = first.database
    provider = cat.create_provider(
        db,
        cat.ProviderInput(
            name="Moved", type="openai-chat", base_url="http://127.0.0.1:9/v1", api_key=KEY
        ),
    )
    # An image model (so it can be marked), also checked as a chat model would be.
    only = cat.ModelInput(model_id="m", display_name="M", kind="image")
    (model,) = cat.save_models(db, provider.id, [only])
    cat.set_image_model(db, model.public_id)
    cat.update_web_search(db, cat.WebSearchInput(backend="brave", api_key=SEARCH_KEY))
    first.close()
    store = connect_store(url, new_secret_key())
    yield store, provider.id, model.public_id
    store.close()


async def test_console_discovery_and_checks_answer_409_naming_the_provider(
    make_server: StartServer, moved_store: tuple[Store, int, str]
) -> None:
    store, provider_id, public_id = moved_store
    server = await make_server(store=store)
    async with httpx.AsyncClient(base_url=f"http://{server.address}/console/api") as api:
        answers = [
            await api.post(f"/providers/{provider_id}/models/discover", json={}),
            await api.post(f"/models/{public_id}/test", json={}),
            await api.post(f"/models/{public_id}/check-tools", json={}),
        ]
        shown = (await api.get("/settings/web-search")).json()
    for answer in answers:
        assert answer.status_code == 409, answer.text
        assert answer.json()["code"] == "failed_precondition"
        assert answer.json()["message"].startswith(
            "provider 'Moved': key unreadable, set it again in the console (api_key: it was "
            "stored under another secret key"
        )
        assert KEY not in answer.text
    assert shown == {
        "backend": "brave",
        "url": None,
        "has_api_key": True,
        "key_unreadable": "key unreadable, set it again",
    }


async def test_search_and_image_generation_are_errors_the_model_reads(
    moved_store: tuple[Store, int, str],
) -> None:
    store = moved_store[0]
    async with httpx.AsyncClient() as client:
        searched = await WebSearcher(store.database, client)(WebSearchRequest("cats"))
        drawn = await ImageGenerator(store.database, client)(ImageRequest("a cat", None))
    assert isinstance(searched, ServerWorkFailed)
    assert searched.error.startswith(
        "the web search backend Brave Search: key unreadable, set it again in the console"
    )
    assert isinstance(drawn, ServerWorkFailed)
    assert drawn.error.startswith("provider 'Moved': key unreadable, set it again")
    assert SEARCH_KEY not in searched.error and KEY not in drawn.error


async def test_a_call_detail_shows_no_answer_it_could_not_scrub(
    make_server: StartServer, moved_store: tuple[Store, int, str]
) -> None:
    store, provider_id, public_id = moved_store
    records = CallRecords(store.database)
    call = NewCall(
        "r1", "r1:0", provider_id, "Moved", "openai-chat", "http://127.0.0.1:9/v1",
        public_id, "m", "M", True,
    )  # fmt: skip
    call_id = records.start(call)
    halves = [KEY[:10], KEY[10:]]  # each chunk a piece of the key: the recorder saw no key
    body = encode_events(chat_events(text=["the key is ", *halves]))
    records.record_chunks(call_id, [RecordedChunk(0, 0.0, body)])
    records.finish(call_id, CallEnd(CallStatus.COMPLETED, 10.0, 0, http_status=200))
    server = await make_server(store=store)
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"http://{server.address}/console/api/calls/{call_id}")
    assert answer.status_code == 200 and answer.json()["answer"] is None
    assert KEY not in answer.text
