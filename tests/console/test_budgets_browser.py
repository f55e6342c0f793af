"""The Settings page's Budgets section in a real browser (Chromium, as in
``tests/console/test_console_browser.py``) against ``python run.py``: the default and a user's
override edited and saved, read back through the API, and a refused save's message shown."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import api, browser, page, server
from tests.console.test_routing_browser import two_models
from tests.support.fake_provider import FakeProvider

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process

NO_LIMITS = {
    "usd_per_day": None,
    "usd_per_month": None,
    "turns_per_minute": None,
    "concurrent_runs": None,
    "allowed_models": None,
}


async def test_budgets_are_edited_on_the_settings_page(
    page: Page, server: str, fake: FakeProvider
) -> None:
    first, _ = await two_models(server, fake)
    await page.goto(f"http://{server}/console/#/settings")
    form = page.get_by_role("form", name="Budgets")
    await form.get_by_label("USD per day, default").fill("5")
    await form.get_by_label("Turns per minute, default").fill("10")
    await form.get_by_role("button", name="Add a user").click()
    await form.get_by_label("User 1", exact=True).fill("alice@example.com")
    await form.get_by_label("USD per month, user 1").fill("100.5")
    await form.get_by_label("Runs at once, user 1").fill("2")
    await form.get_by_label("Allowed models, user 1").select_option(label="Model A")
    await form.get_by_role("button", name="Save budgets").click()
    await expect(form.get_by_text("Budgets saved.")).to_be_visible()
    saved = (await api(server, "GET", "/settings/budgets")).json()
    assert saved["default"] == {**NO_LIMITS, "usd_per_day": 5.0, "turns_per_minute": 10}
    assert saved["overrides"] == {
        "alice@example.com": {
            **NO_LIMITS,
            "usd_per_month": 100.5,
            "concurrent_runs": 2,
            "allowed_models": [first],
        }
    }

    # Shown again as saved after a reload.
    await page.reload()
    form = page.get_by_role("form", name="Budgets")
    await expect(form.get_by_label("USD per day, default")).to_have_value("5")
    await expect(form.get_by_label("User 1", exact=True)).to_have_value("alice@example.com")

    # A refused save shows the server's message next to the field it names; nothing changes.
    await form.get_by_label("USD per day, default").fill("-1")
    await form.get_by_role("button", name="Save budgets").click()
    error = form.locator("[data-field='default.usd_per_day'] [role=alert]")
    await expect(error).to_contain_text("must be a finite amount of USD")
    await expect(error).not_to_contain_text("usd_per_day")
    assert (await api(server, "GET", "/settings/budgets")).json() == saved

    # Removing the user's row and saving drops the override.
    await form.get_by_label("USD per day, default").fill("")
    await form.get_by_role("button", name="Remove user 1").click()
    await form.get_by_role("button", name="Save budgets").click()
    await expect(form.get_by_text("Budgets saved.")).to_be_visible()
    after = (await api(server, "GET", "/settings/budgets")).json()
    assert after["overrides"] == {}
    assert after["default"] == {**NO_LIMITS, "turns_per_minute": 10}
