"""The protocol floor of a first text delta: our edge with a run that does no work.

``python -m tests.bench.floor_server`` serves RunSSE/BidiAppend through the real edge
(``actors.server.compose.start_server``), but each run is ``FloorRun``: on its RunRequest it sends
``BLOBS`` KV SETs at once, waits for their ACKs, then sends one checkpoint and one text delta
and ends. No model, no store, no prompt. The time a client needs to see that text delta is what
any server on this edge, in this language, on this machine, costs at least for a new
conversation (whose first checkpoint needs four blobs acknowledged), so ``tests.bench.turn``
prints it next to the real server's figure, measured in the same run.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import sys

import pykka

from actors.protocols.edge import (
    CancelRun,
    ClientMessageReceived,
    EdgeMessage,
    RunRequestDeadlinePassed,
)
from actors.protocols.mailbox import Mailbox
from actors.protocols.run_output import RunOutput
from actors.server.compose import ServerConfig, start_server
from tests.bench.load_server import publisher
from wire.connect import data_frame
from wire.errors import cancelled_error
from wire.http.limits import EdgeLimits
from wire.interaction_updates import text_delta_frame
from wire.proto import agent_v1_pb2 as agent

# A new conversation's first checkpoint: system root, runtime root, UserMessage, turn.
BLOBS = 4
BLOB_BYTES = 1200


class FloorRun(pykka.ThreadingActor):
    """SET ``BLOBS`` blobs, wait for every ACK, then a checkpoint, a text delta and the end."""

    use_daemon_thread = True

    def __init__(self, request_id: str, output: RunOutput) -> None:
        super().__init__()
        self._output = output
        self._waiting: set[int] = set()
        self._roots: list[bytes] = []

    def on_receive(self, message: object) -> None:
        match message:
            case ClientMessageReceived(message=client) if client.HasField("run_request"):
                self._output.run_started()
                for kv_id in range(1, BLOBS + 1):
                    data = bytes([kv_id]) * BLOB_BYTES
                    blob_id = hashlib.sha256(data).digest()
                    self._roots.append(blob_id)
                    self._waiting.add(kv_id)
                    args = agent.SetBlobArgs(blob_id=blob_id, blob_data=data)
                    kv = agent.KvServerMessage(id=kv_id, set_blob_args=args)
                    self._output.send(data_frame(agent.AgentServerMessage(kv_server_message=kv)))
            case ClientMessageReceived(message=client) if client.HasField("kv_client_message"):
                self._waiting.discard(client.kv_client_message.id)
                if not self._waiting:
                    state = agent.ConversationStateStructure(root_prompt_messages_json=self._roots)
                    update = agent.AgentServerMessage(conversation_checkpoint_update=state)
                    self._output.send(data_frame(update))
                    self._output.send(text_delta_frame("Hello"))
                    self._output.finish(None)
                    self.stop()
            case CancelRun() | RunRequestDeadlinePassed():
                self._output.finish(cancelled_error())
                self.stop()
            case _:
                pass


def start_floor_run(request_id: str, output: RunOutput) -> Mailbox[EdgeMessage]:
    return FloorRun.start(request_id, output)


async def serve() -> None:
    config = ServerConfig(
        host="127.0.0.1", port=0, upstream_url="http://127.0.0.1:9", limits=EdgeLimits()
    )
    server = await start_server(config, start_session=start_floor_run)
    # The line ``tests.support.process`` waits for, as ``run.py`` writes it.
    print(f"cursor server listening address={server.address}", file=sys.stderr, flush=True)
    stats = os.environ.get("LOAD_STATS_FILE")
    if stats:  # run by tests.bench.load --floor: it asks for a commit count (none here)
        signal.signal(signal.SIGUSR1, publisher(stats))
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve())
