"""Task and UpdateCurrentStep without IO: the child model's rules, the request's fields, the
text the model reads for each result, the card's subagent type, and the step index."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from actors.conversation.model import (
    AssistantContent,
    CanonicalMessage,
    CanonicalToolCall,
    Origin,
    PartsContent,
    Role,
    TextPart,
)
from actors.turn.plan import subagent_models
from actors.turn.tool_round import message_indexes
from store.catalog import ModelRecord
from wire.model_routing import AutoTarget, RouteEntry, Routing
from wire.proto import agent_v1_pb2 as agent
from wire.tools.args import ToolArgs
from wire.tools.base import ExecContext, SendExec, SubagentModels, ToolOutcome
from wire.tools.task import (
    SubagentModelRefused,
    TaskExecution,
    child_model,
    subagent_type_card,
)

MODELS = SubagentModels(
    parent="p0000000",
    overrides=(("explore", "e0000000"), ("shell", None), ("bugbot", "gone0000")),
    configured=(("p0000000", "p0000000"), ("e0000000", "e0000000"), ("big model", "b0000000")),
)


def record(public_id: str, model_id: str, display_name: str) -> ModelRecord:
    return ModelRecord(
        public_id,
        1,
        "prov",
        "openai-chat",
        model_id,
        display_name,
        True,
        0,
        None,
        None,
        False,
        None,
    )


def test_the_users_setting_wins_then_the_tasks_model_then_the_parents() -> None:
    assert child_model(MODELS, "explore", "big model") == "e0000000"
    assert child_model(MODELS, "", None) == "p0000000"
    assert child_model(MODELS, "generalPurpose", "inherit") == "p0000000"
    assert child_model(MODELS, "explore-ish", "Big Model") == "b0000000"
    with pytest.raises(SubagentModelRefused, match="the shell subagent is disabled"):
        child_model(MODELS, "shell", None)
    with pytest.raises(SubagentModelRefused, match=r"'gone0000', is not configured"):
        child_model(MODELS, "bugbot", None)
    with pytest.raises(SubagentModelRefused, match=r"'gpt-9', is not configured.*big model"):
        child_model(MODELS, "", "gpt-9")


def test_cursors_ids_and_auto_go_through_the_routing_settings() -> None:
    routed = msgspec.structs.replace(
        MODELS,
        overrides=(("explore", "composer-1"), ("plan", "default")),
        routes=(RouteEntry("composer-1", "e0000000"), RouteEntry("gpt-5*", "b0000000")),
        auto="p0000000",
    )
    assert child_model(routed, "explore", None) == "e0000000"
    assert child_model(routed, "plan", None) == "p0000000"
    assert child_model(routed, "", "gpt-5-mini") == "b0000000"
    assert child_model(routed, "", "auto") == "p0000000"
    # Our own names still come first; an id the table does not map is refused, naming it.
    assert child_model(routed, "", "Big Model") == "b0000000"
    with pytest.raises(SubagentModelRefused, match=r"'claude-4', is not configured"):
        child_model(routed, "", "claude-4")
    # Auto going to Cursor's backend is no model of ours for a child.
    with pytest.raises(SubagentModelRefused, match=r"'default', is not configured"):
        child_model(msgspec.structs.replace(routed, auto=""), "plan", None)


def test_subagent_models_carry_the_table_and_where_auto_runs() -> None:
    request = agent.AgentRunRequest()
    configured = [record("e0000000", "gpt-x", "GPT X"), record("b0000000", "big", "Big")]
    table = (RouteEntry("composer-*", "b0000000"),)
    models = subagent_models(request, "p0000000", configured, Routing(routes=table))
    assert (models.routes, models.auto) == (table, "e0000000")  # the first enabled
    chosen = Routing(AutoTarget("model", "b0000000"))
    assert subagent_models(request, "p0000000", configured, chosen).auto == "b0000000"
    relayed = Routing(AutoTarget("cursor"))
    assert subagent_models(request, "p0000000", configured, relayed).auto == ""


def test_the_overrides_are_read_from_the_request_and_empty_ones_skipped() -> None:
    request = agent.AgentRunRequest()
    request.subagent_model_overrides.add(
        subagent_type="explore", model=agent.RequestedModel(model_id="e0000000")
    )
    request.subagent_model_overrides.add(subagent_type="shell", disabled=True)
    request.subagent_model_overrides.add(subagent_type="bash", inherit=True)
    request.subagent_model_overrides.add(subagent_type="debug", disabled=False)
    request.subagent_model_overrides.add(subagent_type="none")
    models = subagent_models(request, "p0000000", [record("e0000000", "gpt-x", "GPT X")])
    assert models.overrides == (("explore", "e0000000"), ("shell", None), ("bash", "p0000000"))
    assert dict(models.configured) == {
        "gpt x": "e0000000",
        "gpt-x": "e0000000",
        "e0000000": "e0000000",
    }


def test_the_card_shows_built_in_types_and_custom_ones_under_their_own_name() -> None:
    assert subagent_type_card("").HasField("unspecified")
    assert subagent_type_card("generalPurpose").HasField("unspecified")
    assert subagent_type_card("cursor-guide").HasField("cursor_guide")
    assert subagent_type_card("Explore").HasField("explore")
    assert subagent_type_card("MyReviewer").custom.name == "MyReviewer"


def execution(**arguments: object) -> TaskExecution:
    args = {"description": "Look", "prompt": "Look around.", **arguments}
    context = ExecContext(
        conversation_id="conv", root_conversation_id="group", subagent_models=MODELS
    )
    return TaskExecution("call_t", ToolArgs(json.dumps(args)), context)


def result(**fields: Any) -> agent.ExecClientMessage:
    return agent.ExecClientMessage(id=1, subagent_result=agent.SubagentResult(**fields))


def test_the_request_carries_every_field_of_the_task() -> None:
    step = execution(
        subagent_type="explore",
        resume="agent-7",
        interrupt=True,
        run_in_background=True,
        file_attachments=["/w/shot.png", "/w/demo.MP4"],
        environment="cloud",
        cloud_base_branch="main",
    ).begin()
    assert isinstance(step, SendExec)
    args = step.message.subagent_args
    assert (args.tool_call_id, args.subagent_type, args.model_id) == (
        "call_t",
        "explore",
        "e0000000",
    )
    assert (args.resume_agent_id, args.interrupt, args.run_in_background) == ("agent-7", True, True)
    assert (args.parent_conversation_id, args.root_parent_conversation_id) == ("conv", "group")
    assert args.environment == agent.SUBAGENT_EXECUTION_ENVIRONMENT_CLOUD
    assert args.cloud_base_branch == "main"
    assert [i.path for i in args.selected_context.selected_images] == ["/w/shot.png"]
    (video,) = args.selected_context.selected_videos
    assert (video.path, video.filename, video.materialize_to_filesystem) == (
        "/w/demo.MP4",
        "demo.MP4",
        True,
    )


def test_what_the_model_reads_for_each_result() -> None:
    done = execution().feed(result(success=agent.SubagentSuccess(agent_id="a1", final_message="F")))
    assert isinstance(done, ToolOutcome) and not done.is_error
    assert done.content == "Subagent name: Look\nSubagent ID: a1\n\nF"
    background = execution(run_in_background=True).feed(
        result(
            success=agent.SubagentSuccess(
                agent_id="a2", background_reason=agent.SUBAGENT_BACKGROUND_REASON_AGENT_REQUEST
            )
        )
    )
    assert isinstance(background, ToolOutcome)
    assert background.content.startswith("Subagent name: Look\nSubagent ID: a2\n\nIt runs in")
    assert background.tool_call.task_tool_call.result.success.is_background
    resumed = execution(resume="a1").feed(
        result(success=agent.SubagentSuccess(agent_id="a1", final_message="more"))
    )
    assert isinstance(resumed, ToolOutcome) and resumed.content == "more"
    failed = execution().feed(result(error=agent.SubagentError(error="no quota")))
    assert isinstance(failed, ToolOutcome) and failed.is_error
    assert failed.content == "the subagent failed: no quota"
    assert failed.tool_call.task_tool_call.result.error.error == failed.content


def test_a_bad_environment_is_an_argument_error() -> None:
    with pytest.raises(Exception, match="'environment' must be"):
        execution(environment="mars")


def text(role: Role, body: str) -> CanonicalMessage:
    return CanonicalMessage(
        message_id=body, role=role, origin=Origin.RUNTIME, content=PartsContent((TextPart(body),))
    )


def assistant(
    text_: str, thinking: str, calls: tuple[CanonicalToolCall, ...], round_id: str
) -> CanonicalMessage:
    return CanonicalMessage(
        message_id=f"{round_id}:a",
        role=Role.ASSISTANT,
        origin=Origin.ASSISTANT,
        content=AssistantContent(
            text=text_, thinking=thinking, tool_calls=calls, tool_round_id=round_id
        ),
    )


def test_the_step_index_counts_the_turns_thinking_text_and_calls_from_one() -> None:
    read = CanonicalToolCall(0, "c_read", "Read", "{}", "m")
    step_a = CanonicalToolCall(1, "c_a", "UpdateCurrentStep", "{}", "m")
    step_b = CanonicalToolCall(2, "c_b", "UpdateCurrentStep", "{}", "m")
    history = (
        text(Role.USER, "old turn"),
        assistant("old", "", (read,), "r0"),
        text(Role.USER, "this turn"),
        assistant("looking", "hmm", (read,), "r1"),  # thinking, text, one call: 3 steps
    )
    message = AssistantContent(thinking="t", tool_calls=(read, step_a, step_b))
    # 3 earlier steps, this message's thinking (4), then the calls: Read 5, c_a 6, c_b 7.
    assert message_indexes(history, "r2", message) == {"c_a": 6, "c_b": 7}
    # The round's own committed pairs are not earlier steps.
    adopted = (*history, assistant("", "t", (read,), "r2"))
    assert message_indexes(adopted, "r2", message) == {"c_a": 6, "c_b": 7}
    assert message_indexes(history, "r2", AssistantContent(tool_calls=(read,))) == {}
