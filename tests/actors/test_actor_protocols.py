"""Every actor's protocol is a closed union, and its ``on_receive`` (or the ``_handle`` it
delegates to) matches exactly the union's members: a message added to the union without a
case, or a case for a type outside it, fails here. Read from the source with ``ast``."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from typing import Any

import pytest

from actors.blob_sync import BlobSyncActor
from actors.checkpoint import CheckpointActor
from actors.protocols.blob_sync import BlobSyncMessage
from actors.protocols.call_recorder import RecorderMessage
from actors.protocols.checkpoint import CheckpointMessage
from actors.protocols.edge import EdgeMessage
from actors.protocols.provider import ProviderMessage, TransportMessage
from actors.protocols.run_events import RunEventMessage
from actors.protocols.session import SessionMessage
from actors.protocols.tool_runtime import ToolRuntimeMessage
from actors.providers.actor import ProviderActor
from actors.providers.recorder import CallRecorderActor
from actors.run.session import SessionActor
from actors.run_events import RunEventRecorderActor
from actors.tool_runtime import ToolRuntimeActor

PROTOCOLS: list[tuple[type, Any, str]] = [
    (SessionActor, SessionMessage, "on_receive"),
    (CheckpointActor, CheckpointMessage, "on_receive"),
    (ProviderActor, ProviderMessage, "on_receive"),
    (ProviderActor, TransportMessage, "_on_report"),
    (CallRecorderActor, RecorderMessage, "on_receive"),
    (RunEventRecorderActor, RunEventMessage, "on_receive"),
    (ToolRuntimeActor, ToolRuntimeMessage, "_handle"),
    (BlobSyncActor, BlobSyncMessage, "_handle"),
]


def members(union: Any) -> set[str]:
    args = typing.get_args(union) if not isinstance(union, type) else (union,)
    out: set[str] = set()
    for arg in args:
        out |= members(arg) if isinstance(arg, types.UnionType) else {arg.__name__}
    return out


def matched_classes(actor: type, method: str) -> set[str]:
    """The class names in the case patterns of the method's match statement."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(actor, method))))
    (match,) = [node for node in ast.walk(tree) if isinstance(node, ast.Match)]
    names: set[str] = set()
    for case in match.cases:
        for node in ast.walk(case.pattern):
            if isinstance(node, ast.MatchClass) and isinstance(node.cls, ast.Name):
                names.add(node.cls.id)
    return names


def has_raising_default(actor: type, method: str) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(actor, method))))
    (match,) = [node for node in ast.walk(tree) if isinstance(node, ast.Match)]
    last = match.cases[-1]
    wildcard = isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None
    return wildcard and isinstance(last.body[-1], ast.Raise)


@pytest.mark.parametrize(
    ("actor", "union", "method"), PROTOCOLS, ids=lambda p: getattr(p, "__name__", "")
)
def test_on_receive_matches_exactly_its_union(actor: type, union: Any, method: str) -> None:
    assert matched_classes(actor, method) == members(union)
    assert has_raising_default(actor, method), "anything else must raise"


def test_the_session_takes_every_edge_message_and_the_runs_facts() -> None:
    assert members(EdgeMessage) < members(SessionMessage)
    assert len(members(SessionMessage)) == 15


def test_the_check_sees_a_missing_case() -> None:
    class Partial:
        def on_receive(self, message: object) -> None:
            match message:
                case int():
                    pass
                case _:
                    pass

    assert matched_classes(Partial, "on_receive") == {"int"}
    assert not has_raising_default(Partial, "on_receive")
    assert members(int | str) == {"int", "str"}
