"""The console: a JSON API under ``/console/api/`` and the browser app that uses it.

``console.api`` registers every console route (``ConsoleRoutes``); each group of routes has its
own module (``providers_api``, ``models_api``, ``settings_api``, ``calls_api``, …). Access rules
are in ``console.auth``.
"""
