"""Fuzzing the console's JSON bodies the way the API reads them: msgspec decodes the body
into the route's type (``console.json_api.decode_body``: 400/422), then the catalog validates and
saves it (``catalog.CatalogError``: 404/409/422). Whatever the body, only those errors come
out, so every refusal is a ``{"code","message"}`` answer and never a 500."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import peewee
import pytest

pytest.importorskip("hypothesis")

from hypothesis import given
from hypothesis import strategies as st

from console.json_api import ApiError, decode_body_bytes
from console.models_api import SaveModelsBody
from console.settings_api import ImageModelBody, ObservabilityBody
from store import catalog as cat
from store import connect_store
from tests.support.fuzz import DEEP_MARK, fuzz_settings, mutated_json

_DIR = Path(tempfile.mkdtemp(prefix="fuzz-console-"))
atexit.register(shutil.rmtree, _DIR, True)


def _fresh(name: str) -> tuple[peewee.Database, int]:
    """A migrated SQLite catalog with one provider (a module-level store: hypothesis runs
    every example of a test in one function call, so a pytest fixture cannot give one)."""
    db = connect_store(f"sqlite:///{_DIR}/{name}.db").database
    seed = cat.ProviderInput(name="seed", type="openai-chat", base_url="http://127.0.0.1:9/v1")
    return db, cat.create_provider(db, seed).id


DB, PROVIDER_ID = _fresh("fuzz")

PROVIDER_BODY = {
    "name": "p",
    "type": "anthropic",
    "base_url": "https://api.example.com/v1",
    "api_key": "sk-x",
    "headers": {"x-team": "blue"},
    "replay_reasoning": True,
    "prompt_cache_key": "auto",
}
MODELS_BODY = {
    "models": [
        {
            "model_id": "m-1",
            "display_name": "M 1",
            "enabled": True,
            "max_output_tokens": 4096,
            "context_window_tokens": 200000,
            "reasoning_enabled": True,
            "reasoning_effort": "high",
            "sort_order": 1,
            "price_input_per_mtok": 1.5,
            "price_output_per_mtok": 6,
        }
    ]
}
OBSERVABILITY_BODY = {"verbose": True, "retained_calls": 100}
WEB_SEARCH_BODY = {"backend": "searxng", "url": "https://search.example.com/", "api_key": None}
IMAGE_MODEL_BODY = {"public_id": "abcd1234"}

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([-1, 0, 2**31, 2**63, 2**64, 10**30, 1e308, -0.0])
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(
        ["", " ", "\x00", "openai-chat", "tavily", "brave", "HIGH", "http://[::1", DEEP_MARK]
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)

Route = tuple[type[Any], Callable[[peewee.Database, int, Any], object]]
ROUTES: dict[str, tuple[dict[str, Any], Route]] = {
    "create provider": (
        PROVIDER_BODY,
        (cat.ProviderInput, lambda db, _, b: cat.create_provider(db, b)),
    ),
    "update provider": (
        PROVIDER_BODY,
        (cat.ProviderInput, lambda db, pid, b: cat.update_provider(db, pid, b)),
    ),
    "save models": (
        MODELS_BODY,
        (SaveModelsBody, lambda db, pid, b: cat.save_models(db, pid, b.models)),
    ),
    "observability": (
        OBSERVABILITY_BODY,
        (
            ObservabilityBody,
            lambda db, _, b: cat.update_observability(
                db,
                **{
                    k: v
                    for k in ("verbose", "retained_calls")
                    if (v := getattr(b, k)) is not msgspec.UNSET
                },
            ),
        ),
    ),
    "web search": (
        WEB_SEARCH_BODY,
        (cat.WebSearchInput, lambda db, _, b: cat.update_web_search(db, b)),
    ),
    "image model": (
        IMAGE_MODEL_BODY,
        (ImageModelBody, lambda db, _, b: cat.set_image_model(db, b.public_id)),
    ),
}


def _apply(route: Route, body: bytes) -> None:
    type_, save = route
    try:
        value = decode_body_bytes(body, type_)
    except ApiError as error:
        assert error.status in (400, 422), error.message
        return
    try:
        save(DB, PROVIDER_ID, value)
    except cat.CatalogError:
        return  # 404 / 409 / 422


@fuzz_settings()
@given(
    st.sampled_from(sorted(ROUTES)).flatmap(
        lambda n: st.tuples(st.just(n), mutated_json(json.dumps(ROUTES[n][0]), JSON_VALUES))
    )
)
def test_console_bodies_are_refused_only_with_api_errors(case: tuple[str, bytes]) -> None:
    name, body = case
    _apply(ROUTES[name][1], body)


def test_the_seed_bodies_are_accepted() -> None:
    """The mutations start from bodies each route saves."""
    db, provider_id = _fresh("seeds")
    for name, (body, (type_, save)) in ROUTES.items():
        if name == "image model":
            continue  # no model of an images API exists here: refused as Invalid, by design
        save(db, provider_id, msgspec.json.decode(json.dumps(body).encode(), type=type_))


def test_integers_beyond_the_columns_are_refused_naming_the_field() -> None:
    """Found by the fuzzer: 2**31 and larger reached the INTEGER columns (OverflowError on
    SQLite, out of range on PostgreSQL) and the console answered 500."""
    for field in ("max_output_tokens", "context_window_tokens", "sort_order"):
        model = dict(MODELS_BODY["models"][0], **{field: 2**63})
        body = msgspec.json.decode(json.dumps({"models": [model]}).encode(), type=SaveModelsBody)
        try:
            cat.save_models(DB, PROVIDER_ID, body.models)
        except cat.Invalid as error:
            assert error.field == f"models[0].{field}"
        else:
            raise AssertionError(f"{field} = 2**63 was saved")
    try:
        cat.update_observability(DB, retained_calls=2**31)
    except cat.Invalid as error:
        assert error.field == "retained_calls"
    else:
        raise AssertionError("retained_calls = 2**31 was saved")
