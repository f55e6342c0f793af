"""A model's fallback list set on the Models page in a real browser (Chromium, as in
``tests/console/test_console_browser.py``): added from the select, ordered, one removed,
saved, and shown in the model's row."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import api, browser, page, server
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def test_a_fallback_list_is_set_ordered_and_saved_from_the_models_page(
    page: Page, server: str
) -> None:
    body = {"name": "Main", "type": "openai-chat", "base_url": "https://main.example.com/v1"}
    main = (await api(server, "POST", "/providers", body)).json()["id"]
    body = {"name": "Spare", "type": "anthropic", "base_url": "https://spare.example.com/v1"}
    spare = (await api(server, "POST", "/providers", body)).json()["id"]
    await api(
        server,
        "POST",
        f"/providers/{main}/models",
        {
            "models": [
                {"model_id": "first", "display_name": "First"},
                {"model_id": "second", "display_name": "Second"},
            ]
        },
    )
    third = {"model_id": "third", "display_name": "Third", "max_output_tokens": 1000}
    await api(server, "POST", f"/providers/{spare}/models", {"models": [third]})
    ids = {m["model_id"]: m["public_id"] for m in (await api(server, "GET", "/models")).json()}

    await page.goto(f"http://{server}/console/#/models")
    await page.locator("tr[data-model=first]").get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit model")
    adding = form.get_by_label("Add a fallback model")
    # The model itself is never offered.
    await expect(adding.locator("option", has_text="First")).to_have_count(0)
    await adding.select_option(ids["second"])
    await adding.select_option(ids["third"])
    listed = form.get_by_role("list", name="Fallback models").locator("li")
    await expect(listed).to_have_count(2)
    await form.get_by_role("button", name="Move Third (Spare) up").click()
    await expect(listed.first).to_contain_text("Third (Spare)")
    await form.get_by_role("button", name="Remove fallback Second (Main)").click()
    await expect(listed).to_have_count(1)
    await adding.select_option(ids["second"])
    await form.get_by_role("button", name="Save model").click()
    await expect(page.get_by_role("form", name="Edit model")).to_have_count(0)

    saved = {m["model_id"]: m["fallbacks"] for m in (await api(server, "GET", "/models")).json()}
    assert saved["first"] == [ids["third"], ids["second"]]
    row = page.locator("tr[data-model=first]")
    await expect(row).to_contain_text("Third (Spare) → Second (Main)")
    await page.reload()
    await expect(page.locator("tr[data-model=first]")).to_contain_text("Third (Spare) → Second")


async def test_the_calls_page_and_the_timeline_show_a_switch_to_a_fallback(
    page: Page, server: str, fake: FakeProvider
) -> None:
    async with FakeProvider() as backup:
        ids: dict[str, str] = {}
        for name, provider in (("Backup", backup), ("Primary", fake)):
            body = {"name": name, "type": "openai-chat", "base_url": provider.base_url}
            provider_id = (await api(server, "POST", "/providers", body)).json()["id"]
            model: dict[str, object] = {"model_id": name.lower(), "display_name": f"{name} Model"}
            if name == "Primary":
                model["fallbacks"] = [ids["Backup"]]
            saved = await api(
                server, "POST", f"/providers/{provider_id}/models", {"models": [model]}
            )
            ids[name] = saved.json()[0]["public_id"]
        # The server's own retry policy: three attempts, no wait with ``Retry-After: 0``.
        busy = Script.error(503, {"error": {"message": "overloaded"}}, retry_after="0")
        fake.enqueue(busy, busy, busy)
        backup.enqueue(Script.sse(chat_events(text=["from the backup"])))
        cursor = FakeCursor(f"http://{server}")
        try:
            message = user_turn_message("hello", ids["Primary"], conversation_id="fb")
            log = await CursorSession(cursor, "browser-fallback").run(message)
        finally:
            await cursor.aclose()
    assert log.end == {}

    await page.goto(f"http://{server}/console/#/calls")
    rows = page.locator("tr[data-call]")
    await expect(rows).to_have_count(4)
    await expect(rows.first).to_contain_text("Backup Model fallback 1 · attempt 1")
    await expect(rows.nth(1)).to_contain_text("Primary Model attempt 3")
    # The first attempt of the retried model says so too.
    await expect(rows.nth(3).locator("[data-place]")).to_have_attribute("data-place", "attempt 1")
    await rows.first.get_by_role("link").click()
    await expect(page.get_by_text("fallback 1 · attempt 1")).to_be_visible()

    await page.goto(f"http://{server}/console/#/conversations/fb")
    timeline = page.locator("[aria-label=Timeline]")
    provider_rows = timeline.locator("[data-row=provider]")
    await expect(provider_rows).to_have_count(4)
    await expect(provider_rows.nth(2)).to_contain_text("Primary Model (attempt 3)")
    await expect(provider_rows.nth(2)).to_contain_text("overloaded")
    await expect(provider_rows.nth(3)).to_contain_text(
        "fell back to Backup Model (fallback 1 · attempt 1)"
    )
