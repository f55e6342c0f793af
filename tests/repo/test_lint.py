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


# Type-checked strictly (``[tool.mypy]`` in pyproject.toml): every package of ours, the
# composition root and the tests (peewee read through ``store/base/typed_peewee.py`` and
# ``store/stubs/``, what the tests import untyped through the test extra's stub packages and
# ``tests/stubs/``; the generated ``_pb2`` modules excepted in pyproject.toml).
STRICTLY_TYPED = ("actors", "wire", "store", "prompt", "console", "run.py", "tests")


def test_mypy_strict_is_clean_on_every_package() -> None:
    command = [sys.executable, "-m", "mypy", *STRICTLY_TYPED]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
