"""Where the interpreter lock goes, by layer: reads ``py-spy record --gil -f raw`` output.

Run by hand, against a server under load (``tests.bench.load`` starts one; its pid is the
``tests.bench.load_server`` process)::

    py-spy record --gil --rate 100 --duration 40 -f raw -o gil.raw --pid PID
    python -m tests.bench.gil_layers gil.raw

With ``--gil`` py-spy samples only the thread holding the lock, so every sample is interpreter
time someone spent. Each sample is counted in the layer of its innermost frame; the layers are
the ones ``docs/performance.md`` reports. ``--top N`` also prints the N innermost functions of
ours that took the most samples.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# (layer, patterns matched against a frame's file path), first match wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "thread hand-overs (the pool, pykka, `threading`, `queue`)",
        (
            "/actors/pool/",
            "/pykka/",
            "/threading.py",
            "/queue.py",
            "/concurrent/futures/",
        ),
    ),
    ("the actor/loop crossing (`actors/loop`)", ("/actors/loop/",)),
    (
        "the asyncio loop (scheduling, timers, selector)",
        (
            "/asyncio/",
            "/selectors.py",
            "/heapq.py",
        ),
    ),
    ("httpx (the provider calls)", ("/httpx/", "/httpcore/", "/h11/", "/anyio/", "/sniffio/")),
    ("aiohttp (the edge's requests and responses)", ("/aiohttp/", "/multidict/", "/yarl/")),
    ("our edge and codecs (`wire/`)", ("/wire/", "/google/protobuf/", "/h2/", "/hpack/")),
    (
        "the store (peewee, SQLite, the group commit)",
        ("/store/", "/peewee.py", "/sqlite3/", "/psycopg2/"),
    ),
    ("our actors and prompts", ("/actors/", "/prompt/", "/console/", "/msgspec/")),
    ("logging", ("/logging/",)),
)
OTHER = "other (stdlib)"

_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::(?P<line>\d+))?\)$")


def layer_of(path: str) -> str:
    path = "/" + path.lstrip("/")  # py-spy names a file relative to its sys.path entry
    for name, patterns in LAYERS:
        if any(pattern in path for pattern in patterns):
            return name
    return OTHER


def innermost(stack: str) -> tuple[str, str]:
    """(function, path) of a raw stack's innermost frame of Python code."""
    for frame in reversed(stack.split(";")):
        match = _FRAME.match(frame)
        if match and match["path"].endswith(".py"):
            return match["function"], match["path"]
    return "?", "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("raw", type=Path, help="py-spy record --gil -f raw output")
    parser.add_argument("--top", type=int, default=0, help="also the N functions of ours")
    args = parser.parse_args()
    layers: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    total = 0
    for line in args.raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        function, path = innermost(stack)
        layers[layer_of(path)] += samples
        if path.lstrip("/").startswith(("actors/", "wire/", "store/", "prompt/", "console/")):
            ours[f"{path} {function}"] += samples
        total += samples
    print(f"{total} samples\n\n| where | share of the samples |\n| --- | --- |")
    for name, samples in layers.most_common():
        print(f"| {name} | {samples / total * 100:.0f} % |")
    for name, samples in ours.most_common(args.top):
        print(f"{samples / total * 100:5.1f} %  {name}")


if __name__ == "__main__":
    main()
