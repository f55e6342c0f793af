"""A run's model resolved with its fallbacks (``StoreModelResolver`` over a real SQLite store):
each fallback takes its own stored settings, never the request's; a disabled one is left out
quietly and one whose key does not open with a warning; the route's secrets are every
route's; and the pure decision of which failures fall back."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import peewee
import pytest

from actors.run.model_selection import StoreModelResolver
from store import Store, connect_store
from store import catalog as cat
from store.base.secrets import new_secret_key
from tests.support.fake_cursor import user_turn_message
from wire.providers.fallback import chain_failure_message, may_fall_back
from wire.providers.redaction import route_secrets
from wire.providers.retry import AttemptFailure


def add(db: peewee.Database, name: str, kind: str, **fields: Any) -> str:
    provider = cat.create_provider(
        db,
        cat.ProviderInput(
            name=name, type=kind, base_url=f"https://{name}.example.com/v1", api_key=f"sk-{name}"
        ),
    )
    model = cat.ModelInput(model_id=f"m-{name}", display_name=name, **fields)
    return cat.save_models(db, provider.id, [model])[0].public_id


def test_fallbacks_take_their_own_settings_and_skip_a_disabled_model(tmp_path: Path) -> None:
    store = connect_store(f"sqlite:///{tmp_path}/r.db")
    db = store.database
    off = add(db, "off", "openai-chat", enabled=False)
    claude = add(db, "claude", "anthropic", max_output_tokens=1000, reasoning_effort="low")
    primary = add(db, "primary", "openai-chat", fallbacks=[off, claude])
    message = user_turn_message("hi", primary)
    message.run_request.requested_model.parameters.add(id="effort", value="minimal")
    message.run_request.requested_model.parameters.add(id="context", value="1k")
    route = StoreModelResolver(db)(message.run_request)
    store.close()
    assert route.reasoning.effort == "minimal" and route.context_window_tokens == 1000
    (fallback,) = route.fallbacks
    # Anthropic takes no "minimal": the request's effort stays with the primary.
    assert fallback.public_id == claude and fallback.reasoning.effort == "low"
    assert fallback.context_window_tokens is None and fallback.fallbacks == ()
    assert set(route_secrets(route)) == {"sk-primary", "sk-claude"}
    assert route_secrets(fallback) == ("sk-claude",)


def test_a_fallback_whose_key_does_not_open_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path}/moved.db"
    first: Store = connect_store(url, new_secret_key())
    moved = add(first.database, "moved", "openai-chat")
    first.close()
    store = connect_store(url, new_secret_key())
    primary = add(store.database, "primary", "openai-chat", fallbacks=[moved])
    with caplog.at_level(logging.WARNING, "cursor_server.run"):
        route = StoreModelResolver(store.database)(user_turn_message("hi", primary).run_request)
    store.close()
    assert route.public_id == primary and route.fallbacks == ()
    (line,) = [r.getMessage() for r in caplog.records if "fallback model skipped" in r.getMessage()]
    assert moved in line and "key unreadable" in line


@pytest.mark.parametrize(
    ("failure", "falls_back"),
    [
        (AttemptFailure(503, False, False), True),
        (AttemptFailure(429, False, False), True),
        (AttemptFailure(501, False, False), True),
        (AttemptFailure(None, True, False), True),  # a connection error or a stall
        (AttemptFailure(400, False, False), False),
        (AttemptFailure(401, False, False), False),
        (AttemptFailure(404, False, False), False),
        (AttemptFailure(None, False, False), False),  # our whole-call limit
        (AttemptFailure(503, False, True), False),  # after an event reached the turn
        (AttemptFailure(None, True, True), False),
    ],
)
def test_which_failures_fall_back(failure: AttemptFailure, falls_back: bool) -> None:
    assert may_fall_back(failure) is falls_back


def test_the_last_failure_names_its_model_and_the_fallbacks_tried() -> None:
    assert chain_failure_message("boom", "B", 0, 2, "A") == "boom"
    assert chain_failure_message("boom", "C", 2, 2, "A") == (
        "boom (from C, fallback 2 of 2: 2 fallbacks tried after A failed)"
    )
