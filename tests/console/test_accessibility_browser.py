"""Every console page, form and dialog in a real browser (Chromium, as in
``tests/console/test_console_browser.py``) checked by axe-core (``tests/support/axe.py``): no
violation of impact "serious" or "critical". Also: a form or dialog that opens takes the focus and
gives it back to what opened it, and the focus ring shows on the dark sidebar."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Page, expect

from tests.console.test_console_browser import (
    TOKEN,
    api,
    browser,
    guarded_page,
    guarded_server,
    page,
    server,
)
from tests.support.axe import assert_accessible
from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, Script, chat_events

__all__ = ["browser", "guarded_page", "guarded_server", "page", "server"]

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process


async def provider_with_a_model(server: str, fake: FakeProvider) -> tuple[int, str]:
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    model = {"model_id": "fake-model", "display_name": "Fake Model"}
    saved = await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    return provider_id, saved.json()[0]["public_id"]


async def visit(page: Page, server: str, path: str, heading: str) -> None:
    await page.goto(f"http://{server}/console/#/{path}")
    await expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
    await expect(page.locator(".loading")).to_have_count(0)


async def test_every_page_form_and_dialog_has_no_serious_accessibility_violation(
    page: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    provider_id, public_id = await provider_with_a_model(server, fake)
    # An agent turn, so Conversations, People and Calls have content.
    fake.enqueue(Script.sse(chat_events(text=["hello"])))
    cursor = FakeCursor(f"http://{server}")
    try:
        session = CursorSession(cursor, "a11y-turn", workspace=tmp_path)
        log = await session.run(user_turn_message("hi", public_id, conversation_id="a11y"))
    finally:
        await cursor.aclose()
    assert log.end == {}

    # A test call leaves a call record, so the Calls page and a call's detail have content.
    fake.enqueue(Script.sse(chat_events(text=["po", "ng"])))
    await visit(page, server, "models", "Models")
    row = page.locator("tr[data-model=fake-model]")
    await row.get_by_role("button", name="Test").click()
    await expect(page.get_by_role("region", name="Check result")).to_contain_text("passed")
    await assert_accessible(page, "Models with a test result")
    await row.get_by_role("button", name="Edit").click()
    await expect(page.get_by_role("form", name="Edit model")).to_be_visible()
    await assert_accessible(page, "the model editor")
    await page.get_by_role("button", name="Discover models").click()
    await expect(page.get_by_label("Filter models")).to_be_visible()
    await assert_accessible(page, "Models with discovered models")
    # The add-by-id form, with the price list's placeholders and with a refusal at its field.
    await page.get_by_role("button", name="Add a model by id to Fake").click()
    add = page.get_by_role("form", name="Add a model to Fake by id")
    await add.get_by_label("Model id").fill("gpt-4o")
    await expect(add.locator("[data-hint=listed-price]")).to_be_visible()
    await assert_accessible(page, "the add-by-id form")
    await add.get_by_label("Model id").fill("fake-model")
    await add.get_by_role("button", name="Add model").click()
    await expect(add.locator("[data-field=model_id] [role=alert]")).to_be_visible()
    await assert_accessible(page, "the add-by-id form with a refusal")

    for path, heading in (
        ("dashboard", "Dashboard"),
        ("calls", "Calls"),
        ("people", "People"),
        ("conversations", "Conversations"),
        ("settings", "Settings"),
        ("connect", "Connect Cursor"),
        (f"models/{provider_id}", "Models"),
        ("nowhere", "Not found"),
    ):
        await visit(page, server, path, heading)
        await assert_accessible(page, path)

    await page.goto(f"http://{server}/console/#/conversations/a11y")
    await expect(page.locator(".loading")).to_have_count(0)
    await expect(page.locator("main table").first).to_be_visible()
    await assert_accessible(page, "a conversation")

    call_id = (await api(server, "GET", "/calls")).json()["calls"][0]["id"]
    await page.goto(f"http://{server}/console/#/calls/{call_id}")
    await expect(page.locator(".loading")).to_have_count(0)
    await assert_accessible(page, "a call's detail")

    # Settings with each optional part shown: a routing row, a user's budget, a keyed backend.
    await visit(page, server, "settings", "Settings")
    await page.get_by_role("button", name="Add a row").click()
    await page.get_by_role("button", name="Add a user").click()
    await page.locator("select[name=backend]").select_option("tavily")
    await assert_accessible(page, "Settings with every section filled")
    await page.locator("select[name=backend]").select_option("searxng")
    await assert_accessible(page, "Settings with SearXNG")

    await visit(page, server, "providers", "Providers")
    await assert_accessible(page, "Providers")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.get_by_role("button", name="Add header").click()
    await assert_accessible(page, "the new provider form")
    await form.get_by_role("button", name="Cancel").click()
    provider_row = page.locator("tr[data-provider=Fake]")
    await provider_row.get_by_role("button", name="Edit").click()
    await expect(page.get_by_role("form", name="Edit provider")).to_be_visible()
    await assert_accessible(page, "the provider editor")
    await (
        page.get_by_role("form", name="Edit provider").get_by_role("button", name="Cancel").click()
    )
    await provider_row.get_by_role("button", name="Keys").click()
    await expect(page.get_by_role("region", name="Keys of Fake")).not_to_contain_text("Loading")
    await assert_accessible(page, "a provider's keys")
    await (
        page.get_by_role("region", name="Keys of Fake").get_by_role("button", name="Close").click()
    )
    await provider_row.get_by_role("button", name="Delete").click()
    await expect(page.get_by_role("dialog", name="Delete provider")).to_be_visible()
    await assert_accessible(page, "the delete dialog")

    # A refused save: messages at their fields are part of the page too.
    await (
        page.get_by_role("dialog", name="Delete provider")
        .get_by_role("button", name="Cancel")
        .click()
    )
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.get_by_role("button", name="Add provider").click()
    await expect(form.get_by_role("alert").first).to_be_visible()
    await assert_accessible(page, "a refused provider form")


async def test_the_login_page_has_no_serious_accessibility_violation(
    guarded_page: Page, guarded_server: str
) -> None:
    page = guarded_page
    await page.goto(f"http://{guarded_server}/console/")
    form = page.get_by_role("form", name="Log in")
    await expect(form.get_by_label("Console token")).to_be_visible()
    await assert_accessible(page, "the login page")
    await form.get_by_label("Console token").fill("not the token")
    await form.get_by_role("button", name="Log in").click()
    await expect(form.locator("[data-field=token] [role=alert]")).to_have_text(
        "the console token is wrong"
    )
    await assert_accessible(page, "the login page with its error")
    await form.get_by_label("Console token").fill(TOKEN)
    await form.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Providers")).to_be_visible()


async def test_an_opened_form_takes_the_focus_and_gives_it_back(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await provider_with_a_model(server, fake)
    await page.goto(f"http://{server}/console/#/providers")
    opener = page.get_by_role("button", name="Add provider")
    await opener.focus()
    await opener.press("Enter")
    form = page.get_by_role("form", name="Add provider")
    await expect(form.locator("select[name=preset]")).to_be_focused()
    await form.get_by_role("button", name="Cancel").click()
    await expect(page.get_by_role("button", name="Add provider")).to_be_focused()

    edit = page.locator("tr[data-provider=Fake]").get_by_role("button", name="Edit")
    await edit.click()
    await expect(
        page.get_by_role("form", name="Edit provider").locator("input[name=name]")
    ).to_be_focused()
    await (
        page.get_by_role("form", name="Edit provider").get_by_role("button", name="Cancel").click()
    )
    await expect(edit).to_be_focused()

    delete = page.locator("tr[data-provider=Fake]").get_by_role("button", name="Delete")
    await delete.click()
    dialog = page.get_by_role("dialog", name="Delete provider")
    await expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(delete).to_be_focused()

    await page.goto(f"http://{server}/console/#/models")
    model_edit = page.locator("tr[data-model=fake-model]").get_by_role("button", name="Edit")
    await model_edit.click()
    editor = page.get_by_role("form", name="Edit model")
    await expect(editor.locator("input[name=display_name]")).to_be_focused()
    await editor.get_by_role("button", name="Cancel").click()
    await expect(model_edit).to_be_focused()


def luminance(color: str) -> float:
    """The relative luminance (WCAG) of a computed ``rgb(r, g, b)`` colour."""
    channels = [int(c) / 255 for c in color.split("(")[1].rstrip(")").split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(one: str, other: str) -> float:
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


async def test_the_focus_ring_shows_on_the_dark_sidebar_and_on_controls(
    page: Page, server: str
) -> None:
    await page.goto(f"http://{server}/console/#/providers")
    await expect(page.get_by_role("heading", name="Providers")).to_be_visible()
    await page.keyboard.press("Tab")  # the first link of the sidebar
    link = page.locator("nav.side a").first
    await expect(link).to_be_focused()
    ring = await link.evaluate(
        "e => { const s = getComputedStyle(e);"
        " return [s.outlineStyle, s.outlineWidth, s.outlineColor]; }"
    )
    assert ring[0] != "none" and float(ring[1].removesuffix("px")) >= 2, ring
    # Against the sidebar's own background, at least the 3:1 contrast WCAG asks of a focus ring.
    background = await page.locator("nav.side").evaluate("e => getComputedStyle(e).backgroundColor")
    assert contrast(ring[2], background) >= 3, (ring, background)
    button = page.get_by_role("button", name="Add provider")
    await button.focus()
    await page.keyboard.press("Shift+Tab")
    await page.keyboard.press("Tab")
    await expect(button).to_be_focused()
    style = await button.evaluate(
        "e => [getComputedStyle(e).outlineStyle, getComputedStyle(e).outlineWidth]"
    )
    assert style[0] != "none" and float(style[1].removesuffix("px")) >= 2, style
