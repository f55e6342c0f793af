"""The code base stays ``ruff check`` and ``ruff format`` clean (ruff comes with the test extra)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.process import REPO

# ruff and mypy come with the test extra; every test here runs one of them as a process.
pytest.importorskip("ruff")
pytest.importorskip("mypy")
pytestmark = pytest.mark.process


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ruff", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def test_ruff_check_is_clean() -> None:
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


# Type-checked strictly (``[tool.mypy]`` in pyproject.toml): the sans-IO protocol code and the
# domain package, which everything else builds on.
STRICTLY_TYPED = ("wire", "actors/conversation")


def test_mypy_strict_is_clean_on_the_sans_io_layers() -> None:
    command = [sys.executable, "-m", "mypy", *STRICTLY_TYPED, "--exclude", "wire/http"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


# The turn: its phases and the driver that carries them out. The modules they import are
# read for their types but not themselves held to ``--strict`` here.
TURN_MODULES = (
    "actors/turn",
    "actors/run/agent.py",
    "actors/run/shell_command.py",
    "actors/run/summarize.py",
    "actors/run/tool_relay.py",
    "actors/run/core.py",
    "actors/run/base_claim.py",
    "actors/run/end.py",
    "actors/run/start.py",
    "actors/run/base.py",
    "actors/run/children.py",
)


def test_mypy_strict_is_clean_on_the_turn() -> None:
    command = [sys.executable, "-m", "mypy", "--follow-imports=silent", *TURN_MODULES]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
