"""`tracer.setup(endpoint="console")` is the "show me what would be sent" mode: spans must come
out on the process's stdout, with our names and attributes, and be counted as exported like any
other backend. Run in a subprocess because the SDK's console exporter binds `sys.stdout` at import
time (pytest's capture would swallow it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tracer import conventions as c

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    import sys
    import tracer
    from tracer import conventions as c
    from tracer import spans

    handle = tracer.setup(service_name="console-test", endpoint="console", schedule_delay_ms=10)
    with spans.run_span("printer", task="say hi") as run:
        with spans.step_span(1) as step:
            step.record(kind=c.StepKind.FINISH, action=c.ACTION_FINISH, parse=c.ParseStatus.OK)
        run.finish(ok=True, stop_reason=c.StopReason.FINISH, steps=1, answer="hi")
    assert handle.force_flush(timeout_s=5)
    stats = handle.stats()
    handle.shutdown(timeout_s=2)
    print(f"STATS exported={stats.exported} failed={stats.failed}", file=sys.stderr)
    """
)


def _json_documents(text: str) -> list[dict]:
    decoder, docs, pos = json.JSONDecoder(), [], 0
    while (start := text.find("{", pos)) != -1:
        doc, pos = decoder.raw_decode(text, start)
        docs.append(doc)
    return docs


def test_console_endpoint_prints_the_spans_with_their_attributes() -> None:
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "STATS exported=2 failed=0" in out.stderr
    by_name = {d["name"]: d for d in _json_documents(out.stdout)}
    assert set(by_name) == {"invoke_agent printer", "step 1"}
    run = by_name["invoke_agent printer"]
    assert run["attributes"][c.RUN_STOP_REASON] == "finish" and run["attributes"][c.RUN_TASK] == "say hi"
    assert run["resource"]["attributes"][c.SERVICE_NAME] == "console-test"
    assert by_name["step 1"]["parent_id"] == run["context"]["span_id"]
