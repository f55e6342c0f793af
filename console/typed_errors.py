"""A request body that does not fit its type, in words: msgspec's message (``Expected `int`,
got `str` - at `$.models[0].sort_order```) turned into the field it names and what that field
must be (``must be a whole number``), so a form shows it at its place like any other refusal.

Pure text work, and the value sent never passes through: msgspec quotes it in one message,
``Invalid enum value 'sk-…'`` (a key pasted into a choice), which becomes the values the type
allows, read from the type itself; every other message is worded from its type and bounds.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_AT = re.compile(r"^(?P<text>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_EXPECTED = re.compile(r"^Expected `(?P<types>[^`]+)`(?P<rest>.*)$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]+)`$")
_ENUM = re.compile(r"^Invalid enum value\b")
_BOUND = re.compile(r"(>=|<=|>|<) (-?[\d.e+]+)")
_LENGTH = re.compile(r"of length (>=|<=) (\d+)")
_STEP = re.compile(r"\.(?P<name>[^.\[]+)|\[(?P<index>[^\]]*)\]")

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
# What one unit of a length is, by the type msgspec names.
_LENGTH_UNITS = {"str": "characters", "array": "items", "object": "entries"}


def _field(path: str, name: str | None = None) -> str:
    """``.models[0].x`` → ``models[0].x``; a missing or unknown key is appended to it."""
    field = path.lstrip(".")
    if name is not None:
        field = f"{field}.{name}" if field else name
    return field


def _expected(types: str, rest: str) -> str:
    names = [name.strip() for name in types.split("|")]
    words = [_TYPE_WORDS.get(name, name) for name in names]
    text = "must be " + " or ".join(dict.fromkeys(words))
    unit = _LENGTH_UNITS.get(names[0], "long")
    bounds = [f"{_BOUND_WORDS[op]} {value} {unit}" for op, value in _LENGTH.findall(rest)]
    if not bounds:
        bounds = [f"{_BOUND_WORDS[op]} {value}" for op, value in _BOUND.findall(rest)]
    if "matching regex" in rest:
        # The pattern is the type's, never the value sent; shown as the rule it is.
        pattern = rest.split("matching regex", 1)[1].strip()
        bounds.append(f"in the form {pattern}")
    if bounds:
        text += ", " + " and ".join(bounds)
    return text


def _info_at(info: Any, path: str) -> Any:
    """The msgspec type info at ``path`` (``.auto.kind``, ``.models[0].x``) inside ``info``;
    None when the path leaves the type."""
    for step in _STEP.finditer(path):
        info = _inside(info, step["name"])
        if info is None:
            return None
    return info


def _inside(info: Any, name: str | None) -> Any:
    """One step down: a Struct's field ``name``, or (``name`` None) a list's item or a dict's
    value; a union goes down the one member that has the step."""
    if isinstance(info, msgspec.inspect.UnionType):
        found = [_inside(member, name) for member in info.types]
        found = [item for item in found if item is not None]
        return found[0] if len(found) == 1 else None
    if name is None:
        if isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.TupleType)):
            return getattr(info, "item_type", None)
        if isinstance(info, msgspec.inspect.DictType):
            return info.value_type
        return None
    if isinstance(info, msgspec.inspect.StructType):
        for field in info.fields:
            if field.encode_name == name:
                return field.type
    return None


def _choices(info: Any) -> list[str]:
    """The values a Literal or Enum (or a union of them and null) allows, text unquoted."""
    if isinstance(info, msgspec.inspect.UnionType):
        return [value for member in info.types for value in _choices(member)]
    if isinstance(info, msgspec.inspect.LiteralType):
        return [_shown(value) for value in info.values]
    if isinstance(info, msgspec.inspect.EnumType):
        return [_shown(item.value) for item in info.cls]
    if isinstance(info, msgspec.inspect.NoneType):
        return ["null"]
    return []


def _shown(value: object) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _one_of(type_: Any, path: str) -> str:
    """What a field whose value is not among its choices must be, without the value sent."""
    if type_ is None:
        return "is not one of the allowed values"
    choices = _choices(_info_at(msgspec.inspect.type_info(type_), path))
    if not choices:
        return "is not one of the allowed values"
    return "must be one of " + ", ".join(dict.fromkeys(choices))


def typed_problem(message: str, type_: Any = None) -> tuple[str, str] | None:
    """The field a msgspec validation message names and what is wrong, in words; None when
    it names no field (a body that is not an object at all). ``type_`` is the type decoded,
    where the allowed values of a choice are read from."""
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
    if _ENUM.match(text):
        return _field(path), _one_of(type_, path)
    if expected := _EXPECTED.match(text):
        return _field(path), _expected(expected["types"], expected["rest"])
    return _field(path), text


def typed_message(message: str) -> str:
    """msgspec's whole message for a body that names no field, the value sent left out."""
    text = _AT.match(message.strip())
    if text is not None and _ENUM.match(text["text"]):
        return "a value is not one of the allowed values"
    return message
