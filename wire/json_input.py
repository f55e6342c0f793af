"""JSON from outside the server (a provider's stream or error body, the model's tool
arguments, the editor's checkpoint messages, a console body, a search or image backend).

msgspec decodes with the interpreter's recursion guard, so a document nested deeper than
about a thousand levels (``[[[[…`` a kilobyte long) raises ``RecursionError`` instead of
``msgspec.DecodeError``; every caller catches the latter. Decoding outside input through
here makes such a document one more malformed input, refused with the caller's own error.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

import msgspec

T = TypeVar("T")


@overload
def decode_json(data: bytes | str) -> Any: ...


@overload
def decode_json(data: bytes | str, *, type: type[T]) -> T: ...


def decode_json(data: bytes | str, *, type: Any = Any) -> Any:
    """``msgspec.json.decode``, with too deep a nesting a ``msgspec.DecodeError`` too."""
    try:
        return msgspec.json.decode(data, type=type)
    except RecursionError:
        raise msgspec.DecodeError("JSON is nested too deeply") from None
