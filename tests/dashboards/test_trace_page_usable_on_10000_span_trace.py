"""A 10,001-span trace opens on the Trace page: steps are paged, the timeline shows a window, and
the page URL carries the page numbers."""

from __future__ import annotations

import time

from tests.dashboards.conftest import LoadedServer, open_page


def test_wide_trace_is_paged_not_rendered_whole(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    t0 = time.monotonic()
    at = open_page("trace", {"trace_id": loaded_server.wide_trace}, timeout=120)
    assert not at.exception
    assert any("10,001 spans" in str(c.value) for c in at.caption)
    step_expanders = [e for e in at.expander if e.label.startswith("Step")]
    assert len(step_expanders) == 20  # one page of 5000 steps
    pagers = {n.label: n for n in at.number_input}
    assert "Step page (of 250)" in pagers and "Span window (of 34)" in pagers
    pagers["Step page (of 250)"].set_value(250).run()
    assert not at.exception
    labels = [e.label for e in at.expander if e.label.startswith("Step")]
    assert labels[-1].startswith("Step 4999")
    assert at.query_params["step_page"] == "250"
    assert time.monotonic() - t0 < 100
