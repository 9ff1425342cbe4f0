"""Online evaluators: rules in steplens.toml that score finished runs as they arrive.

A rule names which runs (filter, sampling rate, a delay after the run ends so late spans are in),
which evaluator (a deterministic built-in, or an LLM judge) and which score it writes. The server
runs them on their own thread (`service.py`); `steplens eval backfill` runs a rule over past runs
(`backfill.py`). Each (rule, run) is evaluated once: its outcome is kept in `evaluations`
(`state.py`) and its score has a deterministic id, so a restart neither redoes nor loses one.
"""
