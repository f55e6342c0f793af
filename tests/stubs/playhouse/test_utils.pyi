# The query counter of playhouse.test_utils the store tests use, as peewee defines it.
import logging
from types import TracebackType
from typing import Self

class count_queries:
    only_select: bool
    count: int
    def __init__(self, only_select: bool = False) -> None: ...
    def get_queries(self) -> list[logging.LogRecord]: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None: ...
