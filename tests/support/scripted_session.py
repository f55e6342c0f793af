"""A scripted run actor for edge tests that need a run which stays open and emits frames.

It stands in for the agent loop (a collaborator of the edge, not the edge itself): on a
RunRequest it sends the frames it was given and stays open until cancelled or told to end.
"""

from __future__ import annotations

import pykka

from actors.protocols.edge import (
    CancelRun,
    ClientMessageReceived,
    EdgeMessage,
    RunRequestDeadlinePassed,
)
from actors.protocols.mailbox import Mailbox
from actors.protocols.run_output import RunOutput
from wire.connect import data_frame
from wire.errors import Code, ConnectError, cancelled_error
from wire.http.registry import SessionFactory
from wire.proto import agent_v1_pb2 as agent


def text_frame_message(index: int) -> agent.AgentServerMessage:
    """A recognisable data frame: an ExecServerMessage whose id is ``index``."""
    return agent.AgentServerMessage(exec_server_message=agent.ExecServerMessage(id=index))


class EmitFrames(pykka.ThreadingActor):
    """Tell it ``("emit", n)`` to send n more frames, ``("end",)`` to finish successfully."""

    use_daemon_thread = True

    def __init__(self, request_id: str, output: RunOutput, first_frames: int) -> None:
        super().__init__()
        self.output = output
        self.first_frames = first_frames
        self.sent = 0
        self.started = False

    def _emit(self, count: int) -> None:
        for _ in range(count):
            self.sent += 1
            self.output.send(data_frame(text_frame_message(self.sent)))

    def on_receive(self, message: object) -> None:
        match message:
            case ClientMessageReceived(message=client) if client.HasField("run_request"):
                self.started = True
                self.output.run_started()
                self._emit(self.first_frames)
            case ClientMessageReceived(message=client) if client.HasField("exec_client_message"):
                self._emit(client.exec_client_message.id)
            case ClientMessageReceived():
                self.output.finish(None)
                self.stop()
            case CancelRun():
                self.output.finish(cancelled_error())
                self.stop()
            case RunRequestDeadlinePassed() if not self.started:
                self.output.finish(ConnectError(Code.DEADLINE_EXCEEDED, "no RunRequest"))
                self.stop()


def scripted_factory(first_frames: int) -> SessionFactory:
    def start(request_id: str, output: RunOutput) -> Mailbox[EdgeMessage]:
        return EmitFrames.start(request_id, output, first_frames)

    return start
