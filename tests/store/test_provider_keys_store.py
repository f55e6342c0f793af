"""A provider's key pool in the store (migration 14), on SQLite and PostgreSQL: keys sealed
at rest, labels checked and unique per provider, the pool's order and limit, the provider's own
key kept, the pool in a model's route, and the keys going with their provider."""

from __future__ import annotations

import pytest

from store import Store
from store import catalog as cat
from store.base.secrets import SEALED_PREFIX
from store.base.typed_peewee import execute_sql

OWN = "sk-own-key-1111"
SECOND = "sk-second-key-2222"
THIRD = "sk-third-key-3333"


def provider(store: Store, api_key: str = OWN) -> int:
    return cat.create_provider(
        store.database,
        cat.ProviderInput(
            name="Pool", type="openai-chat", base_url="https://example.com/v1", api_key=api_key
        ),
    ).id


def add(store: Store, provider_id: int, label: str, key: str) -> cat.ProviderKeyRecord:
    return cat.add_provider_key(store.database, provider_id, cat.ProviderKeyInput(label, key))


def test_keys_are_sealed_listed_in_order_and_routed(opened: Store) -> None:
    pid = provider(opened)
    second = add(opened, pid, "  second ", SECOND)
    third = add(opened, pid, "third", THIRD)
    assert second.label == "second" and second.position == 1 and third.position == 2
    records = cat.list_provider_keys(opened.database, pid)
    assert [(r.id, r.label, r.main, r.has_api_key) for r in records] == [
        (0, "main", True, True),
        (second.id, "second", False, True),
        (third.id, "third", False, True),
    ]
    stored = execute_sql(opened.database, 'SELECT "api_key" FROM "provider_keys"').fetchall()
    assert all(value.startswith(SEALED_PREFIX) for (value,) in stored)
    assert not any(key in repr(stored) for key in (SECOND, THIRD))
    models = [cat.ModelInput(model_id="m", display_name="M")]
    public_id = cat.save_models(opened.database, pid, models)[0].public_id
    parts = cat.model_route_parts(opened.database, public_id)
    assert parts is not None
    connection = parts[1]
    assert connection.api_key == OWN  # what discovery and image generation send
    assert [(k.key_id, k.label, k.api_key) for k in connection.keys] == [
        (0, "main", OWN),
        (second.id, "second", SECOND),
        (third.id, "third", THIRD),
    ]
    assert SECOND not in repr(connection) and OWN not in repr(connection.keys)


def test_a_provider_without_its_own_key_routes_its_other_keys(opened: Store) -> None:
    pid = provider(opened, api_key="")
    conn = cat.provider_connection(opened.database, pid)
    assert conn is not None and [(k.key_id, k.api_key) for k in conn.keys] == [(0, "")]
    key = add(opened, pid, "only", SECOND)
    conn = cat.provider_connection(opened.database, pid)
    assert conn is not None and [(k.key_id, k.api_key) for k in conn.keys] == [(key.id, SECOND)]


def test_relabel_and_replace_keys_including_the_providers_own(opened: Store) -> None:
    pid = provider(opened)
    key = add(opened, pid, "second", SECOND)
    update = cat.ProviderKeyUpdate
    main = cat.update_provider_key(opened.database, pid, 0, update(label="primary"))
    assert (main.id, main.label, main.main) == (0, "primary", True)
    cat.update_provider_key(opened.database, pid, key.id, update(api_key=THIRD))
    conn = cat.provider_connection(opened.database, pid)
    assert conn is not None
    assert [(k.label, k.api_key) for k in conn.keys] == [("primary", OWN), ("second", THIRD)]
    cleared = cat.update_provider_key(opened.database, pid, 0, update(api_key=""))
    assert not cleared.has_api_key
    with pytest.raises(cat.Invalid, match=r"^api_key: "):
        cat.update_provider_key(opened.database, pid, key.id, update(api_key=""))
    with pytest.raises(cat.Invalid, match=r"^label: .*'primary'"):
        cat.update_provider_key(opened.database, pid, key.id, update(label="primary"))
    with pytest.raises(cat.NotFound):
        cat.update_provider_key(opened.database, pid, key.id + 100, update(label="x"))


@pytest.mark.parametrize(
    ("label", "key", "field"),
    [
        ("", SECOND, "label"),
        ("   ", SECOND, "label"),
        ("x" * 65, SECOND, "label"),
        ("main", SECOND, "label"),  # the provider's own key's label
        ("ok", "", "api_key"),
        ("ok", "has space", "api_key"),
        ("ok", SEALED_PREFIX + "x", "api_key"),
    ],
)
def test_bad_keys_are_refused_naming_the_field(
    opened: Store, label: str, key: str, field: str
) -> None:
    pid = provider(opened)
    with pytest.raises(cat.Invalid) as refused:
        add(opened, pid, label, key)
    assert refused.value.field == field
    assert key == "" or key not in refused.value.message


def test_a_pool_holds_at_most_its_limit_and_the_own_key_stays(opened: Store) -> None:
    pid = provider(opened)
    for n in range(cat.MAX_KEYS_PER_PROVIDER - 1):
        add(opened, pid, f"k{n}", f"sk-{n}")
    with pytest.raises(cat.Conflict, match="16 keys"):
        add(opened, pid, "one-more", "sk-more")
    with pytest.raises(cat.Conflict, match="own key cannot be deleted"):
        cat.delete_provider_key(opened.database, pid, 0)
    records = cat.list_provider_keys(opened.database, pid)
    cat.delete_provider_key(opened.database, pid, records[1].id)
    with pytest.raises(cat.NotFound):
        cat.delete_provider_key(opened.database, pid, records[1].id)
    add(opened, pid, "one-more", "sk-more")  # room again
    assert cat.list_provider_keys(opened.database, pid)[-1].label == "one-more"


def test_labels_are_per_provider_and_keys_go_with_their_provider(opened: Store) -> None:
    first, second = provider(opened), provider(opened)
    add(opened, first, "shared", SECOND)
    add(opened, second, "shared", THIRD)
    with pytest.raises(cat.NotFound):
        cat.list_provider_keys(opened.database, 999)
    key = cat.list_provider_keys(opened.database, second)[1]
    with pytest.raises(cat.NotFound):  # another provider's key
        cat.delete_provider_key(opened.database, first, key.id)
    cat.delete_provider(opened.database, first)
    rows = execute_sql(opened.database, 'SELECT "provider_id" FROM "provider_keys"').fetchall()
    assert [row[0] for row in rows] == [second]


def test_a_key_added_after_deletes_goes_after_every_stored_key(opened: Store) -> None:
    pid = provider(opened)
    first, second = add(opened, pid, "a", SECOND), add(opened, pid, "b", THIRD)
    kept = [add(opened, pid, label, f"sk-{label}-key-4444") for label in ("c", "d")]
    for doomed in (first, second):
        cat.delete_provider_key(opened.database, pid, doomed.id)
    added = add(opened, pid, "e", "sk-e-key-5555")
    records = cat.list_provider_keys(opened.database, pid)
    assert [r.label for r in records] == ["main", "c", "d", "e"]
    assert added.position == records[-1].position == 3
    assert [r.id for r in records[1:3]] == [k.id for k in kept]
