"""The routing decision (``wire.model_routing``), sans-IO: an asked id, the routing settings and
our models in, one of our public ids or RELAY out."""

from __future__ import annotations

import pytest

from wire.model_routing import (
    NO_MODEL,
    RELAY,
    AutoTarget,
    OurModel,
    Relay,
    RouteEntry,
    Routing,
    mapped_model,
    requested_model_id,
    route_model,
)
from wire.proto import agent_v1_pb2 as agent

FIRST, SECOND, OFF = "aaaa0001", "bbbb0002", "cccc0003"
MODELS = (OurModel(OFF, False), OurModel(FIRST, True), OurModel(SECOND, True))
TABLE = (
    RouteEntry("claude-*", SECOND),
    RouteEntry("claude-4.5-sonnet", FIRST),
    RouteEntry("*-fast", OFF),
    RouteEntry("*", FIRST),
)


@pytest.mark.parametrize(
    "asked", ["", "default", "auto", "Default", "default/high", "auto//1m/fast"]
)
def test_auto_runs_on_the_first_enabled_model_with_no_setting(asked: str) -> None:
    assert route_model(asked, Routing(), MODELS) == FIRST


@pytest.mark.parametrize("asked", ["", "default", "auto"])
def test_auto_follows_its_setting(asked: str) -> None:
    to_second = Routing(AutoTarget("model", SECOND))
    assert route_model(asked, to_second, MODELS) == SECOND
    # A disabled model is still the answer: the run refuses it, saying so, never relays.
    assert route_model(asked, Routing(AutoTarget("model", OFF)), MODELS) == OFF
    assert route_model(asked, Routing(AutoTarget("cursor")), MODELS) is RELAY


def test_auto_with_no_enabled_model_is_relayed_but_no_id_at_all_stays() -> None:
    assert route_model("default", Routing(), (OurModel(OFF, False),)) is RELAY
    assert route_model("auto", Routing(), ()) is RELAY
    assert route_model("", Routing(), (OurModel(OFF, False),)) is NO_MODEL
    assert route_model("", Routing(AutoTarget("cursor")), MODELS) is RELAY


def test_auto_never_reads_the_table() -> None:
    everything = Routing(AutoTarget("cursor"), (RouteEntry("*", SECOND),))
    assert route_model("default", everything, MODELS) is RELAY
    assert route_model("gpt-5", everything, MODELS) == SECOND


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        (FIRST, FIRST),
        (OFF, OFF),  # ours, though disabled
        (f"{SECOND}/high/272k/fast", SECOND),
        ("claude-4.5-sonnet", FIRST),  # exact beats the earlier pattern
        ("claude-4.5-sonnet/high", FIRST),  # suffixes split off before matching
        ("claude-4-opus", SECOND),  # the first pattern in table order
        ("gpt-5-fast", OFF),
        ("composer-1", FIRST),  # the catch-all
        ("ABCDEF12", FIRST),  # not ours (ours are lower-case): the table decides
    ],
)
def test_ours_then_exact_entries_then_patterns_in_order(asked: str, expected: str) -> None:
    assert route_model(asked, Routing(routes=TABLE), MODELS) == expected


@pytest.mark.parametrize("asked", ["composer-1", "gpt-5", "ddddeeee", "abcdef1", "claude"])
def test_an_id_nothing_maps_is_relayed(asked: str) -> None:
    table = (RouteEntry("claude-*", SECOND), RouteEntry("gpt-4o", FIRST))
    assert route_model(asked, Routing(routes=table), MODELS) is RELAY


def test_patterns_take_star_only_and_match_the_whole_id() -> None:
    table = (RouteEntry("gpt-?.[1]", FIRST), RouteEntry("o*3", SECOND))
    assert mapped_model("gpt-?.[1]", table) == FIRST
    assert mapped_model("gpt-5.1", table) is None
    assert mapped_model("o3", table) == SECOND
    assert mapped_model("o4-mini-3", table) == SECOND
    assert mapped_model("xo3", table) is None


def test_the_asked_id_is_requested_model_else_model_details() -> None:
    both = agent.AgentRunRequest(
        requested_model=agent.RequestedModel(model_id="default"),
        model_details=agent.ModelDetails(model_id="gpt-5"),
    )
    assert requested_model_id(both) == "default"
    details = agent.AgentRunRequest(model_details=agent.ModelDetails(model_id="gpt-5"))
    assert requested_model_id(details) == "gpt-5"
    assert requested_model_id(agent.AgentRunRequest()) == ""


def test_relay_is_one_value() -> None:
    assert isinstance(RELAY, Relay)
