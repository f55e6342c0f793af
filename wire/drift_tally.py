"""Protocol drift counted: per what was not known and the client version that sent it.

Sans-IO. The edge walks Cursor's messages (``wire.drift``) and notes the RPC paths it relays
upstream because it serves none of them; this tally counts each sighting under its key with
the first and last time, bounded in keys (``MAX_KEYS``: a key past it is not counted, and
``dropped`` says how many sightings were lost so).
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from wire.drift import Finding

# Distinct keys one tally keeps (each process's counts, and each batch it adds to the store).
MAX_KEYS = 1000
# The longest RPC path counted; a longer one is not an RPC path of Cursor's.
MAX_PATH_CHARS = 200
# A client version longer than this is cut (the header is the client's to choose).
MAX_VERSION_CHARS = 100

DriftKind = Literal["field", "enum", "path"]

# ``/package.Service/Method``: the shape of a Connect or gRPC path.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_RPC_PATH = re.compile(rf"/{_NAME}(?:\.{_NAME})+/{_NAME}")


class DriftKey(msgspec.Struct, frozen=True):
    """What was not known, and who sent it: ``kind`` "field" (``name`` the field number,
    ``value`` its wire type), "enum" (``name`` the field, ``value`` the number) or "path"
    (``name`` the RPC path, ``message_type`` and ``value`` empty); ``client_version`` "" when the
    request named none."""

    kind: DriftKind
    message_type: str
    name: str
    value: int
    client_version: str


class DriftCount(msgspec.Struct, frozen=True):
    """One key's sightings: the first and last in wall-clock milliseconds, and how many."""

    first_seen_ms: int
    last_seen_ms: int
    count: int

    def merged(self, other: DriftCount) -> DriftCount:
        return DriftCount(
            min(self.first_seen_ms, other.first_seen_ms),
            max(self.last_seen_ms, other.last_seen_ms),
            self.count + other.count,
        )


class DriftRow(msgspec.Struct, frozen=True):
    """A key and its count, flat (what the store keeps and the console shows)."""

    kind: DriftKind
    message_type: str
    name: str
    value: int
    client_version: str
    first_seen_ms: int
    last_seen_ms: int
    count: int

    @property
    def key(self) -> DriftKey:
        return DriftKey(self.kind, self.message_type, self.name, self.value, self.client_version)

    @property
    def counted(self) -> DriftCount:
        return DriftCount(self.first_seen_ms, self.last_seen_ms, self.count)


def row_of(key: DriftKey, count: DriftCount) -> DriftRow:
    return DriftRow(
        key.kind,
        key.message_type,
        key.name,
        key.value,
        key.client_version,
        count.first_seen_ms,
        count.last_seen_ms,
        count.count,
    )


def version_of(header: str | None) -> str:
    """The client version a key names: the header cut to ``MAX_VERSION_CHARS``, "" for none."""
    return header[:MAX_VERSION_CHARS] if header else ""


def key_of(finding: Finding, client_version: str) -> DriftKey:
    return DriftKey(finding.kind, finding.message_type, finding.name, finding.value, client_version)


def rpc_path(path: str) -> str | None:
    """``path`` when it is an RPC path (``/package.Service/Method``), else None."""
    if len(path) <= MAX_PATH_CHARS and _RPC_PATH.fullmatch(path):
        return path
    return None


def path_key(path: str, client_version: str) -> DriftKey:
    return DriftKey("path", "", path, 0, client_version)


class DriftTally:
    """Counts per key, at most ``max_keys`` of them."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.counts: dict[DriftKey, DriftCount] = {}
        self.max_keys = max_keys
        self.dropped = 0

    def __len__(self) -> int:
        return len(self.counts)

    def add(self, key: DriftKey, count: DriftCount) -> bool:
        """Count ``count`` more under ``key``; False when the key is new and no room is left."""
        known = self.counts.get(key)
        if known is not None:
            self.counts[key] = known.merged(count)
            return True
        if len(self.counts) >= self.max_keys:
            self.dropped += count.count
            return False
        self.counts[key] = count
        return True

    def rows(self) -> list[DriftRow]:
        return [row_of(key, count) for key, count in self.counts.items()]


def combined(shared: list[DriftRow], local: list[DriftRow]) -> list[DriftRow]:
    """``shared`` rows with ``local`` ones added (one row per key), the latest sighting first."""
    counts: dict[DriftKey, DriftCount] = {}
    for row in (*shared, *local):
        known = counts.get(row.key)
        counts[row.key] = row.counted if known is None else known.merged(row.counted)
    rows = [row_of(key, count) for key, count in counts.items()]
    rows.sort(key=lambda row: (-row.last_seen_ms, row.kind, row.message_type, row.name))
    return rows
