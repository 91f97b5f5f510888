"""The HTTP API for agents and services (``amem serve``; needs the ``api`` extra)."""
