"""The cipher of secrets at rest (``store.base.secrets``): what seals opens only under its key and
purpose, a changed value never opens, and the key's forms and file are checked."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from store.base.secrets import (
    KEY_BYTES,
    SEALED_PREFIX,
    KeyFileError,
    SecretBox,
    SecretKeyInvalid,
    SecretUnreadable,
    load_key_file,
    new_secret_key,
    parse_secret_key,
)

PLAIN = "sk-live-0123456789abcdef"


def test_a_sealed_value_round_trips_and_holds_no_plaintext() -> None:
    box = SecretBox(new_secret_key())
    sealed = box.seal(PLAIN, "provider api_key")
    assert sealed.startswith(f"{SEALED_PREFIX}{box.key_id}:")
    assert PLAIN not in sealed
    assert box.open(sealed, "provider api_key") == PLAIN
    # A fresh nonce each time: the same key never seals to the same text twice.
    assert box.seal(PLAIN, "provider api_key") != sealed
    assert repr(box) == f"SecretBox(key_id={box.key_id})"


def test_a_changed_value_or_another_purpose_does_not_open() -> None:
    box = SecretBox(new_secret_key())
    sealed = box.seal(PLAIN, "provider api_key")
    body = sealed.rsplit(":", 1)[1]
    flipped = body[:-3] + ("A" if body[-3] != "A" else "B") + body[-2:]
    for damaged in (sealed.rsplit(":", 1)[0] + ":" + flipped, sealed[:-10], sealed + "x"):
        with pytest.raises(SecretUnreadable, match="changed or is damaged"):
            box.open(damaged, "provider api_key")
    with pytest.raises(SecretUnreadable, match="changed or is damaged"):
        box.open(sealed, "web search api_key")
    with pytest.raises(SecretUnreadable, match="not a sealed secret"):
        box.open(PLAIN, "provider api_key")


def test_another_key_fails_with_a_typed_error_naming_both_key_ids() -> None:
    first, second = SecretBox(new_secret_key()), SecretBox(new_secret_key())
    sealed = first.seal(PLAIN, "provider api_key")
    with pytest.raises(SecretUnreadable) as caught:
        second.open(sealed, "provider api_key")
    assert caught.value.reason == (
        f"it was stored under another secret key (key id {first.key_id}; this server's is "
        f"{second.key_id})"
    )
    assert PLAIN not in str(caught.value)


def test_the_key_is_32_bytes_of_base64_a_fernet_key_among_them() -> None:
    raw = os.urandom(KEY_BYTES)
    standard = base64.b64encode(raw).decode()
    for text in (standard, standard.rstrip("="), base64.urlsafe_b64encode(raw).decode()):
        assert parse_secret_key(f" {text}\n") == raw
    fernet = Fernet.generate_key().decode()
    assert len(parse_secret_key(fernet)) == KEY_BYTES
    for bad, reason in (("not base64!", "not base64"), (base64.b64encode(b"short"), "5 bytes")):
        text = bad if isinstance(bad, str) else bad.decode()
        with pytest.raises(SecretKeyInvalid, match=reason) as caught:
            parse_secret_key(text)
        assert text not in str(caught.value)


def test_the_key_file_is_made_once_private_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "server.db.key"
    key, created = load_key_file(path)
    assert created and len(key) == KEY_BYTES
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_key_file(path) == (key, False)
    assert [p.name for p in tmp_path.iterdir()] == ["server.db.key"]  # no temporary left


def test_a_key_file_open_to_others_or_damaged_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "server.db.key"
    load_key_file(path)
    path.chmod(0o644)
    with pytest.raises(KeyFileError, match=f"{path} is open to other users .mode 0644"):
        load_key_file(path)
    path.write_text("garbage\n")
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match=f"{path} must be 32 bytes in base64") as caught:
        load_key_file(path)
    assert "garbage" not in str(caught.value)
