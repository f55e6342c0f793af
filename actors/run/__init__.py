"""A run, from its request to its end: the ``SessionActor`` (``session``) and what it drives.

The run kinds: ``agent`` (an agent turn, ``AgentRun``), ``shell_command`` (a command the user
ran from the chat) and ``summarize`` (the user's "summarize"), with ``base_claim`` what the
last two share. Starting one: ``start`` (read the request, store its blobs, plan the turn),
``base`` (the revision the client's state stands for), ``model_selection`` (the model a
request runs on), ``history_cache``; running it: ``core`` (what every kind holds),
``children`` (its child actors and the ports they share), ``tool_relay`` (the editor's tool
messages to the ToolRuntimeActor), ``subagent_links``, ``owners`` (which run owns each
conversation); ending it: ``end``. Only ``run.py`` and the console's model checks
(``model_selection``) import from here.
"""
