'''The README's "Scores and feedback" example really runs: executed as a separate Python process
against a real server, the run's trace, the end user's feedback and the two POSTed scores are all
there afterwards, typed as sent.

EXAMPLE is read from README.md; only the server address is pointed at the test's server.'''

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.ingest.scores.conftest import get_scores

ROOT = Path(__file__).resolve().parents[3]
README_ENDPOINT = "http://127.0.0.1:4318"


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Scores and feedback", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_readme_scores_example_runs(scores_server: Any) -> None:
    example = _readme_example()
    assert README_ENDPOINT in example
    code = example.replace(README_ENDPOINT, scores_server.http_url)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["acknowledged: True", "accepted: 2"]
    assert scores_server.store.wait_loaded(10)
    scores = {s["name"]: s for s in get_scores(scores_server.http_url)}
    assert {n: (s["value"], s["source"], s["agent"]) for n, s in scores.items()} == {
        "helpful": (True, "client", "shop"), "correct": (True, "human", "shop"), "tone": ("polite", "rule", "shop")}
    assert scores["helpful"]["author"] == "u-42" and scores["helpful"]["comment"] == "quick answer"
