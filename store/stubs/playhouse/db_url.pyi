# The one function of playhouse.db_url the store calls (``store.database``), as peewee defines it.
from typing import Any

def parse(
    url: str, unquote_password: bool = False, unquote_user: bool = False
) -> dict[str, Any]: ...
