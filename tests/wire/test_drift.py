"""The drift walker over real encodings: a message encoded by protobuf, then fields and enum
values our schema does not know appended as the wire carries them, decoded again."""

from __future__ import annotations

from tests.support.wire_bytes import fixed32_field, length_field, varint_field
from wire.drift import (
    MAX_FINDINGS,
    NO_DRIFT,
    NOTHING_KNOWN,
    Finding,
    KnownField,
    drift_of,
    known_to_cursor,
)
from wire.drift_tally import DriftCount, DriftTally, combined, key_of, path_key, rpc_path
from wire.proto import agent_v1_pb2 as agent


def _run_request_bytes() -> bytes:
    user = agent.UserMessage(text="hello", message_id="m1", mode=agent.AGENT_MODE_AGENT)
    request = agent.AgentRunRequest(
        conversation_id="c1",
        action=agent.ConversationAction(
            user_message_action=agent.UserMessageAction(user_message=user)
        ),
        requested_model=agent.RequestedModel(model_id="gpt"),
    )
    return request.SerializeToString()


def test_a_message_of_known_fields_has_no_drift() -> None:
    request = agent.AgentRunRequest.FromString(_run_request_bytes())
    assert drift_of(request) is NO_DRIFT


def test_an_unknown_top_level_field_is_named_with_its_wire_type() -> None:
    request = agent.AgentRunRequest.FromString(_run_request_bytes() + varint_field(99, 7))
    assert drift_of(request).findings == (Finding("field", "agent.v1.AgentRunRequest", "99", 0),)


def test_what_cursors_schema_declares_beyond_ours_is_not_drift() -> None:
    """Field 31 of AgentRunRequest and 8 of UserMessage are Cursor's (the shipped baseline),
    and so is value 2 of ``SimulatedMsgReason``: none is reported, unless the baseline is
    left out, which shows the walk found them."""
    user = agent.UserMessage(text="hi").SerializeToString() + length_field(8, b"rich")
    user += varint_field(9, 2)  # simulated_msg_reason: a value only Cursor's schema names
    action = length_field(2, length_field(1, length_field(1, user)))
    request = agent.AgentRunRequest.FromString(_run_request_bytes() + varint_field(31, 1) + action)
    assert drift_of(request) is NO_DRIFT
    assert set(drift_of(request, known=NOTHING_KNOWN).findings) == {
        Finding("field", "agent.v1.AgentRunRequest", "31", 0),
        Finding("field", "agent.v1.UserMessage", "8", 2),
        Finding("enum", "agent.v1.UserMessage", "simulated_msg_reason", 2),
    }
    preview_card = known_to_cursor().fields["agent.v1.AgentRunRequest"][31]
    assert preview_card == KnownField("client_supports_preview_card", frozenset({0}))


def test_a_field_of_cursors_arriving_with_another_wire_type_is_drift() -> None:
    """Field 31 of AgentRunRequest is a bool in Cursor's schema: sent as a message, it
    changed, and that is reported."""
    request = agent.AgentRunRequest.FromString(_run_request_bytes() + length_field(31, b"x"))
    assert drift_of(request).findings == (Finding("field", "agent.v1.AgentRunRequest", "31", 2),)


def test_unknown_fields_deep_inside_are_named_by_their_own_message_type() -> None:
    user = agent.UserMessage(text="hi").SerializeToString() + length_field(40, b"secret text")
    action = length_field(1, length_field(1, user))  # UserMessageAction.user_message
    body = length_field(2, action)  # AgentRunRequest.action
    message = agent.AgentClientMessage.FromString(length_field(1, body + fixed32_field(33, 9)))
    found = drift_of(message).findings
    assert Finding("field", "agent.v1.UserMessage", "40", 2) in found
    assert Finding("field", "agent.v1.AgentRunRequest", "33", 5) in found
    assert len(found) == 2
    assert "secret" not in repr(found)  # a field's content is never part of a finding


def test_an_enum_value_the_schema_cannot_name_is_reported_with_its_field() -> None:
    user = agent.UserMessage(text="hi").SerializeToString() + varint_field(4, 42)  # mode 42
    request = agent.AgentRunRequest.FromString(
        length_field(2, length_field(1, length_field(1, user)))
    )
    assert request.action.user_message_action.user_message.mode == 42  # open enum: kept
    assert drift_of(request).findings == (Finding("enum", "agent.v1.UserMessage", "mode", 42),)


def test_a_known_enum_value_is_not_drift() -> None:
    user = agent.UserMessage(text="hi").SerializeToString() + varint_field(4, agent.AGENT_MODE_PLAN)
    assert drift_of(agent.UserMessage.FromString(user)) is NO_DRIFT


def test_repeated_messages_are_walked_and_each_finding_reported_once() -> None:
    blob = length_field(17, length_field(9, b"x"))  # pre_fetched_blobs, each with field 9
    request = agent.AgentRunRequest.FromString(blob * 3)
    assert len(request.pre_fetched_blobs) == 3
    found = drift_of(request).findings
    assert len(found) == 1 and found[0].name == "9" and found[0].kind == "field"


def test_the_walk_stops_at_its_depth_bound_and_says_so() -> None:
    inner = agent.UserMessage(text="hi").SerializeToString() + varint_field(50, 1)
    request = agent.AgentRunRequest.FromString(
        length_field(2, length_field(1, length_field(1, inner)))
    )
    shallow = drift_of(request, max_depth=1)
    assert shallow.cut and shallow.findings == ()
    assert not drift_of(request).cut and len(drift_of(request).findings) == 1


def test_the_walk_stops_at_its_message_bound_and_says_so() -> None:
    blobs = length_field(17, length_field(9, b"x")) * 10
    request = agent.AgentRunRequest.FromString(blobs + varint_field(99, 1))
    cut = drift_of(request, max_messages=3)
    assert cut.cut
    assert Finding("field", "agent.v1.AgentRunRequest", "99", 0) in cut.findings


def test_findings_are_bounded() -> None:
    extra = b"".join(varint_field(number, 1) for number in range(100, 100 + MAX_FINDINGS + 5))
    drift = drift_of(agent.AgentRunRequest.FromString(extra))
    assert drift.cut and len(drift.findings) == MAX_FINDINGS


def test_rpc_paths_are_told_from_other_paths() -> None:
    assert rpc_path("/aiserver.v1.FooService/Bar") == "/aiserver.v1.FooService/Bar"
    assert rpc_path("/auth/login") is None
    assert rpc_path("/a.b/" + "c" * 300) is None


def test_the_tally_counts_per_key_within_its_bound() -> None:
    tally = DriftTally(max_keys=2)
    field = key_of(Finding("field", "agent.v1.AgentRunRequest", "99", 0), "2.1.3")
    assert tally.add(field, DriftCount(10, 10, 1))
    assert tally.add(field, DriftCount(5, 20, 2))
    assert tally.add(path_key("/a.B/C", ""), DriftCount(7, 7, 1))
    assert not tally.add(path_key("/a.B/D", ""), DriftCount(8, 8, 1))
    assert tally.dropped == 1
    assert tally.counts[field] == DriftCount(5, 20, 3)
    rows = combined(tally.rows(), tally.rows())
    assert [(r.name, r.count) for r in rows] == [("99", 6), ("/a.B/C", 2)]


def test_the_shipped_baseline_names_only_what_our_schema_does_not_declare() -> None:
    """Checked without Cursor's schema at hand: every type of the baseline is one of ours, and
    none of its field numbers or enum values is declared by ours (a field we started to use
    must leave the baseline: regenerate it)."""
    pool = agent.DESCRIPTOR.pool
    known = known_to_cursor()
    assert known.fields and known.enums
    for message_type, fields in known.fields.items():
        declared = pool.FindMessageTypeByName(message_type).fields_by_number
        assert not set(fields) & set(declared), message_type
    for enum_type, values in known.enums.items():
        declared_values = pool.FindEnumTypeByName(enum_type).values_by_number
        assert not set(values) & set(declared_values), enum_type
