"""`steplens import`: send saved OpenTelemetry traces to a running steplens server.

Why through the server's own OTLP/HTTP endpoint rather than into the DuckDB file: DuckDB allows one
writing process (the server), and going through `POST /v1/traces` gives imported spans exactly the
guarantees live spans get (durable 200, dedup of retried spans, per-span `partial_success`).

Modules: `read` (files -> export requests), `batch` (-> requests of bounded size), `send` (HTTP with
retries), `run` (the whole import, progress, summary, the CLI entry), `models` (the typed surface).
"""

from ingest.importer.batch import Batch, Batcher, split_batch
from ingest.importer.models import ImportOptions, ImportSummary, Problem
from ingest.importer.read import Record, find_inputs, read_file
from ingest.importer.run import DEFAULT_API, import_command, import_paths, print_summary
from ingest.importer.send import Sender, traces_url

__all__ = [
    "DEFAULT_API",
    "Batch",
    "Batcher",
    "ImportOptions",
    "ImportSummary",
    "Problem",
    "Record",
    "Sender",
    "find_inputs",
    "import_command",
    "import_paths",
    "print_summary",
    "read_file",
    "split_batch",
    "traces_url",
]
