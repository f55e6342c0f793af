"""Where the store tests find PostgreSQL: ``CURSOR_TEST_POSTGRES_URL`` (``.ci/postgres.sh``)."""

from __future__ import annotations

import os

import pytest

POSTGRES_ENV = "CURSOR_TEST_POSTGRES_URL"


def postgres_url_or_skip() -> str:
    """The test server URL, or skip the test saying how to get one."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} not set: run .ci/postgres.sh and export its URL")
    return url
