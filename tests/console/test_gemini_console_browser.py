"""The console's native Gemini preset in a real browser (Chromium, as in
``tests/console/test_console_browser.py``): the preset fills Gemini's type and base URL, and a
provider added from it discovers its models from Gemini's own models list."""

from __future__ import annotations

import os

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import KEY, api, browser, page, server
from tests.support.fake_provider import GEMINI_EMBEDDING_MODEL, FakeProvider

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def test_a_provider_from_the_gemini_preset_discovers_and_enables_a_model(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models = ["gemini-flash-fake", "gemini-pro-fake"]
    fake.models_style = "gemini"
    await page.goto(f"http://{server}/console")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.locator("select[name=preset]").select_option("gemini-native")
    await expect(form.locator("select[name=type]")).to_have_value("gemini")
    await expect(form.locator("input[name=base_url]")).to_have_value(
        "https://generativelanguage.googleapis.com/v1beta"
    )
    await expect(form.locator("input[name=name]")).to_have_value("Gemini")
    await form.locator("input[name=base_url]").fill(fake.base_url)
    await form.locator("input[name=api_key]").fill(KEY)
    await form.get_by_role("button", name="Add provider").click()
    row = page.locator("tr[data-provider=Gemini]")
    await expect(row).to_contain_text(fake.base_url)

    await row.get_by_role("link", name="Models").click()
    await page.get_by_role("button", name="Discover models").click()
    # Gemini's list holds an embedding-only model too: listed, labelled by its methods as not a
    # chat model, and left out when every chat model is chosen.
    await expect(page.locator("input[name=discovered]")).to_have_count(3)
    embedder = page.locator(f"label[data-discovered={GEMINI_EMBEDDING_MODEL}]")
    await expect(embedder).to_contain_text("embedding · not a chat model")
    await page.get_by_role("button", name="Choose all chat models").click()
    await expect(page.get_by_role("button", name="Add 2 models")).to_be_visible()
    await expect(page.locator(f"input[value={GEMINI_EMBEDDING_MODEL}]")).not_to_be_checked()
    await page.locator("input[name=discovered][value=gemini-flash-fake]").uncheck()
    await page.locator("input[name=discovered][value=gemini-pro-fake]").check()
    await page.get_by_role("button", name="Add 1 model").click()
    await expect(page.locator("tr[data-model=gemini-pro-fake]")).to_contain_text("on")

    providers = (await api(server, "GET", "/providers")).json()
    assert [(p["type"], p["has_api_key"]) for p in providers] == [("gemini", True)]
    models = (await api(server, "GET", "/models")).json()
    assert [(m["model_id"], m["enabled"]) for m in models] == [("gemini-pro-fake", True)]
    (listed,) = [r for r in fake.requests if r.path == "/v1/models"]
    assert listed.header("x-goog-api-key") == KEY
    assert GEMINI_EMBEDDING_MODEL not in str(models)
