"""The console the command-line tools print their errors on.

An error line names paths and the command to run next; rich's wrapping at the terminal's width would
cut a long path in two (with a newline inside it), so the line could no longer be copied. These
consoles never wrap: the terminal folds long lines for the eye, and a copy gets them whole."""

from __future__ import annotations

from rich.console import Console


def error_console() -> Console:
    """A stderr console that prints each message as one unwrapped line (soft wrap)."""
    return Console(stderr=True, soft_wrap=True)
