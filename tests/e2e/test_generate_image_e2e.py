"""GenerateImage end to end: the real server, the fake Cursor client approving (or declining)
the image and writing the file it is sent into a real workspace, and the fake provider both as
the run's model (in each of the three formats) and as the image model's OpenAI images API,
over real HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from store import Store
from store.catalog import ModelInput, ProviderInput, create_provider, save_models, set_image_model
from tests.support.fake_cursor import (
    CursorSession,
    FakeCursor,
    TurnLog,
    approve_images,
    cancel_message,
    queries,
    reject_images,
    updates,
    user_turn_message,
)
from tests.support.fake_provider import (
    FAKE_PNG,
    FakeProvider,
    FakeToolCall,
    RecordedRequest,
    Script,
)
from tests.support.formats import FAKE_FORMAT_KEY, FORMAT_IDS, FORMATS, ProviderFormat
from wire.proto import agent_v1_pb2 as agent

IMAGE_KEY = "sk-image-model-key-0123456789"
FOX = {"description": "A red fox asleep in the snow, watercolour", "aspect_ratio": "16:9"}


def mark_image_model(store: Store, fake: FakeProvider) -> str:
    """The fake as an OpenAI-compatible provider with an image model, marked; its public id."""
    provider = create_provider(
        store.database,
        ProviderInput(name="images", type="openai-chat", base_url=fake.base_url, api_key=IMAGE_KEY),
    )
    model = ModelInput(model_id="gpt-image-1", display_name="GPT Image", enabled=False)
    public_id = save_models(store.database, provider.id, [model])[0].public_id
    set_image_model(store.database, public_id)
    return public_id


def generate(call_id: str = "call_img", args: dict[str, Any] = FOX) -> FakeToolCall:
    text = json.dumps(args)
    return FakeToolCall(call_id, "GenerateImage", (text[:9], text[9:]))


def in_workspace(text: str, workspace: Path) -> agent.AgentClientMessage:
    env = agent.RequestContextEnv(workspace_paths=[str(workspace)])
    return user_turn_message(text, "", request_context=agent.RequestContext(env=env))


def turn(text: str, model: str, workspace: Path) -> agent.AgentClientMessage:
    message = in_workspace(text, workspace)
    message.run_request.requested_model.model_id = model
    return message


def model_calls(fake: FakeProvider) -> list[RecordedRequest]:
    return [r for r in fake.requests if not r.path.endswith("/images/generations")]


def image_calls(fake: FakeProvider) -> list[RecordedRequest]:
    return [r for r in fake.requests if r.path.endswith("/images/generations")]


def execs(log: TurnLog) -> list[agent.ExecServerMessage]:
    return [m.exec_server_message for m in log.messages if m.HasField("exec_server_message")]


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
async def test_an_approved_image_is_generated_written_by_the_editor_and_read_by_the_model(
    fmt: ProviderFormat,
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
) -> None:
    model = fmt.add_model(server_store, fake)
    mark_image_model(server_store, fake)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    fake.enqueue(fmt.tool_round([generate()], text=["Drawing it."]))
    fake.enqueue(fmt.answer("Here is your fox."))
    session = CursorSession(cursor, "turn-img", workspace=workspace, answer_query=approve_images())
    log = await session.run(turn("draw me a fox", model, workspace))
    assert log.end == {}
    calls = model_calls(fake)
    assert "GenerateImage" in fmt.tool_names(calls[0].json)
    # 1. The approval: wire id 1, the model's arguments as GenerateImageArgs.
    (query,) = queries(log)
    assert query.id == 1
    assert query.generate_image_request_query.tool_call_id == "call_img"
    args = query.generate_image_request_query.args
    assert (args.description, args.aspect_ratio) == (FOX["description"], "16:9")
    # 2. The generation: the marked model, the prompt, the size for 16:9, the image key.
    (generation,) = image_calls(fake)
    assert generation.json == {
        "model": "gpt-image-1",
        "prompt": FOX["description"],
        "n": 1,
        "size": "1536x1024",
    }
    assert generation.header("authorization") == f"Bearer {IMAGE_KEY}"
    # 3. The Write under the next wire id, carrying the PNG's bytes into the workspace.
    (write,) = execs(log)
    assert write.id == 2 and write.exec_id == "call_img"
    assert write.write_args.file_bytes == FAKE_PNG
    path = write.write_args.path
    assert path.startswith(f"{workspace}/images/a-red-fox-asleep-in-the-")
    assert Path(path).read_bytes() == FAKE_PNG
    # 4. The card: started with the args before the query, completed with the path.
    kinds = log.kinds()
    assert kinds.index("tool_call_started") < kinds.index("interaction_query")
    (started,) = updates(log, "tool_call_started")
    assert started.tool_call.generate_image_tool_call.args == args
    (completed,) = updates(log, "tool_call_completed")
    card = completed.tool_call.generate_image_tool_call
    assert card.result.success.file_path == path
    assert completed.tool_call.completed_at_ms >= completed.tool_call.started_at_ms > 0
    # 5. What the model reads.
    assert fmt.tool_results(calls[1].json) == {
        "call_img": (
            f"generated the image and wrote it to {path} ({len(FAKE_PNG)} bytes, 1536x1024)"
        )
    }
    assert "turn_ended" in kinds


async def test_a_declined_image_is_the_users_reason_and_nothing_is_generated(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    mark_image_model(server_store, fake)
    fake.enqueue(fmt.tool_round([generate()]))
    fake.enqueue(fmt.answer("Fine, no picture."))
    session = CursorSession(
        cursor, "turn-no-img", workspace=tmp_path, answer_query=reject_images("not today")
    )
    log = await session.run(turn("draw me a fox", model, tmp_path))
    assert log.end == {}
    assert image_calls(fake) == [] and execs(log) == []
    text = "the user declined to generate the image: not today"
    assert fmt.tool_results(model_calls(fake)[1].json) == {"call_img": text}
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.generate_image_tool_call.result.error.error == text


async def test_generate_image_is_offered_only_while_an_image_model_is_marked(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("no images here"))
    log = await CursorSession(cursor, "turn-plain").run(turn("hi", model, tmp_path))
    assert log.end == {}
    offered = fmt.tool_names(model_calls(fake)[0].json)
    assert "GenerateImage" not in offered and "Write" in offered
    mark_image_model(server_store, fake)
    fake.enqueue(fmt.answer("now I could draw"))
    second = turn("hi again", model, tmp_path)
    second.run_request.conversation_id = "conv-2"
    log = await CursorSession(cursor, "turn-marked").run(second)
    assert log.end == {}
    names = fmt.tool_names(model_calls(fake)[1].json)
    after = offered.index("WebFetch") + 1  # after WebFetch, as in §4.3
    assert names == [*offered[:after], "GenerateImage", *offered[after:]]
    set_image_model(server_store.database, None)  # unmarked: the next run offers the first list
    fake.enqueue(fmt.answer("no images again"))
    third = turn("and again", model, tmp_path)
    third.run_request.conversation_id = "conv-3"
    log = await CursorSession(cursor, "turn-unmarked").run(third)
    assert fmt.tool_names(model_calls(fake)[2].json) == offered


async def test_a_refused_generation_is_an_error_the_model_reads_with_no_key_anywhere(
    fake: FakeProvider,
    server_store: Store,
    cursor: FakeCursor,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    mark_image_model(server_store, fake)
    echo = {"error": {"message": f"Incorrect API key provided: {IMAGE_KEY}."}}
    fake.image_scripts.append(Script.error(401, echo))
    fake.enqueue(fmt.tool_round([generate()]))
    fake.enqueue(fmt.answer("The image service refused."))
    session = CursorSession(cursor, "turn-401", workspace=tmp_path, answer_query=approve_images())
    log = await session.run(turn("draw me a fox", model, tmp_path))
    assert log.end == {}  # the turn goes on: the model reads the failure
    assert len(image_calls(fake)) == 1 and execs(log) == []
    text = (
        "the image could not be generated: the image model refused (401): "
        "Incorrect API key provided: [redacted]."
    )
    assert fmt.tool_results(model_calls(fake)[1].json) == {"call_img": text}
    (completed,) = updates(log, "tool_call_completed")
    assert completed.tool_call.generate_image_tool_call.result.error.error == text
    assert any("image generation failed" in r.getMessage() for r in caplog.records)
    for record in caplog.records:
        assert IMAGE_KEY not in record.getMessage(), record.getMessage()
        assert FAKE_FORMAT_KEY not in record.getMessage(), record.getMessage()
    # Nor in any frame the editor received, nor in what the console answers.
    assert all(IMAGE_KEY.encode() not in m.SerializeToString() for m in log.messages)
    for path in ("/settings/image-model", "/models", "/providers"):
        answer = await cursor.client.get(f"/console/api{path}")
        assert answer.status_code == 200 and IMAGE_KEY not in answer.text


async def test_cancel_while_the_approval_is_pending_ends_canceled_with_no_abort(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[2]
    model = fmt.add_model(server_store, fake)
    mark_image_model(server_store, fake)
    fake.enqueue(fmt.tool_round([generate()]))
    session = CursorSession(cursor, "turn-img-cancel", workspace=tmp_path)  # never answers
    task = asyncio.create_task(session.run(turn("draw", model, tmp_path)))
    for _ in range(200):
        if queries(session.log):
            break
        await asyncio.sleep(0.02)
    assert queries(session.log), "the approval was never asked for"
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
    assert updates(log, "tool_call_completed") == []
    assert image_calls(fake) == [] and len(model_calls(fake)) == 1


async def test_cancel_while_the_image_is_generated_closes_the_request_and_writes_nothing(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor, tmp_path: Path
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    mark_image_model(server_store, fake)
    fake.image_scripts.append(Script.hang_before_headers())
    fake.enqueue(fmt.tool_round([generate()]))
    session = CursorSession(
        cursor, "turn-gen-cancel", workspace=tmp_path, answer_query=approve_images()
    )
    task = asyncio.create_task(session.run(turn("draw", model, tmp_path)))
    generation = await fake.wait_for_request(2, timeout=10)
    assert generation.path.endswith("/images/generations")
    await session.send(cancel_message())
    log = await asyncio.wait_for(task, 10)
    assert log.end == {"error": {"code": "canceled", "message": "run was cancelled"}}
    await asyncio.wait_for(fake.disconnected(1).wait(), 5)
    assert execs(log) == [] and updates(log, "tool_call_completed") == []
    assert not any(m.HasField("exec_server_control_message") for m in log.messages)
