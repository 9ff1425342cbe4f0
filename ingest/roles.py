"""Node roles (`steplens serve --role`): which parts of the server one process runs.

Why roles: past one machine, receiving spans, answering queries and running the singleton jobs
scale differently. Any number of `ingest` nodes (OTLP receivers, spool, writer) and `api` nodes
(the query API the dashboards read) run against one ClickHouse; exactly one `worker` runs the jobs
that must not run twice (alerts, evaluators, queue fill, retention). `all` is the one-process server
of a single machine, and the only role DuckDB allows: DuckDB lets one process open a database file
for writing, and no other process can open it meanwhile.

A route that lives on another role is answered 404 with a message naming the role that serves it,
so a client pointed at the wrong node is told where to go instead of seeing a bare "Not Found".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastapi import APIRouter, FastAPI

from ingest.errors import ConfigError, WrongRole

Role = Literal["all", "ingest", "api", "worker"]
ROLES: tuple[Role, ...] = ("all", "ingest", "api", "worker")


@dataclass(frozen=True)
class RolePlan:
    """What a node of one role serves and runs."""

    role: Role
    otlp: bool  # OTLP/HTTP and OTLP/gRPC receivers (and the spool behind them)
    query_api: bool  # the query API under /api (what the dashboards and the CLI read)
    jobs: bool  # the singleton jobs: alerts, evaluators, queue fill, retention


PLANS: dict[Role, RolePlan] = {
    "all": RolePlan("all", otlp=True, query_api=True, jobs=True),
    "ingest": RolePlan("ingest", otlp=True, query_api=False, jobs=False),
    "api": RolePlan("api", otlp=False, query_api=True, jobs=False),
    "worker": RolePlan("worker", otlp=False, query_api=False, jobs=True),
}


def plan_for(role: str) -> RolePlan:
    try:
        return PLANS[role]  # type: ignore[index]
    except KeyError:
        raise ConfigError(f"unknown role {role!r}: use one of {', '.join(ROLES)}") from None


def check_role_store(role: str, store: str) -> None:
    """Refuse a split role on DuckDB at startup: its file has one writing process, so the nodes of a
    split deployment could not share it."""
    plan_for(role)
    if role != "all" and store == "duckdb":
        raise ConfigError(
            f"--role {role} needs a store that several processes share: DuckDB allows one process per "
            "database file, so with it run one server with --role all (the default), or pass "
            "--store clickhouse --clickhouse-url ... (see docs/deploy.md)"
        )


def serving_role(what: str, roles: str) -> str:
    return f"{what} is not served by this node; nodes with {roles} serve it (steplens serve --role ...)"


def add_refusals(app: FastAPI, plan: RolePlan, otlp_paths: tuple[str, ...]) -> None:
    """Answer the routes of the other roles 404 with the role that serves them. OTLP paths raise
    WrongRole through the app's error handler, so an exporter gets an OTLP Status body."""
    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    if not plan.otlp:
        message = serving_role("OTLP ingest", "--role ingest (or all)")

        async def refuse_otlp() -> None:
            raise WrongRole(message)

        for path in otlp_paths:
            app.add_api_route(path, refuse_otlp, methods=["POST"], include_in_schema=False)
    if not plan.query_api:
        message = serving_role("The query API", "--role api (or all)")

        async def refuse_api() -> None:
            raise WrongRole(message)

        router = APIRouter(include_in_schema=False)
        router.add_api_route("/api", refuse_api, methods=methods)
        router.add_api_route("/api/{path:path}", refuse_api, methods=methods)
        app.include_router(router)
