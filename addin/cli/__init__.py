"""The `trainbudget` command line: options -> calc.Job -> calc.budget -> one emitter (cli/emit.py:
text through the one table renderer in cli/render.py, JSON, CSV). Imports calc and the addin rooms
below it; nothing imports this room."""

from .main import cli, main

__all__ = ["cli", "main"]
