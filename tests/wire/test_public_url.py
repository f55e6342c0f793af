"""``CURSOR_PUBLIC_URL``: the agent URL a balancer's deployment names, checked at startup."""

from __future__ import annotations

import pytest

from actors.server.settings import SettingError, load_settings
from wire.setting_values import parse_public_url


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("http://10.0.0.10:3001", "http://10.0.0.10:3001"),
        ("https://Cursor.Example.com/", "https://cursor.example.com"),
        (" http://[fd00::10]:3001 ", "http://[fd00::10]:3001"),
    ],
)
def test_a_public_url_is_kept_as_scheme_host_and_port(value: str, url: str) -> None:
    assert parse_public_url(value) == url
    assert load_settings({"CURSOR_PUBLIC_URL": value}).public_url == url


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("10.0.0.10:3001", "http:// or https://"),
        ("ftp://10.0.0.10", "http:// or https://"),
        ("http://", "with a host"),
        ("http://10.0.0.10:3001/agent", "path"),
        ("http://10.0.0.10:3001?x=1", "query"),
        ("http://user:secret@10.0.0.10", "user or password"),
        ("http://10.0.0.10:70000", "ort"),
        ("http://10.0.0.10:0", "port 0"),
        ("http://[fd00::10", "IPv6"),
    ],
)
def test_a_bad_public_url_names_the_variable(value: str, reason: str) -> None:
    with pytest.raises(SettingError) as info:
        load_settings({"CURSOR_PUBLIC_URL": value})
    assert info.value.variable == "CURSOR_PUBLIC_URL"
    assert reason in info.value.reason


@pytest.mark.parametrize("environ", [{}, {"CURSOR_PUBLIC_URL": ""}, {"CURSOR_PUBLIC_URL": " "}])
def test_unset_or_empty_there_is_none(environ: dict[str, str]) -> None:
    assert load_settings(environ).public_url is None
