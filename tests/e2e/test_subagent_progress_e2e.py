"""A subagent's progress in its checkpoints, end to end: every checkpoint of a child run keeps
its UpdateCurrentStep state under the parent's Task call id, folded from the stored history, so
a rollback to an older state shows that state's progress and nothing the client's state
claims."""

from __future__ import annotations

from store import Store
from tests.e2e.test_task_e2e import PARENT_HEADERS, call, completed_cards, subagent_request
from tests.support.fake_cursor import CursorSession, FakeCursor, TurnLog, user_turn_message
from tests.support.fake_provider import FakeProvider
from tests.support.formats import FORMATS
from wire.proto import agent_v1_pb2 as agent

PARENT_CALL = PARENT_HEADERS["x-parent-agent-tool-call-id"]


def progress(state: agent.ConversationStateStructure) -> agent.CommunicateUpdateTurnState | None:
    states = state.communicate_update_states_by_parent_tool_call_id
    assert set(states) <= {PARENT_CALL}
    return states.get(PARENT_CALL)


def steps(log: TurnLog) -> list[tuple[str, int]]:
    state = progress(log.checkpoints()[-1])
    assert state is not None
    return [(entry.step, entry.message_index) for entry in state.history]


async def test_a_child_runs_checkpoints_keep_its_progress_and_a_rollback_derives_it_again(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[1]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(
        fmt.tool_round(
            [call("call_a", "UpdateCurrentStep", current_step="reading the parser")],
            text=["Starting."],
        )
    )
    fake.enqueue(
        fmt.tool_round(
            [
                call("call_b", "UpdateCurrentStep", current_step="checking the tests"),
                call(
                    "call_c",
                    "UpdateCurrentStep",
                    final_summary="All read.",
                    completed_subtitle="2 files",
                ),
            ]
        )
    )
    fake.enqueue(fmt.answer("Report: nothing wrong."))
    log = await CursorSession(cursor, "turn-child", parent_headers=PARENT_HEADERS).run(
        subagent_request("check the parser", model, subagent_type_name="explore")
    )
    assert log.end == {}
    # The checkpoint holds each step at the index its card showed.
    cards = [c.communicate_update_tool_call for c in completed_cards(log)]
    shown = [(c.args.current_step, c.result.success.message_index) for c in cards[:2]]
    assert steps(log) == shown == [("reading the parser", 2), ("checking the tests", 3)]
    final = progress(log.checkpoints()[-1])
    assert final is not None
    assert (final.final_summary, final.completed_subtitle) == ("All read.", "2 files")
    assert progress(log.checkpoints()[0]) is None  # the user turn alone: no progress yet
    # The settled state after the first round: one step.
    (after_first,) = [
        s
        for s in log.checkpoints()
        if not s.pending_tool_calls and (p := progress(s)) is not None and len(p.history) == 1
    ]
    # Rolled back to it, with a state that claims a step the history does not hold.
    older = agent.ConversationStateStructure()
    older.CopyFrom(after_first)
    older.communicate_update_states_by_parent_tool_call_id[PARENT_CALL].history.add(
        step="claimed by the client", message_index=9
    )
    fake.enqueue(fmt.answer("Checked again."))
    again = user_turn_message(
        "check once more", model, conversation_id="child-conv", message_id="m-again"
    )
    again.run_request.subagent_type_name = "explore"
    again.run_request.conversation_state.CopyFrom(older)
    rolled = await CursorSession(
        cursor, "turn-child-again", parent_headers=PARENT_HEADERS, blobs=log.blobs
    ).run(again)
    assert rolled.end == {}
    assert steps(rolled) == [("reading the parser", 2)]
    rolled_progress = progress(rolled.checkpoints()[-1])
    assert rolled_progress is not None and not rolled_progress.final_summary


async def test_a_run_that_is_no_subagent_leaves_the_progress_map_alone(
    fake: FakeProvider, server_store: Store, cursor: FakeCursor
) -> None:
    fmt = FORMATS[0]
    model = fmt.add_model(server_store, fake)
    fake.enqueue(fmt.answer("hi"))
    message = user_turn_message("hi", model)
    message.run_request.conversation_state.communicate_update_states_by_parent_tool_call_id[
        "call_x"
    ].final_summary = "the client's"
    log = await CursorSession(cursor, "turn-root").run(message)
    assert log.end == {}
    states = log.checkpoints()[-1].communicate_update_states_by_parent_tool_call_id
    assert states["call_x"].final_summary == "the client's"
