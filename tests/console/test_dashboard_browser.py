"""The Dashboard in a real browser (Chromium, as in ``tests/console/test_console_browser.py``)
against ``python run.py``: time axes that fit each range, a TTFT chart with points enough for a
line, one x range for the charts of a range, days in UTC and times of day on the viewer's clock
in several time zones (across a DST change, and half an hour off UTC), a user filter that never
shows the last user's figures, the range kept in the URL, and a page that fits a 400 px wide
window. Call records are written into the server's database beforehand, at chosen times around
now."""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

# Without Playwright the module skips, as without Chromium; under .ci/run, which sets
# CURSOR_TEST_REQUIRE_BROWSER=1, the import below fails it instead.
if os.environ.get("CURSOR_TEST_REQUIRE_BROWSER") != "1":
    pytest.importorskip("playwright")

from playwright.async_api import Browser, Locator, Page, Route, expect

from store import connect_store
from store.llm_calls import CallEnd, CallRecords, CallStatus, NewCall
from tests.console.test_console_browser import EXPECT_MS, api, browser, page, server
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


async def x_ranges(page: Page) -> set[str]:
    """The x ranges ("min|max", seconds) the charts of the chosen range drew on."""
    found = set()
    for title in ("Calls and errors", "Time to first token", "Tokens"):
        drawn = await page.locator(f"[data-chart='{title}']").get_attribute("data-range")
        assert drawn, title
        found.add(drawn)
    return found


def utc_day_labels(first_ms: int, last_ms: int) -> list[str]:
    """The labels of the UTC days from the one holding ``first_ms`` to the one of ``last_ms``."""
    day = datetime.datetime.fromtimestamp(first_ms / 1000, datetime.UTC).date()
    last = datetime.datetime.fromtimestamp(last_ms / 1000, datetime.UTC).date()
    labels = []
    while day <= last:
        labels.append(f"{day:%b} {day.day}")
        day += datetime.timedelta(days=1)
    return labels


async def choose(page: Page, range_name: str) -> None:
    await page.get_by_label("Range").select_option(range_name)
    await expect(page).to_have_url(re.compile(rf"#/dashboard\?range={range_name}$"))


@pytest.mark.parametrize("zoned", ["UTC", "America/New_York", "Asia/Kolkata"], indirect=True)
async def test_axes_fit_each_range_the_ttft_draws_a_line_and_the_range_stays_in_the_url(
    zoned: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    page = zoned
    await seeded(server, fake, tmp_path)
    await page.goto(f"http://{server}/console/#/dashboard?range=hour")
    await expect(page.get_by_label("Range")).to_have_value("hour")
    calls = page.locator("[data-chart='Calls and errors']")
    ttft = page.locator("[data-chart='Time to first token']")
    cost = page.locator("[data-chart='Estimated cost per day']")
    await expect(page.locator("[data-card=calls]")).to_have_text("3")

    # Last hour: minutes on the time axis, in local time. The charts of one range share its
    # x range (the hour), whatever their buckets.
    hour_ticks = await ticks(calls, "hour")
    assert len(hour_ticks) >= 3 and all(CLOCK.match(t) for t in hour_ticks), hour_ticks
    (hour_range,) = await x_ranges(page)
    low, high = (int(float(edge) * 1000) for edge in hour_range.split("|"))
    assert high - low == HOUR_MS and high % MINUTE_MS == 0, hour_range
    # The cost's days are the UTC days the hour touches (two from 00:00 to 00:59 UTC), not a
    # span of years, and the chart says they are UTC days.
    assert await ticks(cost, "days") == utc_day_labels(low, high - 1)
    await expect(ttft).to_have_attribute("data-points", "3")
    await expect(page.locator("[aria-label='Calls and errors'] [data-zone]")).to_have_text(
        "Your local time"
    )
    await expect(page.locator("[aria-label='Estimated cost per day'] [data-zone]")).to_have_text(
        "Days in UTC"
    )

    # Last day: hours, on whole hours; the TTFT has a point for every call of the day.
    await choose(page, "day")
    await expect(page.locator("[data-card=calls]")).to_have_text("10")
    day_ticks = await ticks(calls, "day")
    assert all(CLOCK.match(t) and t.endswith(":00") for t in day_ticks), day_ticks
    await expect(ttft).to_have_attribute("data-points", "10")
    (day_range,) = await x_ranges(page)
    low, high = (int(float(edge) * 1000) for edge in day_range.split("|"))
    assert high - low == 24 * HOUR_MS, day_range

    # 7 and 30 days: days; the TTFT still a line (16 calls 3 hours apart, each its own point;
    # the last hour's three may share a 30-minute or 2-hour bucket).
    for range_name in ("week", "month"):
        await choose(page, range_name)
        await expect(page.locator("[data-card=calls]")).to_have_text("19")
        labels = await ticks(calls, range_name)
        assert len(labels) >= 2 and all(DATE.match(t) for t in labels), (range_name, labels)
        assert len(set(labels)) == len(labels), labels
        zone = page.locator("[aria-label='Calls and errors'] [data-zone]")
        await expect(zone).to_have_text("Days in UTC")
        assert len(await x_ranges(page)) == 1, range_name
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


@pytest.fixture
async def zoned(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A page whose clock is in the time zone the test is parametrized with."""
    context = await browser.new_context(
        viewport={"width": 1280, "height": 800}, timezone_id=request.param
    )
    opened = await context.new_page()
    opened.set_default_timeout(EXPECT_MS)
    expect.set_options(timeout=EXPECT_MS)
    yield opened
    await context.close()


async def axis_ticks(
    page: Page, server: str, axis: str, first: datetime.datetime, hours: float, width: int
) -> list[str]:
    """The labels the dashboard's ``timeTicks`` puts on ``axis`` over ``hours`` from ``first``
    on a chart ``width`` px wide, in the page's own time zone."""
    if not page.url.startswith(f"http://{server}/console/"):
        await page.goto(f"http://{server}/console/#/dashboard")
        await expect(page.get_by_label("Range")).to_be_visible()
    start = first.timestamp()
    labels: list[str] = await page.evaluate(
        """async ([axis, min, max, width]) => {
            const app = document.querySelector("script[type=module]").src;
            const dashboard = await import(app.replace(/app\\.js$/, "pages/dashboard.js"));
            const chosen = dashboard.TIME_AXES[axis];
            return dashboard.timeTicks(chosen, min, max, width).map(chosen.label);
        }""",
        [axis, start, start + hours * 3600, width],
    )
    return labels


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(year, month, day, hour, minute, tzinfo=datetime.UTC)


@pytest.mark.parametrize("zoned", ["America/New_York"], indirect=True)
async def test_ticks_stay_on_the_clock_across_a_dst_change(zoned: Page, server: str) -> None:
    # New York's clocks go back from 02:00 EDT to 01:00 EST on 1 November 2026.
    midnight_edt = utc(2026, 11, 1, 4)
    # Hourly ticks: the hour the clock repeats is there twice, every other hour once.
    hourly = await axis_ticks(zoned, server, "day", midnight_edt, 24, 2000)
    assert hourly == ["00:00", "01:00", *(f"{h:02}:00" for h in range(1, 23))], hourly
    # Two-hour ticks stay on even hours after the change, as the clock shows them.
    two_hourly = await axis_ticks(zoned, server, "day", midnight_edt, 24, 800)
    assert two_hourly == [f"{h:02}:00" for h in range(0, 24, 2)], two_hourly
    # Days (7 and 30 days, the cost) are UTC days: one tick per day, none repeated.
    for axis in ("week", "month", "days"):
        days = await axis_ticks(zoned, server, axis, utc(2026, 10, 28), 8 * 24, 1200)
        assert days == [*(f"Oct {d}" for d in range(28, 32)), *(f"Nov {d}" for d in range(1, 5))]
    # The clock skips 02:00 to 03:00 on 8 March 2026: hourly ticks skip it too.
    spring = await axis_ticks(zoned, server, "day", utc(2026, 3, 8, 5), 6, 2000)
    assert spring == ["00:00", "01:00", "03:00", "04:00", "05:00", "06:00"], spring


@pytest.mark.parametrize("zoned", ["Asia/Kolkata"], indirect=True)
async def test_ticks_fall_on_the_local_clock_of_a_half_hour_zone(zoned: Page, server: str) -> None:
    # 10:07 UTC is 15:37 in Kolkata (UTC+05:30).
    quarters = await axis_ticks(zoned, server, "hour", utc(2026, 11, 1, 10, 7), 1, 300)
    assert quarters == ["15:45", "16:00", "16:15", "16:30"], quarters
    hours = await axis_ticks(zoned, server, "day", utc(2026, 11, 1, 0, 0), 24, 2000)
    assert hours[:2] == ["06:00", "07:00"] and len(hours) == 24, hours
    # UTC days start at 05:30 local: still labelled with their UTC date.
    days = await axis_ticks(zoned, server, "week", utc(2026, 10, 31, 12), 3 * 24, 1200)
    assert days == ["Nov 1", "Nov 2", "Nov 3"], days


async def test_a_new_user_filter_never_shows_the_last_ones_figures(
    page: Page, server: str, fake: FakeProvider, tmp_path: Path
) -> None:
    await seeded(server, fake, tmp_path)
    await page.goto(f"http://{server}/console/#/dashboard?range=day")
    await expect(page.locator("[data-card=calls]")).to_have_text("10")
    # Alice's figures are held back: until they come the page may show nobody's.
    released = asyncio.Event()

    async def hold(route: Route) -> None:
        await released.wait()
        await route.continue_()

    await page.route(re.compile(r".*/console/api/stats\?.*user=alice"), hold)
    await page.evaluate("location.hash = '#/dashboard?range=day&user=alice'")
    await expect(page.locator(".loading")).to_be_visible()
    await expect(page.locator("[data-card=calls]")).to_have_count(0)
    released.set()
    await expect(page.locator("[data-card=calls]")).to_have_text("0")
