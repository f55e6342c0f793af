"""The Settings page's Routing section and the Connect page's sentence about Auto, in a real
browser (Chromium, as in ``tests/console/test_console_browser.py``) against ``python run.py``."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import api, browser, page, server
from tests.support.fake_provider import FakeProvider

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def two_models(server: str, fake: FakeProvider) -> tuple[str, str]:
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    models = [
        {"model_id": "model-a", "display_name": "Model A", "sort_order": 0},
        {"model_id": "model-b", "display_name": "Model B", "sort_order": 1},
    ]
    saved = (
        await api(server, "POST", f"/providers/{provider_id}/models", {"models": models})
    ).json()
    return saved[0]["public_id"], saved[1]["public_id"]


async def test_routing_is_edited_on_the_settings_page_and_the_connect_page_says_where_auto_goes(
    page: Page, server: str, fake: FakeProvider
) -> None:
    first, second = await two_models(server, fake)
    await page.goto(f"http://{server}/console/#/connect")
    sentence = page.locator("[data-auto]")
    await expect(sentence).to_contain_text("Auto runs on Model A (your first enabled model)")

    await page.goto(f"http://{server}/console/#/settings")
    form = page.get_by_role("form", name="Routing")
    auto = form.locator("select[name=auto]")
    await expect(auto).to_have_value("first-enabled")
    await auto.select_option(label="Model B")
    add = form.get_by_role("button", name="Add a row")
    await add.click()
    await form.get_by_label("Pattern 1").fill("gpt-5*")
    await add.click()
    await form.get_by_label("Pattern 2").fill("claude-4.5-sonnet")
    await form.get_by_label("Model 2").select_option(label="Model B")
    # The order is the table's: the second row moved to the top.
    await form.get_by_role("button", name="Move 2 up").click()
    await expect(form.get_by_label("Pattern 1")).to_have_value("claude-4.5-sonnet")
    await form.get_by_role("button", name="Save routing").click()
    await expect(form.get_by_text("Routing saved.")).to_be_visible()
    assert (await api(server, "GET", "/settings/routing")).json() == {
        "auto": {"kind": "model", "public_id": second},
        "routes": [
            {"pattern": "claude-4.5-sonnet", "public_id": second},
            {"pattern": "gpt-5*", "public_id": first},
        ],
        "max_routes": 100,
    }

    # A refused save shows the server's message next to the row it names.
    await add.click()
    await form.get_by_label("Pattern 3").fill("gpt-5*")
    await form.get_by_role("button", name="Save routing").click()
    error = form.locator("[data-field='routes[2].pattern'] [role=alert]")
    await expect(error).to_have_text("'gpt-5*' is already in the table")
    await form.get_by_role("button", name="Remove 3").click()
    await form.get_by_role("button", name="Save routing").click()
    await expect(form.get_by_text("Routing saved.")).to_be_visible()
    assert len((await api(server, "GET", "/settings/routing")).json()["routes"]) == 2

    # A reload shows what was stored.
    await page.reload()
    await expect(form.locator("select[name=auto]")).to_have_value(second)
    await expect(form.get_by_label("Pattern 2")).to_have_value("gpt-5*")

    await page.goto(f"http://{server}/console/#/connect")
    await expect(sentence).to_contain_text("Auto runs on Model B")
    await page.goto(f"http://{server}/console/#/settings")
    await form.locator("select[name=auto]").select_option(label="Cursor's backend")
    await form.get_by_role("button", name="Save routing").click()
    await expect(form.get_by_text("Routing saved.")).to_be_visible()
    await page.goto(f"http://{server}/console/#/connect")
    await expect(sentence).to_contain_text("Auto goes to Cursor's backend")
