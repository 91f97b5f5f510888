"""Commands of this area register on the shared app (see amem/cli/app.py)."""

from amem.cli.app import app  # noqa: F401
