"""The Runs page's "Save as dataset" action: the runs the page lists, saved as eval cases.

Why the page's own query: what a person sees listed (filters, status, stop reason, search, sort)
is what they mean to keep, so the dataset is made from exactly those `GET /api/runs` parameters
(up to `MAX_RUNS` of them, in the listing's order), not from a second description of them.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboards.client import Filters, QueryClient
from dashboards.text import code, inert
from dashboards.ui import guard

MAX_RUNS = 1000


def listing_params(filters: Filters, ok: bool | None, stop_reason: str | None, q: str | None, sort: str,
                   order: str, limit: int) -> dict[str, Any]:
    """The `GET /api/runs` parameters of a listing (what `QueryClient.runs` sends, without paging)."""
    params: dict[str, Any] = {**filters.params(), "sort": sort, "order": order, "limit": limit}
    extra = {"ok": None if ok is None else str(ok).lower(), "stop_reason": stop_reason, "q": q}
    params.update({k: v for k, v in extra.items() if v not in (None, "")})
    return params


def save_as_dataset(api: QueryClient, params: dict[str, Any]) -> None:
    """An expander with a name, a size and a button; on save, the result and the JSONL to download."""
    with st.expander("Save as dataset", icon=":material/dataset:"):
        st.caption("The runs listed here, in this order, become eval cases for `steplens eval run` "
                   "(task, expected answer or a reviewer's correction, tools). Needs the annotate scope.")
        c1, c2, c3 = st.columns([3, 1, 1])
        name = c1.text_input("Dataset name", key="dataset_name", placeholder="e.g. ops-v2-failures")
        size = c2.number_input("Runs", min_value=1, max_value=MAX_RUNS, value=50, step=10, key="dataset_size")
        replace = c3.checkbox("Replace", key="dataset_replace")
        if st.button("Save as dataset", key="dataset_save", disabled=not name.strip()):
            with guard():
                saved = api.save_dataset(name.strip(), {**params, "limit": int(size)}, replace=replace)
                st.success(f"dataset {inert(saved.name)}: {saved.cases} cases, {len(saved.skipped)} runs skipped")
                for skip in saved.skipped[:10]:
                    st.caption(f"skipped {code(skip.trace_id)}: {inert(skip.reason)}")
                st.download_button("Download JSONL", api.dataset_jsonl(saved.name, saved.project),
                                   file_name=f"{saved.name}.jsonl", mime="application/x-ndjson",
                                   key="dataset_download")
