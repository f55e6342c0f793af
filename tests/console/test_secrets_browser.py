"""In a real browser: a provider whose key does not open under the server's key (its key file
was lost) shows "key unreadable, set it again" on the Providers page; replacing the key there
fixes it. Skips without Chromium, as ``tests/console/test_console_browser.py`` does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import browser, page  # noqa: F401  (the shared fixtures)
from tests.support.process import ServerProcess, server_env

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process

KEY = "sk-browser-lost-key-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``python run.py`` holding a provider saved under a key file that is gone since."""
    first = ServerProcess(server_env(tmp_path))
    try:
        base = f"http://{first.wait_for_address()}/console/api"
        provider = {"name": "Lost", "type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}
        created = httpx.post(f"{base}/providers", json={**provider, "api_key": KEY})
        assert created.status_code == 201, created.text
    finally:
        first.stop()
    (tmp_path / "server.db.key").unlink()
    second = ServerProcess(server_env(tmp_path))
    try:
        yield second.wait_for_address()
    finally:
        second.stop()


async def test_a_lost_key_says_set_it_again_and_replacing_it_fixes_it(
    page: Page,  # noqa: F811
    server: str,
) -> None:
    await page.goto(f"http://{server}/console")
    row = page.locator("tr[data-provider=Lost]")
    await expect(row).to_contain_text("key unreadable, set it again: api_key")
    await row.get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit provider")
    await form.locator("select[name=api_key_mode]").select_option("set")
    await form.locator("input[name=api_key]").fill("sk-browser-new-key-42")
    await form.get_by_role("button", name="Save").click()
    await expect(row).not_to_contain_text("unreadable")
    await expect(row.locator(".badge.ok")).to_have_text("set")
