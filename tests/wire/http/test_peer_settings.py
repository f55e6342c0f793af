"""The peer listener's settings: on by default with PostgreSQL, refused with SQLite, and a
wildcard address needs the URL the other instances reach it by."""

from __future__ import annotations

import pytest

from actors.server.settings import SettingError, load_settings

PG = "postgresql://u:p@db.internal:5432/cursor"


def test_postgresql_listens_for_peers_on_loopback_by_default() -> None:
    settings = load_settings({"CURSOR_DATABASE_URL": PG})
    assert (settings.peer_listen, settings.peer_url) == (("127.0.0.1", 0), None)


def test_sqlite_has_no_peers_and_refuses_their_settings() -> None:
    assert load_settings({}).peer_listen is None
    for variable in ("CURSOR_PEER_LISTEN_ADDR", "CURSOR_PEER_URL"):
        with pytest.raises(SettingError) as raised:
            load_settings({variable: "127.0.0.1:4000"})
        assert raised.value.variable == variable
        assert "PostgreSQL" in raised.value.reason


def test_a_wildcard_peer_address_needs_the_url_peers_use() -> None:
    environ = {"CURSOR_DATABASE_URL": PG, "CURSOR_PEER_LISTEN_ADDR": "0.0.0.0:3100"}
    with pytest.raises(SettingError) as raised:
        load_settings(environ)
    assert raised.value.variable == "CURSOR_PEER_URL"
    settings = load_settings({**environ, "CURSOR_PEER_URL": "http://10.0.0.11:3100/"})
    assert settings.peer_listen == ("0.0.0.0", 3100)
    assert settings.peer_url == "http://10.0.0.11:3100"


@pytest.mark.parametrize(
    ("variable", "value"),
    [("CURSOR_PEER_LISTEN_ADDR", "nowhere"), ("CURSOR_PEER_URL", "ftp://10.0.0.1/x?y")],
)
def test_a_bad_peer_setting_names_its_variable(variable: str, value: str) -> None:
    with pytest.raises(SettingError) as raised:
        load_settings({"CURSOR_DATABASE_URL": PG, variable: value})
    assert raised.value.variable == variable


def test_workers_refuse_one_peer_port_or_url_for_them_all() -> None:
    base = {"CURSOR_DATABASE_URL": PG, "CURSOR_WORKERS": "3"}
    assert load_settings(base).peer_listen == ("127.0.0.1", 0)
    for variable, value in (
        ("CURSOR_PEER_LISTEN_ADDR", "10.0.0.11:3100"),
        ("CURSOR_PEER_URL", "http://10.0.0.11:3100"),
    ):
        with pytest.raises(SettingError) as raised:
            load_settings({**base, variable: value})
        assert raised.value.variable == variable
    assert load_settings({**base, "CURSOR_PEER_LISTEN_ADDR": "10.0.0.11:0"}).peer_listen == (
        "10.0.0.11",
        0,
    )
