"""The tools the editor runs for the model, as a sans-IO codec of the Exec sub-protocol.

One module per tool (or family): ``read``, ``edit`` (Write and StrReplace), ``edit_notebook``,
``delete``, ``search`` (Grep and Glob), ``shell``, ``read_lints``, ``todo_write``. Each holds
its argument parsing, its card (the typed ``agent.ToolCall``), the text the model reads and
its ``ToolExecution``, and declares one ``ToolDefinition``; ``registry`` gathers those into the
one table every name lookup reads. ``base`` holds what they share, ``dispatch`` turns a model call
into an execution, ``frames`` builds the frames and ``streaming`` the edit card's live content.

Nothing here allocates wire ids, keeps time or sends bytes: ``actors.tool_runtime`` does, so
every rule can be tested as a function. This package imports only protobuf, msgspec, the
standard library and ``wire``.
"""
