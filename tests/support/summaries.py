"""What the summary end-to-end tests (the user's command, ``test_summarize_e2e``; automatic
compaction, ``test_compaction_e2e``) set up and read back alike: a workspace of text files, a
Read call streamed in two pieces, the summary message as stored, and the summary fields of a
run's last checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from actors.conversation.model import SUMMARY_END, SUMMARY_LEAD
from tests.support.fake_cursor import TurnLog
from tests.support.fake_provider import FakeToolCall
from wire.proto import agent_v1_pb2 as agent


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    """A workspace folder holding ``files`` (name: text)."""
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def read(call_id: str, path: str) -> FakeToolCall:
    """A Read of ``path`` whose arguments arrive in two deltas."""
    arguments = json.dumps({"path": path})
    return FakeToolCall(call_id, "Read", (arguments[:8], arguments[8:]))


def stored_summary(summary: str) -> str:
    """The summary message's text as the conversation keeps it."""
    return f"{SUMMARY_LEAD}{summary}{SUMMARY_END}"


def summary_fields(log: TurnLog) -> tuple[str, list[agent.ConversationSummaryArchive], int]:
    """The last checkpoint's summary, its archives and its count, read from the blobs."""
    state = log.checkpoints()[-1]
    summary = agent.ConversationSummary.FromString(log.blobs[state.summary]).summary
    archives = [
        agent.ConversationSummaryArchive.FromString(log.blobs[blob_id])
        for blob_id in state.summary_archives
    ]
    return summary, archives, state.self_summary_count
