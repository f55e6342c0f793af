"""Where the console's login sessions live: in this process (``MemorySessions``, a server
without a database) or in the database every instance shares (``SharedSessions``).

Both hold only the hex SHA-256 digest of a session id, never the id. The port is asynchronous
because the console calls it on the event loop, which must not wait on the database: the
shared one runs each store call in a thread. It keeps a session it found live for at most
``LIVE_CACHE_S`` (bounded by the session's own expiry), so a burst of console requests costs
one read; a logout on another instance is therefore seen here within that time, and a logout
here at once.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

import peewee

from store.base.clock import now_ms
from store.console_sessions import ConsoleSessionRows

# How long a session found live in the database is believed without asking again.
LIVE_CACHE_S = 0.5

R = TypeVar("R")


class SessionsUnavailable(Exception):
    """The database that holds the sessions did not answer (the console answers 503)."""


class LoginSessions(Protocol):
    """The live sessions, by the hex digest of their id."""

    async def start(self, digest: str, lifetime_s: float, keep: int) -> None:
        """Record a session for ``lifetime_s``; expired ones and the oldest beyond ``keep``
        go."""

    async def end(self, digest: str) -> None: ...

    async def is_live(self, digest: str) -> bool: ...


class MemorySessions:
    """This process's sessions (a restart logs everyone out), expiring on ``clock``
    (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sessions: dict[str, float] = {}  # digest -> its expiry, oldest first

    async def start(self, digest: str, lifetime_s: float, keep: int) -> None:
        self._drop_expired()
        while self._sessions and len(self._sessions) >= keep:
            del self._sessions[next(iter(self._sessions))]
        self._sessions[digest] = self._clock() + lifetime_s

    async def end(self, digest: str) -> None:
        self._sessions.pop(digest, None)

    async def is_live(self, digest: str) -> bool:
        self._drop_expired()
        found = False
        for live in self._sessions:  # every one compared, in constant time each
            found |= hmac.compare_digest(digest, live)
        return found

    def _drop_expired(self) -> None:
        now = self._clock()
        for digest in [d for d, expiry in self._sessions.items() if expiry <= now]:
            del self._sessions[digest]


class SharedSessions:
    """The sessions in the database (``store.console_sessions``), with expiries on the wall
    clock ``wall_ms`` (what every instance shares) and the live cache on ``monotonic``."""

    def __init__(
        self,
        rows: ConsoleSessionRows,
        wall_ms: Callable[[], int] = now_ms,
        monotonic: Callable[[], float] = time.monotonic,
        cache_s: float = LIVE_CACHE_S,
    ) -> None:
        self._rows = rows
        self._wall_ms = wall_ms
        self._monotonic = monotonic
        self._cache_s = cache_s
        self._live: dict[str, tuple[float, int]] = {}  # digest -> (when read, its expiry)

    async def start(self, digest: str, lifetime_s: float, keep: int) -> None:
        now = self._wall_ms()
        expires = now + round(lifetime_s * 1000)
        await self._call(self._rows.start, digest, expires, now, keep)
        self._remember(digest, expires)

    async def end(self, digest: str) -> None:
        self._live.pop(digest, None)
        await self._call(self._rows.end, digest)

    async def is_live(self, digest: str) -> bool:
        cached = self._live.get(digest)
        now = self._wall_ms()
        if cached is not None:
            read_at, expires = cached
            if self._monotonic() - read_at < self._cache_s and expires > now:
                return True
            del self._live[digest]
        expiry = await self._call(self._rows.expiry, digest, now)
        if expiry is None:
            return False
        self._remember(digest, expiry)
        return True

    def _remember(self, digest: str, expires: int) -> None:
        read_at = self._monotonic()
        stale = [d for d, (at, _) in self._live.items() if read_at - at >= self._cache_s]
        for old in stale:
            del self._live[old]
        self._live[digest] = (read_at, expires)

    async def _call(self, fn: Callable[..., R], *args: object) -> R:
        try:
            return await asyncio.to_thread(fn, *args)
        except peewee.DatabaseError as exc:
            raise SessionsUnavailable(str(exc)) from exc
