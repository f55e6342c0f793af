"""Every console form submitted with every field wrong, in a real browser (Chromium, as in
``tests/console/test_console_browser.py``): each refusal shows at its own field, all at once, in
words (the field's label names it, never an id such as ``base_url:`` or ``models[0].…``).
Also the providers form's smaller behaviours: presets, the example URL, the reasoning box,
the next step after a save and the delete dialog's words."""

from __future__ import annotations

import os
import re

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Locator, Page, Request, expect

from tests.console.test_console_browser import api, browser, page, server
from tests.support.fake_provider import FakeProvider

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process

# What a message at a field must never start with: a field id instead of words.
FIELD_ID = re.compile(r"^\s*[\w.\[\]']+: ")


async def expect_at(form: Locator, field: str, words: str) -> None:
    """The message ``words`` shows at ``field`` (its label above it), without an id."""
    alert = form.locator(f'[data-field="{field}"] [role=alert]')
    await expect(alert).to_contain_text(words)
    assert not FIELD_ID.match(await alert.inner_text()), await alert.inner_text()
    control = form.locator(f'[data-field="{field}"]').locator("input, select").first
    await expect(control).to_have_attribute("aria-invalid", "true")


async def a_model(server: str, fake: FakeProvider) -> tuple[int, str]:
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    model = {"model_id": "fake-model", "display_name": "Fake Model"}
    saved = await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    return provider_id, saved.json()[0]["public_id"]


async def an_opened_editor(page: Page, server: str, fake: FakeProvider) -> Locator:
    """The editor of a model just saved, opened from the Models page."""
    await a_model(server, fake)
    await page.goto(f"http://{server}/console/#/models")
    await page.locator("tr[data-model=fake-model]").get_by_role("button", name="Edit").click()
    return page.get_by_role("form", name="Edit model")


async def test_the_provider_form_shows_every_wrong_field_at_once(page: Page, server: str) -> None:
    await page.goto(f"http://{server}/console/#/providers")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.get_by_label("Name").fill("   ")
    await form.get_by_label("Base URL (include /v1)").fill("ftp://example.com")
    await form.get_by_label("API key").fill("a key with spaces")
    await form.get_by_role("button", name="Add header").click()
    await form.get_by_label("Header name").fill("Bad Name")
    await form.get_by_label("Header value", exact=True).fill("x")
    await form.get_by_role("button", name="Add provider").click()
    await expect_at(form, "name", "provider name cannot be empty")
    await expect_at(form, "base_url", "must start with http:// or https://")
    await expect_at(form, "api_key", "must be printable ASCII without spaces")
    header = form.locator('[data-field="headers.Bad Name"] [role=alert]')
    await expect(header).to_have_text("Header Bad Name: header name must be an HTTP token")
    assert (await api(server, "GET", "/providers")).json() == []


async def test_the_model_editor_shows_every_wrong_field_at_once(
    page: Page, server: str, fake: FakeProvider
) -> None:
    form = await an_opened_editor(page, server, fake)
    await form.get_by_label("Display name").fill(" ")
    await form.get_by_label("Max output tokens").fill("0")
    await form.get_by_label("Context window (tokens)").fill("-3")
    for label in ("Input", "Output", "Cache read", "Cache write"):
        await form.get_by_label(label, exact=True).fill("-1")
    await form.get_by_role("button", name="Save model").click()
    await expect_at(form, "display_name", "display name cannot be empty")
    await expect_at(form, "max_output_tokens", "must be a positive integer")
    await expect_at(form, "context_window_tokens", "must be a positive integer")
    for name in ("input", "output", "cache_read", "cache_write"):
        await expect_at(form, f"price_{name}_per_mtok", "USD per million tokens, at least 0")
    await expect(form.locator(".form-error")).to_have_count(0)  # nothing left without a place
    (model,) = (await api(server, "GET", "/models")).json()
    assert model["display_name"] == "Fake Model"

    # Text a number box cannot read is refused before sending, in words.
    await form.get_by_label("Order").press_sequentially("1e")
    await form.get_by_role("button", name="Save model").click()
    await expect_at(form, "sort_order", "is not a number")

    # The effort means nothing without reasoning: it is disabled until reasoning is on.
    effort = form.get_by_label("Effort")
    await expect(effort).to_be_disabled()
    await form.get_by_label("Reasoning").check()
    await expect(effort).to_be_enabled()


async def test_the_model_editor_shows_the_browsers_and_the_servers_problems_at_once(
    page: Page, server: str, fake: FakeProvider
) -> None:
    form = await an_opened_editor(page, server, fake)
    await form.get_by_label("Display name").fill(" ")
    await form.get_by_label("Order").press_sequentially("1e")  # the browser cannot read it
    await form.get_by_label("Cache read", exact=True).press_sequentially("2e")
    await form.get_by_label("Input", exact=True).fill("-1")
    saves: list[Request] = []
    page.on(
        "request",
        lambda request: (
            saves.append(request) if request.method == "POST" and "/models" in request.url else None
        ),
    )
    await form.get_by_role("button", name="Save model").click()
    # One pass: the browser's words at the boxes it could not read, the server's at the others.
    await expect_at(form, "sort_order", "is not a number")
    await expect_at(form, "price_cache_read_per_mtok", "is not a number")
    await expect_at(form, "display_name", "display name cannot be empty")
    await expect_at(form, "price_input_per_mtok", "USD per million tokens, at least 0")
    for field in ("sort_order", "price_cache_read_per_mtok"):
        alert = form.locator(f'[data-field="{field}"] [role=alert]')
        await expect(alert).to_have_text("is not a number")  # the browser's words, not the server's
    await expect(form.locator(".form-error")).to_have_count(0)
    # Only a check-only save went out, without the boxes the browser could not read.
    assert [request.url.split("?")[1] for request in saves] == ["check=1"]
    body = saves[0].post_data_json
    assert isinstance(body, dict)
    (sent,) = body["models"]
    assert "sort_order" not in sent and "price_cache_read_per_mtok" not in sent
    assert (sent["display_name"], sent["price_input_per_mtok"]) == (" ", -1)
    (model,) = (await api(server, "GET", "/models")).json()
    assert (model["display_name"], model["sort_order"]) == ("Fake Model", 0)
    assert model["price_cache_read_per_mtok"] is None

    # The rest fixed: the server would accept it, so only the browser's problems stay.
    await form.get_by_label("Display name").fill("Renamed")
    await form.get_by_label("Input", exact=True).fill("1")
    await form.get_by_role("button", name="Save model").click()
    await expect(form.locator('[data-field="display_name"] [role=alert]')).to_have_count(0)
    await expect(form.locator('[data-field="price_input_per_mtok"] [role=alert]')).to_have_count(0)
    for field in ("sort_order", "price_cache_read_per_mtok"):
        await expect_at(form, field, "is not a number")
    await expect(form.locator(".form-error")).to_have_count(0)
    assert [request.url.split("?")[1] for request in saves] == ["check=1", "check=1"]
    (model,) = (await api(server, "GET", "/models")).json()
    assert model["display_name"] == "Fake Model"  # a check writes nothing


async def test_key_routing_budget_and_recording_forms_show_every_wrong_field(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await a_model(server, fake)
    await page.goto(f"http://{server}/console/#/providers")
    await page.locator("tr[data-provider=Fake]").get_by_role("button", name="Keys").click()
    keys = page.get_by_role("form", name="Add key")
    await keys.get_by_label("Label").fill(" ")
    await keys.get_by_role("button", name="Add key").click()
    await expect_at(keys, "label", "cannot be empty")
    await expect_at(keys, "api_key", "cannot be empty")

    await page.goto(f"http://{server}/console/#/settings")
    recording = page.get_by_role("form", name="Recording settings")
    await recording.get_by_label("Call records kept").fill("")
    await recording.get_by_role("button", name="Save").click()
    await expect_at(recording, "retained_calls", "must be a whole number, at least 1")

    routing = page.get_by_role("form", name="Routing")
    await routing.get_by_role("button", name="Add a row").click()
    await routing.get_by_role("button", name="Add a row").click()
    await routing.get_by_label("Pattern 2").fill("a/b")
    await routing.get_by_role("button", name="Save routing").click()
    await expect_at(routing, "routes[0].pattern", "must not be empty")
    await expect_at(routing, "routes[1].pattern", "must not contain '/'")

    budgets = page.get_by_role("form", name="Budgets")
    await budgets.get_by_role("button", name="Add a user").click()
    await budgets.get_by_label("User 1", exact=True).fill("alice@example.com")
    for who in ("default", "user 1"):
        await budgets.get_by_label(f"USD per day, {who}").fill("-1")
        await budgets.get_by_label(f"USD per month, {who}").fill("-2")
        await budgets.get_by_label(f"Turns per minute, {who}").fill("0")
        await budgets.get_by_label(f"Runs at once, {who}").fill("0")
    await budgets.get_by_role("button", name="Save budgets").click()
    for prefix in ("default", "overrides.0"):
        await expect_at(budgets, f"{prefix}.usd_per_day", "must be a finite amount of USD")
        await expect_at(budgets, f"{prefix}.usd_per_month", "must be a finite amount of USD")
        await expect_at(budgets, f"{prefix}.turns_per_minute", "must be an integer from 1")
        await expect_at(budgets, f"{prefix}.concurrent_runs", "must be an integer from 1")
    await expect(budgets.locator(".form-error")).to_have_count(0)

    search = page.get_by_role("form", name="Web search")
    await search.get_by_label("Search backend").select_option("searxng")
    await search.get_by_label("SearXNG URL (its JSON format enabled)").fill("ftp://x")
    await search.get_by_role("button", name="Save web search").click()
    await expect_at(search, "url", "must be an http:// or https:// URL with a host")


async def test_presets_the_example_url_the_reasoning_box_and_the_next_step(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await page.goto(f"http://{server}/console/#/providers")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    preset = form.get_by_label("Preset")
    name = form.get_by_label("Name")
    url = form.get_by_label("Base URL (include /v1)")
    # Each preset brings its name while the user has typed none.
    await preset.select_option("openai")
    await expect(name).to_have_value("OpenAI")
    await preset.select_option("deepseek")
    await expect(name).to_have_value("DeepSeek")
    # The Responses format ignores the reasoning box: it is not offered there.
    await preset.select_option("openai")
    await expect(form.locator("input[name=replay_reasoning]")).to_have_count(0)
    await preset.select_option("custom")
    await expect(url).to_have_value("")
    await expect(url).to_have_attribute("placeholder", re.compile(r"^https://.+/v1$"))
    await expect(form.locator("input[name=replay_reasoning]")).to_be_visible()
    # A typed name is kept across presets.
    await name.fill("Mine")
    await preset.select_option("ollama")
    await expect(name).to_have_value("Mine")
    await url.fill(fake.base_url)
    await form.get_by_role("button", name="Add provider").click()

    # Saved: the page says so and points at the next step.
    notice = page.get_by_role("status")
    await expect(notice).to_contain_text("Saved Mine.")
    provider_id = (await api(server, "GET", "/providers")).json()[0]["id"]
    link = notice.get_by_role("link", name="pick its models")
    await expect(link).to_have_attribute("href", f"#/models/{provider_id}")

    # With no models, the delete dialog says so in words and offers to delete the provider.
    await page.locator("tr[data-provider=Mine]").get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete provider")
    await expect(dialog).to_contain_text("It has no models. Its call records stay")
    await expect(dialog.get_by_role("button", name="Delete provider", exact=True)).to_be_visible()
    await dialog.get_by_role("button", name="Cancel").click()
    model = {"model_id": "m1", "display_name": "M1"}
    await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    await page.reload()
    await page.locator("tr[data-provider=Mine]").get_by_role("button", name="Delete").click()
    await expect(dialog).to_contain_text("Its 1 model go with it: M1. Its call records stay")
    await expect(dialog.get_by_role("button", name="Delete provider and models")).to_be_visible()
