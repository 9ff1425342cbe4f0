"""The dashboards' entry point: `streamlit run dashboards/app.py` (what `steplens ui` starts).

Why pages run inside a guard here: whatever a page does, the browser gets a clear message and
never a traceback (together with `client.showErrorDetails = "none"`, set by `steplens ui`).
"""

from __future__ import annotations

import streamlit as st

from dashboards.auth import require_login
from dashboards.config import load_ui_settings
from dashboards.ui import guard

st.set_page_config(page_title="steplens", page_icon=":material/insights:", layout="wide")

require_login(load_ui_settings())

PAGES = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", url_path="overview", default=True),
    st.Page("pages/failures.py", title="Failures", icon=":material/error:", url_path="failures"),
    st.Page("pages/tools.py", title="Tools", icon=":material/build:", url_path="tools"),
    st.Page("pages/cost.py", title="Cost", icon=":material/payments:", url_path="cost"),
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", url_path="runs"),
    st.Page("pages/trace.py", title="Trace", icon=":material/timeline:", url_path="trace"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
]

page = st.navigation(PAGES)
with guard():
    page.run()
