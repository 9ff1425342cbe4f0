"""The Queues page's calls to `/api/queues`, on the dashboards' one client (dashboards/client.py).

Why writes are never cached nor retried: taking the next item holds it for the person, and a
label is a decision; each goes to the server exactly once, and every write clears the answer
cache so the progress and results shown next are the server's. Names are checked before they go
into a URL path, so user text never shapes the request.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from pydantic import ValidationError

from dashboards.client import (
    START_HINT,
    ApiError,
    ApiUnavailable,
    BadRequest,
    QueryClient,
    _detail,
    clear_cache,
)
from dashboards.queues_models import Item, Next, Queues, Results

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def _name(name: str) -> str:
    if not _NAME.match(name):
        raise BadRequest(f"not a queue name: {name[:80]!r}", 400)
    return name


def _project(project: str | None) -> dict[str, str]:
    return {"project": project} if project else {}


def queues(client: QueryClient) -> Queues:
    """`GET /api/queues` (scope read), cached like every read."""
    return client._model(Queues, "/api/queues", {})


def results(client: QueryClient, name: str, project: str | None = None) -> Results:
    """`GET /api/queues/{name}/results` (scope read)."""
    return client._model(Results, f"/api/queues/{_name(name)}/results", _project(project), endpoint="queues")


def _send(client: QueryClient, method: str, path: str, **kw: Any) -> Any:
    try:
        response = client._http.request(method, path, **kw)
    except httpx.HTTPError as exc:
        raise ApiUnavailable(f"cannot reach the steplens query API at {client.base_url} "
                             f"({type(exc).__name__}): {START_HINT}") from exc
    if response.status_code == 409:  # someone else holds or finished the run
        raise ApiError(f"not recorded: {_detail(response)}", 409)
    if response.status_code == 422:  # a label breaks its score config
        raise BadRequest(f"not recorded: {_detail(response)}", 422)
    client._check(response, "queues")
    clear_cache()
    return response.json()


def take_next(client: QueryClient, name: str, user: str, project: str | None = None) -> Next:
    """`GET /api/queues/{name}/next?user=` (scope annotate): the item now held by `user`."""
    doc = _send(client, "GET", f"/api/queues/{_name(name)}/next", params={"user": user, **_project(project)})
    try:
        return Next.model_validate(doc)
    except ValidationError as exc:
        raise ApiError(f"the server's answer to /api/queues/next has an unexpected shape: {type(exc).__name__}") from exc


def _decide(client: QueryClient, name: str, trace_id: str, verb: str, body: dict[str, Any],
            project: str | None) -> Item:
    if not _TRACE_ID.match(trace_id):
        raise BadRequest(f"not a trace id: {trace_id[:80]!r}", 400)
    doc = _send(client, "POST", f"/api/queues/{_name(name)}/items/{trace_id}/{verb}", json=body,
                params=_project(project))
    try:
        return Item.model_validate(doc)
    except ValidationError as exc:
        raise ApiError(f"the server's answer to /api/queues/{verb} has an unexpected shape") from exc


def submit(client: QueryClient, name: str, trace_id: str, user: str, scores: dict[str, Any],
           comment: str | None, project: str | None = None) -> Item:
    """`POST .../submit` (scope annotate): the labels become scores (source human, author `user`)."""
    body: dict[str, Any] = {"user": user, "scores": scores, **({"comment": comment} if comment else {})}
    return _decide(client, name, trace_id, "submit", body, project)


def skip(client: QueryClient, name: str, trace_id: str, user: str, project: str | None = None) -> Item:
    """`POST .../skip` (scope annotate)."""
    return _decide(client, name, trace_id, "skip", {"user": user}, project)
