# playhouse ships no stubs and peewee's cover only ``peewee``: what the tests use of it is typed
# here (``test_utils.pyi``), through ``mypy_path`` in pyproject.toml, beside the store's own
# (``store/stubs/playhouse``).
