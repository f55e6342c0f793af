"""Secrets at rest: the authenticated cipher for keys stored in the database, and its key.

Every secret the store keeps (a provider's key, its secret-looking header values, a web search
backend's key) is sealed with AES-256-GCM before it is written and opened when a caller needs
the real value. A sealed value is text, so it fits the columns the plaintext used:

    cs-sealed:v1:<key id>:<base64url(nonce ‖ ciphertext ‖ tag)>

The key id is 8 hex digits of HMAC-SHA256(key, "cursor-server key id"): it names the key a
value was sealed under without revealing it, so a database opened with another key says so
instead of "corrupt". The associated data is the value's purpose (``provider api_key``, …): a
sealed value copied into another kind of field does not open.

The key comes from ``CURSOR_SECRET_KEY`` (32 bytes in base64, standard or URL-safe, padding
optional; a Fernet key is one) or, without it, from a key file next to the database, written
with mode 0600 at first start (``run.py`` decides which, ``load_key_file`` reads or makes it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import threading
import weakref
from pathlib import Path

import peewee
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SEALED_PREFIX = "cs-sealed:v1:"
# The variable that gives the key; without it, the key file next to the database.
SECRET_KEY_VARIABLE = "CURSOR_SECRET_KEY"
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_FILE_MODE = 0o600


class SecretKeyInvalid(ValueError):
    """A key that is not 32 bytes of base64; the text never holds the value."""


class SecretUnreadable(Exception):
    """A sealed value that does not open: sealed under another key, or changed since."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_secret_key(text: str) -> bytes:
    """32 bytes from base64 (standard or URL-safe, padding optional); ``SecretKeyInvalid``."""
    compact = text.strip()
    padded = compact + "=" * (-len(compact) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise SecretKeyInvalid(
            f"must be {KEY_BYTES} bytes in base64 (a Fernet key works); it is not base64"
        ) from None
    if len(raw) != KEY_BYTES:
        raise SecretKeyInvalid(
            f"must be {KEY_BYTES} bytes in base64 (a Fernet key works); it decodes to "
            f"{len(raw)} bytes"
        )
    return raw


def new_secret_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


_PROCESS_KEY = new_secret_key()


def process_secret_key() -> bytes:
    """A random key made once per process: an in-memory database's (nothing outlives the
    process, so no other process needs it)."""
    return _PROCESS_KEY


def encode_secret_key(key: bytes) -> str:
    """The key as URL-safe base64 with padding (the form of a Fernet key)."""
    return base64.urlsafe_b64encode(key).decode("ascii")


class SecretBox:
    """Seals and opens the store's secrets under one key. No repr shows the key."""

    __slots__ = ("_aead", "_token_key", "key_id")

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise SecretKeyInvalid(f"must be {KEY_BYTES} bytes")
        self._aead = AESGCM(key)
        self.key_id = hmac.new(key, b"cursor-server key id", hashlib.sha256).hexdigest()[:8]
        self._token_key = hmac.new(key, b"cursor-server derived tokens", hashlib.sha256).digest()

    def __repr__(self) -> str:
        return f"SecretBox(key_id={self.key_id})"

    def token_for(self, purpose: str) -> str:
        """A token every holder of the same key derives alike (instances showing each other
        who they are), from which the key cannot be found."""
        return hmac.new(self._token_key, purpose.encode("utf-8"), hashlib.sha256).hexdigest()

    def seal(self, plaintext: str, purpose: str) -> str:
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode("utf-8"), purpose.encode("utf-8"))
        body = base64.urlsafe_b64encode(nonce + sealed).decode("ascii").rstrip("=")
        return f"{SEALED_PREFIX}{self.key_id}:{body}"

    def open(self, stored: str, purpose: str) -> str:
        """The plaintext of a sealed value; ``SecretUnreadable`` saying why it does not open."""
        key_id, sep, body = stored.removeprefix(SEALED_PREFIX).partition(":")
        if not is_sealed(stored) or not sep:
            raise SecretUnreadable("the stored value is not a sealed secret")
        if key_id != self.key_id:
            raise SecretUnreadable(
                f"it was stored under another secret key (key id {key_id}; this server's is "
                f"{self.key_id})"
            )
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            plain = self._aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], purpose.encode())
        except (binascii.Error, ValueError, InvalidTag):
            raise SecretUnreadable("the stored value was changed or is damaged") from None
        return plain.decode("utf-8")


def is_sealed(stored: str) -> bool:
    return stored.startswith(SEALED_PREFIX)


# --- the box a database's secrets are sealed with -------------------------------------------------

_BOXES: weakref.WeakKeyDictionary[peewee.Database, SecretBox] = weakref.WeakKeyDictionary()
_BOXES_LOCK = threading.Lock()


def bind_secret_box(db: peewee.Database, box: SecretBox) -> None:
    """Make ``box`` the one that seals and opens ``db``'s secrets (``connect_store`` does)."""
    with _BOXES_LOCK:
        _BOXES[db] = box


def secret_box(db: peewee.Database) -> SecretBox:
    """The box bound to ``db``; a database opened without ``connect_store`` has none, and
    reading or writing a secret through it is a programming error, not a silent plaintext."""
    with _BOXES_LOCK:
        box = _BOXES.get(db)
    if box is None:
        raise RuntimeError("this database has no secret key bound (open it with connect_store)")
    return box


# --- the key file ---------------------------------------------------------------------------------


class KeyFileError(Exception):
    """The key file cannot be used; the text names the file, never its content."""


def load_key_file(path: Path) -> tuple[bytes, bool]:
    """The key in ``path``, made first (mode 0600) if there is none: (key, created).

    A new key is written to a private temporary file and linked into place, so a second
    process starting at once reads either no file or a whole one, and the first link wins.
    """
    if not path.exists():
        key = new_secret_key()
        if _create_key_file(path, key):
            return key, True
    return _read_key_file(path), False


def _create_key_file(path: Path, key: bytes) -> bool:
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, KEY_FILE_MODE)
        try:
            os.fchmod(fd, KEY_FILE_MODE)
            os.write(fd, (encode_secret_key(key) + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        return True
    except OSError as exc:
        raise KeyFileError(f"cannot write the secret key file {path}: {exc.strerror}") from None
    finally:
        temporary.unlink(missing_ok=True)


def _read_key_file(path: Path) -> bytes:
    try:
        mode = path.stat().st_mode & 0o777
        text = path.read_text("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not ASCII text"
        raise KeyFileError(f"cannot read the secret key file {path}: {reason}") from None
    if mode & 0o077:
        raise KeyFileError(
            f"the secret key file {path} is open to other users (mode {mode:04o}); "
            "make it private with chmod 600"
        )
    try:
        return parse_secret_key(text)
    except SecretKeyInvalid as exc:
        raise KeyFileError(f"the secret key file {path} {exc}") from None
