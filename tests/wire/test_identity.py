"""The user id read from an agent request's bearer token (``wire.identity``)."""

from __future__ import annotations

import base64

import pytest

from tests.support.fake_cursor import login_token as jwt
from wire.identity import (
    ANONYMOUS_USER,
    MAX_TOKEN_CHARS,
    MAX_USER_ID_CHARS,
    is_user_id,
    user_from_authorization,
    user_from_token,
)


def _part(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_email_wins_over_subject_and_is_lower_cased() -> None:
    token = jwt({"sub": "auth0|user_01", "email": "Alice@Example.COM", "exp": 1})
    assert user_from_authorization(f"Bearer {token}") == "alice@example.com"


def test_subject_alone_names_the_user() -> None:
    assert user_from_authorization(f"Bearer {jwt({'sub': 'auth0|user_01'})}") == "auth0|user_01"


def test_the_scheme_is_read_in_any_case_and_the_token_never_returned() -> None:
    token = jwt({"sub": "google-oauth2|42"})
    user = user_from_authorization(f"bearer  {token} ")
    assert user == "google-oauth2|42"
    assert token not in user and token.split(".")[1] not in user


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-jwt",
        "Bearer a.b",
        "Bearer a.b.c.d",
        "Bearer ..",
        "Bearer head.!!!not-base64!!!.sig",
        f"Bearer h.{_part(b'not json')}.s",
        f"Bearer h.{_part(b'[1, 2]')}.s",
        "Bearer h." + _part(b'"a string"') + ".s",
        f"Bearer h.{_part(bytes(range(256)))}.s",
        f"Bearer {jwt({'iss': 'https://authentication.cursor.sh'})}",
        f"Bearer {jwt({'sub': 12, 'email': ['a@b']})}",
        f"Bearer {jwt({'sub': '', 'email': '   '})}",
        "Bearer " + jwt({"sub": "evil\nline"}),
        f"Bearer {jwt({'sub': 'x' * (MAX_USER_ID_CHARS + 1)})}",
    ],
)
def test_no_readable_claim_is_anonymous(header: str | None) -> None:
    assert user_from_authorization(header) == ANONYMOUS_USER


def test_deeply_nested_payload_is_anonymous_not_a_crash() -> None:
    payload = _part(b"[" * 100_000 + b"]" * 100_000)
    assert user_from_token(f"h.{payload}.s") == ANONYMOUS_USER


def test_a_huge_token_is_not_read() -> None:
    claims = {"sub": "bob", "pad": "x" * MAX_TOKEN_CHARS}
    assert user_from_authorization(f"Bearer {jwt(claims)}") == ANONYMOUS_USER
    assert user_from_authorization("Bearer " + "a" * 10_000_000) == ANONYMOUS_USER


def test_an_over_long_email_falls_back_to_the_subject() -> None:
    token = jwt({"sub": "bob", "email": "b" * MAX_USER_ID_CHARS + "@x"})
    assert user_from_token(token) == "bob"
    longest = "s" * MAX_USER_ID_CHARS
    assert user_from_token(jwt({"sub": longest})) == longest


def test_is_user_id() -> None:
    assert is_user_id("alice@example.com")
    assert is_user_id(ANONYMOUS_USER)
    assert not is_user_id("")
    assert not is_user_id(" padded ")
    assert not is_user_id("a\tb")
    assert not is_user_id("x" * (MAX_USER_ID_CHARS + 1))
