"""The README's "Gray release" snippet really runs: executed as a separate Python process against a
real steplens server, it prints the cohorts it documents, and the server's runs say which side each
run was on, with the shadow mirrors kept out of the live listing. EXAMPLE is read from README.md;
only the endpoint is pointed at the test's server."""

from __future__ import annotations

from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.readme import python_blocks, run_example
from tests.support.scores_http import run_trace_ids


def test_readme_release_example_runs_and_the_server_holds_its_cohorts(ingest_server) -> None:  # noqa: F811
    out = run_example(python_blocks("Gray release")[0], ingest_server.http_url)
    assert out.stdout.strip() == "candidate stable 6"
    assert ingest_server.store.wait_loaded(30)
    url = ingest_server.http_url
    candidate = run_trace_ids(url, release="desk-2.0", cohort="candidate")
    stable = run_trace_ids(url, release="desk-2.0", cohort="stable")
    assert len(candidate) + len(stable) == 50 and len(candidate) >= 1  # alice at least
    assert len(run_trace_ids(url, release="desk-2.0", cohort="shadow", mode="shadow")) == 6
    assert len(run_trace_ids(url)) == 50  # live figures: the mirrors are not in them
