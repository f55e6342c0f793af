"""Work the server itself does: for a tool call (``server_work``, the ``ServerWork`` workers
and their handlers ``web_search`` and ``image_generation``) and for the process
(``instance_lease``: this process's lease and the sweep of dead peers' rows)."""
