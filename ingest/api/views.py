"""`/api/views`: saved views of the dashboards (a named filter + time range + page), per project.

- `GET /api/views[?page=runs]`: the views of the key's project, by name.
- `POST /api/views`: save one (201); it belongs to the key's project (without keys: `project` in
  the body, else the default project). 409 when the project has a view of that name.
- `GET /api/views/{id}`, `PUT /api/views/{id}` (replace its content), `DELETE /api/views/{id}` (204).

Scope `read` for all of them: a saved view is the project's dashboard state, not telemetry, and the
keys that read a project are the people who look at it; it never reaches another project (another
project's view id is a 404, as an unknown one). Writes go through the store's single writer.
No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import parse_time
from ingest.auth import Principal, require_scope
from ingest.queries import views as db
from ingest.store.backend import queries_of

_PAGE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
MAX_PARAMS = 50
_TIME_KEYS = frozenset({"filter", "since", "until"})
ALL_TIME = "all"  # the dashboards' "whole history"


class ViewIn(BaseModel):
    """A view as saved: `filter` is the page's filter expression, `params` its other query parameters."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    page: str = Field(description="The dashboards page it opens: runs, sessions, graph, search, ...")
    filter: str = Field("", max_length=4096, description="Filter expression of the page ('' for none).")
    since: str | None = Field(None, max_length=64,
                              description="ISO 8601, relative (24h, 7d) or `all` (no bound): kept as given.")
    until: str | None = Field(None, max_length=64)
    params: dict[str, str] = Field(default_factory=dict, description="Other query parameters: agent, version, mode...")
    project: str | None = Field(None, max_length=200, description="Only without API keys: the project it belongs to.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("name is blank")
        return v.strip()

    @field_validator("page")
    @classmethod
    def _page(cls, v: str) -> str:
        if not _PAGE.match(v):
            raise ValueError("page must be a page name: lowercase letters, digits, - and _ (e.g. runs)")
        return v

    @field_validator("since", "until")
    @classmethod
    def _time(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        if v.strip() != ALL_TIME:
            parse_time(v)  # a time the pages could not apply is refused now, not when the view is opened
        return v.strip()

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, str]) -> dict[str, str]:
        if len(v) > MAX_PARAMS:
            raise ValueError(f"at most {MAX_PARAMS} params")
        for key, value in v.items():
            if not _PARAM.match(key) or key in _TIME_KEYS:
                raise ValueError(f"param {key[:64]!r} is not a query parameter name (filter/since/until have fields)")
            if len(value) > 1024:
                raise ValueError(f"param {key!r} is over 1024 characters")
        return v

    def spec(self) -> db.ViewSpec:
        return db.ViewSpec(self.name, self.page, self.filter, self.since, self.until, self.params)


class ViewOut(BaseModel):
    view_id: str
    project: str
    name: str
    page: str
    filter: str
    since: str | None
    until: str | None
    params: dict[str, str]
    state: dict[str, str] = Field(description="The query parameters that restore it on its page (its URL's).")
    created_by: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: db.ViewRow) -> "ViewOut":
        return cls(
            view_id=row.view_id, project=row.project, name=row.name, page=row.page, filter=row.filter,
            since=row.since, until=row.until, params=row.params, state=db.view_state(row),
            created_by=row.created_by, created_at=row.created_at.replace(tzinfo=UTC),
            updated_at=row.updated_at.replace(tzinfo=UTC),
        )  # fmt: skip


class ViewsOut(BaseModel):
    views: list[ViewOut]


def _projects(principal: Principal) -> frozenset[str] | None:
    projects = principal.projects
    return None if projects is None else frozenset(projects)


def build_views_router(store: Any, read_access: Callable[..., Any] | None = None,
                       timeout_s: float | None = None) -> APIRouter:
    """Mount under /api. `store` needs `read()` and `run_write(fn) -> Future` (SpanStore)."""
    read_access = read_access or principal_read_access()
    readable: ReadableStore = store
    views = queries_of(store).views  # the store's own SQL for reads and writes
    router = APIRouter(tags=["views"])
    caller_dep = require_scope("read")

    async def write(fn: Callable[[Any], Any]) -> Any:
        try:
            return await asyncio.wrap_future(store.run_write(fn))
        except db.NameTaken as exc:
            raise HTTPException(409, str(exc)) from exc
        except RuntimeError as exc:  # store not started or writer failed
            raise HTTPException(503, f"views store unavailable: {exc}", headers={"Retry-After": "1"}) from exc

    def found(row: db.ViewRow | None, view_id: str) -> ViewOut:
        if row is None:
            raise HTTPException(404, f"no saved view {view_id[:64]!r} visible to this key")
        return ViewOut.of(row)

    @router.get("/views", response_model=ViewsOut, summary="Saved views of your project, by name")
    def list_all(
        access: Annotated[ReadAccess, Depends(read_access)],
        page: Annotated[str | None, Query(max_length=64)] = None,
        project: Annotated[str | None, Query(max_length=200)] = None,
    ) -> ViewsOut:
        rows = run_read(readable, lambda cur: views.list_views(cur, access.narrow(project), page), timeout_s)
        return ViewsOut(views=[ViewOut.of(r) for r in rows])

    @router.post("/views", response_model=ViewOut, status_code=201, summary="Save a view (a write, scope read)")
    async def create(body: ViewIn, caller: Annotated[Principal, Depends(caller_dep)]) -> ViewOut:
        project = caller.project
        if body.project is not None:
            if not caller.can_read(body.project):
                raise HTTPException(403, "a key saves views in its own project only")
            project = body.project
        spec = body.spec()
        return ViewOut.of(await write(partial(views.insert_view, project=project, spec=spec, created_by=caller.name)))

    @router.get("/views/{view_id}", response_model=ViewOut, summary="One saved view")
    def get_one(view_id: str, access: Annotated[ReadAccess, Depends(read_access)]) -> ViewOut:
        return found(run_read(readable, lambda cur: views.get_view(cur, view_id, access.projects), timeout_s), view_id)

    @router.put("/views/{view_id}", response_model=ViewOut, summary="Replace a saved view's content (scope read)")
    async def replace(view_id: str, body: ViewIn, caller: Annotated[Principal, Depends(caller_dep)]) -> ViewOut:
        spec = body.spec()
        return found(await write(partial(views.update_view, view_id=view_id, projects=_projects(caller), spec=spec)), view_id)

    @router.delete("/views/{view_id}", status_code=204, summary="Delete a saved view (scope read)")
    async def delete(view_id: str, caller: Annotated[Principal, Depends(caller_dep)]) -> Response:
        if not await write(partial(views.delete_view, view_id=view_id, projects=_projects(caller))):
            raise HTTPException(404, f"no saved view {view_id[:64]!r} visible to this key")
        return Response(status_code=204)

    return router
