"""The HTTP/2 listener's process settings and its shutdown at SIGTERM, in a real process."""

from __future__ import annotations

import asyncio
import re
import signal
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.process.test_process import run_bad
from tests.support.h2_client import H2Client
from tests.support.h2_servers import client_tls, make_certificate
from tests.support.process import ServerProcess, server_env

HTTP2_LINE = re.compile(r"http2=(\S+)")


def one_line_naming(result: subprocess.CompletedProcess[str], variable: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{variable}: "), lines


def test_a_bad_h2_address_exits_2(tmp_path: Path) -> None:
    one_line_naming(run_bad(tmp_path, CURSOR_H2_LISTEN_ADDR="nowhere"), "CURSOR_H2_LISTEN_ADDR")


@pytest.mark.parametrize(
    "broken", ["missing_cert", "missing_key", "not_pem", "wrong_key", "one", "no_listener"]
)
def test_a_bad_tls_setting_exits_2_naming_the_variable(tmp_path: Path, broken: str) -> None:
    cert, key = make_certificate(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = make_certificate(other)
    env = {"CURSOR_H2_LISTEN_ADDR": "127.0.0.1:0", "CURSOR_TLS_CERT": cert, "CURSOR_TLS_KEY": key}
    expected = {
        "missing_cert": "CURSOR_TLS_CERT",
        "missing_key": "CURSOR_TLS_KEY",
        "not_pem": "CURSOR_TLS_CERT",
        "wrong_key": "CURSOR_TLS_KEY",
        "one": "CURSOR_TLS_KEY",
        "no_listener": "CURSOR_TLS_CERT",
    }[broken]
    if broken == "missing_cert":
        env["CURSOR_TLS_CERT"] = str(tmp_path / "nope.pem")
    elif broken == "missing_key":
        env["CURSOR_TLS_KEY"] = str(tmp_path / "nope.key")
    elif broken == "not_pem":
        (tmp_path / "junk.pem").write_text("not a certificate\n")
        env["CURSOR_TLS_CERT"] = str(tmp_path / "junk.pem")
    elif broken == "wrong_key":
        env["CURSOR_TLS_KEY"] = other_key
    elif broken == "one":
        del env["CURSOR_TLS_KEY"]
    else:
        del env["CURSOR_H2_LISTEN_ADDR"]
    one_line_naming(run_bad(tmp_path, **env), expected)


async def test_sigterm_sends_goaway_on_the_http2_listener(tmp_path: Path) -> None:
    cert, key = make_certificate(tmp_path)
    env = server_env(
        tmp_path, CURSOR_H2_LISTEN_ADDR="127.0.0.1:0", CURSOR_TLS_CERT=cert, CURSOR_TLS_KEY=key
    )
    process = ServerProcess(env)
    try:
        await asyncio.to_thread(process.wait_for_address)
        match = HTTP2_LINE.search(process.log)
        assert match is not None, process.log
        url = match.group(1)
        assert url.startswith("https://")
        tls: ssl.SSLContext = client_tls(cert)
        client = await H2Client.connect(url.removeprefix("https://"), tls=tls)
        try:
            process.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(client.goaway_seen.wait(), 10)
            assert client.goaway is not None and client.goaway.error_code == 0
            code = await asyncio.to_thread(process.proc.wait, 12)
            assert code == 0, process.log
        finally:
            await client.aclose()
    finally:
        process.stop()
