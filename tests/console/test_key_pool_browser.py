"""In a real browser, against ``python run.py``: a key added to a provider's pool on the
Providers page shows up healthy; after a turn whose first key was rate limited, that key shows
cooling with its last error, the Calls page names each attempt's key, and no key's text is in
the page or in any console answer the page received. Skips without Chromium, as
``tests/console/test_console_browser.py`` does."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import (  # noqa: F401  (the shared fixtures)
    answers_seen,
    api,
    browser,
    page,
    server,
)
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events

pytestmark = pytest.mark.process

LIMITED = "sk-browser-pool-LIMITED-5150"
BACKUP = "sk-browser-pool-BACKUP-6260"


async def test_a_pool_key_is_added_and_its_state_shown_without_any_key(
    page: Page,  # noqa: F811
    server: str,  # noqa: F811
    fake: FakeProvider,
) -> None:
    provider = {"name": "Pooled", "type": "openai-chat", "base_url": fake.base_url}
    created = await api(server, "POST", "/providers", {**provider, "api_key": LIMITED})
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    models = {"models": [{"model_id": "fake-model", "display_name": "Fake Model"}]}
    saved = await api(server, "POST", f"/providers/{pid}/models", models)
    assert saved.status_code == 201, saved.text
    public_id = saved.json()[0]["public_id"]

    await page.goto(f"http://{server}/console/#/providers")
    await page.locator("tr[data-provider=Pooled]").get_by_role("button", name="Keys").click()
    panel = page.get_by_role("region", name="Keys of Pooled")
    await expect(panel.locator("tr[data-key=main]")).to_contain_text("healthy")
    await panel.locator("input[name=key_label]").fill("backup")
    await panel.locator("input[name=pool_api_key]").fill(BACKUP)
    await panel.get_by_role("button", name="Add key").click()
    await expect(panel.locator("tr[data-key=backup]")).to_contain_text("healthy")
    await expect(panel.locator("tr[data-key=backup]")).to_contain_text("set")
    await expect(panel.locator("input[name=pool_api_key]")).to_have_value("")

    fake.key_answers[LIMITED] = Script.error(
        429, {"error": {"message": "rate limited"}}, retry_after="120"
    )
    fake.enqueue(Script.sse(chat_events(text=["pooled answer"])))
    cursor = FakeCursor(f"http://{server}")
    try:
        log = await CursorSession(cursor, "pool-browser", workspace=None).run(
            user_turn_message("hi", public_id, conversation_id="pool")
        )
    finally:
        await cursor.aclose()
    assert log.end == {}
    assert [r.api_key for r in fake.requests if r.method == "POST"] == [LIMITED, BACKUP]

    await panel.get_by_role("button", name="Close").click()
    await page.locator("tr[data-provider=Pooled]").get_by_role("button", name="Keys").click()
    main = panel.locator("tr[data-key=main]")
    await expect(main.locator(".key-state")).to_contain_text("cooling until")
    await expect(main.locator(".key-error")).to_contain_text("HTTP 429")
    await expect(main.locator(".key-error")).to_contain_text("rate limited")
    await expect(panel.locator("tr[data-key=backup] .key-state")).to_have_text("healthy")

    await page.goto(f"http://{server}/console/#/calls")
    labels = page.locator("tr[data-call] [data-key-label]")
    await expect(labels).to_have_text(["backup", "main"])  # newest first

    shown = await page.content() + await answers_seen(page)
    assert LIMITED not in shown and BACKUP not in shown
