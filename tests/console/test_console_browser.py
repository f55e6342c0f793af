"""The console in a real browser: Debian's Chromium driven by Playwright, against the server
started as ``python run.py`` and the fake provider.

Without ``/usr/bin/chromium`` these tests skip and say how to install it; ``.ci/run`` installs it
and sets ``CURSOR_TEST_REQUIRE_BROWSER=1``, which turns the skip into a failure. A failing test
leaves a screenshot (``failure.png``) in its pytest temp dir.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import (
    Browser,
    Locator,
    Page,
    Response,
    Route,
    async_playwright,
    expect,
)

from tests.support.fake_cursor import CursorSession, FakeCursor, user_turn_message
from tests.support.fake_provider import FakeProvider, FakeToolCall, Script, chat_events
from tests.support.process import ServerProcess, server_env

# Every test here drives a ``python run.py`` server (the ``server`` fixture).
pytestmark = pytest.mark.process

CHROMIUM = Path("/usr/bin/chromium")
# As the probe of this machine kind starts it: no sandbox (root), and no background traffic,
# which the closed network here would refuse.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KEY = "sk-browser-test-key-0123456789"
# Long enough for a shared, busy machine; an expectation that holds returns at once.
EXPECT_MS = 15_000
# Every response each open page received (by the page's id), for checks on what reached it.
RECEIVED: dict[int, list[Response]] = {}


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} not found: apt-get install -y chromium"
        if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield launched
        await launched.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``python run.py`` on loopback with its own database; its address."""
    process = ServerProcess(server_env(tmp_path))
    try:
        yield process.wait_for_address()
    finally:
        process.stop()


@pytest.fixture
async def page(
    browser: Browser, server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    """A fresh page for the ``server``'s console (a screenshot kept if the test fails)."""
    async for opened in _opened_page(browser, tmp_path, request):
        yield opened


async def _opened_page(
    browser: Browser, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    opened = await context.new_page()
    opened.set_default_timeout(EXPECT_MS)
    expect.set_options(timeout=EXPECT_MS)
    answers: list[Response] = []
    opened.on("response", lambda response: answers.append(response))
    RECEIVED[id(opened)] = answers
    yield opened
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        await opened.screenshot(path=str(tmp_path / "failure.png"), full_page=True)
    del RECEIVED[id(opened)]
    await context.close()


async def answers_seen(page: Page) -> str:
    """Every body the page received from the console API so far, joined."""
    bodies = []
    for response in RECEIVED[id(page)]:
        if "/console/api/" in response.url:
            try:
                bodies.append(await response.text())
            except Exception:  # a body the browser no longer holds (a redirect, a 204)
                continue
    return "\n".join(bodies)


async def api(server: str, method: str, path: str, body: object = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://{server}/console/api") as client:
        return await client.request(method, path, json=body)


async def add_provider_from_a_preset(page: Page, server: str, fake: FakeProvider) -> None:
    await page.goto(f"http://{server}/console")
    await expect(page.get_by_role("heading", name="Providers")).to_be_visible()
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.locator("select[name=preset]").select_option("ollama")
    await expect(form.locator("input[name=base_url]")).to_have_value("http://127.0.0.1:11434/v1")
    await expect(form.locator("select[name=type]")).to_have_value("openai-chat")
    await form.locator("input[name=name]").fill("Fake")
    await form.locator("input[name=base_url]").fill(fake.base_url)
    await form.locator("input[name=api_key]").fill(KEY)
    await form.get_by_role("button", name="Add provider").click()
    row = page.locator("tr[data-provider=Fake]")
    await expect(row).to_contain_text(fake.base_url)
    await expect(row).to_contain_text("set")


async def test_a_new_user_adds_a_provider_from_a_preset_and_enables_a_model(
    page: Page, server: str, fake: FakeProvider
) -> None:
    fake.models = ["fake-model", "fake-other"]
    await add_provider_from_a_preset(page, server, fake)
    await page.locator("tr[data-provider=Fake]").get_by_role("link", name="Models").click()
    await expect(page.get_by_role("heading", name="Models")).to_be_visible()
    await page.get_by_role("button", name="Discover models").click()
    await page.get_by_label("Filter models").fill("other")
    await expect(page.locator("input[name=discovered]")).to_have_count(1)
    await page.get_by_label("Filter models").fill("")
    await page.locator("input[name=discovered][value=fake-model]").check()
    await page.get_by_role("button", name="Add 1 model").click()
    row = page.locator("tr[data-model=fake-model]")
    await expect(row).to_contain_text("on")

    models = (await api(server, "GET", "/models")).json()
    assert [(m["model_id"], m["enabled"]) for m in models] == [("fake-model", True)]
    providers = (await api(server, "GET", "/providers")).json()
    assert providers[0]["has_api_key"] is True
    # The key is write-only: no answer the page received holds it (and the page did receive
    # the providers list, which says the key is set).
    seen = await answers_seen(page)
    assert '"has_api_key":true' in seen and KEY not in seen


async def test_a_price_typed_key_by_key_is_saved_as_typed(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await add_provider_from_a_preset(page, server, fake)
    provider_id = (await api(server, "GET", "/providers")).json()[0]["id"]
    model = {"model_id": "fake-model", "display_name": "Fake Model"}
    await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    await page.goto(f"http://{server}/console/#/models")
    await page.locator("tr[data-model=fake-model]").get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit model")
    for name, typed in (("price_input_per_mtok", "0.28"), ("price_output_per_mtok", "1.5")):
        await form.locator(f"input[name={name}]").press_sequentially(typed)
    await form.get_by_role("button", name="Save model").click()
    await expect(page.get_by_role("form", name="Edit model")).to_have_count(0)
    (saved,) = (await api(server, "GET", "/models")).json()
    assert (saved["price_input_per_mtok"], saved["price_output_per_mtok"]) == (0.28, 1.5)


async def options_of(select: Locator) -> list[list[str]]:
    """A select's options as ``[value, text]`` pairs, in order."""
    script = "options => options.map(o => [o.value, o.textContent.trim()])"
    result: list[list[str]] = await select.locator("option").evaluate_all(script)
    return result


async def serve_types(page: Page, types: list[dict[str, object]]) -> None:
    """Answer the page's provider-types request with ``types`` instead of the server."""

    async def fulfill(route: Route) -> None:
        await route.fulfill(json=types)

    await page.route("**/console/api/provider-types", fulfill)


async def test_the_provider_form_offers_exactly_the_types_the_server_lists(
    page: Page, server: str
) -> None:
    types = (await api(server, "GET", "/provider-types")).json()
    await page.goto(f"http://{server}/console")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await expect(form.locator("select[name=type] option")).to_have_count(len(types))
    assert await options_of(form.locator("select[name=type]")) == [
        [t["type"], t["label"]] for t in types
    ]
    await expect(form.locator("select[name=type]")).to_have_value(types[0]["type"])
    # Another answer, another form: the page keeps no list of its own, and offers only the
    # presets on a type the server lists.
    anthropic = next(t for t in types if t["type"] == "anthropic")
    await form.locator("select[name=type]").select_option("anthropic")
    await expect(form.locator("input[name=replay_reasoning]")).to_have_count(0)
    # The reasoning box shows where the server says the setting does something.
    await serve_types(page, [{**anthropic, "label": "A", "replay_reasoning": True}])
    await page.reload()
    await page.get_by_role("button", name="Add provider").click()
    await expect(form.locator("select[name=type] option")).to_have_count(1)
    assert await options_of(form.locator("select[name=type]")) == [["anthropic", "A"]]
    await expect(form.locator("select[name=type]")).to_have_value("anthropic")
    await expect(form.locator("input[name=replay_reasoning]")).to_be_visible()
    assert await options_of(form.locator("select[name=preset]")) == [
        ["", "Choose a preset…"],
        ["anthropic", "Anthropic"],
    ]


async def test_the_model_editor_offers_the_efforts_and_images_the_server_lists(
    page: Page, server: str
) -> None:
    types = {t["type"]: t for t in (await api(server, "GET", "/provider-types")).json()}
    provider = {"name": "Gem", "type": "gemini", "base_url": "http://127.0.0.1:9/v1beta"}
    gemini_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    # An image model, so whether it is offered for images is the type's answer alone.
    chosen = {"model_id": "gem-x", "display_name": "Gem X", "enabled": False, "kind": "image"}
    await api(server, "POST", f"/providers/{gemini_id}/models", {"models": [chosen]})
    row = page.locator("tr[data-model=gem-x]")
    effort = page.get_by_role("form", name="Edit model").locator("select[name=reasoning_effort]")

    await page.goto(f"http://{server}/console/#/models")
    await row.get_by_role("button", name="Edit").click()
    efforts = types["gemini"]["reasoning_efforts"]
    await expect(effort.locator("option")).to_have_count(1 + len(efforts))
    assert await options_of(effort) == [["", "provider default"], *([e, e] for e in efforts)]
    await expect(row.get_by_role("button", name="Generate images with Gem X")).to_have_count(
        int(types["gemini"]["generates_images"])
    )
    # The same page under an answer that gives the type other efforts and images.
    await serve_types(
        page, [{**types["gemini"], "reasoning_efforts": ["low", "max"], "generates_images": True}]
    )
    await page.reload()
    await row.get_by_role("button", name="Edit").click()
    await expect(effort.locator("option")).to_have_count(3)
    assert await options_of(effort) == [["", "provider default"], ["low", "low"], ["max", "max"]]
    await expect(row.get_by_role("button", name="Generate images with Gem X")).to_be_visible()


async def test_one_image_model_is_marked_moved_and_unmarked_from_the_models_page(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await add_provider_from_a_preset(page, server, fake)
    openai_id = (await api(server, "GET", "/providers")).json()[0]["id"]
    images = [
        {"model_id": "gpt-image-1", "display_name": "Image One", "enabled": False},
        {"model_id": "gpt-image-2", "display_name": "Image Two", "enabled": False},
    ]
    await api(server, "POST", f"/providers/{openai_id}/models", {"models": images})
    anthropic = {"name": "Claude", "type": "anthropic", "base_url": fake.base_url}
    claude_id = (await api(server, "POST", "/providers", anthropic)).json()["id"]
    claude = {"model_id": "claude-x", "display_name": "Claude X", "enabled": False}
    await api(server, "POST", f"/providers/{claude_id}/models", {"models": [claude]})
    await page.goto(f"http://{server}/console/#/models")
    one, two = (
        page.locator("tr[data-model=gpt-image-1]"),
        page.locator("tr[data-model=gpt-image-2]"),
    )
    # Only an OpenAI-compatible model can be the image model: Anthropic's row offers nothing.
    await expect(page.locator("tr[data-model=claude-x]")).to_contain_text("—")
    await expect(
        page.locator("tr[data-model=claude-x] button", has_text="Use for images")
    ).to_have_count(0)
    await one.get_by_role("button", name="Generate images with Image One").click()
    await expect(one.locator("td[data-image=marked]")).to_contain_text("image model")
    marked = (await api(server, "GET", "/settings/image-model")).json()
    assert marked["public_id"] == next(
        m["public_id"]
        for m in (await api(server, "GET", "/models")).json()
        if m["model_id"] == "gpt-image-1"
    )
    # Marking another moves the mark: there is one image model at most.
    await two.get_by_role("button", name="Generate images with Image Two").click()
    await expect(two.locator("td[data-image=marked]")).to_contain_text("image model")
    await expect(page.locator("td[data-image=marked]")).to_have_count(1)
    await expect(one.get_by_role("button", name="Generate images with Image One")).to_be_visible()
    # A reload shows the stored mark; Unmark clears it.
    await page.reload()
    await expect(two.locator("td[data-image=marked]")).to_contain_text("image model")
    await two.get_by_role("button", name="Stop generating images with Image Two").click()
    await expect(page.locator("td[data-image=marked]")).to_have_count(0)
    assert (await api(server, "GET", "/settings/image-model")).json() == {"public_id": None}
    assert KEY not in await answers_seen(page)


async def test_a_refused_form_shows_the_servers_message_next_to_its_field(
    page: Page, server: str
) -> None:
    refused = await api(
        server, "POST", "/providers", {"name": "x", "type": "openai-chat", "base_url": "nope"}
    )
    assert refused.status_code == 422
    # At its field the message is in words, without the field's id (the label names it).
    [problem] = refused.json()["fields"]
    assert problem["field"] == "base_url"
    message = problem["message"]
    await page.goto(f"http://{server}/console/#/providers")
    await page.get_by_role("button", name="Add provider").click()
    form = page.get_by_role("form", name="Add provider")
    await form.locator("input[name=name]").fill("x")
    await form.locator("input[name=base_url]").fill("nope")
    await form.get_by_role("button", name="Add provider").click()
    await expect(form.locator("[data-field=base_url] [role=alert]")).to_have_text(message)
    await expect(form.locator("input[name=base_url]")).to_have_class("invalid")


async def test_an_agent_turn_with_a_tool_shows_up_on_the_calls_page(
    page: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    await add_provider_from_a_preset(page, server, fake)
    provider_id = (await api(server, "GET", "/providers")).json()[0]["id"]
    saved = await api(
        server,
        "POST",
        f"/providers/{provider_id}/models",
        {"models": [{"model_id": "fake-model", "display_name": "Fake Model"}]},
    )
    public_id = saved.json()[0]["public_id"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    fake.enqueue(
        Script.sse(chat_events(tools=[FakeToolCall("call_1", "Read", ('{"path": "/a.txt"}',))])),
        Script.sse(chat_events(text=["it says alpha"])),
    )
    cursor = FakeCursor(f"http://{server}")
    try:
        session = CursorSession(cursor, "browser-turn", workspace=workspace)
        log = await session.run(user_turn_message("read a.txt", public_id, conversation_id="b"))
    finally:
        await cursor.aclose()
    assert log.end == {}
    of_conversation = (await api(server, "GET", "/calls?conversation_id=b")).json()["calls"]
    assert [c["run_id"] for c in of_conversation] == ["browser-turn", "browser-turn"]

    await page.goto(f"http://{server}/console/#/calls")
    rows = page.locator("tr[data-call]")
    await expect(rows).to_have_count(2)  # the tool call, then the answer
    await expect(rows.first).to_contain_text("Fake Model")
    await expect(rows.first).to_contain_text("completed")
    await expect(rows.first.locator("[data-asked]")).to_have_text("this model")  # asked by its id
    await expect(rows.first.locator("[data-cost]")).to_have_text("unknown")  # no price saved
    await page.get_by_label("Status").select_option("failed")
    await expect(rows).to_have_count(0)
    await page.get_by_label("Status").select_option("completed")
    await expect(rows).to_have_count(2)
    await page.get_by_label("Status").select_option("")
    for conversation, shown in (("another", 0), ("b", 2)):
        await page.get_by_label("Conversation").fill(conversation)
        await page.get_by_label("Conversation").press("Enter")
        await expect(rows).to_have_count(shown)
    await rows.first.get_by_role("link").click()
    await expect(page.get_by_role("heading", name="Fake Model via Fake")).to_be_visible()
    await expect(page.get_by_text("run browser-turn", exact=False)).to_be_visible()
    # A reload of any page lands on that page again (the router reads the hash).
    url = page.url
    await page.reload()
    assert page.url == url
    await expect(page.get_by_role("heading", name="Fake Model via Fake")).to_be_visible()

    # The conversation, titled by the user's text, and its run's timeline with a tool lane.
    await page.get_by_role("link", name="Conversations").click()
    await page.locator("tr[data-conversation=b]").get_by_role("link", name="read a.txt").click()
    timeline = page.locator("[aria-label=Timeline]")
    await expect(timeline).to_contain_text("Run browser-turn")
    await expect(timeline.locator("[data-lane=provider] [data-span]")).to_have_count(2)
    await expect(timeline.locator("[data-lane=tools] [data-span=ok]")).to_have_count(1)
    await expect(timeline.locator("[data-row=tools]")).to_contain_text("Read")
    await expect(timeline.locator("[data-lane=run] [data-span=ok]")).to_have_count(1)
    assert await timeline.locator("[data-lane=checkpoints] [data-span=ok]").count() >= 2

    # The dashboard counts both calls and draws them; the fake reports no cache fields.
    await page.get_by_role("link", name="Dashboard").click()
    await expect(page.locator("[data-card=calls]")).to_have_text("2")
    await expect(page.locator("[data-card=cache]")).to_have_text("n/a")
    chart = page.locator("[data-chart='Calls and errors'] canvas")
    await expect(chart).to_have_count(1)
    box = await chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100


async def test_settings_save_and_a_narrow_window_still_shows_the_navigation(
    page: Page, server: str
) -> None:
    await page.set_viewport_size({"width": 480, "height": 800})
    await page.goto(f"http://{server}/console/#/settings")
    await expect(page.get_by_role("navigation", name="Console")).to_be_visible()
    recording = page.get_by_role("form", name="Recording settings")
    await recording.locator("input[name=verbose]").check()
    await recording.locator("input[name=metrics_per_user]").check()
    await recording.locator("input[name=retained_calls]").fill("500")
    await recording.get_by_role("button", name="Save").click()
    await expect(recording.get_by_text("Saved.")).to_be_visible()
    settings = (await api(server, "GET", "/settings/observability")).json()
    assert settings == {"verbose": True, "retained_calls": 500, "metrics_per_user": True}
    await recording.locator("input[name=retained_calls]").fill("0")
    await recording.get_by_role("button", name="Save").click()
    await expect(page.locator("[data-field=retained_calls] [role=alert]")).to_have_text(
        "must be a whole number, at least 1"
    )


SEARCH_KEY = "tvly-browser-SECRET-0123456789"


async def test_the_web_search_backend_is_saved_and_its_key_never_reaches_the_page(
    page: Page, server: str
) -> None:
    await page.goto(f"http://{server}/console/#/settings")
    form = page.get_by_role("form", name="Web search")
    await expect(form.locator("select[name=backend]")).to_have_value("")
    # SearXNG: a URL, no key.
    await form.locator("select[name=backend]").select_option("searxng")
    await expect(form.locator("input[name=api_key]")).to_have_count(0)
    await form.locator("input[name=url]").fill("ftp://search.example.org")
    await form.get_by_role("button", name="Save web search").click()
    await expect(form.locator("[data-field=url] [role=alert]")).to_contain_text("http://")
    await form.locator("input[name=url]").fill("https://search.example.org/")
    await form.get_by_role("button", name="Save web search").click()
    await expect(form.get_by_text("Web search backend saved.")).to_be_visible()
    assert (await api(server, "GET", "/settings/web-search")).json() == {
        "backend": "searxng",
        "url": "https://search.example.org",
        "has_api_key": False,
    }
    # Tavily: no key is refused at the key field; with one, the page says only that it is set.
    await form.locator("select[name=backend]").select_option("tavily")
    await expect(form.locator("input[name=url]")).to_have_count(0)
    await form.get_by_role("button", name="Save web search").click()
    await expect(form.locator("[data-field=api_key] [role=alert]")).to_contain_text(
        "needs an API key"
    )
    await form.locator("input[name=api_key]").fill(SEARCH_KEY)
    await form.get_by_role("button", name="Save web search").click()
    await expect(form.get_by_text("Web search backend saved.")).to_be_visible()
    await expect(form.locator("[data-field=api_key] label")).to_have_text("API key (set)")
    await expect(form.locator("input[name=api_key]")).to_have_value("")
    # A reload shows the stored backend; saving again keeps the key.
    await page.reload()
    form = page.get_by_role("form", name="Web search")
    await expect(form.locator("select[name=backend]")).to_have_value("tavily")
    await form.get_by_role("button", name="Save web search").click()
    await expect(form.get_by_text("Web search backend saved.")).to_be_visible()
    assert (await api(server, "GET", "/settings/web-search")).json() == {
        "backend": "tavily",
        "url": None,
        "has_api_key": True,
    }
    assert SEARCH_KEY not in await answers_seen(page)
    assert SEARCH_KEY not in await page.content()


async def test_a_model_test_shows_the_answer_and_tools_and_reasoning_its_steps(
    page: Page, server: str, fake: FakeProvider
) -> None:
    await add_provider_from_a_preset(page, server, fake)
    provider_id = (await api(server, "GET", "/providers")).json()[0]["id"]
    await api(
        server,
        "POST",
        f"/providers/{provider_id}/models",
        {"models": [{"model_id": "fake-model", "display_name": "Fake Model"}]},
    )
    fake.enqueue(Script.sse(chat_events(text=["po", "ng"])))
    await page.goto(f"http://{server}/console/#/models")
    row = page.locator("tr[data-model=fake-model]")
    await row.get_by_role("button", name="Test").click()
    result = page.locator("[aria-label='Check result']")
    await expect(result).to_contain_text("passed")
    await expect(result.locator("[data-answer]")).to_have_text("pong")

    weather = FakeToolCall("call_w", "get_weather", ('{"city": "Paris"}',))
    fake.enqueue(
        Script.sse(chat_events(thinking=["Paris, then."], tools=[weather])),
        Script.sse(chat_events(text=["It is sunny in Paris."])),
    )
    await row.get_by_role("button", name="Tools and reasoning").click()
    await expect(result.locator("tr[data-step]")).to_have_count(2)
    await expect(result).to_contain_text("passed")
    assert len(fake.requests) == 3  # the test, then the tool call and the replay


TOKEN = "console-token-for-the-browser-test"


@pytest.fixture
def guarded_server(tmp_path: Path) -> Iterator[str]:
    """``python run.py`` with a console token."""
    process = ServerProcess(server_env(tmp_path, CURSOR_CONSOLE_TOKEN=TOKEN))
    try:
        yield process.wait_for_address()
    finally:
        process.stop()


@pytest.fixture
async def guarded_page(
    browser: Browser, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Page]:
    """A fresh page, for the ``guarded_server``'s console (a screenshot kept on failure)."""
    async for opened in _opened_page(browser, tmp_path, request):
        yield opened


async def test_with_a_token_the_console_asks_to_log_in_then_works(
    guarded_page: Page, guarded_server: str
) -> None:
    page = guarded_page
    await page.goto(f"http://{guarded_server}/console/#/providers")
    form = page.get_by_role("form", name="Log in")
    await form.locator("input[name=token]").fill("not the token at all")
    await form.get_by_role("button", name="Log in").click()
    await expect(form.get_by_role("alert")).to_be_visible()
    await form.locator("input[name=token]").fill(TOKEN)
    await form.get_by_role("button", name="Log in").click()
    await expect(page.get_by_role("heading", name="Providers")).to_be_visible()
    await expect(page.get_by_text("No provider yet")).to_be_visible()
    await page.get_by_role("link", name="Log out").click()
    await expect(page.get_by_role("form", name="Log in")).to_be_visible()


async def test_the_connect_page_shows_when_cursor_reached_the_server(
    page: Page, server: str
) -> None:
    await page.goto(f"http://{server}/console/#/connect")
    status = page.locator("[aria-label='Cursor client status']")
    await expect(status).to_contain_text("No Cursor client has reached this server yet")
    await expect(page.get_by_text(f"--test-backend-url=http://{server}")).to_be_visible()
    cursor = FakeCursor(f"http://{server}")
    try:
        session = CursorSession(cursor, "connect-check", workspace=None)
        # No model: the run stays here (another model would be relayed upstream) and ends.
        await session.run(user_turn_message("hi", "", conversation_id="c"))
    finally:
        await cursor.aclose()
    await expect(status).to_contain_text("connected")


async def test_the_prompt_cache_key_setting_is_saved_and_shown_again(
    page: Page, server: str, fake: FakeProvider
) -> None:
    """A new provider's prompt-cache-key setting is "auto"; switched on in the form, it is
    saved (the key kept) and shown again after a reload."""
    await add_provider_from_a_preset(page, server, fake)
    (provider,) = (await api(server, "GET", "/providers")).json()
    assert provider["prompt_cache_key"] == "auto"
    await page.locator("tr[data-provider=Fake]").get_by_role("button", name="Edit").click()
    form = page.get_by_role("form", name="Edit provider")
    await expect(form.locator("select[name=prompt_cache_key]")).to_have_value("auto")
    await form.locator("select[name=prompt_cache_key]").select_option("on")
    await form.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("form", name="Edit provider")).to_have_count(0)
    (saved,) = (await api(server, "GET", "/providers")).json()
    assert saved["prompt_cache_key"] == "on" and saved["has_api_key"] is True
    await page.reload()
    await page.locator("tr[data-provider=Fake]").get_by_role("button", name="Edit").click()
    select = page.get_by_role("form", name="Edit provider").locator("select[name=prompt_cache_key]")
    await expect(select).to_have_value("on")
