"""The edge's pure decisions (``wire.edge_rules``): which request targets every reader reads
alike, what kind a matched route is, and what a browser could send that is refused."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import fuzz_settings
from wire.edge_rules import (
    RouteKind,
    browser_refusal,
    is_foreign_origin,
    route_kind,
    target_refusal,
)

REFUSED_TARGETS = [
    "/console%2F..%2F..%2Faiserver.v1.AiService/AvailableModels",
    "/console%2f..%2f..%2fx",
    "/console/api/providers%0a",
    "/console/api/providers%0d%0aX: y",
    "/x/../console/api/providers",
    "/agent.v1.AgentService/RunSSE/../x",
    "/./console",
    "/%2e%2e/console/api/providers",
    "/%2E/x",
    "/a/.%2e/b",
    "/a%5c..%5cconsole",
    "/a\\b",
    "/x%00y",
    "/x%7f",
    "@127.0.0.1:27001/h2-ssrf-proof",
    "http://127.0.0.1:27001/x",
    "*",
    "",
    "/x\ty",
]
PLAIN_TARGETS = [
    "/aiserver.v1.AiService/AvailableModels",
    "/agent.v1.AgentService/RunSSE",
    "/api/v1//x%7ey%20z/",
    "/a/..b/.c/...",
    "/q?next=%2F..%2Fconsole&x=a+b",
    "/%63onsole/api/providers",
    "/",
]


@pytest.mark.parametrize("target", REFUSED_TARGETS)
def test_targets_readers_could_read_differently_are_refused(target: str) -> None:
    assert target_refusal(target) is not None


@pytest.mark.parametrize("target", PLAIN_TARGETS)
def test_plain_paths_pass(target: str) -> None:
    assert target_refusal(target) is None


PIECES = st.sampled_from(
    [
        *("/", ".", "..", "%2e", "%2E", "%2f", "%2F", "%5c", "\\", "%0a", "%00", "%25"),
        *("%63onsole", "console", "api", "x", "?", "%", "@", ":", "RunSSE", "healthz", "%252f"),
    ]
)


@fuzz_settings(500)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_a_passing_path_decodes_to_no_dot_segment_separator_or_control(target: str) -> None:
    """The property the gate relies on: once passed, the decoded path has the same segments
    as the raw one (no encoded separator), none of them . or .., and no control character."""
    if target_refusal(target) is not None:
        return
    path = target.partition("?")[0]
    decoded = unquote(path)
    assert target.startswith("/")
    assert decoded.count("/") == path.count("/")
    assert not any(segment in (".", "..") for segment in decoded.split("/"))
    assert all(" " <= ch != "\x7f" for ch in decoded)


def test_the_kind_comes_from_the_matched_route_and_console_paths_are_never_proxied() -> None:
    assert route_kind("/x", None, "/healthz") is RouteKind.PROXY
    assert route_kind("/console/api/providers\n", None, "/healthz") is RouteKind.CONSOLE
    assert route_kind("/console", None, "/healthz") is RouteKind.CONSOLE
    assert route_kind("/consoles", None, "/healthz") is RouteKind.PROXY
    # The site's icon is the console's, matched or not: a browser's ask never goes upstream.
    assert route_kind("/favicon.ico", "/favicon.ico", "/healthz") is RouteKind.CONSOLE
    assert route_kind("/favicon.ico", None, "/healthz") is RouteKind.CONSOLE
    assert route_kind("/favicon.icon", None, "/healthz") is RouteKind.PROXY
    assert route_kind("/console/api/x", "/console/api/{tail}", "/healthz") is RouteKind.CONSOLE
    assert route_kind("/healthz", "/healthz", "/healthz") is RouteKind.HEALTH
    rpc = "/agent.v1.AgentService/RunSSE"
    assert route_kind(rpc, rpc, "/healthz") is RouteKind.AGENT


def test_foreign_origins_are_web_pages_of_other_hosts() -> None:
    host = "127.0.0.1:3000"
    assert is_foreign_origin("https://evil.example", host)
    assert is_foreign_origin("http://127.0.0.1:3001", host)
    assert is_foreign_origin("null", host)
    assert not is_foreign_origin(None, host)
    assert not is_foreign_origin("http://127.0.0.1:3000", host)
    assert not is_foreign_origin("vscode-file://vscode-app", host)


def refusal_of(kind: RouteKind, **overrides: object) -> int | None:
    request: dict[str, Any] = {
        "loopback_listener": True,
        "host": "127.0.0.1:3000",
        "origin": None,
        "content_type": "application/connect+proto",
        "method": "POST",
    }
    request.update(overrides)
    refused = browser_refusal(kind, **request)
    return None if refused is None else refused.status


def test_browser_rules_for_agent_rpcs_and_the_proxy() -> None:
    assert refusal_of(RouteKind.AGENT) is None
    assert refusal_of(RouteKind.AGENT, host="localhost:3000") is None
    assert refusal_of(RouteKind.AGENT, host="[::1]:3000") is None
    assert refusal_of(RouteKind.AGENT, host="evil.example") == 403
    assert refusal_of(RouteKind.PROXY, host="evil.example:3000") == 403
    assert refusal_of(RouteKind.AGENT, host="evil.example", loopback_listener=False) is None
    assert refusal_of(RouteKind.AGENT, origin="https://evil.example") == 403
    assert refusal_of(RouteKind.PROXY, origin="null") == 403
    for content_type in ("text/plain", None, "application/x-www-form-urlencoded"):
        assert refusal_of(RouteKind.AGENT, content_type=content_type) == 415
        # Cursor's other traffic goes upstream as it is: not ours to narrow.
        assert refusal_of(RouteKind.PROXY, content_type=content_type) is None
    assert refusal_of(RouteKind.AGENT, content_type="Application/Proto; charset=x") is None
    # The console has its own rules; a health probe carries no secret.
    assert refusal_of(RouteKind.CONSOLE, host="evil.example") is None
    assert refusal_of(RouteKind.HEALTH, host="evil.example") is None
