"""A request body that does not fit its type, in words: msgspec's message (``Expected `int`,
got `str` - at `$.models[0].sort_order```) turned into the field it names and what that field
must be (``must be a whole number``), so a form shows it at its place like any other refusal.

Pure text work: the message never holds the value sent, so neither does the result.
"""

from __future__ import annotations

import re

_AT = re.compile(r"^(?P<text>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_EXPECTED = re.compile(r"^Expected `(?P<types>[^`]+)`(?P<rest>.*)$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")
_BOUND = re.compile(r"(>=|<=|>|<) (-?[\d.]+)")

_TYPE_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "number": "a number",
    "str": "text",
    "bool": "true or false",
    "array": "a list",
    "object": "a set of named values",
    "null": "empty",
}
_BOUND_WORDS = {">=": "at least", "<=": "at most", ">": "more than", "<": "less than"}


def _field(path: str, name: str | None = None) -> str:
    """``.models[0].x`` → ``models[0].x``; a missing or unknown key is appended to it."""
    field = path.lstrip(".")
    if name is not None:
        field = f"{field}.{name}" if field else name
    return field


def _expected(types: str, rest: str) -> str:
    words = [_TYPE_WORDS.get(name.strip(), name.strip()) for name in types.split("|")]
    text = "must be " + " or ".join(dict.fromkeys(words))
    length = "characters long" if "length" in rest else None
    bounds = [f"{_BOUND_WORDS[op]} {value}" for op, value in _BOUND.findall(rest)]
    if bounds:
        text += (f", {length}, " if length else ", ") + " and ".join(bounds)
    return text


def typed_problem(message: str) -> tuple[str, str] | None:
    """The field a msgspec validation message names and what is wrong, in words; None when
    it names no field (a body that is not an object at all)."""
    found = _AT.match(message.strip())
    if found is None:
        return None
    text, path = found["text"], found["path"] or ""
    if missing := _MISSING.match(text):
        return _field(path, missing["name"]), "is required"
    if unknown := _UNKNOWN.match(text):
        return _field(path, unknown["name"]), "is not a field this form takes"
    if not path:
        return None
    if expected := _EXPECTED.match(text):
        return _field(path), _expected(expected["types"], expected["rest"])
    return _field(path), text
