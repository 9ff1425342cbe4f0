"""Saved views in the sidebar: the project's views listed as links, the current page saved under a name,
and `?view=<id>` in any page's URL restoring a view's filters, time range and page parameters.

Why the URL state is what is saved: every page already keeps its filters in the URL (ui.py), so the
page's query parameters are the view, whatever the page: `filter` (the filter expression), `since`,
`until`, and the rest (agent, mode, status, sort, ...) as the view's params. Opening a view's link
puts its state in the URL and the filter widgets, then drops `view`, so the URL is the state again
and edits after opening win.
"""

from __future__ import annotations

import streamlit as st

from dashboards.client import ApiError, EndpointMissing
from dashboards.sessions_models import SavedView
from dashboards.text import inert
from dashboards.ui import DEFAULT_MODE, DEFAULT_RANGE, FILTER_KEYS, client, param, show_error

VIEW_PARAM = "view"
PAGE_FILES = {"runs": "views/runs.py", "sessions": "views/sessions.py", "graph": "views/graph.py",
              "overview": "views/overview.py", "failures": "views/failures.py", "tools": "views/tools.py",
              "cost": "views/cost.py"}  # fmt: skip
_DEFAULTS = {"since": DEFAULT_RANGE, "mode": DEFAULT_MODE}
_FLASH = "saved_views_flash"


def restore_from_url() -> None:
    """When the URL names a view (`?view=<id>`), replace the URL state and the filters with the view's."""
    view_id = param(VIEW_PARAM)
    if not view_id:
        return
    try:
        view = client().saved_view(view_id)
    except ApiError as exc:
        del st.query_params[VIEW_PARAM]
        st.session_state[_FLASH] = ("warning", f"saved view not opened: {exc.message}")
        return
    apply(view)


def apply(view: SavedView) -> None:
    """Put `view`'s state in the URL and in the filter widgets' kept values (ui.url_widget_value)."""
    for key in list(st.query_params):
        del st.query_params[key]
    for key, value in view.state.items():
        st.query_params[key] = value
    for key in FILTER_KEYS:
        st.session_state[f"keep_{key}"] = view.state.get(key, _DEFAULTS.get(key, ""))
        st.session_state.pop(f"url_{key}", None)


def _state() -> dict[str, str]:
    """The current page's URL state (what a view saves)."""
    state = {}
    for key in st.query_params:
        value = param(key)
        if key != VIEW_PARAM and value:
            state[key] = value
    return state


def _link(view: SavedView) -> None:
    page = PAGE_FILES.get(view.page)
    if page is None:  # a page this dashboards version does not have (yet)
        st.caption(f"{inert(view.name)} ({inert(view.page)}: not a page here)")
        return
    st.page_link(page, label=inert(view.name), query_params={VIEW_PARAM: view.view_id}, icon=":material/bookmark:")


def views_sidebar(page: str) -> None:
    """The sidebar's saved views: links to the project's views and a form saving this page's state."""
    with st.sidebar:
        st.subheader("Saved views")
        flash = st.session_state.pop(_FLASH, None)
        if flash:
            getattr(st, flash[0])(flash[1])
        try:
            views = client().saved_views().views
        except EndpointMissing:
            st.caption("this server has no saved views yet (/api/views)")
            return
        except ApiError as exc:
            show_error(exc)
            return
        for view in views:
            _link(view)
        if not views:
            st.caption("none yet: save this page's filters below")
        with st.form("save_view", clear_on_submit=True, border=False):
            name = st.text_input("Save this view as", max_chars=200, placeholder="e.g. failing refunds, last 7d")
            if st.form_submit_button("Save view", icon=":material/bookmark_add:") and name.strip():
                try:
                    saved = client().save_view(name.strip(), page, _state())
                except ApiError as exc:
                    st.session_state[_FLASH] = ("error", f"not saved: {inert(exc.message)}")
                else:
                    st.session_state[_FLASH] = ("success", f"saved {inert(saved.name)}: share the link "
                                                           f"`?{VIEW_PARAM}={saved.view_id}`")
                st.rerun()
        current = [v for v in views if v.page == page]
        if current:
            doomed = st.selectbox("Delete a view of this page", ["", *(v.view_id for v in current)],
                                  format_func=lambda vid: next((v.name for v in current if v.view_id == vid), "—"))
            if doomed and st.button("Delete view", icon=":material/delete:"):
                try:
                    client().delete_view(doomed)
                except ApiError as exc:
                    st.session_state[_FLASH] = ("error", f"not deleted: {inert(exc.message)}")
                st.rerun()
