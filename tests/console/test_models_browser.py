"""The Models page in a real browser (Chromium, as in ``tests/console/test_console_browser.py``,
a screenshot kept on failure): discovery labels the models that are not chat models and leaves
them out of "Choose all chat models"; prices show in the table, filled in from the price list
for well-known ids and marked so, or from the provider's own listing, marked "from provider";
a model is added by its id when the provider's listing fails; and "Use for images" is offered
on image models only."""

from __future__ import annotations

import os
from typing import Any

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, Request, expect

from tests.console.test_console_browser import (
    KEY,
    add_provider_from_a_preset,
    answers_seen,
    api,
    browser,
    page,
    server,
)
from tests.support.fake_provider import FakeProvider, Script, chat_events, chat_usage

__all__ = ["browser", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def open_models(page: Page, server: str, fake: FakeProvider) -> None:
    await add_provider_from_a_preset(page, server, fake)
    await page.locator("tr[data-provider=Fake]").get_by_role("link", name="Models").click()
    await expect(page.get_by_role("heading", name="Models")).to_be_visible()


async def test_discovery_labels_models_that_cannot_chat_and_prices_come_from_the_list(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models = ["fake-chat", "text-embedding-3-small", "gpt-image-1", "gpt-4o", "whisper-1"]
    await open_models(page, server, fake)
    await page.get_by_role("button", name="Discover models").click()
    embedding = page.locator("label[data-discovered=text-embedding-3-small]")
    await expect(embedding).to_contain_text("embedding · not a chat model")
    await expect(page.locator("label[data-discovered=whisper-1]")).to_contain_text(
        "transcription · not a chat model"
    )
    await expect(page.locator("label[data-discovered=fake-chat]")).not_to_contain_text("not a chat")
    await expect(page.locator("label[data-discovered=gpt-4o]")).to_contain_text(
        "price list: in $2.5"
    )
    await page.get_by_role("button", name="Choose all chat models").click()
    for chat in ("fake-chat", "gpt-4o"):
        await expect(page.locator(f"input[name=discovered][value={chat}]")).to_be_checked()
    for other in ("text-embedding-3-small", "gpt-image-1", "whisper-1"):
        await expect(page.locator(f"input[name=discovered][value={other}]")).not_to_be_checked()
    await page.locator("input[name=discovered][value=gpt-image-1]").check()
    await page.get_by_role("button", name="Add 3 models").click()

    gpt = page.locator("tr[data-model=gpt-4o]")
    await expect(gpt.locator("td[data-prices=list]")).to_contain_text("in $2.5 · out $10")
    await expect(gpt.locator("td[data-prices=list]")).to_contain_text("cache read $1.25")
    listed = (await api(server, "GET", "/price-list")).json()
    await expect(gpt.locator("td[data-prices=list]")).to_contain_text(
        f"price list, {listed['as_of']}"
    )
    await expect(page.locator("p[data-price-list]")).to_contain_text(listed["as_of"])
    await expect(page.locator("tr[data-model=fake-chat] td[data-prices=none]")).to_contain_text(
        "unknown"
    )
    # The image model: added disabled (out of Cursor's picker), labelled, and the only row that
    # offers "Use for images".
    image = page.locator("tr[data-model=gpt-image-1]")
    await expect(image).to_contain_text("image · not a chat model")
    await expect(image).to_contain_text("off")
    await expect(page.locator("button", has_text="Use for images")).to_have_count(1)
    await expect(gpt.locator("button", has_text="Use for images")).to_have_count(0)
    await image.locator("button", has_text="Use for images").click()
    await expect(image.locator("td[data-image=marked]")).to_contain_text("image model")
    saved = {m["model_id"]: m for m in (await api(server, "GET", "/models")).json()}
    assert saved["gpt-4o"]["price_source"] == "list" and saved["gpt-4o"]["enabled"] is True
    assert (saved["gpt-image-1"]["kind"], saved["gpt-image-1"]["enabled"]) == ("image", False)
    assert "text-embedding-3-small" not in saved


async def test_prices_from_the_providers_listing_show_marked_from_provider(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models = ["acme/house-model", "anthropic/claude-sonnet-4", "openrouter/auto"]
    fake.listing_extra = {
        "acme/house-model": {"pricing": {"prompt": "0.0000005", "completion": "0.0000015"}},
        "openrouter/auto": {"pricing": {"prompt": "-1", "completion": "-1"}},
    }
    await open_models(page, server, fake)
    await page.get_by_role("button", name="Discover models").click()
    house = page.locator('label[data-discovered="acme/house-model"]')
    await expect(house.locator("[data-listed-price=provider]")).to_have_text(
        "from provider: in $0.5 · out $1.5"
    )
    # A router's id of a listed maker's model, without listing prices: the list's, by its name.
    sonnet = page.locator('label[data-discovered="anthropic/claude-sonnet-4"]')
    await expect(sonnet.locator("[data-listed-price=list]")).to_have_text(
        "price list: in $3 · out $15"
    )
    await expect(page.locator('label[data-discovered="openrouter/auto"]')).not_to_contain_text(
        "in $"
    )
    await page.get_by_role("button", name="Choose all chat models").click()
    await page.get_by_role("button", name="Add 3 models").click()

    row = page.locator('tr[data-model="acme/house-model"]')
    await expect(row.locator("td[data-prices=provider]")).to_contain_text("in $0.5 · out $1.5")
    await expect(row.locator("td[data-prices=provider] .badge")).to_have_text("from provider")
    listed = (await api(server, "GET", "/price-list")).json()
    await expect(
        page.locator('tr[data-model="anthropic/claude-sonnet-4"] td[data-prices=list] .badge')
    ).to_have_text(f"price list, {listed['as_of']}")
    await expect(
        page.locator('tr[data-model="openrouter/auto"] td[data-prices=none]')
    ).to_contain_text("unknown")
    await expect(page.locator("p[data-price-list]")).to_contain_text('marked "from provider"')
    await row.get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit model")
    await expect(form.locator("[data-hint=price-source]")).to_contain_text(
        "From the provider's own model listing"
    )
    saved = {m["model_id"]: m for m in (await api(server, "GET", "/models")).json()}
    assert saved["acme/house-model"]["price_source"] == "provider"


async def test_a_listed_price_edited_becomes_the_users_and_stays(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await open_models(page, server, fake)
    pid = (await api(server, "GET", "/providers")).json()[0]["id"]
    model = {"model_id": "gpt-4.1", "display_name": "GPT-4.1"}
    await api(server, "POST", f"/providers/{pid}/models", {"models": [model]})
    await page.reload()
    row = page.locator("tr[data-model=gpt-4\\.1]")
    await expect(row.locator("td[data-prices=list]")).to_be_visible()
    await row.get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit model")
    await expect(form.locator("[data-hint=price-source]")).to_contain_text("From the price list")
    await expect(form.locator("input[name=price_input_per_mtok]")).to_have_value("2")
    await form.locator("input[name=price_input_per_mtok]").fill("1.75")
    await form.get_by_role("button", name="Save model").click()
    await expect(row.locator("td[data-prices=user]")).to_contain_text("in $1.75 · out $8")
    # Added again without prices (as discovery adds): the user's price stays.
    await api(server, "POST", f"/providers/{pid}/models", {"models": [model]})
    await page.reload()
    await expect(row.locator("td[data-prices=user]")).to_contain_text("in $1.75")


async def test_a_model_added_by_id_after_a_discovery_gets_the_listings_prices(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models = ["acme/house-model"]
    fake.listing_extra = {
        "acme/house-model": {"pricing": {"prompt": "0.0000005", "completion": "0.0000015"}}
    }
    await open_models(page, server, fake)
    await page.get_by_role("button", name="Discover models").click()
    await expect(page.locator('label[data-discovered="acme/house-model"]')).to_be_visible()
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    form = page.get_by_role("form", name="Add a model to Fake by id")
    await form.get_by_label("Model id").fill("acme/house-model")
    # Not on the price list: no grey prices, and the hint says what the server fills in.
    await expect(form.locator("[data-hint=listed-price]")).to_have_count(0)
    await expect(form.locator("[data-hint=empty-prices]")).to_contain_text(
        "the provider listing's, if its last discovery"
    )
    await form.get_by_role("button", name="Add model").click()
    row = page.locator('tr[data-model="acme/house-model"]')
    await expect(row.locator("td[data-prices=provider]")).to_contain_text("in $0.5 · out $1.5")


async def test_a_model_is_added_by_id_when_the_listing_fails_and_passes_its_test(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models_error = (404, {"error": {"message": "this server lists no models"}})
    await open_models(page, server, fake)
    await page.get_by_role("button", name="Discover models").click()
    await expect(page.get_by_role("alert")).to_contain_text("this server lists no models")
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    form = page.get_by_role("form", name="Add a model to Fake by id")
    # A well-known id: the list's prices show in its empty boxes; the server fills in those
    # left empty, and a price typed is the user's.
    await form.get_by_label("Model id").fill("gpt-4o-mini")
    price_in = form.locator("input[name=price_input_per_mtok]")
    await expect(price_in).to_have_value("")
    await expect(price_in).to_have_attribute("placeholder", "0.15")
    await expect(form.locator("[data-hint=listed-price]")).to_contain_text("price list")
    await expect(form.locator("[data-hint=empty-prices]")).to_contain_text("else the price list's")
    # A number box the browser cannot read is refused at its field, nothing sent.
    await form.locator("input[name=price_output_per_mtok]").press_sequentially("1e")
    await form.get_by_role("button", name="Add model").click()
    await expect(form.locator("[data-field=price_output_per_mtok] [role=alert]")).to_contain_text(
        "is not a number"
    )
    assert (await api(server, "GET", "/models")).json() == []
    await form.locator("input[name=price_output_per_mtok]").fill("0.7")
    await form.get_by_role("button", name="Add model").click()
    row = page.locator("tr[data-model=gpt-4o-mini]")
    await expect(row.locator("td[data-prices=user]")).to_contain_text("in $0.15 · out $0.7")
    # Adding that id again is refused, in words at its field, and its prices stay the user's.
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    await form.get_by_label("Model id").fill("gpt-4o-mini")
    await form.get_by_role("button", name="Add model").click()
    await expect(form.locator("[data-field=model_id] [role=alert]")).to_contain_text(
        "already has the model gpt-4o-mini"
    )
    # Saved behind the page's back: the server refuses it too, and nothing changes.
    pid = (await api(server, "GET", "/providers")).json()[0]["id"]
    mine = {"model_id": "gpt-4.1", "display_name": "Mine", "price_input_per_mtok": 1.5}
    await api(server, "POST", f"/providers/{pid}/models", {"models": [mine]})
    before = (await api(server, "GET", "/models")).json()
    await form.get_by_label("Model id").fill("gpt-4.1")
    await form.get_by_role("button", name="Add model").click()
    await expect(form.locator("[data-field=model_id] [role=alert]")).to_contain_text(
        "already has the model gpt-4.1"
    )
    assert (await api(server, "GET", "/models")).json() == before
    await form.get_by_role("button", name="Cancel").click()
    await page.reload()
    await expect(row.locator("td[data-prices=user]")).to_contain_text("in $0.15 · out $0.7")
    # An id the list does not know, with a space by mistake: refused at its field, in words.
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    await form.get_by_label("Model id").fill("local llm")
    await expect(form.locator("input[name=price_input_per_mtok]")).to_have_value("")
    await form.get_by_role("button", name="Add model").click()
    await expect(form.locator("[data-field=model_id] [role=alert]")).to_contain_text(
        "cannot contain spaces"
    )
    await form.get_by_label("Model id").fill("local-llm")
    await form.get_by_label("Display name").fill("Local LLM")
    await form.get_by_role("button", name="Add model").click()
    local = page.locator("tr[data-model=local-llm]")
    await expect(local).to_contain_text("Local LLM")
    await expect(local.locator("td[data-prices=none]")).to_contain_text("unknown")
    # A local image model whose name says nothing: ticked as one, it can be used for images.
    await expect(page.locator("button", has_text="Use for images")).to_have_count(0)
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    await form.get_by_label("Model id").fill("sd-local")
    await form.get_by_label("It generates images").check()
    await form.get_by_role("button", name="Add model").click()
    painter = page.locator("tr[data-model=sd-local]")
    await expect(painter).to_contain_text("image · not a chat model")
    await expect(painter.locator("button", has_text="Use for images")).to_have_count(1)
    await expect(page.locator("button", has_text="Use for images")).to_have_count(1)
    # Marked, then edited without touching its box: the kind is not sent (an image model
    # marked before kinds were stored reads as its name says), and it stays marked.
    await painter.locator("button", has_text="Use for images").click()
    await expect(painter.locator("td[data-image=marked]")).to_be_visible()
    sent: list[Any] = []

    def record(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/models"):
            sent.append(request.post_data_json)

    page.on("request", record)
    await painter.get_by_role("button", name="Edit").click()
    editor = page.get_by_role("form", name="Edit model")
    await editor.get_by_label("Display name").fill("SD local")
    await editor.get_by_role("button", name="Save model").click()
    await expect(painter).to_contain_text("SD local")
    await expect(painter.locator("td[data-image=marked]")).to_be_visible()
    assert len(sent) == 1 and "kind" not in sent[0]["models"][0]
    # Edited into a chat model: no longer an image model, nor marked.
    await painter.get_by_role("button", name="Edit").click()
    await editor.locator("input[name=generates_images]").uncheck()
    await editor.get_by_role("button", name="Save model").click()
    await expect(painter).not_to_contain_text("not a chat model")
    await expect(page.locator("td[data-image=marked]")).to_have_count(0)
    assert (await api(server, "GET", "/settings/image-model")).json() == {"public_id": None}
    # The hand-added model works: its Test sends a real request through the server.
    fake.enqueue(Script.sse(chat_events(text=["pong"], usage=chat_usage(5, 1))))
    await local.get_by_role("button", name="Test").click()
    result = page.get_by_role("region", name="Check result").or_(
        page.locator("[aria-label='Check result']")
    )
    await expect(result).to_contain_text("passed")
    assert fake.requests[-1].json["model"] == "local-llm"
    assert KEY not in await answers_seen(page)
