"""Datasets from traces: stored runs saved as eval cases in the JSONL format `steplens eval run` reads.

- `model`: what a client asks for (`DatasetIn`: a runs filter or trace ids, and how to build the
  expectations) and what it gets back.
- `build`: one run -> one case (task, expected answer, tools, forbidden tools), or the reason it
  cannot be one.
- `store`: the `datasets` / `dataset_cases` tables.
- `cli`: `steplens dataset create|list|get`, a client of the HTTP API.
"""
