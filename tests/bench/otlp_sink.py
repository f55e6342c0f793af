"""A collector stand-in for the load benchmark's ``--traces``: takes OTLP/HTTP traces on
loopback, decodes each request and counts its spans (run by ``load``; by hand:
``python -m tests.bench.otlp_sink``). Its own process, so its CPU is not the server's."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from types import TracebackType

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

READY = "otlp sink at "


async def serve() -> None:
    spans = 0
    requests = 0

    async def take(request: web.Request) -> web.Response:
        nonlocal spans, requests
        decoded = ExportTraceServiceRequest.FromString(await request.read())
        requests += 1
        spans += sum(
            len(scope.spans)
            for resource in decoded.resource_spans
            for scope in resource.scope_spans
        )
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    app = web.Application()
    app.router.add_post("/v1/traces", take)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    print(f"{READY}http://{host}:{port}/v1/traces", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()
    print(f"otlp sink: {spans} spans in {requests} requests", flush=True)


class OtlpSinkProcess:
    """The sink as a child process: ``url`` once started; ``received`` its last line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.otlp_sink"], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith(READY):
            self.proc.kill()
            raise RuntimeError(f"the OTLP sink did not start: {line!r}")
        self.url = line.removeprefix(READY)
        self.received = ""

    def __enter__(self) -> OtlpSinkProcess:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        self.received = out.strip()


if __name__ == "__main__":
    asyncio.run(serve())
