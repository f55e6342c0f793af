"""The Calls page in a real browser (Chromium, as in ``tests/console/test_console_browser.py``)
against ``python run.py``: the cost in view at 1366 px and on the call's detail, each attempt
of a retried call numbered in its row, the console's model tests marked, and a verbose call's
answer put together beside its raw chunks, with long lines wrapped."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Locator, Page, expect

from tests.console.test_console_browser import api, browser, page, server
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage

__all__ = ["browser", "page", "server"]

pytestmark = pytest.mark.process

# One line far wider than any window: it must wrap, not be cut.
LONG_LINE = "The answer is " + "very " * 120 + "long."


async def wraps(block: Locator) -> bool:
    """Whether ``block`` shows all of its text within its width (no horizontal scroll)."""
    result: bool = await block.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    return result


async def test_cost_attempts_tests_and_the_assembled_answer_are_shown(
    page: Page, server: str, fake: FakeProvider
) -> None:
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    model = {
        "model_id": "fake-model",
        "display_name": "Fake Model",
        "price_input_per_mtok": 2.0,
        "price_output_per_mtok": 10.0,
    }
    saved = await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    public_id = saved.json()[0]["public_id"]
    verbose = {"verbose": True, "retained_calls": 1000}
    assert (await api(server, "PUT", "/settings/observability", verbose)).status_code == 200

    # A run whose first attempt is refused (503) and whose retry answers.
    busy = Script.error(503, {"error": {"message": "overloaded"}}, retry_after="0")
    answer = chat_events(text=["Hello, ", LONG_LINE], usage=chat_usage(1000, 100))
    fake.enqueue(busy, Script.sse(answer))
    cursor = FakeCursor(f"http://{server}")
    try:
        message = user_turn_message("hello", public_id, conversation_id="calls")
        log = await CursorSession(cursor, "browser-calls").run(message)
    finally:
        await cursor.aclose()
    assert log.end == {}
    # Then a model test from the console.
    fake.enqueue(Script.sse(chat_events(text=["pong"])))
    tested = await api(server, "POST", f"/models/{public_id}/test", {})
    assert tested.status_code == 200, tested.text

    await page.set_viewport_size({"width": 1366, "height": 768})
    await page.goto(f"http://{server}/console/#/calls")
    rows = page.locator("tr[data-call]")
    await expect(rows).to_have_count(3)
    test_row, retry, first = rows.nth(0), rows.nth(1), rows.nth(2)
    # The test is marked, the run's calls are not.
    await expect(test_row.locator("[data-test]")).to_have_text("test")
    await expect(retry.locator("[data-test]")).to_have_count(0)
    await expect(first.locator("[data-test]")).to_have_count(0)
    # Both attempts of the retried call say which they are; the test made one.
    await expect(retry.locator("[data-place]")).to_have_attribute("data-place", "attempt 2")
    await expect(first.locator("[data-place]")).to_have_attribute("data-place", "attempt 1")
    await expect(retry).to_contain_text("Fake Model attempt 2")
    await expect(first).to_contain_text("Fake Model attempt 1")
    await expect(test_row.locator("[data-place]")).to_have_attribute("data-place", "")
    # The cost column is in view at 1366 px: 1000 input at $2, 100 output at $10 per million.
    header = page.get_by_role("columnheader", name="Est. cost")
    cell = retry.locator("[data-cost]")
    await expect(cell).to_have_text("$0.003000")
    for shown in (header, cell):
        box = await shown.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1366, box
    await expect(first.locator("[data-cost]")).to_have_text("—")  # refused: not billed

    # The detail: its cost, the answer put together, and the raw chunks, both wrapped.
    await retry.get_by_role("link").click()
    await expect(page.get_by_role("heading", name="Fake Model via Fake")).to_be_visible()
    await expect(page.locator(".card [data-cost]")).to_have_text("$0.003000")
    assembled = page.locator("[data-answer] [data-text]")
    await expect(assembled).to_have_text("Hello, " + LONG_LINE)
    chunks = page.locator("[data-chunks]")
    await expect(chunks).to_contain_text("data: ")
    assert await wraps(assembled) and await wraps(chunks)
    request = page.locator("pre.wrap").first
    assert await wraps(request)

    # The refused attempt's detail shows its error body among the chunks, never as an answer.
    await page.goto(f"http://{server}/console/#/calls")
    await rows.nth(2).get_by_role("link").click()
    await expect(page.locator("[data-chunks]")).to_contain_text("overloaded")
    await expect(page.locator("[data-answer]")).to_have_count(0)

    # The test's detail is marked too.
    await page.goto(f"http://{server}/console/#/calls")
    await rows.nth(0).get_by_role("link").click()
    await expect(page.get_by_role("heading", name="Fake Model via Fake")).to_contain_text("test")
    await expect(page.locator("[data-answer] [data-text]")).to_have_text("pong")
