"""msgspec's refusals of a body in words: bounds worded by what they count, a pattern kept as a
rule, and a choice's allowed values read from the type, never the value sent."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import msgspec
import pytest

from console.typed_errors import typed_message, typed_problem


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(msgspec.Struct):
    kind: Literal["a", "b"] = "a"


class Body(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(max_length=5)] = ""
    code: Annotated[str, msgspec.Meta(min_length=2)] = "ab"
    tags: Annotated[list[int], msgspec.Meta(max_length=2)] = []
    slug: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")] = "a"
    count: Annotated[int, msgspec.Meta(ge=1, le=9)] = 1
    mode: Literal["on", "off"] | None = None
    color: Color = Color.RED
    inner: list[Inner] = []
    by_user: dict[str, Inner] = {}


def problem_of(body: dict[str, Any]) -> tuple[str, str] | None:
    with pytest.raises(msgspec.ValidationError) as refused:
        msgspec.convert(body, Body)
    return typed_problem(str(refused.value), Body)


SECRET = "sk-SECRET123"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"name": "abcdefg"}, "name", "must be text, at most 5 characters"),
        ({"code": "a"}, "code", "must be text, at least 2 characters"),
        ({"tags": [1, 2, 3]}, "tags", "must be a list, at most 2 items"),
        ({"slug": "A1"}, "slug", "must be text, in the form '^[a-z]+$'"),
        ({"count": 10}, "count", "must be a whole number, at most 9"),
        ({"mode": SECRET}, "mode", "must be one of off, on, null"),
        ({"color": SECRET}, "color", "must be one of red, blue"),
        ({"inner": [{"kind": SECRET}]}, "inner[0].kind", "must be one of a, b"),
        ({"by_user": {"x": {"kind": SECRET}}}, "by_user[...].kind", "must be one of a, b"),
    ],
)
def test_a_refusal_is_worded_by_its_type(body: dict[str, Any], field: str, words: str) -> None:
    assert problem_of(body) == (field, words)


def test_a_choice_without_its_type_still_drops_the_value() -> None:
    message = f"Invalid enum value '{SECRET}' - at `$.mode`"
    assert typed_problem(message) == ("mode", "is not one of the allowed values")
    assert SECRET not in typed_message(f"Invalid enum value '{SECRET}'")
