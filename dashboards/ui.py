"""Streamlit glue shared by the pages: the client, the URL-backed filters, links, error display.

Why here and not in each page: every page must send the same key, keep filters in the URL the
same way, link traces the same way and never show a traceback; one helper each makes that hold.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import streamlit as st

from dashboards.client import (
    AccessDenied,
    ApiError,
    ApiUnavailable,
    EndpointMissing,
    Filters,
    NotFound,
    QueryClient,
    clear_cache,
)
from dashboards.config import load_ui_settings

log = logging.getLogger(__name__)

TRACE_PAGE = "views/trace.py"
COMPARE_PAGE = "views/compare.py"
SESSIONS_PAGE = "views/sessions.py"
FILTER_KEYS = ("project", "since", "until", "agent", "version", "environment", "mode")
TIME_RANGES = ("1h", "6h", "24h", "7d", "30d", "90d", "all")
DEFAULT_RANGE = "24h"
# Run modes (design.md §4): live figures leave shadow, eval and replay runs out unless asked for.
DEFAULT_MODE = "live"
MODES = ("live", "shadow", "eval", "replay", "all")
EMPTY_HINT = "no runs yet: run `steplens demo` to send some (or widen the time range / clear the filters)"


@st.cache_resource(show_spinner=False)
def _client(api_url: str, api_key: str | None, timeout_s: float, ttl_s: float) -> QueryClient:
    return QueryClient(api_url, api_key, timeout_s, ttl_s)


def client() -> QueryClient:
    """The process-wide client for the configured API and key (one connection pool)."""
    s = load_ui_settings()
    return _client(s.api_url, s.api_key.get_secret_value() if s.api_key else None, s.api_timeout_s, s.cache_ttl_s)


def param(name: str, default: str = "") -> str:
    """A query parameter of the current URL (the last value if repeated)."""
    value = st.query_params.get(name, default)
    return value if isinstance(value, str) else default


def set_param(name: str, value: str | None) -> None:
    """Put a value in the URL, or remove it when empty, so links carry exactly the current view."""
    if value in (None, ""):
        if name in st.query_params:
            del st.query_params[name]
    elif st.query_params.get(name) != value:
        st.query_params[name] = value


def _keep(key: str) -> None:
    st.session_state[f"keep_{key}"] = st.session_state.get(f"w_{key}", "")


def url_widget_value(key: str, default: str) -> None:
    """Set widget `w_<key>` before it is drawn from `keep_<key>`, seeded once from the URL.

    Streamlit forgets a widget's value when a page without it (or another page) runs; `keep_<key>`
    is plain session state, which survives, and the widget's on_change callback (run before the
    script) updates it, so filters set on one page stay set on the next and user edits win.
    """
    kkey, url = f"keep_{key}", param(key)
    if kkey not in st.session_state:
        st.session_state[kkey] = url or default
    elif url and url != st.session_state.get(f"url_{key}"):  # a link or an edited URL: the URL wins
        st.session_state[kkey] = url
    st.session_state[f"w_{key}"] = st.session_state[kkey]


def url_text_input(key: str, label: str, **kwargs: object) -> str:
    """A text input whose value lives in the URL parameter `key` (and survives page switches), as the
    sidebar's filters do; returns the stripped value."""
    url_widget_value(key, "")
    st.text_input(label, key=f"w_{key}", on_change=_keep, args=(key,), **kwargs)  # type: ignore[arg-type]
    value = str(st.session_state.get(f"w_{key}", "")).strip()
    st.session_state[f"url_{key}"] = value
    set_param(key, value)
    return value


def filters_sidebar() -> Filters:
    """The common filters (design.md §4) as sidebar widgets whose values live in the URL; a `?view=<id>`
    in the URL first restores that saved view (dashboards/saved_views.py)."""
    from dashboards.saved_views import restore_from_url  # imported here: saved_views imports this module

    restore_from_url()
    url_widget_value("since", DEFAULT_RANGE)
    if st.session_state["w_since"] not in TIME_RANGES:
        st.session_state["w_since"] = st.session_state["keep_since"] = DEFAULT_RANGE
    for key in ("project", "agent", "version", "environment"):
        url_widget_value(key, "")
    url_widget_value("mode", DEFAULT_MODE)
    modes = list(MODES)
    if st.session_state["w_mode"] not in modes:  # a list from a link (e.g. live,shadow) is kept as it is
        modes.append(st.session_state["w_mode"])
    with st.sidebar:
        st.subheader("Filters")
        st.selectbox("Time range", TIME_RANGES, key="w_since", on_change=_keep, args=("since",),
                     help="Runs that started in the last …")
        st.text_input("Project", key="w_project", on_change=_keep, args=("project",),
                      help="Only projects your API key may read are ever shown.")
        st.text_input("Agent", key="w_agent", on_change=_keep, args=("agent",))
        st.text_input("Version", key="w_version", on_change=_keep, args=("version",))
        st.text_input("Environment", key="w_environment", on_change=_keep, args=("environment",))
        st.selectbox("Run mode", modes, key="w_mode", on_change=_keep, args=("mode",),
                     help="live: production runs (and runs that name no mode). Shadow, eval and replay runs are "
                     "left out of every figure unless chosen here; all: every run.")
        if st.button("Refresh data", icon=":material/refresh:"):
            clear_cache()
    values = {k: str(st.session_state.get(f"w_{k}", "")).strip() for k in FILTER_KEYS if k != "until"}
    for key, value in values.items():
        st.session_state[f"url_{key}"] = value
        set_param(key, value)
    since = values["since"]
    return Filters(
        project=values["project"] or None,
        since=None if since == "all" else since,
        agent=values["agent"] or None,
        version=values["version"] or None,
        environment=values["environment"] or None,
        mode=values["mode"] or DEFAULT_MODE,
    )


def show_error(exc: ApiError) -> None:
    """An API failure as a message that says what to do (never a traceback)."""
    if isinstance(exc, EndpointMissing):
        st.warning(exc.message, icon=":material/update:")
    elif isinstance(exc, ApiUnavailable):
        st.error(exc.message, icon=":material/cloud_off:")
    elif isinstance(exc, AccessDenied):
        st.error(exc.message, icon=":material/lock:")
    elif isinstance(exc, NotFound):
        st.warning(exc.message, icon=":material/search_off:")
    else:
        st.error(exc.message)


@contextmanager
def guard() -> Iterator[None]:
    """Show API errors as messages and anything unexpected as one generic line (details in the log).

    Streamlit's own control flow (st.stop, st.rerun, page switches) derives from BaseException
    and passes through untouched.
    """
    try:
        yield
    except ApiError as exc:
        show_error(exc)
    except Exception:
        log.exception("dashboard page failed")
        st.error(
            "This page hit an unexpected error and stopped. The details are in the dashboards' server log; "
            "reload the page to retry."
        )


def empty_state(message: str = EMPTY_HINT) -> None:
    st.info(message, icon=":material/info:")


def trace_url(trace_id: str) -> str:
    """A relative link to the Trace page (works under any base URL path)."""
    return f"trace?trace_id={trace_id}"


def trace_link(trace_id: str, label: str | None = None) -> None:
    st.page_link(TRACE_PAGE, label=label or f"trace {trace_id[:12]}…", query_params={"trace_id": trace_id},
                 icon=":material/timeline:")


def example_links(trace_ids: Sequence[str], label: str = "examples") -> None:
    """One link per example trace, in a row."""
    if not trace_ids:
        st.caption(f"{label}: none")
        return
    cols = st.columns(len(trace_ids) + 1)
    cols[0].caption(label)
    for col, tid in zip(cols[1:], trace_ids, strict=True):
        with col:
            trace_link(tid)


def linked_table(rows: list[dict[str, Any]], examples: list[list[str]], key: str, height: int | None = None) -> None:
    """A table whose `example` column links to a trace; selecting a row lists all its examples.

    The link column opens the trace in a new tab; the selection keeps this tab and session.
    """
    if not rows:
        return
    for row, ex in zip(rows, examples, strict=True):
        row["example"] = trace_url(ex[0]) if ex else None
    event = st.dataframe(
        rows,
        key=key,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        height=height or "auto",
        column_config={"example": st.column_config.LinkColumn("example", display_text="open trace")},
    )
    selected = getattr(getattr(event, "selection", None), "rows", None) or []
    if selected:
        example_links(examples[selected[0]], label="example traces of the selected row")
    else:
        st.caption("Select a row to list its example traces.")


def fmt_usd(value: float | None) -> str:
    return "—" if value is None else (f"${value:,.4f}" if abs(value) < 100 else f"${value:,.2f}")


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f} ms" if value < 10_000 else f"{value / 1000:.1f} s"
