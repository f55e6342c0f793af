"""The Connect page's protocol drift sentences in a real browser (Chromium, as in
``tests/console/test_console_browser.py``) against ``python run.py``: the fake Cursor client
sends a RunRequest with a field and an enum value the schema does not know, and a request for
an RPC the server does not serve."""

from __future__ import annotations

import os

import httpx
import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import browser, page, server
from tests.e2e.test_protocol_drift_e2e import UNSERVED, VERSION, drifting_run_request
from tests.support.fake_cursor import FakeCursor

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def test_the_connect_page_says_what_cursor_sent_that_is_not_known_here(
    page: Page, server: str
) -> None:
    await page.goto(f"http://{server}/console/#/connect")
    status = page.locator("[aria-label='Cursor client status']")
    await expect(status).to_contain_text("No Cursor client has reached this server yet")
    await expect(page.locator("[aria-label='Protocol drift']")).to_have_count(0)

    cursor = FakeCursor(f"http://{server}", headers={"x-cursor-client-version": VERSION})
    try:
        for n in range(2):
            answer = await cursor.append(f"drift-{n}", 0, drifting_run_request(f"c{n}"))
            assert answer.status_code == 200, answer.text
    finally:
        await cursor.aclose()
    async with httpx.AsyncClient(base_url=f"http://{server}", timeout=10.0) as client:
        # Relayed (the test server's upstream refuses it: counted all the same).
        await client.post(UNSERVED, content=b"", headers={"x-cursor-client-version": VERSION})

    drift = page.locator("[aria-label='Protocol drift']")  # the page refreshes on its own
    field = drift.locator("[data-drift=field]")
    await expect(field).to_contain_text(
        f"Cursor {VERSION} sent agent.v1.AgentRunRequest field 99, not known here, 2 times since"
    )
    await expect(drift.locator("[data-drift=enum]")).to_contain_text(
        "sent agent.v1.UserMessage field mode value 42, which has no name here, 2 times since"
    )
    await expect(drift.locator("[data-drift=path]")).to_contain_text(
        f"relayed {UNSERVED} upstream once since"
    )
    await expect(drift.locator("[data-drift=path]")).to_contain_text("(not implemented here)")
