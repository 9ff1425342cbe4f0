"""Evaluation harness: run a JSONL dataset through an agent, score every case, compare runs.

    steplens eval run kernel/examples/datasets/ticket_eval.jsonl --agent ticket --version v2
    steplens eval compare RUN_A RUN_B

`dataset` reads and checks cases, `scoring` judges one run, `runner` runs cases as normal traced
runs tagged with eval ids, `results` sums up and saves, `compare` diffs two saved runs.
"""

from kernel.eval.compare import CaseChange, Comparison, compare
from kernel.eval.dataset import DatasetError, EvalCase, Expectations, load_dataset
from kernel.eval.results import DEFAULT_DIR, EvalRun, EvalSummary, ResultsNotFound, load_run
from kernel.eval.runner import evaluate, new_run_id, run_case, run_cases
from kernel.eval.scoring import CaseResult, score

__all__ = [
    "DEFAULT_DIR",
    "CaseChange",
    "CaseResult",
    "Comparison",
    "DatasetError",
    "EvalCase",
    "EvalRun",
    "EvalSummary",
    "Expectations",
    "ResultsNotFound",
    "compare",
    "evaluate",
    "load_dataset",
    "load_run",
    "new_run_id",
    "run_case",
    "run_cases",
    "score",
]
