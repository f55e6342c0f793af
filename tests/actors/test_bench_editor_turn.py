"""The load benchmark's editor turn (``tests/bench/editor_turn.py``) is read by the server as
an editor's: its parts are the blobs to fetch, and once fetched every section it carries is in
the runtime message; the fields our schema subset lacks travel as unknown fields. If the
server stopped reading a part, the benchmark would stop paying for it without saying so."""

from __future__ import annotations

import datetime
from pathlib import Path

from google.protobuf.unknown_fields import UnknownFieldSet

from actors.conversation.model import TextPart
from actors.turn.plan import TurnKind, plan_turn, runtime_parts, wanted_blobs, with_context
from prompt.assets import load_prompt_assets
from tests.bench.editor_turn import editor_turn
from wire.proto import agent_v1_pb2 as agent

NOW = datetime.datetime(2026, 2, 3, 8, 5, tzinfo=datetime.UTC)


def test_every_section_of_the_editor_turn_reaches_the_runtime_message() -> None:
    turn = editor_turn("hi", "abcd1234", conversation_id="c-1", workspace=Path("/w"))
    request = agent.AgentClientMessage.FromString(turn.message.SerializeToString()).run_request
    plan = plan_turn("run-1", request)
    assert plan.kind is TurnKind.NEW and plan.state is not None and not plan.roots
    assert set(wanted_blobs(plan, roots_indexed=False)) == set(turn.blobs)
    plan = with_context(plan, request, turn.blobs)
    (text,) = runtime_parts(load_prompt_assets().mode("agent"), plan, request, turn.blobs, NOW)
    assert isinstance(text, TextPart)
    for expected in (
        "Workspace path: /w",
        "?? src/search/services/ranking.py",  # the git status
        "# Conventions for database access",  # a file rule, from the rules blob
        "Do not run git push",  # a user rule, from the same blob
        "/w/.cursor/skills/migrations/SKILL.md",  # a skill, from the skills blob
        "/w/src/api/handlers/views.py",  # the focused file
        "hi",
    ):
        assert expected in text.text, expected
    unknown = UnknownFieldSet(request.action.request_context_parts.dynamic_context)
    numbers = {unknown[i].field_number for i in range(len(unknown))}
    assert 13 in numbers  # project_layouts


def test_a_fresh_workspace_has_parts_of_its_own() -> None:
    def ids(conversation_id: str, fresh: bool) -> set[bytes]:
        turn = editor_turn(
            "hi", "m", conversation_id=conversation_id, workspace=Path("/w"), fresh_workspace=fresh
        )
        return set(turn.blobs)

    assert ids("c-1", False) == ids("c-2", False)
    assert not ids("c-1", True) & ids("c-2", True)
