"""The evaluator service the server runs: finds settled runs each rule still has to score, evaluates
them on a bounded pool, writes their scores through the scores' durable path, records outcomes.

Why a thread of its own with a pool under it (as the alert service, ingest/alerts/service.py): an
evaluation reads DuckDB and may wait seconds on a judge model; on the event loop it would stall
OTLP exports, and on the store's writer it would stall loading. The service only reads through
`store.read()` and writes one small outcome row per evaluation through `run_write`, so ingest
never waits on it. Why retries are per evaluation (tenacity, exponential backoff): a judge endpoint
that answers 500 for a minute, or a spool that is briefly full, must delay that evaluation, not
lose it and not stop the rule's other runs; what fails for good (a config the score breaks, a
judge whose output cannot be read) is recorded as an error with its reason, never raised.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ingest.clock import utcnow
from ingest.evaluators import state
from ingest.evaluators.builtin import run_builtin
from ingest.evaluators.judge import JudgeError, JudgeVerdict, TraceTarget, judge_run
from ingest.evaluators.rules import EvaluatorRule, JudgeParams
from ingest.evaluators.run_view import RunView, load_run_view
from ingest.store.backend import queries_of
from ingest.store.work import work_of

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 30.0
BATCH = 200  # candidates fetched per rule per pass
RETRY_BACKOFF_S = 1.0  # first wait between tries of one evaluation; doubles, at most RETRY_MAX_S
RETRY_MAX_S = 30.0
MAX_REASON = 4000  # longest reason kept as the score's comment
MAX_JOBS = 100  # backfill jobs remembered (finished ones beyond it are forgotten, oldest first)

ScoreWriter = Callable[[str, list[dict[str, Any]]], None]


class Retryable(Exception):
    """An evaluation failed for a reason that may pass (store busy, judge down): try again later."""


class Permanent(Exception):
    """An evaluation failed for a reason trying again will not change: recorded as its error."""


def score_id(rule: str, project: str, trace_id: str) -> str:
    """The id of the score `rule` writes on a run: the same on every try, restart and backfill."""
    return hashlib.sha256(f"evaluator-v1\x1f{rule}\x1f{project}\x1f{trace_id}".encode()).hexdigest()[:32]


def store_score_writer(store: Any) -> ScoreWriter:
    """Scores written with `ingest.scores.submit_scores_blocking`: checked against their configs,
    durable (spooled, fsynced) when it returns."""

    def write(project: str, scores: list[dict[str, Any]]) -> None:
        from ingest.errors import IngestError
        from ingest.scores.model import ScoreIn
        from ingest.scores.submit import submit_scores_blocking

        try:
            submit_scores_blocking(store, project, [ScoreIn(**s) for s in scores])
        except IngestError as exc:
            if exc.mapping.retryable:
                raise Retryable(f"the score could not be stored yet: {exc.message}") from exc
            raise Permanent(f"the score was refused: {exc.message}") from exc
        except ValueError as exc:  # a config the score breaks (ScoresRejected), an invalid score
            raise Permanent(f"the score was refused: {exc}") from exc

    return write


def _loopback_url(http_url: str | None) -> str | None:
    if not http_url:
        return None
    for wildcard, loop in (("//0.0.0.0:", "//127.0.0.1:"), ("//[::]:", "//[::1]:")):
        http_url = http_url.replace(wildcard, loop)
    return http_url.rstrip("/")


@dataclass
class RuleStatus:
    last_pass: datetime | None = None
    last_error: str | None = None


@dataclass
class BackfillJob:
    job_id: str
    rule: str
    since: datetime | None
    projects: frozenset[str] | None
    total: int = 0
    done: int = 0
    errors: int = 0
    finished: bool = False
    error: str | None = None
    started_at: datetime = field(default_factory=utcnow)


class EvaluatorService:
    """`store` needs `read()`, `run_write(fn) -> Future` (either store) and what `score_writer` needs."""

    def __init__(
        self, store: Any, rules: list[EvaluatorRule], *, settings: Any = None, concurrency: int = 4,
        poll_interval_s: float = 5.0, score_writer: ScoreWriter | None = None,
        clock: Callable[[], datetime] = utcnow, retry_backoff_s: float = RETRY_BACKOFF_S,
    ) -> None:
        self.store = store
        self.work = work_of(store)  # the store's own SQL for the evaluations table (ingest/store/work.py)
        self.rules = list(rules)
        self.settings = settings
        self.poll_interval_s = poll_interval_s
        self.concurrency = max(1, concurrency)
        self.clock = clock
        self.retry_backoff_s = retry_backoff_s
        self.write_scores = score_writer or store_score_writer(store)
        self.http_url: str | None = None  # this server's own URL, where judge runs are exported
        self.status: dict[str, RuleStatus] = {r.name: RuleStatus() for r in self.rules}
        self.jobs: dict[str, BackfillJob] = {}
        self._in_flight: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None

    def rule(self, name: str) -> EvaluatorRule | None:
        return next((r for r in self.rules if r.name == name), None)

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self, http_url: str | None = None) -> None:
        """Start the pool and, when there are enabled rules, the polling thread."""
        self.http_url = _loopback_url(http_url) or self.http_url
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="steplens-evaluator")
        if self._thread is None and any(r.enabled for r in self.rules):
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="steplens-evaluators", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop polling and drop queued evaluations (they stay candidates); one already running finishes
        its current try (a judge call is bounded by its `timeout_s`) but records nothing once the store
        has stopped, so it is simply evaluated again after the restart."""
        self._stop.set()
        self._wake.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        """Whether this process runs the job's thread now (reported by /readyz, ingest/jobs.py)."""
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for rule in self.rules:
                if self._stop.is_set():
                    return
                if rule.enabled:
                    self.run_pass(rule)
            self._wake.wait(self.poll_interval_s)
            self._wake.clear()

    # ---- passes ---------------------------------------------------------------------------------

    def run_pass(self, rule: EvaluatorRule, *, since: datetime | None = None, backfill: bool = False,
                 projects: frozenset[str] | None = None, job: BackfillJob | None = None) -> int:
        """Evaluate the rule's current candidates (one page); how many were evaluated."""
        status = self.status.setdefault(rule.name, RuleStatus())
        now = self.clock()
        try:
            with self.store.read() as cur:
                found = self.work.evaluations.candidates(cur, rule, now, BATCH, projects=projects, since=since,
                                                         backfill=backfill)
        except Exception as exc:  # noqa: BLE001 - kept on the rule, logged, retried next pass
            log.exception("evaluator rule %r: could not list its runs", rule.name)
            status.last_error = f"{type(exc).__name__}: {exc}"
            return 0
        futures: list[tuple[Future[state.Outcome | None], tuple[str, str, str]]] = []
        pool = self._pool
        for project, trace_id in found:
            key = (rule.name, project, trace_id)
            with self._lock:
                if key in self._in_flight:
                    continue
                self._in_flight.add(key)
            try:
                if pool is None:
                    raise RuntimeError("the evaluator service is stopped")
                futures.append((pool.submit(self._guarded, rule, project, trace_id, key), key))
            except RuntimeError:  # stopped (pool gone or shut down) while this pass ran
                with self._lock:
                    self._in_flight.discard(key)
                break
        evaluated = 0
        for future, key in futures:
            while not future.done() and not self._stop.is_set():
                wait([future], timeout=0.5)
            if not future.done():  # stopping: the pass ends now, the pool finishes or drops the rest
                break
            try:
                outcome = future.result()
            except CancelledError:  # the service stopped before this one started: a candidate next time
                with self._lock:
                    self._in_flight.discard(key)
                continue
            if outcome is not None:
                evaluated += 1
                if job is not None:
                    job.done += 1
                    job.errors += outcome.status == state.ERROR
        status.last_pass = now
        status.last_error = None
        return evaluated

    def _guarded(self, rule: EvaluatorRule, project: str, trace_id: str, key: tuple[str, str, str]) -> state.Outcome | None:
        try:
            return self.evaluate(rule, project, trace_id)
        except Exception:  # noqa: BLE001 - an environmental failure: not recorded, tried again next pass
            if self._stop.is_set():  # the store stopped under it: evaluated again after the restart
                log.debug("evaluator rule %r on %s/%s: interrupted by the stop", rule.name, project, trace_id)
            else:
                log.exception("evaluator rule %r on %s/%s: left for the next pass", rule.name, project, trace_id)
            return None
        finally:
            with self._lock:
                self._in_flight.discard(key)

    # ---- one evaluation -------------------------------------------------------------------------

    def evaluate(self, rule: EvaluatorRule, project: str, trace_id: str) -> state.Outcome:
        """Score one run with retries; record and return its outcome (done, or error with the reason).
        Raises only when even recording is impossible (the store is down): then nothing is recorded
        and the run stays a candidate."""
        attempts = 0
        spent = {"cost": 0.0, "traces": []}

        def attempt() -> state.Outcome:
            nonlocal attempts
            attempts += 1
            return self._attempt(rule, project, trace_id, attempts, spent)

        retrying = Retrying(
            stop=stop_after_attempt(rule.max_attempts),
            wait=wait_exponential(multiplier=self.retry_backoff_s, max=RETRY_MAX_S),
            retry=retry_if_exception(lambda exc: isinstance(exc, Retryable)),
            sleep=lambda s: self._stop.wait(s) and None,
            reraise=True,
        )
        try:
            outcome = retrying(attempt)
        except (Retryable, Permanent) as exc:
            outcome = state.Outcome(
                project, rule.name, trace_id, state.ERROR, rule.score.name, None, None, None, None, str(exc),
                attempts, spent["cost"] or None, list(spent["traces"]),
            )
            log.warning("evaluator rule %r on %s/%s: %s", rule.name, project, trace_id, exc)
        now = self.clock()
        self.store.run_write(lambda conn: self.work.evaluations.record(conn, outcome, now)).result(WRITE_TIMEOUT_S)
        return outcome

    def _attempt(self, rule: EvaluatorRule, project: str, trace_id: str, attempts: int,
                 spent: dict[str, Any]) -> state.Outcome:
        with self.store.read() as cur:
            run = load_run_view(cur, project, trace_id, queries_of(self.store))
        if run is None:
            raise Permanent("the run is no longer stored")
        verdict_value, reason, judge = self._verdict(rule, run, spent)
        reason = reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"  # a judge may ramble
        value, numeric, label, passed = _typed(rule, verdict_value)
        sid = score_id(rule.name, project, trace_id)
        metadata: dict[str, Any] = {"rule": rule.name, "evaluator": rule.evaluator.kind}
        if judge is not None:
            metadata.update(judge_model=rule.evaluator.model, judge_trace_id=judge.trace_ids[-1] if judge.trace_ids
                            else None, cost_usd=judge.cost_usd)  # type: ignore[union-attr]
        self.write_scores(project, [{
            "name": rule.score.name, "value": value, "data_type": rule.score.type, "comment": reason,
            "source": "judge" if judge is not None else "rule", "author": rule.author, "trace_id": trace_id,
            "score_id": sid, "metadata": metadata,
        }])
        return state.Outcome(project, rule.name, trace_id, state.DONE, rule.score.name, sid, numeric, label, passed,
                             reason, attempts, spent["cost"] if judge is not None else None, list(spent["traces"]),
                             run.start_time)

    def _verdict(self, rule: EvaluatorRule, run: RunView,
                 spent: dict[str, Any]) -> tuple[bool | float | str, str, JudgeVerdict | None]:
        params = rule.evaluator
        if not isinstance(params, JudgeParams):
            verdict = run_builtin(run, params)
            return verdict.passed, verdict.reason, None
        try:
            judged = judge_run(run, rule.name, params, rule.score, self._trace_target(run.project))
        except JudgeError as exc:
            spent["cost"] += exc.cost_usd
            spent["traces"].extend(exc.trace_ids)
            raise (Retryable if exc.retryable else Permanent)(str(exc)) from exc
        spent["cost"] += judged.cost_usd
        spent["traces"].extend(judged.trace_ids)
        return judged.value, judged.reason, judged

    def _trace_target(self, project: str) -> TraceTarget:
        """This server's OTLP endpoint and a key that sends into `project` (none needed without keys)."""
        if not self.http_url:
            return TraceTarget(None)
        endpoint = self.http_url + "/v1/traces"
        keys = list(getattr(self.settings, "api_keys", None) or [])
        if not keys:
            return TraceTarget(endpoint)
        for key in keys:
            if key.project == project and ({"ingest", "admin"} & set(key.scopes)):
                secret = key.key or (os.environ.get(key.key_env, "") if key.key_env else "")
                if secret:
                    return TraceTarget(endpoint, secret)
        log.warning("no ingest key of project %r: its judge runs are not traced", project)
        return TraceTarget(None)

    # ---- backfill -------------------------------------------------------------------------------

    def start_backfill(self, rule: EvaluatorRule, since: datetime | None,
                       projects: frozenset[str] | None) -> BackfillJob:
        """Score the rule's runs since `since` in the background; the job tells the progress."""
        job = BackfillJob(uuid.uuid4().hex[:16], rule.name, since, projects)
        with self.store.read() as cur:
            job.total = self.work.evaluations.count_candidates(cur, rule, self.clock(), since, projects)
        self.jobs[job.job_id] = job
        finished = [j for j in self.jobs.values() if j.finished]
        for old in finished[: max(0, len(self.jobs) - MAX_JOBS)]:  # oldest first: dicts keep insertion order
            self.jobs.pop(old.job_id, None)
        if self._pool is None:
            # the pool only: on a node without the singleton jobs (an api node of a split deployment)
            # the backfill runs here, but the online polling stays the worker's alone
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="steplens-evaluator")
        threading.Thread(target=self._backfill, args=(rule, job), name="steplens-evaluator-backfill",
                         daemon=True).start()
        return job

    def _backfill(self, rule: EvaluatorRule, job: BackfillJob) -> None:
        try:
            while not self._stop.is_set() and job.done < job.total:
                if self.run_pass(rule, since=job.since, backfill=True, projects=job.projects, job=job) == 0:
                    break  # nothing left, or only runs another pass is evaluating right now
        except Exception as exc:  # noqa: BLE001 - reported on the job
            log.exception("backfill of %r failed", rule.name)
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.finished = True


def _typed(rule: EvaluatorRule, value: bool | float | str) -> tuple[bool | float | str, float | None, str | None,
                                                                     bool | None]:
    """(score value, value_numeric, value_label, passed) in the rule's score type."""
    spec = rule.score
    if spec.type == "boolean":
        flag = bool(value)
        return flag, float(flag), "true" if flag else "false", flag
    if spec.type == "numeric":
        number = float(value)
        passed = (number >= spec.pass_at) if spec.pass_at is not None else (number >= 1.0 if isinstance(value, bool)
                                                                             else None)
        return number, number, None, passed
    label = str(value)
    passed = (label in spec.pass_labels) if spec.pass_labels else None
    return label, None, label, passed
