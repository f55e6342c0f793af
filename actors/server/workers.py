"""Several server processes on one port: ``run.py --workers N`` (or ``CURSOR_WORKERS``).

One process serves on about one core (its event loop). With N above 1, ``run.py`` becomes a
supervisor that serves nothing itself: it starts N workers, each a plain ``python run.py``
with its own actors, its own instance lease and its own database connections, all on one
PostgreSQL database, and all listening on the same port with ``SO_REUSEPORT`` (the HTTP/2
listener's too when it is on), so the kernel spreads new connections over them. SQLite is
refused (one machine's file that one process writes: ``settings.read_workers``).

Before the first worker starts, the supervisor (in ``run.py``) has resolved the secret key,
making the key file if there was none, and opened the store once (the migrations applied), so
N workers neither race to create the key file nor each seal with a key of its own. Here it
then makes each listen address concrete and holds it (``reserve``): a port that anyone holds
already is refused with exit 2, as a single server refuses it; port 0 is replaced by the free
port the kernel picked, which every worker is then given (port 0 cannot be shared: each
process would get a port of its own). The supervisor keeps a bound, never listening,
``SO_REUSEPORT`` socket on each port while it lives: no connection reaches a socket that does
not listen, and nobody but this user's ``SO_REUSEPORT`` sockets (the workers) can take the
port meanwhile, a restarted worker's included.

Each worker is told who it is by two environment variables only the supervisor sets (not
settings; ``WorkerLink``): ``CURSOR_WORKER_NAME`` (``w1`` … ``wN``), which its every log line
carries (``wire.log.LineFormatter``), and ``CURSOR_WORKER_FD``, its end of a socket pair with
the supervisor: the worker writes one byte on it once it listens, and reads its end of file
when the supervisor is gone (even SIGKILLed), and then stops as on SIGTERM. The workers
inherit the supervisor's stderr: one log stream. The supervisor's own lines come from the
``cursor_server.workers`` logger and carry no ``worker=``; its ``cursor server listening``
line comes once every worker listens (the line a single server prints when it listens;
each worker's own is ``worker listening``).

A worker that exits while the server runs (killed, crashed, or stopped by hand) is started
again after a backoff (``RESTART_BACKOFF_S``, doubled for each earlier death of that worker
within ``RESTART_WINDOW_S``, at most ``RESTART_BACKOFF_MAX_S``); the runs it held are resumed
by the editor as after a failover, and its rows are closed by the next sweep of any worker,
the restarted one's first: it is a process of this host whose pid is gone once reaped
(``store.instances.drop_gone_local``). A worker that dies more than ``MAX_RESTARTS`` times
within the window (one that crashes at startup) stops the server, exit 1; one that exits
before every worker first listened stops it too, with that worker's exit code (2 for a bad
setting). SIGTERM or SIGINT: each worker is sent SIGTERM and drains as a single server does
(within its shutdown deadline); none is restarted; exit 0 once all exited, or 1 if any had
to be killed after ``STOP_WAIT_S``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping

from actors.server.compose import SHUTDOWN_DEADLINE_S
from actors.server.settings import WORKERS_VARIABLE, SettingError, Settings
from store.database import StoreKey
from wire.log import log_event

logger = logging.getLogger("cursor_server.workers")

NAME_VARIABLE = "CURSOR_WORKER_NAME"
FD_VARIABLE = "CURSOR_WORKER_FD"
READY = b"R"

RESTART_BACKOFF_S = 0.5
RESTART_BACKOFF_MAX_S = 8.0
RESTART_WINDOW_S = 60.0
# Deaths of one worker within the window that are restarted; one more stops the server.
MAX_RESTARTS = 5
# A worker's own shutdown is bounded by SHUTDOWN_DEADLINE_S; past this it is killed.
STOP_WAIT_S = SHUTDOWN_DEADLINE_S + 5.0
EXIT_GAVE_UP = 1
EXIT_BAD_SETTING = 2


class WorkerLink:
    """A worker's end of its socket pair with the supervisor."""

    def __init__(self, name: str, sock: socket.socket) -> None:
        self.name = name
        self._sock = sock

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> WorkerLink | None:
        """This process's link when the supervisor started it; None for a server of its own."""
        name = environ.get(NAME_VARIABLE)
        if name is None:
            return None
        fd_text = environ.get(FD_VARIABLE, "")
        if not re.fullmatch(r"w[1-9][0-9]*", name) or not fd_text.isdigit():
            raise SettingError(NAME_VARIABLE, "is set by the supervisor (run.py --workers N) only")
        try:
            sock = socket.socket(fileno=int(fd_text))
        except OSError as exc:
            raise SettingError(FD_VARIABLE, f"not the supervisor's socket: {exc}") from None
        return cls(name, sock)

    def ready(self) -> None:
        """Tell the supervisor this worker listens (a supervisor gone is seen by ``watch``)."""
        with contextlib.suppress(OSError):
            self._sock.sendall(READY)

    def watch(self, gone: Callable[[], None]) -> None:
        """Call ``gone`` on the loop once the supervisor's end closes."""
        loop = asyncio.get_running_loop()
        self._sock.setblocking(False)
        fd = self._sock.fileno()

        def readable() -> None:
            try:
                data = self._sock.recv(64)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                log_event(logger, logging.WARNING, "supervisor gone; stopping")
                gone()

        loop.add_reader(fd, readable)


class PortTaken(OSError):
    """A listen address someone holds already."""

    def __init__(self, variable: str, address: str, exc: OSError) -> None:
        super().__init__(exc.errno, exc.strerror)
        self.variable = variable
        self.address = address


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _socket(host: str, reuse_port: bool) -> socket.socket:
    """A TCP socket set up as asyncio sets up a listener's (``SO_REUSEADDR``, v6 only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def reserve(variable: str, host: str, port: int) -> socket.socket:
    """Hold ``host:port`` for the workers: a bound ``SO_REUSEPORT`` socket that never listens.

    First a plain bind (no ``SO_REUSEPORT``) checks that no one holds the port, another
    server with workers included, and picks the port when 0 is given; then the holding socket
    takes its place (the port is free for the instant between). ``PortTaken`` when held."""
    try:
        with _socket(host, reuse_port=False) as probe:
            probe.bind((host, port))
            port = int(probe.getsockname()[1])
        held = _socket(host, reuse_port=True)
        try:
            held.bind((host, port))
        except OSError:
            held.close()
            raise
    except OSError as exc:
        raise PortTaken(variable, format_address(host, port), exc) from exc
    return held


class Slot:
    """One worker's place: its name, its process while one runs, its recent deaths."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.process: asyncio.subprocess.Process | None = None
        self.deaths: collections.deque[float] = collections.deque()
        self.listened = False  # its first process said it listens


class Supervisor:
    """Starts the workers, restarts the ones that die, and stops them all on a signal."""

    def __init__(
        self, count: int, script: str, environ: Mapping[str, str], line: dict[str, object]
    ) -> None:
        self._slots = [Slot(f"w{index}") for index in range(1, count + 1)]
        self._script = script
        self._environ = dict(environ)
        self._line = line  # the fields of the "cursor server listening" line
        self._stopping = asyncio.Event()
        self._outcome: asyncio.Future[int] | None = None

    async def run(self) -> int:
        """Serve until a signal or a worker that cannot be kept up; the exit code."""
        loop = asyncio.get_running_loop()
        self._outcome = loop.create_future()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_signal, sig)
        tasks = [loop.create_task(self._keep(slot)) for slot in self._slots]
        code = await self._outcome
        _, pending = await asyncio.wait(tasks, timeout=STOP_WAIT_S)
        if pending:
            for slot in self._slots:
                if slot.process is not None and slot.process.returncode is None:
                    log_event(
                        logger,
                        logging.WARNING,
                        "worker killed: not stopped in time",
                        name=slot.name,
                        pid=slot.process.pid,
                        wait_s=f"{STOP_WAIT_S:g}",
                    )
                    slot.process.kill()
            await asyncio.wait(pending)
            code = code or EXIT_GAVE_UP
        log_event(logger, logging.INFO, "cursor server stopped", workers=len(self._slots))
        return code

    def _on_signal(self, sig: signal.Signals) -> None:
        if not self._stopping.is_set():
            log_event(
                logger, logging.INFO, "shutdown signal received; stopping workers", signal=sig.name
            )
        self._finish(0)

    def _finish(self, code: int) -> None:
        """Stop serving with ``code`` (the first reason wins): SIGTERM to every worker."""
        if self._outcome is not None and not self._outcome.done():
            self._outcome.set_result(code)
        self._stopping.set()
        for slot in self._slots:
            if slot.process is not None and slot.process.returncode is None:
                slot.process.terminate()

    async def _keep(self, slot: Slot) -> None:
        """Run the slot's worker, again after each death, until the server stops."""
        try:
            while not self._stopping.is_set():
                code = await self._run_once(slot)
                if self._stopping.is_set():
                    return
                if not all(other.listened for other in self._slots):
                    # Before the server first listened: a startup failure, not a crash.
                    self._finish(code if code > 0 else EXIT_GAVE_UP)
                    return
                delay = self._restart_delay(slot)
                if delay is None:
                    self._finish(EXIT_GAVE_UP)
                    return
                log_event(
                    logger, logging.WARNING, "restarting worker", name=slot.name, after_s=delay
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)
        except Exception as exc:  # a fault here must stop the server, not leave a slot empty
            log_event(
                logger, logging.ERROR, "worker supervision failed", name=slot.name, error=repr(exc)
            )
            self._finish(EXIT_GAVE_UP)

    def _restart_delay(self, slot: Slot) -> float | None:
        """The backoff before the slot's next start; None when it died too often lately."""
        now = time.monotonic()
        slot.deaths.append(now)
        while slot.deaths[0] < now - RESTART_WINDOW_S:
            slot.deaths.popleft()
        if len(slot.deaths) > MAX_RESTARTS:
            log_event(
                logger,
                logging.ERROR,
                "worker keeps dying; stopping the server",
                name=slot.name,
                deaths=len(slot.deaths),
                window_s=f"{RESTART_WINDOW_S:g}",
            )
            return None
        backoff: float = RESTART_BACKOFF_S * 2.0 ** (len(slot.deaths) - 1)
        return min(backoff, RESTART_BACKOFF_MAX_S)

    async def _run_once(self, slot: Slot) -> int:
        """Start one process for the slot and wait for its end; its exit code (negative: the
        signal that ended it)."""
        ours, theirs = socket.socketpair()
        try:
            env = {**self._environ, NAME_VARIABLE: slot.name, FD_VARIABLE: str(theirs.fileno())}
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                self._script,
                env=env,
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                # Its own process group: a terminal's Ctrl-C reaches the supervisor only,
                # which stops the workers in order.
                process_group=0,
            )
        except OSError as exc:
            ours.close()
            log_event(logger, logging.ERROR, "worker not started", name=slot.name, error=str(exc))
            return EXIT_GAVE_UP
        finally:
            theirs.close()
        slot.process = process
        if self._stopping.is_set():
            process.terminate()  # the stop came while it was being started
        log_event(logger, logging.INFO, "worker started", name=slot.name, pid=process.pid)
        exited = asyncio.ensure_future(process.wait())
        heard = asyncio.ensure_future(_hears_ready(ours))
        try:
            await asyncio.wait({exited, heard}, return_when=asyncio.FIRST_COMPLETED)
            if heard.done() and heard.result():
                self._listened(slot)
            code = await exited
        finally:
            heard.cancel()
            ours.close()  # after the exit: until then it is the worker's lifeline
            slot.process = None
        log_event(
            logger,
            logging.INFO if self._stopping.is_set() else logging.WARNING,
            "worker exited",
            name=slot.name,
            pid=process.pid,
            code=code,
        )
        return code

    def _listened(self, slot: Slot) -> None:
        first = not all(other.listened for other in self._slots)
        slot.listened = True
        if first and all(other.listened for other in self._slots):
            log_event(
                logger,
                logging.INFO,
                "cursor server listening",
                **self._line,
                workers=len(self._slots),
            )


async def _hears_ready(sock: socket.socket) -> bool:
    """Whether the worker says it listens (False: its end closed first)."""
    sock.setblocking(False)
    try:
        return await asyncio.get_running_loop().sock_recv(sock, 1) == READY
    except OSError:
        return False


def worker_environ(
    environ: Mapping[str, str], settings: Settings, listens: Mapping[str, str]
) -> dict[str, str]:
    """A worker's environment: the supervisor's, with the concrete listen addresses and
    without the worker count (a worker starts no workers)."""
    env = {name: value for name, value in environ.items() if name != WORKERS_VARIABLE}
    env.pop(NAME_VARIABLE, None)
    env.pop(FD_VARIABLE, None)
    env.update(listens)
    return env


def supervise(settings: Settings, key: StoreKey, script: str, environ: Mapping[str, str]) -> int:
    """Serve with ``settings.workers`` worker processes of ``script`` until SIGINT/SIGTERM."""
    held: list[socket.socket] = []
    try:
        try:
            held.append(reserve("CURSOR_LISTEN_ADDR", settings.host, settings.port))
            if settings.h2_listen is not None:
                held.append(reserve("CURSOR_H2_LISTEN_ADDR", *settings.h2_listen))
        except PortTaken as exc:
            print(
                f"{exc.variable}: cannot listen on {exc.address}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_BAD_SETTING
        addresses = {"CURSOR_LISTEN_ADDR": format_address(*held[0].getsockname()[:2])}
        h2 = None
        if len(held) > 1:
            addresses["CURSOR_H2_LISTEN_ADDR"] = format_address(*held[1].getsockname()[:2])
            scheme = "http" if settings.tls is None else "https"
            h2 = f"{scheme}://{addresses['CURSOR_H2_LISTEN_ADDR']}"
        line: dict[str, object] = {
            "address": addresses["CURSOR_LISTEN_ADDR"],
            "http2": "off" if h2 is None else h2,
            "secret_key": key.source,
            "key_file_created": None if key.created_file is None else "true",
        }
        env = worker_environ(environ, settings, addresses)
        return asyncio.run(Supervisor(settings.workers, script, env, line).run())
    finally:
        for sock in held:
            sock.close()
