"""The README's budget advice snippet (section "Hand-off to a human and budget advice") really runs:
after the section's hand-off example has sent its run to a real steplens server, the Python snippet,
as a separate process, prints the advice the server computes from that history: the default
Budget's step limit (recorded on the run span) and the suggestion P95 x 1.5. Both blocks are read
from README.md; only the endpoint is pointed at the test's server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import python_blocks, run_example

SECTION = "Hand-off to a human and budget advice"


def test_readme_budget_advice_snippet_prints_the_servers_advice(ingest_server) -> None:  # noqa: F811
    handoff, advice = python_blocks(SECTION)
    run_example(handoff, ingest_server.http_url)
    assert ingest_server.store.wait_loaded(30)

    out = run_example(advice, ingest_server.http_url)

    assert out.stdout.strip().splitlines() == ["desk max_steps 20.0 -> 2.0 cuts 0"]
