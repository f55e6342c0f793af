"""The edge's budgets from the environment, and their defaults against the file limit."""

from __future__ import annotations

import resource

import pytest

import wire.http.listener
from actors.server.settings import SettingError, load_settings
from run import edge_limits


def test_the_budgets_come_from_the_environment() -> None:
    settings = load_settings(
        {
            "CURSOR_MAX_CONNECTIONS": "300",
            "CURSOR_MAX_CONNECTIONS_PER_PEER": "20",
            "CURSOR_MAX_RUN_STREAMS_PER_PEER": "7",
            "CURSOR_HEADER_TIMEOUT_SECONDS": "2.5",
            "CURSOR_APPEND_BUFFER_MIB": "8",
            "CURSOR_EXEC_TIMEOUT_SECONDS": "45",
        }
    )
    limits = edge_limits(settings)
    assert (limits.max_connections, limits.max_connections_per_peer) == (300, 20)
    assert limits.max_run_streams_per_peer == 7
    assert limits.header_timeout_s == 2.5
    # One request never holds more than all of them may.
    assert limits.append_buffer_bytes == limits.append_buffer_bytes_per_run == 8 * 1024 * 1024
    assert limits.exec_answer_timeout_s == 45


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "many", "1000001"])
def test_a_bad_count_names_its_variable(value: str) -> None:
    with pytest.raises(SettingError) as info:
        load_settings({"CURSOR_MAX_CONNECTIONS_PER_PEER": value})
    assert info.value.variable == "CURSOR_MAX_CONNECTIONS_PER_PEER"


def test_a_low_file_limit_lowers_the_default_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each connection may cost three descriptors; one peer never gets every connection."""
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1024, 1024))
    settings = load_settings({})
    assert settings.max_connections == (1024 - wire.http.listener.FILES_KEPT_FREE) // 3
    assert settings.max_connections_per_peer == settings.max_connections


def test_the_soft_file_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 512)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        wire.http.listener.raise_file_limit()
        raised, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        expected = wire.http.listener.FILE_LIMIT_WANTED if hard == resource.RLIM_INFINITY else hard
        assert raised == expected
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
