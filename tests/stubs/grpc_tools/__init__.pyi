# grpc_tools ships no types and typeshed's grpcio stubs leave it out: the protoc entry point the
# tests call (``protoc.pyi``) is typed here, through ``mypy_path`` in pyproject.toml.
