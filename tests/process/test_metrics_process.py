"""``python run.py`` serves ``GET /metrics``: a scrape over HTTP parses with prometheus-client's
own parser, the store's commits are counted, and ``CURSOR_METRICS_ALLOW`` lets a client that
names the server by a non-loopback name in without the token (and its absence does not)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.process import ServerProcess, server_env

TOKEN = "process-TOKEN-0123456789abcdef"
ELSEWHERE = {"Host": "metrics.example.test"}


async def test_run_py_serves_parseable_metrics_to_an_allowed_network(tmp_path: Path) -> None:
    for allow, expected in (("127.0.0.0/8", 200), (None, 401)):
        extra = {} if allow is None else {"CURSOR_METRICS_ALLOW": allow}
        env = server_env(
            tmp_path, CURSOR_LISTEN_ADDR="0.0.0.0:0", CURSOR_CONSOLE_TOKEN=TOKEN, **extra
        )
        process = ServerProcess(env)
        try:
            port = (await asyncio.to_thread(process.wait_for_address)).rsplit(":", 1)[1]
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                answer = await client.get("/metrics", headers=ELSEWHERE)
                assert answer.status_code == expected, answer.text
                local = await client.get("/metrics")
        finally:
            process.stop()
        assert local.status_code == 200
        families = {f.name: f for f in text_string_to_metric_families(local.text)}
        assert {
            "cursor_server_runs",
            "cursor_server_provider_calls",
            "cursor_server_store_commit_seconds",
        } <= set(families)
        # The startup's own writes (the instance lease, the migrations' marks) were committed.
        (count,) = [
            s.value
            for s in families["cursor_server_store_commit_seconds"].samples
            if s.name.endswith("_count")
        ]
        assert count > 0
        assert TOKEN not in process.log
