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
