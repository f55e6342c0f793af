"""The outbound stream on its own loop: history, live frames, batching of waiting frames."""

from __future__ import annotations

import asyncio

from wire.connect import data_frame, end_stream_frame
from wire.http.outbound import OutboundStream
from wire.proto import agent_v1_pb2 as agent


def frame(index: int) -> bytes:
    return data_frame(
        agent.AgentServerMessage(exec_server_message=agent.ExecServerMessage(id=index))
    )


async def test_waiting_frames_come_out_together_and_in_order() -> None:
    stream = OutboundStream(heartbeat_interval_s=60.0)
    received: list[bytes] = []

    async def read() -> None:
        async for chunk in stream.subscribe():
            received.append(chunk)

    reader = asyncio.create_task(read())
    await asyncio.sleep(0)  # subscribed, waiting
    stream.send(frame(1))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    stream.send(frame(2))  # these three wait together: one chunk
    stream.send(frame(3))
    stream.close(end_stream_frame())
    await asyncio.wait_for(reader, 5)
    assert received[0] == frame(1)
    assert received[1:] == [frame(2) + frame(3) + end_stream_frame()]


async def test_a_late_subscriber_gets_the_whole_history_then_the_end() -> None:
    stream = OutboundStream(heartbeat_interval_s=60.0)
    for index in range(1, 4):
        stream.send(frame(index))
    stream.close(end_stream_frame())
    chunks = [chunk async for chunk in stream.subscribe()]
    assert b"".join(chunks) == frame(1) + frame(2) + frame(3) + end_stream_frame()
