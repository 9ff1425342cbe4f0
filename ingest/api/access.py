"""Which projects a caller may read, and how a `project` parameter narrows that set.

The auth dependency decides who the caller is; this module only does the set arithmetic, in one
place, so every endpoint narrows the same way: a parameter can shrink the readable set, never
grow it (a key for project A asking for B gets an empty set, i.e. no rows / 404).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Depends

from ingest.auth import Principal, require_scope


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


def principal_read_access() -> Callable[..., Awaitable[ReadAccess]]:
    """Dependency reading the caller's projects from ingest.auth (needs `app.state.keyring`).

    Without keys configured auth yields the anonymous principal, which reads every project.
    """
    needs_read = require_scope("read")

    async def access(principal: Principal = Depends(needs_read)) -> ReadAccess:
        projects = principal.projects
        return ReadAccess(None if projects is None else frozenset(projects))

    return access
