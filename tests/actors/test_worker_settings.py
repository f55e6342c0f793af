"""``CURSOR_WORKERS`` and ``run.py --workers N`` parsed (``actors/server/settings.py``); the
processes themselves are in ``tests/process/test_workers.py``."""

from __future__ import annotations

import pytest

from actors.server.settings import SettingError, load_settings, workers_flag

PG = {"CURSOR_DATABASE_URL": "postgresql://cursor@127.0.0.1/cursor"}


@pytest.mark.parametrize(
    ("argv", "count"),
    [([], None), (["--workers", "4"], 4), (["--workers=64"], 64), (["--workers", " 1"], 1)],
)
def test_the_flag(argv: list[str], count: int | None) -> None:
    assert workers_flag(argv) == count


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--workers"], "--workers"),
        (["--workers", "0"], "--workers"),
        (["--workers=65"], "--workers"),
        (["--workers", "two"], "--workers"),
        (["--port", "3"], "run.py"),
        (["serve"], "run.py"),
    ],
)
def test_a_bad_flag_is_named(argv: list[str], named: str) -> None:
    with pytest.raises(SettingError) as caught:
        workers_flag(argv)
    assert caught.value.variable == named


def test_the_variable_and_the_flag_that_wins() -> None:
    assert load_settings(PG).workers == 1
    assert load_settings({**PG, "CURSOR_WORKERS": "8"}).workers == 8
    assert load_settings({**PG, "CURSOR_WORKERS": "8"}, workers=2).workers == 2
    # The flag wins over a bad variable too: the variable is not read.
    assert load_settings({**PG, "CURSOR_WORKERS": "lots"}, workers=1).workers == 1
    with pytest.raises(SettingError) as caught:
        load_settings({**PG, "CURSOR_WORKERS": "0"})
    assert caught.value.variable == "CURSOR_WORKERS"


@pytest.mark.parametrize(
    "url", ["sqlite://server.db", "sqlite:///abs/server.db", "sqlite://:memory:"]
)
def test_more_than_one_worker_needs_postgresql(url: str) -> None:
    assert load_settings({"CURSOR_DATABASE_URL": url, "CURSOR_WORKERS": "1"}).workers == 1
    with pytest.raises(SettingError) as caught:
        load_settings({"CURSOR_DATABASE_URL": url, "CURSOR_WORKERS": "2"})
    assert caught.value.variable == "CURSOR_WORKERS"
    assert "need PostgreSQL" in caught.value.reason
    with pytest.raises(SettingError) as caught:
        load_settings({"CURSOR_DATABASE_URL": url}, workers=3)
    assert caught.value.variable == "--workers"
