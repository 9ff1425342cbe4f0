"""The alert service the server runs: evaluates each rule on its interval, records transitions
through the store's `alerts` module (ingest/queries/alerts.py on DuckDB, the ClickHouse one under
ingest/store/clickhouse/queries/), hands notifications to the dispatcher.

Why `records`: in a split deployment only the worker runs the alert job; an api node holds the
same service to list rules and state, and its `check` (POST /api/alerts/check) evaluates without
recording or notifying, from the stored states, so two nodes never fire the same transition twice.

Why a thread and not the event loop: evaluation runs DuckDB queries and scipy, both blocking;
on the loop they would stall OTLP exports. Why errors are kept per rule: a rule that cannot be
evaluated (bad data, a query over the time limit) must show up in `GET /api/alerts` and the log,
not disappear, and must not stop the other rules.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ingest.alerts.channels import Dispatcher
from ingest.alerts.evaluate import evaluate
from ingest.alerts.rules import AlertChannelConfig, AlertRule
from ingest.alerts.state import AlertEvent, AlertState, plan_outcomes
from ingest.clock import utcnow
from ingest.store.backend import queries_of

log = logging.getLogger(__name__)


@dataclass
class RuleStatus:
    last_evaluated: datetime | None = None
    next_due: datetime | None = None
    last_error: str | None = None
    evaluations: int = 0


@dataclass
class CheckResult:
    evaluated: int
    events: list[AlertEvent] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    # the states after this check of the rules it evaluated (not recorded when the service does not record)
    states: list[AlertState] = field(default_factory=list)
    recorded: bool = True


class AlertService:
    """`store` needs `read()` (time-limited cursor) and what its `alerts` query module's `record`
    needs (DuckDB: `run_write`). `records` false: evaluations are not recorded nor notified."""

    def __init__(
        self, store: object, rules: list[AlertRule], channels: list[AlertChannelConfig],
        clock: Callable[[], datetime] = utcnow, dispatcher: Dispatcher | None = None, builtin: bool = False,
        records: bool = True,
    ) -> None:
        self.store = store
        self.records = records
        self.rules = list(rules)
        self.builtin = builtin  # the rules are the built-in set (ingest.alerts.defaults), not configured ones
        self.channels = list(channels)
        self.clock = clock
        self.dispatcher = dispatcher or Dispatcher(self.channels)
        self.status: dict[str, RuleStatus] = {r.name: RuleStatus() for r in self.rules}
        self._eval_lock = threading.Lock()  # one evaluation at a time (loop vs POST /alerts/check)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    def start(self, background: bool = True) -> None:
        """Start the dispatcher and, when there are rules and `background`, the evaluation loop."""
        self.dispatcher.start()
        if background and self.rules and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="steplens-alert-evaluator", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 15.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.dispatcher.stop(timeout)

    @property
    def running(self) -> bool:
        """Whether this process runs the job's thread now (reported by /readyz, ingest/jobs.py)."""
        return self._thread is not None and self._thread.is_alive()

    # ---- evaluation -----------------------------------------------------------------------------

    def evaluate_rule(self, rule: AlertRule, now: datetime | None = None) -> list[AlertEvent]:
        """Evaluate `rule` once, record its transitions, queue notifications; raises on failure.
        Without `records`, nothing is recorded or notified."""
        return self._evaluate(rule, now)[1]

    def _evaluate(self, rule: AlertRule, now: datetime | None) -> tuple[list[AlertState], list[AlertEvent]]:
        """(states after the evaluation when not recording, else []; the events recorded and queued)."""
        now = now or self.clock()
        queries = queries_of(self.store)
        with self.store.read() as cur:  # type: ignore[attr-defined]
            outcomes = evaluate(cur, rule, now, queries)
            if not self.records:
                previous = {s.subject: s for s in queries.alerts.read_states(cur, rule.name)}
                states, _ = plan_outcomes(previous, rule.name, rule.severity.value, rule.channels, rule.cooldown,
                                          outcomes, now)
                return states, []
        events: list[AlertEvent] = queries.alerts.record(
            self.store, rule.name, rule.severity.value, rule.channels, rule.cooldown, outcomes, now
        )
        for event in events:
            self.dispatcher.submit(event)
        return [], events

    def check(self, now: datetime | None = None, only: Callable[[AlertRule], bool] | None = None) -> CheckResult:
        """Evaluate every rule now (the `alerts check` path), or those `only` accepts (a key bound to one
        project evaluates that project's rules, never another's); failures are reported per rule."""
        result = CheckResult(evaluated=0, recorded=self.records)
        with self._eval_lock:
            for rule in self.rules:
                if only is not None and not only(rule):
                    continue
                states, events, error = self._guarded(rule, now)
                result.evaluated += 1
                result.events.extend(events)
                result.states.extend(states)
                if error:
                    result.errors[rule.name] = error
        return result

    def _guarded(
        self, rule: AlertRule, now: datetime | None
    ) -> tuple[list[AlertState], list[AlertEvent], str | None]:
        status = self.status.setdefault(rule.name, RuleStatus())
        at = now or self.clock()
        states: list[AlertState] = []
        try:
            states, events = self._evaluate(rule, at)
        except Exception as exc:  # noqa: BLE001 - kept on the rule and logged: errors are data
            log.exception("alert rule %r could not be evaluated", rule.name)
            status.last_error = f"{type(exc).__name__}: {exc}"
            events = []
        else:
            status.last_error = None
        status.last_evaluated = at
        status.next_due = at + rule.interval
        status.evaluations += 1
        return states, events, status.last_error

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = self.clock()
            for rule in self.rules:
                status = self.status[rule.name]
                if status.next_due is None or status.next_due <= now:
                    with self._eval_lock:
                        self._guarded(rule, None)
                if self._stop.is_set():
                    return
            dues = [s.next_due for s in self.status.values() if s.next_due is not None]
            wait = max(0.05, min(((d - self.clock()).total_seconds() for d in dues), default=1.0))
            self._stop.wait(min(wait, 60.0))
