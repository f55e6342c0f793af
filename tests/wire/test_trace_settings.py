"""``CURSOR_OTLP_ENDPOINT`` and ``CURSOR_OTLP_HEADERS``: tracing is off unless an endpoint is
set; a bad value stops startup naming the variable, never a header's value."""

from __future__ import annotations

import subprocess
import sys

import pytest

from actors.conversation.secret import Secret
from actors.server.settings import SettingError, load_settings
from actors.tracing import TraceSettings
from tests.support.process import REPO


def test_tracing_is_off_without_an_endpoint() -> None:
    assert load_settings({}).traces is None
    # The standard variables alone do not turn it on.
    assert (
        load_settings({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}).traces
        is None
    )


def test_an_endpoint_and_headers_are_read() -> None:
    settings = load_settings(
        {
            "CURSOR_OTLP_ENDPOINT": " https://collector.example:4318/v1/traces ",
            "CURSOR_OTLP_HEADERS": "Authorization=Bearer%20t0ken, x-team = blue",
        }
    )
    assert settings.traces == TraceSettings(
        "https://collector.example:4318/v1/traces",
        (("authorization", Secret("Bearer t0ken")), ("x-team", Secret("blue"))),
    )
    assert "t0ken" not in repr(settings)


@pytest.mark.parametrize(
    ("environ", "variable", "reason"),
    [
        ({"CURSOR_OTLP_ENDPOINT": "collector:4318"}, "CURSOR_OTLP_ENDPOINT", "http://"),
        ({"CURSOR_OTLP_ENDPOINT": "http://collector:4318"}, "CURSOR_OTLP_ENDPOINT", "path"),
        (
            {"CURSOR_OTLP_ENDPOINT": "http://u:pw@collector:4318/v1/traces"},
            "CURSOR_OTLP_ENDPOINT",
            "user or password",
        ),
        ({"CURSOR_OTLP_ENDPOINT": "http://c:99999/v1/traces"}, "CURSOR_OTLP_ENDPOINT", "ort"),
        ({"CURSOR_OTLP_HEADERS": "a=b"}, "CURSOR_OTLP_HEADERS", "needs CURSOR_OTLP_ENDPOINT"),
        (
            {"CURSOR_OTLP_ENDPOINT": "http://c:4318/v1/traces", "CURSOR_OTLP_HEADERS": "nope"},
            "CURSOR_OTLP_HEADERS",
            "name=value",
        ),
        (
            {
                "CURSOR_OTLP_ENDPOINT": "http://c:4318/v1/traces",
                "CURSOR_OTLP_HEADERS": "x-key=s3cret%0Aevil",
            },
            "CURSOR_OTLP_HEADERS",
            "x-key: the value has a line break",
        ),
    ],
)
def test_a_bad_value_names_the_variable_and_not_the_secret(
    environ: dict[str, str], variable: str, reason: str
) -> None:
    with pytest.raises(SettingError) as info:
        load_settings(environ)
    assert info.value.variable == variable
    assert reason in info.value.reason
    assert "s3cret" not in str(info.value)


def test_a_server_without_tracing_never_loads_the_sdk() -> None:
    """The settings, the composition root and both recorders import no OpenTelemetry SDK:
    it is loaded only when a server starts with an endpoint."""
    code = (
        "import sys, run, actors.server.compose, actors.run_events, actors.providers.recorder; "
        "loaded = sorted(m for m in sys.modules if m.startswith('opentelemetry')); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
