# playhouse ships no stubs and peewee's cover only ``peewee``: the store's one use is typed here
# (``db_url.pyi``), through ``mypy_path`` in pyproject.toml.
