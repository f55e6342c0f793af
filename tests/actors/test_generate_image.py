"""GenerateImage's state machine, without IO: approval query -> server work -> Write exec ->
outcome, and every way it ends early; plus the run's tool list with and without an image
model (``actors.turn.capabilities``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.turn.capabilities import ServerCapabilities, offered_tools
from prompt import load_prompt_assets
from wire.proto import agent_v1_pb2 as agent
from wire.tools.base import (
    ExecContext,
    InvalidCall,
    SendExec,
    SendQuery,
    ServerWork,
    ServerWorkFailed,
    ToolOutcome,
    WrongResult,
)
from wire.tools.dispatch import prepare_tool_call
from wire.tools.generate_image import (
    GeneratedImage,
    GenerateImageExecution,
    ImageRequest,
    image_path,
)

PNG = b"\x89PNG\r\n\x1a\npixels"
WORKSPACE = ExecContext(workspace_root="/home/me/project")


def start(args: dict[str, Any], context: ExecContext = WORKSPACE) -> GenerateImageExecution:
    execution = prepare_tool_call("GenerateImage", "call_img", json.dumps(args), context)
    assert isinstance(execution, GenerateImageExecution), execution
    return execution


def approved(description: str = "") -> agent.InteractionResponse:
    answer = agent.GenerateImageRequestResponse.Approved(description=description)
    return agent.InteractionResponse(
        id=1, generate_image_request_response=agent.GenerateImageRequestResponse(approved=answer)
    )


def rejected(reason: str) -> agent.InteractionResponse:
    answer = agent.GenerateImageRequestResponse.Rejected(reason=reason)
    return agent.InteractionResponse(
        id=1, generate_image_request_response=agent.GenerateImageRequestResponse(rejected=answer)
    )


def written(execution: GenerateImageExecution, result: agent.WriteResult) -> Any:
    return execution.feed(agent.ExecClientMessage(id=2, write_result=result))


def test_the_approved_image_is_generated_then_written_and_the_model_reads_its_path() -> None:
    execution = start({"description": "A red fox at dawn", "aspect_ratio": "16:9"})
    first = execution.begin()
    assert isinstance(first, SendQuery)
    query = first.query.generate_image_request_query
    assert query.tool_call_id == "call_img"
    assert query.args.description == "A red fox at dawn"
    assert query.args.aspect_ratio == "16:9"
    assert execution.started().generate_image_tool_call.args == query.args
    work = execution.respond(approved())
    assert work == ServerWork(ImageRequest("A red fox at dawn", "1536x1024"))
    write = execution.answered(GeneratedImage(PNG))
    assert isinstance(write, SendExec)
    args = write.message.write_args
    assert args.file_bytes == PNG and args.file_text == ""
    assert args.path.startswith("/home/me/project/images/a-red-fox-at-dawn-")
    assert args.path.endswith(".png") and args.tool_call_id == "call_img"
    assert write.message.exec_id == "call_img"
    outcome = written(execution, agent.WriteResult(success=agent.WriteSuccess(path=args.path)))
    assert isinstance(outcome, ToolOutcome) and not outcome.is_error
    assert outcome.content == (
        f"generated the image and wrote it to {args.path} ({len(PNG)} bytes, 1536x1024)"
    )
    card = outcome.tool_call.generate_image_tool_call
    assert card.result.success.file_path == args.path
    assert card.args.description == "A red fox at dawn"


@pytest.mark.parametrize(
    ("ratio", "size"),
    [("1:1", "1024x1024"), ("4:3", "1536x1024"), ("3:4", "1024x1536"), ("9:16", "1024x1536")],
)
def test_each_aspect_ratio_asks_for_a_size_the_images_api_takes(ratio: str, size: str) -> None:
    execution = start({"description": "a cat", "aspect_ratio": ratio})
    execution.begin()
    assert execution.respond(approved()) == ServerWork(ImageRequest("a cat", size))


def test_without_a_ratio_the_images_api_default_size_is_asked_for() -> None:
    execution = start({"description": "a cat"})
    execution.begin()
    assert execution.respond(approved()) == ServerWork(ImageRequest("a cat", None))


def test_the_description_the_user_approved_is_the_one_generated_and_the_model_is_told() -> None:
    execution = start({"description": "a cat", "filename": "art/cat"})
    execution.begin()
    assert execution.respond(approved("a black cat on a wall")) == ServerWork(
        ImageRequest("a black cat on a wall", None)
    )
    write = execution.answered(GeneratedImage(PNG))
    assert isinstance(write, SendExec)
    assert write.message.write_args.path == "/home/me/project/art/cat.png"
    outcome = written(execution, agent.WriteResult(success=agent.WriteSuccess()))
    assert isinstance(outcome, ToolOutcome)
    assert outcome.content.endswith("the user changed the description to: a black cat on a wall")


def test_a_rejection_is_an_error_with_the_users_reason() -> None:
    execution = start({"description": "a cat"})
    execution.begin()
    outcome = execution.respond(rejected("not now"))
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert outcome.content == "the user declined to generate the image: not now"
    assert outcome.tool_call.generate_image_tool_call.result.error.error == outcome.content


def test_a_failed_generation_is_an_error_result_and_nothing_is_written() -> None:
    execution = start({"description": "a cat"})
    execution.begin()
    execution.respond(approved())
    outcome = execution.answered(ServerWorkFailed("the image model refused (400): bad prompt"))
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert outcome.content == (
        "the image could not be generated: the image model refused (400): bad prompt"
    )
    card = outcome.tool_call.generate_image_tool_call
    assert card.result.error.error == outcome.content


def test_a_refused_write_is_an_error_naming_the_path() -> None:
    execution = start({"description": "a cat", "filename": "/tmp/cat.png"})
    execution.begin()
    execution.respond(approved())
    execution.answered(GeneratedImage(PNG))
    refusal = agent.WriteResult(rejected=agent.WriteRejected(reason="read-only folder"))
    outcome = written(execution, refusal)
    assert isinstance(outcome, ToolOutcome) and outcome.is_error
    assert outcome.content == "the user declined to write /tmp/cat.png: read-only folder"


def test_answers_of_the_wrong_kind_are_protocol_violations() -> None:
    execution = start({"description": "a cat"})
    execution.begin()
    other = agent.InteractionResponse(
        id=1, ask_question_interaction_response=agent.AskQuestionInteractionResponse()
    )
    assert execution.respond(other) == WrongResult("ask_question_interaction_response")
    empty = agent.InteractionResponse(
        id=1, generate_image_request_response=agent.GenerateImageRequestResponse()
    )
    assert execution.respond(empty) == WrongResult("GenerateImageRequestResponse with no result")
    # A write result before any write was asked for.
    assert written(execution, agent.WriteResult()) == WrongResult("write_result")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "'description' is required (a string)"),
        ({"description": "  "}, "'description' must describe the image (it is empty)"),
        (
            {"description": "x", "aspect_ratio": "2:1"},
            "'aspect_ratio' must be one of 1:1, 4:3, 16:9, 3:4, 9:16",
        ),
        (
            {"description": "x", "reference_image_paths": ["a.png"]},
            "reference images are not supported: describe the image instead",
        ),
        ({"description": "x", "filename": "pics/"}, "'filename' must name a file"),
    ],
)
def test_bad_arguments_are_an_error_the_model_reads(args: dict[str, Any], error: str) -> None:
    execution = prepare_tool_call("GenerateImage", "call_img", json.dumps(args))
    assert isinstance(execution, InvalidCall)
    outcome = execution.begin()
    assert outcome.content == f"invalid arguments for GenerateImage: {error}"
    assert outcome.tool_call.generate_image_tool_call.result.error.error == outcome.content


def test_generated_names_come_from_the_description_and_differ_per_call() -> None:
    first = image_path("A Red Fox, at dawn!", None, "call_1", "")
    assert first.startswith("images/a-red-fox-at-dawn-") and first.endswith(".png")
    assert first != image_path("A Red Fox, at dawn!", None, "call_2", "")
    assert image_path("!!!", None, "call_1", "").startswith("images/image-")
    assert image_path("x", "logo.webp", "call_1", "/ws") == "/ws/logo.webp"
    assert image_path("x", "/abs/logo", "call_1", "/ws") == "/abs/logo.png"


def test_generate_image_is_offered_only_with_an_image_model_in_manifest_order() -> None:
    agent_mode = load_prompt_assets().mode("agent")
    names = [tool.name for tool in agent_mode.tools]
    assert "GenerateImage" in names
    searching = ServerCapabilities(web_search=True, image_generation=False)
    without = offered_tools(agent_mode, searching)
    assert [tool.name for tool in without.tools] == [n for n in names if n != "GenerateImage"]
    everything = ServerCapabilities(web_search=True, image_generation=True)
    assert offered_tools(agent_mode, everything) is agent_mode
