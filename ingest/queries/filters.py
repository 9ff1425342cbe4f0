"""Filters shared by every read query, turned into a parameterized WHERE clause.

Column names come only from this module's constants; user values only ever become parameters,
so an input like `' OR 1=1 --` is compared as a value, never parsed as SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tracer.conventions import RunMode

# What a run without `steplens.run.mode` is (foreign clients send none): live.
DEFAULT_MODE = RunMode.LIVE.value
LIVE_ONLY: frozenset[str] = frozenset({DEFAULT_MODE})


@dataclass(frozen=True)
class CommonFilters:
    """Filters every endpoint accepts, already validated.

    `projects` is the set the caller may read after narrowing by the `project` parameter:
    None means every project; an empty set means nothing (a key for project A asking for B).
    Datetimes are naive UTC, like the TIMESTAMP columns. `modes` are the run modes in scope (a run
    without one is live); None means every mode. Live only by default, so a caller that forgets it
    never mixes eval, shadow or replay runs into live figures.
    """

    projects: frozenset[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    agent: str | None = None
    version: str | None = None
    environment: str | None = None
    modes: frozenset[str] | None = LIVE_ONLY


@dataclass
class Where:
    """An AND of SQL fragments with their positional parameters, kept in step."""

    clauses: list[str] = field(default_factory=list)
    params: list[object] = field(default_factory=list)

    def add(self, clause: str, *params: object) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def sql(self) -> str:
        return " AND ".join(f"({c})" for c in self.clauses) if self.clauses else "TRUE"


def project_clause(where: Where, projects: frozenset[str] | None, column: str = "project") -> None:
    """Restrict to readable projects. An empty set yields FALSE, so nothing leaks by accident."""
    if projects is None:
        return
    if not projects:
        where.add("FALSE")
        return
    ordered = sorted(projects)
    where.add(f"{column} IN ({', '.join('?' for _ in ordered)})", *ordered)


def mode_clause(where: Where, modes: frozenset[str] | None, column: str = "mode") -> None:
    """Restrict to runs of `modes` (None: every mode); a NULL mode counts as live."""
    if modes is None:
        return
    if not modes:
        where.add("FALSE")
        return
    ordered = sorted(modes)
    where.add(f"coalesce({column}, '{DEFAULT_MODE}') IN ({', '.join('?' for _ in ordered)})", *ordered)


def runs_common_where(f: CommonFilters, only_runs: bool = True) -> Where:
    """WHERE clause over the runs table for the filters shared by all endpoints.

    `only_runs` leaves out the rows of traces that are not runs (they only record building an agent,
    design.md §3); callers scoping other tables by run, where such traces have no rows, pass False.
    """
    where = Where()
    project_clause(where, f.projects)
    if only_runs:
        where.add("is_run IS NOT FALSE")
    if f.since is not None:
        where.add("start_time >= ?", f.since)
    if f.until is not None:
        where.add("start_time < ?", f.until)
    if f.agent is not None:
        where.add("agent = ?", f.agent)
    if f.version is not None:
        where.add("version = ?", f.version)
    if f.environment is not None:
        where.add("environment = ?", f.environment)
    mode_clause(where, f.modes)
    return where


def like_contains(value: str) -> str:
    """A LIKE pattern matching `value` as a plain substring (used with ESCAPE '\\')."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
