"""The numbered migrations' registry: ``@migration(n)`` registers a step, and the list is
checked to be numbered 1..N without gaps or clashes."""

from __future__ import annotations

from collections.abc import Callable

import peewee

Migration = Callable[[peewee.Database], None]


SCHEMA_VERSION_TABLE = "schema_version"


_MIGRATIONS: dict[int, Migration] = {}


class MigrationError(RuntimeError):
    """The migration list itself is inconsistent (a programming error, caught at startup)."""


def migration(version: int) -> Callable[[Migration], Migration]:
    """Register ``fn`` as migration ``version``; the explicit number makes gaps and clashes loud."""

    def register(fn: Migration) -> Migration:
        if version in _MIGRATIONS:
            raise MigrationError(f"migration {version} registered twice ({fn.__name__})")
        _MIGRATIONS[version] = fn
        return fn

    return register


def registered_migrations() -> list[tuple[int, Migration]]:
    """All migrations in order, checked to be numbered 1..N without gaps."""
    versions = sorted(_MIGRATIONS)
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"migration versions must be 1..N without gaps, got {versions}")
    return [(v, _MIGRATIONS[v]) for v in versions]


def latest_version() -> int:
    """The schema version a fully migrated database has."""
    return len(registered_migrations())
