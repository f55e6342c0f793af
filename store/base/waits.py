"""What the store calls just before a thread waits in it: for another (its turn on the write
connection, the writer's commit of its writes) or for the disk (a commit it makes itself).

The store knows nothing of who calls it. A scheduler that keeps work on the calling thread (the
actor pool's workers keep the actors their handlers make ready, to run next) registers a hook
here that hands that work to other threads first, so it does not wait for a commit it has no
part in."""

from __future__ import annotations

from collections.abc import Callable

_HOOKS: list[Callable[[], None]] = []


def before_waiting(hook: Callable[[], None]) -> None:
    """Call ``hook`` on the waiting thread before each wait (registered once however often)."""
    if hook not in _HOOKS:
        _HOOKS.append(hook)


def about_to_wait() -> None:
    """The current thread is about to wait on another: run the registered hooks."""
    for hook in _HOOKS:
        hook()
