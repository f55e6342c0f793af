"""The ``user`` query parameter the Calls and Dashboard routes share: one user's calls
(``llm_calls.user_id``, ``wire.identity``)."""

from __future__ import annotations

from aiohttp import web

from wire.identity import MAX_USER_ID_CHARS, is_user_id


def user_query(request: web.Request) -> str | None:
    """The ``user`` query parameter (None: absent or empty); ``ValueError`` when it could be
    no user id."""
    user = request.query.get("user") or None
    if user is not None and not is_user_id(user):
        raise ValueError(
            f"user must be a user id (visible characters, at most {MAX_USER_ID_CHARS}), "
            f"got {user[:40]!r}"
        )
    return user
