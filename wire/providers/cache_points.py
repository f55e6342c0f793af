"""Where an Anthropic request puts its prompt-cache breakpoints (at most four).

Anthropic caches the prefix of a request (tools, then system, then messages, block by block)
up to each block marked ``cache_control``, and a later request reads it back only when its own
prefix up to one of its marks is byte-identical. The history we send only grows, so:

- the system prompt's block (or, without one, the last tool) holds the part every call of the
  conversation shares;
- the last message is the newest stable point: the next request (the tool results after it,
  or the next user turn) repeats it unchanged, so it is written here and read there;
- the message before the last assistant message is where the previous request of a tool loop
  or turn ended: marked, the prefix that request wrote is read back even when the blocks added
  since then are more than the API's lookback would search.

Only user messages are marked (the last message and the one before an assistant message always
are), so a mark never lands on a thinking block, which the API refuses.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

# The API refuses a request with more marks than this.
MAX_BREAKPOINTS = 4


class CachePoints(msgspec.Struct, frozen=True):
    """The marks of one request: on the last tool, on the system block, and on the last block
    of each listed message (indexes into the request's message list, ascending)."""

    last_tool: bool = False
    system: bool = False
    messages: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return int(self.last_tool) + int(self.system) + len(self.messages)


def cache_points(has_tools: bool, has_system: bool, roles: Sequence[str]) -> CachePoints:
    """The marks for a request with these parts; ``roles`` are its messages' roles in order
    (alternating, as the Messages API requires)."""
    marked: set[int] = set()
    if roles and roles[-1] == "user":
        marked.add(len(roles) - 1)
    last_assistant = max((i for i, role in enumerate(roles) if role == "assistant"), default=-1)
    if last_assistant > 0 and roles[last_assistant - 1] == "user":
        marked.add(last_assistant - 1)
    points = CachePoints(
        last_tool=has_tools and not has_system,
        system=has_system,
        messages=tuple(sorted(marked)),
    )
    assert points.count <= MAX_BREAKPOINTS
    return points
