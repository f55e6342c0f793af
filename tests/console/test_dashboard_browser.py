"""The Dashboard in a real browser (Chromium, as in ``tests/console/test_console_browser.py``)
against ``python run.py``: time axes that fit each range, a TTFT chart with points enough for a
line, the range kept in the URL, and a page that fits a 400 px wide window. Call records are
written into the server's database beforehand, at chosen times around now."""

from __future__ import annotations

import datetime
import os
import re
import time
from pathlib import Path

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Locator, Page, expect

from store import connect_store
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from tests.console.test_console_browser import api, browser, page, server
from tests.support.fake_provider import FakeProvider

__all__ = ["browser", "page", "server"]

pytestmark = pytest.mark.process

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
CLOCK = re.compile(r"^\d\d:\d\d$")
DATE = re.compile(r"^[A-Z][a-z]{2} \d{1,2}$")


async def seeded(server: str, fake: FakeProvider, tmp_path: Path) -> int:
    """A priced model and calls with a TTFT: three in the last hour, one every three hours
    over the two days before; the time they were written around (ms)."""
    provider = {"name": "Fake", "type": "openai-chat", "base_url": fake.base_url}
    provider_id = (await api(server, "POST", "/providers", provider)).json()["id"]
    prices = {"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0}
    model = {"model_id": "fake-model", "display_name": "Fake", **prices}
    (saved,) = (
        await api(server, "POST", f"/providers/{provider_id}/models", {"models": [model]})
    ).json()
    store = connect_store(f"sqlite:///{tmp_path / 'server.db'}")
    records = CallRecords(store.database)
    now = int(time.time() * 1000)
    starts = [now - m * MINUTE_MS for m in (5, 25, 45)] + [
        now - h * 3 * HOUR_MS for h in range(1, 17)
    ]
    for index, started in enumerate(starts):
        call = NewCall(
            run_id="seeded",
            model_call_id=f"seeded:{index}",
            provider_id=provider_id,
            provider_name="Fake",
            provider_type="openai-chat",
            provider_url=fake.base_url,
            public_id=saved["public_id"],
            model_id="fake-model",
            display_name="Fake",
            verbose=False,
        )
        call_id = records.start(call, started_at_ms=started)
        end = CallEnd(
            CallStatus.COMPLETED,
            duration_ms=900.0,
            response_bytes=10,
            usage={"input_tokens": 1000, "output_tokens": 10},
            http_status=200,
            ttft_ms=100.0 + 10 * index,
        )
        assert records.finish(call_id, end)
    store.database.close()
    return now


async def ticks(chart: Locator, axis: str) -> list[str]:
    """The tick labels ``chart`` drew on its time axis once it is drawn for ``axis``."""
    await expect(chart).to_have_attribute("data-axis", axis)
    labels = await chart.get_attribute("data-ticks")
    assert labels, "the chart drew no tick"
    return labels.split("|")


async def choose(page: Page, range_name: str) -> None:
    await page.get_by_label("Range").select_option(range_name)
    await expect(page).to_have_url(re.compile(rf"#/dashboard\?range={range_name}$"))


async def test_axes_fit_each_range_the_ttft_draws_a_line_and_the_range_stays_in_the_url(
    page: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    now = await seeded(server, fake, tmp_path)
    today = datetime.datetime.fromtimestamp(now / 1000, datetime.UTC)
    today_label = f"{today:%b} {today.day}"
    await page.goto(f"http://{server}/console/#/dashboard?range=hour")
    await expect(page.get_by_label("Range")).to_have_value("hour")
    calls = page.locator("[data-chart='Calls and errors']")
    ttft = page.locator("[data-chart='Time to first token']")
    cost = page.locator("[data-chart='Estimated cost per day']")
    await expect(page.locator("[data-card=calls]")).to_have_text("3")

    # Last hour: minutes on the time axis; the cost's one day is today, not a span of years.
    hour_ticks = await ticks(calls, "hour")
    assert len(hour_ticks) >= 3 and all(CLOCK.match(t) for t in hour_ticks), hour_ticks
    assert await ticks(cost, "days") == [today_label]
    await expect(ttft).to_have_attribute("data-points", "3")

    # Last day: hours, on whole hours; the TTFT has a point for every call of the day.
    await choose(page, "day")
    await expect(page.locator("[data-card=calls]")).to_have_text("10")
    day_ticks = await ticks(calls, "day")
    assert all(CLOCK.match(t) and t.endswith(":00") for t in day_ticks), day_ticks
    await expect(ttft).to_have_attribute("data-points", "10")

    # 7 and 30 days: days; the TTFT still a line (16 calls 3 hours apart, each its own point;
    # the last hour's three may share a 30-minute or 2-hour bucket).
    for range_name in ("week", "month"):
        await choose(page, range_name)
        await expect(page.locator("[data-card=calls]")).to_have_text("19")
        labels = await ticks(calls, range_name)
        assert len(labels) >= 2 and all(DATE.match(t) for t in labels), (range_name, labels)
        assert all(DATE.match(t) for t in await ticks(cost, "days")), range_name
        points = int(await ttft.get_attribute("data-points") or 0)
        assert 17 <= points <= 19, (range_name, points)

    # A reload keeps the range chosen.
    await page.reload()
    await expect(page.get_by_label("Range")).to_have_value("month")
    await expect(page.locator("[data-card=calls]")).to_have_text("19")
    # An unknown range in the URL shows the default one.
    await page.goto(f"http://{server}/console/#/dashboard?range=decade")
    await expect(page.get_by_label("Range")).to_have_value("day")


async def test_the_dashboard_fits_a_400_px_window_with_its_controls_in_their_panels(
    page: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    await seeded(server, fake, tmp_path)
    await page.set_viewport_size({"width": 400, "height": 800})
    await page.goto(f"http://{server}/console/#/dashboard?range=day")
    await expect(page.locator("[data-chart] canvas")).to_have_count(4)
    await expect(page.locator("tr[data-model]")).to_have_count(1)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the dashboard is {width} px wide"
    # The per-model token choice sits inside the Tokens panel.
    panel = page.locator("[aria-label=Tokens]")
    select = panel.get_by_label("Tokens of")
    await expect(select).to_be_visible()
    outer, inner = await panel.bounding_box(), await select.bounding_box()
    assert outer is not None and inner is not None
    assert outer["x"] <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
    assert outer["y"] <= inner["y"] and inner["y"] + inner["height"] <= outer["y"] + outer["height"]
