"""The console: a JSON API under ``/console/api/`` (and, later, its single-page app).

``console.api`` serves providers, models and settings; call records get their own module. The
console has no authentication: the server listens on loopback by default.
"""
