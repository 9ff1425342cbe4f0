"""Scores: judgments attached to a run, a span or a session (design.md §3 "scores").

- `model`: the Score a client sends (`ScoreIn`) and the resolved one that is stored (`Score`).
- `configs`: score configs (name, type, range, label set) from steplens.toml and the API, and the
  check a score must pass against its config.
- `submit`: THE function every writer calls (`submit_scores`): HTTP, CLI, queues, evaluators;
  a return means the scores are in the fsynced spool and survive kill -9.
"""
