"""Which projects a caller may read, and how a `project` parameter narrows that set.

The auth dependency decides who the caller is; this module only does the set arithmetic, in one
place, so every endpoint narrows the same way: a parameter can shrink the readable set, never
grow it (a key for project A asking for B gets an empty set, i.e. no rows / 404).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReadAccess:
    """None = every project (no API keys configured); otherwise the projects the key may read."""

    projects: frozenset[str] | None = None

    def narrow(self, project: str | None) -> frozenset[str] | None:
        if project is None:
            return self.projects
        if self.projects is None or project in self.projects:
            return frozenset({project})
        return frozenset()


def allow_all() -> ReadAccess:
    """Default dependency when no auth is wired (tests, or a server without API keys)."""
    return ReadAccess(None)
