"""The People page and the Calls page's user filter in a real browser (Chromium, as in
``tests/console/test_console_browser.py``) against ``python run.py``, after two users' runs
sent by the fake Cursor client with their login tokens."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import answers_seen, api, browser, page, server
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    authorization,
    login_token,
    user_turn_message,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process

ALICE = login_token({"sub": "auth0|alice-1", "email": "alice@example.com"})
BOB = login_token({"sub": "auth0|bob-2"})


async def priced_model(server: str, fake: FakeProvider) -> str:
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    model = {
        "model_id": "fake-model",
        "display_name": "Fake",
        "price_input_per_mtok": 1000.0,
        "price_output_per_mtok": 0.0,
    }
    saved = await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    assert saved.status_code == 201, saved.text
    return str(saved.json()[0]["public_id"])


async def a_turn(server: str, token: str, run_id: str, public_id: str) -> None:
    cursor = FakeCursor(f"http://{server}", headers=authorization(token))
    try:
        log = await CursorSession(cursor, run_id).run(
            user_turn_message("hi", public_id, conversation_id=f"conv-{run_id}")
        )
    finally:
        await cursor.aclose()
    assert log.end == {}


async def test_the_people_page_lists_each_user_and_the_calls_page_filters_by_user(
    page: Page, server: str, fake: FakeProvider
) -> None:
    public_id = await priced_model(server, fake)
    for text, tokens in (("Hi Alice.", 1000), ("Hi Bob.", 2000), ("Again.", 1000)):
        fake.enqueue(Script.sse(chat_events(text=[text], usage=chat_usage(tokens, 5))))
    await a_turn(server, ALICE, "run-alice-1", public_id)
    await a_turn(server, BOB, "run-bob-1", public_id)
    await a_turn(server, ALICE, "run-alice-2", public_id)

    await page.goto(f"http://{server}/console/#/people")
    await expect(page.get_by_role("heading", name="People")).to_be_visible()
    alice = page.locator("tr[data-user='alice@example.com']")
    bob = page.locator("tr[data-user='auth0|bob-2']")
    await expect(alice.locator("[data-runs]")).to_have_text("2")
    await expect(alice.locator("[data-calls]")).to_have_text("2")
    await expect(bob.locator("[data-runs]")).to_have_text("1")
    # 2000 input tokens at $1000 per million: $2.00 for each of them.
    await expect(alice.locator("[data-cost]")).to_have_text("$2.00")
    await expect(bob.locator("[data-cost]")).to_have_text("$2.00")

    # A user's row opens the Calls page filtered to them.
    await bob.get_by_role("link", name="auth0|bob-2").click()
    await expect(page.get_by_role("heading", name="Calls")).to_be_visible()
    await expect(page.get_by_label("User")).to_have_value("auth0|bob-2")
    rows = page.locator("tr[data-call]")
    await expect(rows).to_have_count(1)
    await expect(rows.locator("[data-user]")).to_have_text("auth0|bob-2")
    await page.get_by_label("User").select_option("alice@example.com")
    await expect(rows).to_have_count(2)
    await expect(rows.locator("[data-user]")).to_have_text(["alice@example.com"] * 2)
    await page.get_by_label("User").select_option("")
    await expect(rows).to_have_count(3)

    # The Dashboard counts one user's calls when asked.
    await page.goto(f"http://{server}/console/#/dashboard")
    await expect(page.locator("[data-card=calls]")).to_have_text("3")
    await page.get_by_label("User").select_option("auth0|bob-2")
    await expect(page.locator("[data-card=calls]")).to_have_text("1")
    # No token reached the page.
    seen = await answers_seen(page)
    for token in (ALICE, BOB):
        assert all(part not in seen for part in token.split("."))
