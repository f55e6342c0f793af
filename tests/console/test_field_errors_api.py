"""A refused console save names every broken field at once, each with its own message in
words (``fields``), beside the usual ``code`` and ``message``: the forms show each at its place."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from store.catalog.budgets import MAX_BUDGET_USER_ID_CHARS
from store.catalog.errors import MAX_PROBLEMS
from tests.console.test_console_api import Console, console

__all__ = ["console"]


def fields_of(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] == "invalid_argument"
    fields = {item["field"]: item["message"] for item in body["fields"]}
    # The message still names each field (clients that read only it keep working).
    for field, message in fields.items():
        assert f"{field}: {message}" in body["message"]
        assert not message.startswith(f"{field}:")
    return fields


async def test_a_provider_with_every_field_wrong_names_them_all(console: Console) -> None:
    body = {
        "name": " ",
        "type": "nope",
        "base_url": "ftp://example.com",
        "api_key": "has space",
        "prompt_cache_key": "sometimes",
        "headers": {"Bad Name": "x", "X-Ok": "bad\u0001value"},
    }
    fields = fields_of(await console.call("POST", "/providers", json=body))
    assert set(fields) == {
        "name",
        "type",
        "base_url",
        "api_key",
        "prompt_cache_key",
        "headers.Bad Name",
        "headers.X-Ok",
    }
    assert fields["name"] == "provider name cannot be empty"
    assert "http:// or https://" in fields["base_url"]
    assert "has space" not in console.bodies[-1]  # a refused key is never shown back
    created = await console.provider()
    edited = {**body, "headers": {}}
    fields = fields_of(await console.call("PUT", f"/providers/{created['id']}", json=edited))
    assert set(fields) == {"name", "type", "base_url", "api_key", "prompt_cache_key"}


async def test_a_model_with_every_field_wrong_names_them_all(console: Console) -> None:
    provider = await console.provider(type="anthropic", base_url="https://api.example.com/v1")
    model: dict[str, Any] = {
        "model_id": "m",
        "display_name": " ",
        "enabled": True,
        "max_output_tokens": 0,
        "context_window_tokens": -5,
        "reasoning_effort": "extreme",
        "price_input_per_mtok": -1,
        "price_output_per_mtok": -2,
        "price_cache_read_per_mtok": -3,
        "price_cache_write_per_mtok": -4,
    }
    fields = fields_of(await console.save(provider["id"], model, {**model, "model_id": " "}))
    one = {
        "display_name",
        "max_output_tokens",
        "context_window_tokens",
        "reasoning_effort",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "price_cache_read_per_mtok",
        "price_cache_write_per_mtok",
    }
    assert set(fields) == {f"models[0].{n}" for n in one} | {f"models[1].{n}" for n in one} | {
        "models[1].model_id"
    }
    assert "USD per million tokens, at least 0" in fields["models[0].price_input_per_mtok"]
    listed = await console.call("GET", "/models")
    assert listed.json() == []  # nothing saved


async def test_keys_routing_and_budgets_name_every_field(console: Console) -> None:
    provider = await console.provider()
    keys = f"/providers/{provider['id']}/keys"
    fields = fields_of(await console.call("POST", keys, json={"label": " ", "api_key": ""}))
    assert fields == {"label": "cannot be empty", "api_key": "cannot be empty"}

    routes = [{"pattern": "", "public_id": "nope"}, {"pattern": "a/b", "public_id": "gone"}]
    auto = {"kind": "model", "public_id": "missing"}
    body = {"auto": auto, "routes": routes}
    fields = fields_of(await console.call("PUT", "/settings/routing", json=body))
    assert set(fields) == {
        "auto.public_id",
        "routes[0].pattern",
        "routes[0].public_id",
        "routes[1].pattern",
        "routes[1].public_id",
    }

    limits = {"usd_per_day": -1, "usd_per_month": -1, "turns_per_minute": 0, "concurrent_runs": 0}
    body = {"default": limits, "overrides": {"alice": limits}}
    fields = fields_of(await console.call("PUT", "/settings/budgets", json=body))
    names = ("usd_per_day", "usd_per_month", "turns_per_minute", "concurrent_runs")
    assert set(fields) == {f"default.{n}" for n in names} | {
        f"overrides['alice'].{n}" for n in names
    }


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"retained_calls": 0}, "retained_calls", "must be a whole number, at least 1"),
        ({"retained_calls": None}, "retained_calls", "must be a whole number"),
        ({"verbose": "yes"}, "verbose", "must be true or false"),
        ({"verbose": True, "kept": 3}, "kept", "is not a field this form takes"),
    ],
)
async def test_a_body_of_the_wrong_type_names_its_field_in_words(
    console: Console, body: dict[str, Any], field: str, words: str
) -> None:
    response = await console.call("PUT", "/settings/observability", json=body)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["fields"] == [{"field": field, "message": words}]
    assert answer["message"].startswith("invalid request body: ")


async def test_a_missing_field_is_named(console: Console) -> None:
    response = await console.call("POST", "/providers", json={"name": "x", "type": "openai-chat"})
    assert response.json()["fields"] == [{"field": "base_url", "message": "is required"}]


SECRET = "sk-SECRET123-do-not-echo"


async def test_a_choice_sent_a_key_names_the_choices_and_never_the_key(console: Console) -> None:
    body = {"auto": {"kind": SECRET, "public_id": None}}
    response = await console.call("PUT", "/settings/routing", json=body)
    assert response.status_code == 422, response.text
    assert SECRET not in response.text
    answer = response.json()
    words = "must be one of cursor, first-enabled, model"
    assert answer["fields"] == [{"field": "auto.kind", "message": words}]
    assert answer["message"] == f"invalid request body: auto.kind: {words}"


async def test_every_422_carries_fields_login_and_a_body_that_is_no_object(
    console: Console,
) -> None:
    response = await console.call("POST", "/login", json={"token": 5})
    assert response.status_code == 422, response.text
    assert response.json()["fields"] == [{"field": "token", "message": "must be text"}]
    response = await console.call("POST", "/login", json={"token": SECRET, "more": 1})
    assert response.json()["fields"] == [
        {"field": "more", "message": "is not a field this form takes"}
    ]
    assert SECRET not in response.text
    response = await console.call("PUT", "/settings/observability", json=[1])
    assert response.status_code == 422, response.text
    assert response.json()["fields"] == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"backend": "tavily", "url": "https://api.tavily.com"},
            {
                "url": "Tavily has a fixed address; leave it empty",
                "api_key": "Tavily needs an API key",
            },
        ),
        (
            {"backend": "brave", "url": "https://x.example", "api_key": "has space"},
            {
                "url": "Brave Search has a fixed address; leave it empty",
                "api_key": "must be printable ASCII without spaces or control characters",
            },
        ),
        (
            {"backend": "searxng", "url": "ftp://x", "api_key": "k"},
            {
                "url": "must be an http:// or https:// URL with a host",
                "api_key": "a SearXNG instance takes no key",
            },
        ),
    ],
)
async def test_the_web_search_form_names_every_field(
    console: Console, body: dict[str, Any], expected: dict[str, str]
) -> None:
    response = await console.call("PUT", "/settings/web-search", json=body)
    assert fields_of(response) == expected
    assert "has space" not in response.text
    shown = (await console.call("GET", "/settings/web-search")).json()
    assert shown["backend"] is None  # nothing saved


async def test_a_refusal_names_at_most_its_limit_of_problems_and_counts_the_rest(
    console: Console,
) -> None:
    provider = await console.provider()
    broken = [
        {"model_id": f"m{i}", "display_name": " ", "max_output_tokens": 0} for i in range(100)
    ]
    response = await console.save(provider["id"], *broken)
    assert response.status_code == 422, response.text
    body = response.json()
    *named, rest = body["fields"]
    assert len(named) == MAX_PROBLEMS
    assert named[:2] == [
        {"field": "models[0].display_name", "message": "display name cannot be empty"},
        {
            "field": "models[0].max_output_tokens",
            "message": "must be a positive integer up to 2147483647",
        },
    ]
    assert rest == {"field": "", "message": f"and {200 - MAX_PROBLEMS} more problems"}
    assert body["message"].endswith(f"; and {200 - MAX_PROBLEMS} more problems")
    assert body["message"].count("display name cannot be empty") == MAX_PROBLEMS // 2
    assert "models[99]" not in response.text

    limits = {"usd_per_day": -1, "usd_per_month": -1, "turns_per_minute": 0, "concurrent_runs": 0}
    overrides = {f"user{i}": limits for i in range(100)}
    response = await console.call("PUT", "/settings/budgets", json={"overrides": overrides})
    *named, rest = response.json()["fields"]
    assert len(named) == MAX_PROBLEMS
    assert rest == {"field": "", "message": f"and {400 - MAX_PROBLEMS} more problems"}


async def test_a_too_long_user_id_is_named_once_and_never_in_a_field_name(
    console: Console,
) -> None:
    long_id = "u" * (MAX_BUDGET_USER_ID_CHARS + 1)
    limits = {"usd_per_day": -1, "turns_per_minute": 0}
    response = await console.call("PUT", "/settings/budgets", json={"overrides": {long_id: limits}})
    fields = fields_of(response)
    limit = MAX_BUDGET_USER_ID_CHARS
    assert fields == {"overrides": f"is longer than {limit} characters ({limit + 1})"}
    assert long_id not in response.text


async def models_and_settings(console: Console) -> tuple[Any, Any]:
    """Everything a model save may write: the models (their fallbacks in them) and the image
    model's mark."""
    models = (await console.call("GET", "/models")).json()
    image = (await console.call("GET", "/settings/image-model")).json()
    return models, image


async def test_a_check_only_save_of_a_valid_body_writes_nothing_and_says_so(
    console: Console,
) -> None:
    provider = await console.provider()
    saved = await console.save(provider["id"], {"model_id": "m", "display_name": "M"})
    assert saved.status_code == 201, saved.text
    (first,) = saved.json()
    before = await models_and_settings(console)
    # An edit of the saved model and a new one that falls back to it: all valid.
    edited = {"model_id": "m", "display_name": "Renamed", "sort_order": 7, "kind": "chat"}
    new = {
        "model_id": "n",
        "display_name": "N",
        "price_input_per_mtok": 1,
        "fallbacks": [first["public_id"]],
    }
    path = f"/providers/{provider['id']}/models?check=1"
    answer = await console.call("POST", path, json={"models": [edited, new]})
    assert answer.status_code == 204, answer.text
    assert answer.content == b""
    assert await models_and_settings(console) == before  # nothing written


async def test_a_check_only_save_names_every_problem_and_writes_nothing(
    console: Console,
) -> None:
    """The model editor's check when the browser could not read a box: the server's answer
    names every problem of the rest of the body, as a save's would, and nothing changes."""
    provider = await console.provider()
    saved = await console.save(provider["id"], {"model_id": "m", "display_name": "M"})
    assert saved.status_code == 201, saved.text
    before = await models_and_settings(console)
    broken = {
        "model_id": "m",
        "display_name": " ",
        "max_output_tokens": 0,
        "context_window_tokens": -5,
        "sort_order": 2**31,
        "price_input_per_mtok": -1,
        "price_cache_write_per_mtok": -4,
    }
    path = f"/providers/{provider['id']}/models?check=1"
    fields = fields_of(await console.call("POST", path, json={"models": [broken]}))
    assert set(fields) == {
        f"models[0].{name}"
        for name in (
            "display_name",
            "max_output_tokens",
            "context_window_tokens",
            "sort_order",
            "price_input_per_mtok",
            "price_cache_write_per_mtok",
        )
    }
    # The rules that need the store run too: a fallback that does not exist.
    lost = {"model_id": "m", "display_name": "M", "fallbacks": ["nope"]}
    fields = fields_of(await console.call("POST", path, json={"models": [lost]}))
    assert set(fields) == {"models[0].fallbacks[0]"}
    # And adding by hand an id already saved.
    again = {"models": [{"model_id": "m", "display_name": "M"}], "only_new": True}
    fields = fields_of(await console.call("POST", path, json=again))
    assert set(fields) == {"models[0].model_id"}
    assert await models_and_settings(console) == before


@pytest.mark.parametrize("value", ["0", "true", "", "yes"])
async def test_a_check_flag_other_than_1_is_refused_and_nothing_saved(
    console: Console, value: str
) -> None:
    """Only ``check=1`` checks; any other value is refused, never taken for a save."""
    provider = await console.provider()
    path = f"/providers/{provider['id']}/models?check={value}"
    model = {"model_id": "m", "display_name": "M"}
    answer = await console.call("POST", path, json={"models": [model]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "invalid_argument"
    assert (await console.call("GET", "/models")).json() == []


async def test_a_check_only_save_for_an_unknown_provider_is_404(console: Console) -> None:
    model = {"model_id": "m", "display_name": "M"}
    answer = await console.call("POST", "/providers/999/models?check=1", json={"models": [model]})
    assert answer.status_code == 404, answer.text


async def test_a_refused_effort_is_not_echoed(console: Console) -> None:
    provider = await console.provider()
    model = {"model_id": "m", "display_name": "M", "reasoning_effort": "sk-SECRET-effort-123"}
    fields = fields_of(await console.save(provider["id"], model))
    assert set(fields) == {"models[0].reasoning_effort"}
    assert "secret-effort" not in console.bodies[-1].lower()
