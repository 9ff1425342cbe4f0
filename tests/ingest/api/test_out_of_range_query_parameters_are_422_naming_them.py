"""Query parameters out of range (times before 1970 or after 2262, integers of 60 digits, 1e400,
nan, durations of a billion weeks, a drift bucket count in the billions, cursors holding numbers
no run has) are answered 422 naming the parameter (400 for a cursor, as for any malformed one) on
every route that takes them, and never a 5xx; the boundary values themselves work.

Before: `since=0001-01-01`, `since=9999-12-31T23:59:59Z`, `until`/`at` out of range and
`min_steps` of 60 digits got 500 (date arithmetic or DuckDB parameter overflow), a cursor with a
30-digit key got 500, and `bucket=1s` over the whole range held a worker for hours."""

from __future__ import annotations

import base64
import json

import pytest

from ingest.api.params import MAX_TIME, MIN_TIME
from tests.ingest.api.analytics_runs import Run, RunEmitter, Step, Tool
from tests.ingest.api.harness import BACKENDS, Server, backend_settings, not_ported

TIME_ROUTES = {
    "/api/runs": ("since", "until"),
    "/api/overview": ("since", "until"),
    "/api/failures": ("since", "until"),
    "/api/tools": ("since", "until"),
    "/api/cost": ("since", "until"),
    "/api/replanning": ("since", "until"),
    "/api/regressions": ("since", "until", "at"),
    "/api/alerts/events": ("since",),
}
BAD_TIMES = ["0001-01-01", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "2262-04-12", "100000w"]
SIXTY_DIGITS = "9" * 60
NUMBER_PARAMS = {
    "/api/runs": {"limit": SIXTY_DIGITS, "min_steps": SIXTY_DIGITS, "min_cost": "1e400"},
    "/api/failures": {"limit": SIXTY_DIGITS},
    "/api/regressions": {
        "min_samples": SIXTY_DIGITS, "reference_buckets": SIXTY_DIGITS, "min_relative_change": "1e400",
        "alpha": "nan", "k": "inf", "h": "1e400", "window": "999999999w", "baseline": "999999999w",
        "bucket": "999999999w",
    },
    "/api/alerts/events": {"limit": SIXTY_DIGITS},
    "/api/approvals": {"limit": SIXTY_DIGITS},
}


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory) -> Server:
    """One full server per store (all query routers, as `steplens serve` mounts them) with one run stored."""
    from ingest.config import Settings
    from tests.ingest.conftest import _ServerThread

    tmp = tmp_path_factory.mktemp("db")
    settings = Settings(db=tmp / "steplens.duckdb", host="127.0.0.1", grpc_port=0, normalize_processes=0,
                        **backend_settings(tmp, request.param))
    thread = _ServerThread(settings)
    running = thread.start()
    srv = Server(running.http_url, running.store, running.settings)
    emitter = RunEmitter()
    emitter.run(Run(steps=[Step(tools=[Tool("search")]), Step()]))
    srv.send(emitter.request())
    yield srv
    thread.stop()


def _skip_while_not_ported(server: Server, path: str) -> None:
    if not_ported(server.store, path.split("/")[2]):
        pytest.skip(f"{path} answers 501 on this store")


def _names(response) -> set[str]:
    """The parameters a 422 names."""
    detail = response.json()["detail"]
    if isinstance(detail, str):
        return {word.split("=")[0] for word in detail.replace(",", " ").split() if "=" in word}
    return {str(item["loc"][-1]) for item in detail}


@pytest.mark.parametrize("path", list(TIME_ROUTES))
def test_times_out_of_range_are_422_naming_the_parameter(server: Server, path: str) -> None:
    _skip_while_not_ported(server, path)
    for name in TIME_ROUTES[path]:
        for value in BAD_TIMES:
            r = server.get(path, **{name: value})
            assert r.status_code == 422, (path, name, value, r.status_code, r.text[:200])
            assert name in _names(r), (path, name, r.text[:200])


@pytest.mark.parametrize("path", list(TIME_ROUTES))
def test_the_bounds_themselves_are_accepted(server: Server, path: str) -> None:
    _skip_while_not_ported(server, path)
    low, high = MIN_TIME.isoformat() + "Z", MAX_TIME.isoformat() + "Z"
    names = TIME_ROUTES[path]
    params = {"since": low, "until": high} if "until" in names else {"since": low}
    if path == "/api/regressions":
        params = {"since": low, "until": high, "comparison": "drift", "bucket": "2w"}
    r = server.get(path, **params)
    assert r.status_code == 200, (path, r.text[:300])
    if "at" in names:
        for at in (low, high):
            r = server.get(path, at=at, window="36500d", baseline="36500d")
            assert r.status_code == 200, (path, at, r.text[:300])


@pytest.mark.parametrize("path", list(NUMBER_PARAMS))
def test_numbers_out_of_range_are_422_naming_the_parameter(server: Server, path: str) -> None:
    _skip_while_not_ported(server, path)
    for name, value in NUMBER_PARAMS[path].items():
        r = server.get(path, **{name: value})
        assert r.status_code == 422, (path, name, value, r.status_code, r.text[:200])
        assert name in _names(r), (path, name, r.text[:200])


def test_drift_over_too_many_buckets_is_422_naming_bucket(server: Server) -> None:
    _skip_while_not_ported(server, "/api/regressions")
    r = server.get("/api/regressions", comparison="drift", since="1970-01-01", until="2262-04-11", bucket="1s")
    assert r.status_code == 422, r.text[:200]
    assert "bucket" in _names(r)


def _cursor(sort: str, value: object) -> str:
    raw = json.dumps({"s": sort, "o": "desc", "v": value, "t": "0" * 32, "p": "default"}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("sort", ["cost_usd", "steps", "duration_ms", "input_tokens"])
@pytest.mark.parametrize("value", [10**30, -(10**30), 1e308, -1e308])
def test_cursor_with_a_number_beyond_bigint_is_400_naming_the_cursor(server: Server, sort: str, value) -> None:
    r = server.get("/api/runs", sort=sort, cursor=_cursor(sort, value))
    assert r.status_code == 400, (sort, value, r.status_code, r.text[:200])
    assert "cursor" in r.json()["detail"]


@pytest.mark.parametrize("value", ["9999-12-31T23:59:59", "0001-01-01T00:00:00", "x", 5])
def test_cursor_with_an_odd_time_key_is_never_a_5xx(server: Server, value) -> None:
    r = server.get("/api/runs", cursor=_cursor("start_time", value))
    assert r.status_code in (200, 400), (value, r.status_code, r.text[:200])
    if r.status_code == 400:
        assert "cursor" in r.json()["detail"]


def test_every_integer_query_parameter_has_an_upper_bound(server: Server) -> None:
    """The class, not the instances: a new integer parameter without `le` fails here."""
    spec = server.get("/openapi.json").json()
    unbounded = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for param in op.get("parameters", []):
                schema = param.get("schema", {})
                options = schema.get("anyOf", [schema])
                for option in options:
                    if option.get("type") == "integer" and "maximum" not in option:
                        unbounded.append(f"{method.upper()} {path} {param['name']}")
    assert unbounded == []
