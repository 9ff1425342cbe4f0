"""The dashboards' entry point: `streamlit run dashboards/app.py` (what `steplens ui` starts).

Why pages run inside a guard here: whatever a page does, the browser gets a clear message and
never a traceback (together with `client.showErrorDetails = "none"`, set by `steplens ui`).

Why the page scripts live in `views/` and not `pages/`: Streamlit serves every script of a
`pages/` folder next to the entry point on its own URL whenever a run ends before
`st.navigation` (as the login gate's `st.stop()` does), which would skip the login entirely.
"""

from __future__ import annotations

import streamlit as st

from dashboards.auth import require_login
from dashboards.config import load_ui_settings
from dashboards.ui import guard

st.set_page_config(page_title="steplens", page_icon=":material/insights:", layout="wide")

require_login(load_ui_settings())

PAGES = [
    st.Page("views/overview.py", title="Overview", icon=":material/dashboard:", url_path="overview", default=True),
    st.Page("views/failures.py", title="Failures", icon=":material/error:", url_path="failures"),
    st.Page("views/tools.py", title="Tools", icon=":material/build:", url_path="tools"),
    st.Page("views/cost.py", title="Cost", icon=":material/payments:", url_path="cost"),
    st.Page("views/replanning.py", title="Replanning", icon=":material/account_tree:", url_path="replanning"),
    st.Page("views/runs.py", title="Runs", icon=":material/list:", url_path="runs"),
    st.Page("views/search.py", title="Search", icon=":material/search:", url_path="search"),
    st.Page("views/trace.py", title="Trace", icon=":material/timeline:", url_path="trace"),
    st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
    st.Page("views/regressions.py", title="Regressions", icon=":material/trending_up:", url_path="regressions"),
    st.Page("views/alerts.py", title="Alerts", icon=":material/notifications:", url_path="alerts"),
    st.Page("views/approvals.py", title="Approvals", icon=":material/approval:", url_path="approvals"),
    st.Page("views/sql.py", title="SQL", icon=":material/terminal:", url_path="sql"),
    st.Page("views/sessions.py", title="Sessions", icon=":material/forum:", url_path="sessions"),
    st.Page("views/graph.py", title="Agent graph", icon=":material/hub:", url_path="graph"),
    st.Page("views/queues.py", title="Queues", icon=":material/rate_review:", url_path="queues"),
    st.Page("views/evaluators.py", title="Evaluators", icon=":material/rule:", url_path="evaluators"),
]

page = st.navigation(PAGES)
with guard():
    page.run()
