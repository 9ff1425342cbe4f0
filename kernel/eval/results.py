"""An evaluation run's results: per case and summed up, saved as JSON (`data/evals/<run_id>.json`).

Why a file per run: `eval compare` must work months later, offline, on two runs made by different
people or CI jobs; the file carries everything needed (agent, version, dataset digest, seed).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from kernel.eval.scoring import CaseResult

DEFAULT_DIR = Path("data") / "evals"
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class EvalSummary(BaseModel):
    cases: int
    passed: int
    success_rate: float
    mean_steps: float
    timeout_rate: float = Field(description="Share of runs stopped by the time or step limit (timeout, max_steps).")
    input_tokens: int
    output_tokens: int
    cost_usd: float
    stop_reasons: dict[str, int]
    by_category: dict[str, dict[str, float]] = Field(default_factory=dict)

    @classmethod
    def of(cls, cases: list[CaseResult]) -> EvalSummary:
        n = len(cases)
        categories: dict[str, dict[str, float]] = {}
        for name in sorted({c.category for c in cases}):
            mine = [c for c in cases if c.category == name]
            categories[name] = {"cases": len(mine), "success_rate": sum(c.passed for c in mine) / len(mine)}
        return cls(
            cases=n,
            passed=sum(c.passed for c in cases),
            success_rate=sum(c.passed for c in cases) / n if n else 0.0,
            mean_steps=sum(c.steps for c in cases) / n if n else 0.0,
            timeout_rate=sum(c.timed_out for c in cases) / n if n else 0.0,
            input_tokens=sum(c.input_tokens for c in cases),
            output_tokens=sum(c.output_tokens for c in cases),
            cost_usd=sum(c.cost_usd for c in cases),
            stop_reasons=dict(Counter(c.stop_reason for c in cases).most_common()),
            by_category=categories,
        )


class EvalRun(BaseModel):
    run_id: str
    agent: str
    version: str
    dataset: str
    dataset_sha256: str
    seed: int
    started_at: datetime
    seconds: float
    endpoint: str | None = None
    spans_exported: int | None = None
    spans_lost: int | None = None
    scores_posted: int | None = Field(None, description="Case verdicts the server accepted as scores (eval_passed).")
    scores_error: str | None = None
    summary: EvalSummary
    cases: list[CaseResult]

    def save(self, directory: Path = DEFAULT_DIR) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.run_id}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(path)  # a crash mid-write never leaves half a results file
        return path


class ResultsNotFound(LookupError):
    pass


def load_run(ref: str | Path, directory: Path = DEFAULT_DIR) -> EvalRun:
    """A saved run by path, or by run id in `directory`. ResultsNotFound / ValueError say why not."""
    path = Path(ref)
    if not path.is_file():
        if not _RUN_ID_RE.match(str(ref)):
            raise ResultsNotFound(f"{ref!r} is neither a results file nor a run id")
        path = directory / f"{ref}.json"
    if not path.is_file():
        known = sorted(p.stem for p in directory.glob("*.json")) if directory.is_dir() else []
        hint = f"; known runs in {directory}: {', '.join(known[-5:])}" if known else f"; {directory} has no runs"
        raise ResultsNotFound(f"no results for {str(ref)!r}{hint}")
    try:
        return EvalRun.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} is not an eval results file: {exc}") from exc
