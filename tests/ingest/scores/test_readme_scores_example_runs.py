'''The README's "Scores and feedback" example really runs: executed as a separate Python process
against a real server, the run's trace, the end user's feedback and the two POSTed scores are all
there afterwards, typed as sent.

EXAMPLE is read from README.md; only the server address is pointed at the test's server.'''

from __future__ import annotations

from typing import Any

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.scores.conftest import get_scores
from tests.support.readme import python_blocks, run_example

pytestmark = pytest.mark.parametrize("backend", BACKENDS)  # the same contract on each store


def test_readme_scores_example_runs(scores_server: Any) -> None:
    out = run_example(python_blocks("Scores and feedback")[0], scores_server.http_url)
    assert out.stdout.split("\n")[:2] == ["acknowledged: True", "accepted: 2"]
    assert scores_server.store.wait_loaded(10)
    scores = {s["name"]: s for s in get_scores(scores_server.http_url)}
    assert {n: (s["value"], s["source"], s["agent"]) for n, s in scores.items()} == {
        "helpful": (True, "client", "shop"), "correct": (True, "human", "shop"), "tone": ("polite", "rule", "shop")}
    assert scores["helpful"]["author"] == "u-42" and scores["helpful"]["comment"] == "quick answer"
