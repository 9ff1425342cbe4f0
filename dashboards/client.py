"""The one module that talks to the query API: every page and the terminal view fetch through here.

Why one module: the API key, the time limit, the cache and the wording of every failure live in
one place, so no page can forget the key, show a raw traceback, or hammer the server on every
widget click. Answers are cached for a few seconds per (server, key, path, parameters): a
Streamlit page reruns its whole script on each interaction, and without the cache a 10,000-span
trace would be fetched again for every click on its step pager. Failures are never cached.

Every failure becomes an `ApiError` whose `message` is safe to show a user and says what to do.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from cachetools import TLRUCache
from pydantic import BaseModel, ValidationError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from dashboards.alerts_models import AlertEvents, Alerts, Regressions
from dashboards.approvals_models import Approval, Approvals
from dashboards.budget_models import BudgetAdvice
from dashboards.config import UISettings
from dashboards.datasets_models import DatasetSaved
from dashboards.evaluators_models import Evaluators
from dashboards.models import CostReport, Diff, Failures, Overview, Prices, RunsPage, Tools, Trace
from dashboards.replanning_models import Replanning
from dashboards.search_models import SearchAnswer
from dashboards.sessions_models import Graph, SavedView, SavedViews, Session, SessionsPage
from dashboards.sql_models import SqlAnswer, SqlCatalog

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

START_HINT = "start it with `steplens serve` (or `make run` for the whole stack)"
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
COST_GROUPS = ("model", "provider", "tool", "agent", "version", "project", "user", "conversation", "day")


class ApiError(Exception):
    """A query API call failed; `message` is meant for the user (no secrets, no traceback)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ApiUnavailable(ApiError):
    """The server could not be reached, timed out, or is temporarily unavailable."""


class EndpointMissing(ApiError):
    """The server is older than this page: it has no such endpoint."""

    def __init__(self, message: str, endpoint: str) -> None:
        super().__init__(message, 404)
        self.endpoint = endpoint


class NotFound(ApiError):
    """The thing asked for (a trace) does not exist or the key may not read it."""


class AccessDenied(ApiError):
    """The API key is missing, wrong, or lacks the read scope."""


class BadRequest(ApiError):
    """The server refused the parameters (400/422); the message carries its reason."""


class _Retryable(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


@dataclass(frozen=True)
class Filters:
    """The filters every analytics endpoint shares (design.md §4); None means "not filtered"."""

    project: str | None = None
    since: str | None = None
    until: str | None = None
    agent: str | None = None
    version: str | None = None
    environment: str | None = None
    mode: str | None = None  # run modes (live, shadow, eval, replay, a list, or all); None: the server's (live)

    def params(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


def _expires(key: tuple[Any, ...], _value: Any, now: float) -> float:
    return now + key[-1]  # the last element of every cache key is its TTL in seconds


_CACHE: TLRUCache[tuple[Any, ...], Any] = TLRUCache(maxsize=256, ttu=_expires)
_CACHE_LOCK = threading.Lock()


_DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def clear_cache() -> None:
    """Forget every cached answer (the Refresh button, and tests)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _detail(response: httpx.Response) -> str:
    """The server's reason, from FastAPI's `{"detail": ...}` or the plain text body."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500]
    detail = body.get("detail", body.get("message", body)) if isinstance(body, dict) else body
    if isinstance(detail, list):  # 422: [{"loc": [...], "msg": ...}, ...]
        parts = []
        for item in detail:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc", [])[1:]) or "request"
                parts.append(f"{loc}: {item.get('msg', item)}")
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return str(detail)[:500]


class QueryClient:
    """A typed client of the query API. Usable inside and outside Streamlit.

    `transport` exists for callers that already hold an httpx transport (e.g. an ASGI app);
    the dashboards use the network.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        cache_ttl_s: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "steplens-dashboards"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        # Who is asking is part of the cache key (two keys may read different projects), but
        # only as a digest, so the key itself never sits in a cache structure.
        self._identity = hashlib.sha256((api_key or "").encode()).hexdigest()[:16]
        self._cache_ttl_s = cache_ttl_s
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport)

    @classmethod
    def from_settings(cls, settings: UISettings) -> QueryClient:
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return cls(settings.api_url, key, settings.api_timeout_s, settings.cache_ttl_s)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> QueryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ endpoints

    def overview(self, filters: Filters = Filters()) -> Overview:
        return self._model(Overview, "/api/overview", filters.params())

    def budget_advice(self, filters: Filters = Filters()) -> BudgetAdvice:
        return self._model(BudgetAdvice, "/api/budget-advice", filters.params())

    def runs(
        self,
        filters: Filters = Filters(),
        *,
        ok: bool | None = None,
        stop_reason: str | None = None,
        q: str | None = None,
        sort: str = "start_time",
        order: str = "desc",
        limit: int = 50,
        cursor: str | None = None,
        expression: str | None = None,
    ) -> RunsPage:
        params: dict[str, Any] = {**filters.params(), "sort": sort, "order": order, "limit": limit}
        extra = {"ok": None if ok is None else str(ok).lower(), "stop_reason": stop_reason, "q": q, "cursor": cursor,
                 "filter": expression}
        params.update({k: v for k, v in extra.items() if v not in (None, "")})
        return self._model(RunsPage, "/api/runs", params)

    def search(self, q: str, filters: Filters = Filters(), expression: str | None = None, limit: int = 20) -> SearchAnswer:
        """Full-text search; only the project and time range of `filters` apply (spans have no run mode)."""
        scope = {k: v for k, v in filters.params().items() if k in ("project", "since", "until")}
        params = {**scope, "q": q, "limit": limit, **({"filter": expression} if expression else {})}
        return self._model(SearchAnswer, "/api/search", params)

    def trace(self, trace_id: str) -> Trace:
        tid = trace_id.strip().lower()
        if not _TRACE_ID.match(tid):  # also keeps user text out of the URL path
            raise BadRequest(f"a trace id is 32 hexadecimal characters; got {trace_id[:80]!r}", 400)
        return self._model(Trace, f"/api/traces/{tid}", {}, endpoint="traces")

    def failures(self, filters: Filters = Filters()) -> Failures:
        return self._model(Failures, "/api/failures", filters.params())

    def tools(self, filters: Filters = Filters()) -> Tools:
        return self._model(Tools, "/api/tools", filters.params())

    def cost(self, filters: Filters = Filters(), group_by: str = "model") -> CostReport:
        return self._model(CostReport, "/api/cost", {**filters.params(), "group_by": group_by})

    def cost_csv(self, filters: Filters = Filters(), group_by: str = "model") -> str:
        params = {**filters.params(), "group_by": group_by, "format": "csv"}
        return self._cached("csv", "/api/cost", params, lambda: self._get("/api/cost", params, "cost").text)

    def diff(self, a: str, b: str) -> Diff:
        return self._model(Diff, "/api/diff", {"a": a.strip().lower(), "b": b.strip().lower()})

    def prices(self) -> Prices:
        return self._model(Prices, "/api/prices", {})

    def replanning(self, filters: Filters = Filters()) -> Replanning:
        return self._model(Replanning, "/api/replanning", filters.params())

    def regressions(self, filters: Filters = Filters(), comparison: str = "window", **params: Any) -> Regressions:
        """`GET /api/regressions`: comparison window, release or drift; extra query parameters as given."""
        extra = {k: v for k, v in params.items() if v not in (None, "")}
        return self._model(Regressions, "/api/regressions", {**filters.params(), "comparison": comparison, **extra})

    def alerts(self) -> Alerts:
        return self._model(Alerts, "/api/alerts", {})

    def alert_events(self, limit: int = 200) -> AlertEvents:
        return self._model(AlertEvents, "/api/alerts/events", {"limit": limit}, endpoint="alerts")

    def approvals(self, status: str | None = "pending", limit: int = 100) -> Approvals:
        """`GET /api/approvals` (scope read), newest first; `status` None means every status."""
        params: dict[str, Any] = {"limit": limit, **({"status": status} if status else {})}
        return self._model(Approvals, "/api/approvals", params)

    def decide_approval(self, approval_id: str, approve: bool, reason: str | None = None,
                        by: str | None = None) -> Approval:
        """`POST /api/approvals/{id}/approve|reject` (scope admin). Never cached, never retried (a
        decision is made once; the server answers 409 to a second one); clears the cache so the
        next listing shows the decision. 401/403 raise `AccessDenied`: the key lacks admin."""
        if not re.fullmatch(r"[0-9A-Za-z_-]{1,128}", approval_id):  # keeps user text out of the URL path
            raise BadRequest(f"not an approval id: {approval_id[:80]!r}", 400)
        verb = "approve" if approve else "reject"
        body = {k: v for k, v in (("reason", reason), ("by", by)) if v}
        try:
            response = self._http.post(f"/api/approvals/{approval_id}/{verb}", json=body)
        except httpx.HTTPError as exc:
            raise ApiUnavailable(f"cannot reach the steplens query API at {self.base_url} "
                                 f"({type(exc).__name__}): {START_HINT}") from exc
        if response.status_code == 409:  # someone (or the agent's expiry) decided first
            raise ApiError(f"not decided: {_detail(response)}", 409)
        try:
            decided = Approval.model_validate(self._check(response, "approvals").json())
        except (ValueError, ValidationError) as exc:
            raise ApiError(f"the server's answer to /api/approvals has an unexpected shape: {type(exc).__name__}",
                           response.status_code) from exc
        clear_cache()
        return decided

    def sql_catalog(self) -> SqlCatalog:
        """`GET /api/sql/views`: the views with their columns, the functions, the limits, example queries."""
        return self._model(SqlCatalog, "/api/sql/views", {}, endpoint="sql/views")

    def sql(self, query: str, limit: int = 10_000, project: str | None = None) -> SqlAnswer:
        """`POST /api/sql` (scope read): one SELECT over the views, as JSON. Cached like a GET (the same
        query within the TTL is one request); a refused query raises `BadRequest` with the server's reason."""
        body: dict[str, Any] = {"sql": query, "limit": limit, "format": "json", **({"project": project} if project else {})}

        def fetch() -> SqlAnswer:
            response = self._post_sql(body)
            try:
                return SqlAnswer.model_validate(response.json())
            except (ValueError, ValidationError) as exc:
                raise ApiError(f"the server's answer to /api/sql has an unexpected shape: {type(exc).__name__}",
                               response.status_code) from exc

        return self._cached("SqlAnswer", "/api/sql", body, fetch)

    def _post_sql(self, body: dict[str, Any]) -> httpx.Response:
        try:
            response = self._http.post("/api/sql", json=body)
        except httpx.TimeoutException as exc:
            raise ApiUnavailable(f"the query API at {self.base_url} did not answer in time: narrow the query") from exc
        except httpx.HTTPError as exc:
            raise ApiUnavailable(f"cannot reach the steplens query API at {self.base_url} "
                                 f"({type(exc).__name__}): {START_HINT}") from exc
        if response.status_code in (400, 413, 422):
            raise BadRequest(_detail(response), response.status_code)
        return self._check(response, "sql")
    def sessions(self, filters: Filters = Filters(), *, user: str | None = None, limit: int = 50,
                 cursor: str | None = None) -> SessionsPage:
        """`GET /api/sessions`: runs grouped by conversation id, most recently active first."""
        extra = {"user": user, "cursor": cursor}
        params = {**filters.params(), "limit": limit, **{k: v for k, v in extra.items() if v}}
        return self._model(SessionsPage, "/api/sessions", params)

    def session(self, session_id: str, filters: Filters = Filters()) -> Session:
        """`GET /api/sessions/{id}`: the session's turns and transcript (the id is URL-quoted)."""
        if not session_id or len(session_id) > 512:
            raise BadRequest("a session id is 1 to 512 characters", 400)
        params = {k: v for k, v in filters.params().items() if k in ("project", "mode")}
        return self._model(Session, f"/api/sessions/{quote(session_id, safe='')}", params, endpoint="sessions")

    def graph(self, filters: Filters = Filters(), max_runs: int = 500) -> Graph:
        """`GET /api/graph`: agents, tools and models of the filtered runs and who calls whom."""
        return self._model(Graph, "/api/graph", {**filters.params(), "max_runs": max_runs})

    def trace_graph(self, trace_id: str) -> Graph:
        tid = trace_id.strip().lower()
        if not _TRACE_ID.match(tid):
            raise BadRequest(f"a trace id is 32 hexadecimal characters; got {trace_id[:80]!r}", 400)
        return self._model(Graph, f"/api/traces/{tid}/graph", {}, endpoint="graph")

    def saved_views(self) -> SavedViews:
        """`GET /api/views`; never cached (a view just saved must be listed at once)."""
        return SavedViews.model_validate(self._get("/api/views", {}, "views").json())

    def saved_view(self, view_id: str) -> SavedView:
        if not re.fullmatch(r"[0-9A-Za-z_-]{1,128}", view_id):  # keeps user text out of the URL path
            raise BadRequest(f"not a saved view id: {view_id[:80]!r}", 400)
        return SavedView.model_validate(self._get(f"/api/views/{view_id}", {}, "views").json())

    def save_view(self, name: str, page: str, state: Mapping[str, str]) -> SavedView:
        """`POST /api/views` with the page's current URL state (filter, since, until, the rest as params)."""
        body = {"name": name, "page": page, "filter": state.get("filter", ""), "since": state.get("since"),
                "until": state.get("until"),
                "params": {k: v for k, v in state.items() if k not in ("filter", "since", "until", "view")}}
        return SavedView.model_validate(self._write("post", "/api/views", body).json())

    def delete_view(self, view_id: str) -> None:
        if not re.fullmatch(r"[0-9A-Za-z_-]{1,128}", view_id):
            raise BadRequest(f"not a saved view id: {view_id[:80]!r}", 400)
        self._write("delete", f"/api/views/{view_id}", None)

    def _write(self, method: str, path: str, body: Any) -> httpx.Response:
        """A write: never cached or retried; 409 (a name taken) is an ApiError carrying the reason."""
        try:
            response = self._http.request(method.upper(), path, json=body)
        except httpx.HTTPError as exc:
            raise ApiUnavailable(f"cannot reach the steplens query API at {self.base_url} "
                                 f"({type(exc).__name__}): {START_HINT}") from exc
        if response.status_code == 409:
            raise ApiError(_detail(response), 409)
        return self._check(response, path.removeprefix("/api/").split("/")[0])

    def save_dataset(self, name: str, run_params: Mapping[str, Any], replace: bool = False) -> DatasetSaved:
        """`POST /api/datasets` (scope annotate): the runs `GET /api/runs` lists with `run_params`,
        saved as dataset `name`. Never cached, never retried; 401/403 raise `AccessDenied`."""
        if not _DATASET_NAME.fullmatch(name):  # also keeps user text out of later URL paths
            raise BadRequest("a dataset name is 1-128 letters, digits, '_', '.' or '-', starting with a letter "
                             f"or digit; got {name[:80]!r}", 422)
        body = {"name": name, "filter": dict(run_params), "replace": replace}
        try:
            response = self._http.post("/api/datasets", json=body)
        except httpx.HTTPError as exc:
            raise ApiUnavailable(f"cannot reach the steplens query API at {self.base_url} "
                                 f"({type(exc).__name__}): {START_HINT}") from exc
        if response.status_code == 409:
            raise ApiError(f"not saved: {_detail(response)}", 409)
        try:
            return DatasetSaved.model_validate(self._check(response, "datasets").json())
        except (ValueError, ValidationError) as exc:
            raise ApiError(f"the server's answer to /api/datasets has an unexpected shape: {type(exc).__name__}",
                           response.status_code) from exc

    def dataset_jsonl(self, name: str, project: str) -> str:
        """`GET /api/datasets/{name}`: the dataset's cases as JSONL (never cached: it may be replaced)."""
        if not _DATASET_NAME.fullmatch(name):
            raise BadRequest(f"not a dataset name: {name[:80]!r}", 422)
        return self._get(f"/api/datasets/{name}", {"project": project}, "datasets").text

    def evaluators(self, since: str = "24h", limit: int = 20) -> Evaluators:
        """`GET /api/evaluators` (scope read): the online evaluator rules with their recent results."""
        return self._model(Evaluators, "/api/evaluators", {"since": since, "limit": limit})

    # ------------------------------------------------------------------ plumbing

    def _model(self, model: type[M], path: str, params: Mapping[str, Any], endpoint: str | None = None) -> M:
        name = endpoint or path.removeprefix("/api/").split("/")[0]

        def fetch() -> M:
            response = self._get(path, params, name)
            try:
                return model.model_validate(response.json())
            except (ValueError, ValidationError) as exc:
                log.warning("unexpected answer from %s: %s", path, exc)
                raise ApiError(
                    f"the server's answer to /api/{name} has an unexpected shape "
                    f"(server and dashboards versions differ?): {type(exc).__name__}",
                    response.status_code,
                ) from exc

        return self._cached(model.__name__, path, params, fetch)

    def _cached(self, kind: str, path: str, params: Mapping[str, Any], fetch: Callable[[], T]) -> T:
        frozen = tuple(sorted((k, str(v)) for k, v in params.items()))
        key = (self.base_url, self._identity, kind, path, frozen, self._cache_ttl_s)
        if self._cache_ttl_s > 0:
            with _CACHE_LOCK:
                hit = _CACHE.get(key)
            if hit is not None:
                return hit
        value = fetch()
        if self._cache_ttl_s > 0:
            with _CACHE_LOCK:
                _CACHE[key] = value
        return value

    def _get(self, path: str, params: Mapping[str, Any], endpoint: str) -> httpx.Response:
        try:
            response = self._get_retrying(path, params)
        except _Retryable as exc:
            response = exc.response
        except httpx.TimeoutException as exc:
            raise ApiUnavailable(
                f"the query API at {self.base_url} did not answer in time: narrow the time range or retry"
            ) from exc
        except httpx.HTTPError as exc:
            raise ApiUnavailable(
                f"cannot reach the steplens query API at {self.base_url} ({type(exc).__name__}): {START_HINT}, "
                f"or point the dashboards at it with `steplens ui --api URL`"
            ) from exc
        return self._check(response, endpoint)

    @retry(
        retry=retry_if_exception_type(_Retryable),
        stop=stop_after_attempt(3),
        wait=wait_exponential(multiplier=0.3, max=2),
        reraise=True,
    )
    def _get_retrying(self, path: str, params: Mapping[str, Any]) -> httpx.Response:
        response = self._http.get(path, params=dict(params))
        if response.status_code in (429, 502, 503):
            raise _Retryable(response)
        return response

    def _check(self, response: httpx.Response, endpoint: str) -> httpx.Response:
        status = response.status_code
        if status < 400:
            return response
        detail = _detail(response)
        if status in (404, 405) and detail in ("Not Found", "Method Not Allowed", ""):
            raise EndpointMissing(
                f"this page needs a steplens server version with /api/{endpoint}; the server at "
                f"{self.base_url} does not have it yet: upgrade the server (or wait for it to be deployed)",
                endpoint,
            )
        if status == 404:
            raise NotFound(detail or "not found", status)
        if status in (401, 403):
            raise AccessDenied(
                f"the query API refused the dashboards' API key ({status}: {detail}): set STEPLENS_API_KEY "
                "to a key with the read scope",
                status,
            )
        if status in (400, 422):
            raise BadRequest(f"the query API rejected the filters: {detail}", status)
        if status in (429, 502, 503):
            raise ApiUnavailable(f"the query API is busy or restarting ({status}: {detail}); retry in a moment", status)
        if status == 504:
            raise ApiUnavailable(f"the query took too long: {detail}", status)
        raise ApiError(f"the query API failed ({status}: {detail}); see the server log", status)
