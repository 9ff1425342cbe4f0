"""The demo's history: when each run happens, and what the world was like at that moment.

`steplens demo` (by default) spreads its runs over the last `days` days instead of stamping them
all in the same minute, so the dashboards have traffic to chart and the regression and alert
machinery has something real to find. Every run still really executes (now, on the simulated
model); only its clock is shifted to its planned start (`tracer.clock.shifted`), so each run's
spans move together and keep their measured durations.

Traffic shape: busier around the working day (a peak at 14:00 UTC, a quiet night) and on
weekdays (Saturday and Sunday carry about 45% of a weekday's runs).

The story, placed at fixed fractions of the history (so `--days 7` or `--days 30` tells it too;
the dates below are for the default 14 days):

| when | what | where it shows |
|---|---|---|
| day 6, 14:00-15:00 UTC | model-provider outage: 99% of LLM calls answer 429/529, and users retry (the hour gets extra runs) | a burst of `llm_unavailable` (Failures) |
| day 8 onwards | the carrier API behind the ticket agent's `query_logistics` takes twice as long | per-tool latency (Tools) |
| days 8-9, 09:00 | two evaluation batches of ops v2 (`steplens.run.mode` = eval) | eval runs |
| days 9-10 | ops v2 runs in shadow next to live traffic (mode shadow); most become mirrors of the gray release's live runs (`kernel.examples.demo_release`) | shadow runs |
| day 9 | ops v2 rolled out to 30% of ops traffic, from day 12 to all of it (v2 takes more steps); until day 12 as the gray release `ops-v2`, sticky per user | release comparison, candidate vs stable, built-in alerts |
| the last 7 days | the ticket agent's model repeats its previous tool call more and more often (one extra, loop-guarded step each) | step-count drift (CUSUM) |

The planner agent has no planted change: it is the control that nothing should flag.
Every choice is drawn from `(seed, index)` alone, so the same seed and end time plan the same runs.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate

from kernel.examples.catalog import AGENTS
from kernel.examples.faults import FaultRates
from kernel.examples.sessions import assign_sessions

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)

AGENT_WEIGHTS = {"ticket": 0.5, "ops": 0.3, "planner": 0.2}
PEAK_HOUR_UTC = 14.0
NIGHT_SHARE = 0.15  # an hour at night carries this share of the peak hour's traffic
WEEKEND_SHARE = 0.45

# The story, as fractions of the history's length.
OUTAGE_DAY = 6 / 14  # in the drift reference week: a failed run there widens the reference, not a false alarm
OUTAGE_HOUR = 14
OUTAGE_FAULTS = {"outage": 0.99}
OUTAGE_RETRY_SHARE = 0.015  # extra runs in the outage hour: users retry what failed
LATENCY_CHANGE = 8 / 14
CARRIER_LATENCY_S = 0.3  # query_logistics before the change; twice this after (well above event-loop delays)
EVAL_DAYS = (8 / 14, 9 / 14)
EVAL_HOUR = 9
SHADOW = (9 / 14, 11 / 14)
ROLLOUT_START = 9 / 14
ROLLOUT_FULL = 12 / 14
ROLLOUT_SHARE = 0.3
CREEP_MAX_DAYS = 7.0
CREEP_AGENT = "ticket"
CREEP_REPEAT = 0.45  # the repeat rate added by the end of the creep (base 0.04)
CREEP_LOOP_STICKINESS = 0.2  # a repeat rarely turns into a loop: one extra step, seldom a failure

RELEASED_AGENT = "ops"
EVAL_SHARE = 0.03
SHADOW_SHARE = 0.04


@dataclass(frozen=True)
class Story:
    """The dates of a history's planted events."""

    start: datetime
    end: datetime

    @property
    def length(self) -> timedelta:
        return self.end - self.start

    def at(self, fraction: float) -> datetime:
        return self.start + self.length * fraction

    def day_of(self, fraction: float) -> datetime:
        """Midnight UTC of the day `fraction` of the way through (clamped to the history)."""
        t = self.at(fraction)
        return max(self.start, t.replace(hour=0, minute=0, second=0, microsecond=0))

    @property
    def outage(self) -> tuple[datetime, datetime]:
        begin = min(self.day_of(OUTAGE_DAY) + timedelta(hours=OUTAGE_HOUR), self.end - HOUR)
        begin = max(begin, self.start)
        return begin, begin + HOUR

    @property
    def latency_change(self) -> datetime:
        return self.at(LATENCY_CHANGE)

    @property
    def eval_hours(self) -> list[tuple[datetime, datetime]]:
        hours = []
        for fraction in EVAL_DAYS:
            begin = min(self.day_of(fraction) + timedelta(hours=EVAL_HOUR), self.end - HOUR)
            hours.append((max(begin, self.start), max(begin, self.start) + HOUR))
        return hours

    @property
    def shadow(self) -> tuple[datetime, datetime]:
        return self.at(SHADOW[0]), self.at(SHADOW[1])

    @property
    def rollout(self) -> tuple[datetime, datetime]:
        """(v2 gets ROLLOUT_SHARE of the traffic, v2 gets all of it)."""
        return self.at(ROLLOUT_START), self.at(ROLLOUT_FULL)

    @property
    def creep_start(self) -> datetime:
        return self.end - min(timedelta(days=CREEP_MAX_DAYS), self.length / 2)

    def v2_share(self, t: datetime) -> float:
        partial, full = self.rollout
        return 1.0 if t >= full else ROLLOUT_SHARE if t >= partial else 0.0

    def creep(self, t: datetime) -> float:
        """0 before the creep starts, rising linearly to 1 at the end."""
        start = self.creep_start
        if t < start or self.end <= start:
            return 0.0
        return min(1.0, (t - start) / (self.end - start))

    def in_outage(self, t: datetime) -> bool:
        begin, end = self.outage
        return begin <= t < end

    def faults(self, agent: str, t: datetime) -> FaultRates:
        """The simulated model's fault rates for a run of `agent` starting at `t`."""
        rates = FaultRates()
        if agent == CREEP_AGENT and (progress := self.creep(t)) > 0:
            rates = rates.model_copy(update={"repeat": rates.repeat + CREEP_REPEAT * progress,
                                             "loop_stickiness": CREEP_LOOP_STICKINESS})
        if self.in_outage(t):
            rates = rates.model_copy(update=OUTAGE_FAULTS)
        return rates

    def carrier_latency_s(self, t: datetime) -> float:
        return CARRIER_LATENCY_S * (2 if t >= self.latency_change else 1)


def traffic(hour_start: datetime) -> float:
    """Relative traffic of the hour starting at `hour_start` (UTC)."""
    hour = hour_start.hour + 0.5
    distance = min(abs(hour - PEAK_HOUR_UTC), 24 - abs(hour - PEAK_HOUR_UTC))
    daily = NIGHT_SHARE + (1 - NIGHT_SHARE) * math.exp(-((distance / 4.0) ** 2))
    return daily * (WEEKEND_SHARE if hour_start.weekday() >= 5 else 1.0)


@dataclass(frozen=True)
class PlannedRun:
    """One run of the demo, fully decided by (seed, index): what to run and, for a history, when
    it starts (`start` None: now) and in which mode (live, eval or shadow)."""

    index: int
    agent: str
    version: str
    task: str
    faults: FaultRates
    seed: str
    start: datetime | None = None  # aware UTC
    mode: str = "live"
    carrier_latency_s: float = 0.0
    eval_run_id: str | None = None
    conversation_id: str | None = None  # the session it is a turn of (kernel.examples.sessions)
    user_id: str | None = None
    release: str | None = None  # the gray release that routes it (kernel.examples.demo_release)
    mirror: bool = False  # the release also runs it in shadow (standing for a planned shadow run)


class _Slots:
    """Hour slots of [start, end) with cumulative traffic weights, to draw start times from."""

    def __init__(self, start: datetime, end: datetime) -> None:
        self.starts: list[datetime] = []
        self.ends: list[datetime] = []
        weights: list[float] = []
        t = start
        while t < end:
            nxt = min(t.replace(minute=0, second=0, microsecond=0) + HOUR, end)
            self.starts.append(t)
            self.ends.append(nxt)
            weights.append(traffic(t) * ((nxt - t) / HOUR))
            t = nxt
        self.cumulative = list(accumulate(weights))

    def draw(self, rng: random.Random) -> datetime:
        i = bisect.bisect_right(self.cumulative, rng.random() * self.cumulative[-1])
        i = min(i, len(self.starts) - 1)
        return self.starts[i] + (self.ends[i] - self.starts[i]) * rng.random()


def plan_history(runs: int, days: float, seed: int = 0, end: datetime | None = None) -> tuple[Story, list[PlannedRun]]:
    """`runs` runs over the `days` days before `end` (default now), ordered by start time."""
    if runs < 0:
        raise ValueError("runs must be >= 0")
    if days <= 0:
        raise ValueError("days must be > 0 (0 means no history: the runs happen now)")
    end = (end or datetime.now(UTC)).astimezone(UTC)
    story = Story(end - timedelta(days=days), end)
    everywhere = _Slots(story.start, story.end)
    shadow = _Slots(*story.shadow)
    evals = story.eval_hours
    plans = []
    for index in range(runs):
        rng = random.Random(f"history:{seed}:{index}")
        kind = rng.random()
        eval_run_id = None
        if kind < EVAL_SHARE:
            begin, _ = evals[index % len(evals)]
            start = begin + HOUR * rng.random()
            agent, version, mode = RELEASED_AGENT, "v2", "eval"
            eval_run_id = f"{RELEASED_AGENT}-v2-eval-{begin:%Y%m%d}"
        elif kind < EVAL_SHARE + SHADOW_SHARE:
            start = shadow.draw(rng)
            agent, version, mode = RELEASED_AGENT, "v2", "shadow"
        else:
            if kind < EVAL_SHARE + SHADOW_SHARE + OUTAGE_RETRY_SHARE:
                start = story.outage[0] + HOUR * rng.random()
            else:
                start = everywhere.draw(rng)
            agent = rng.choices(list(AGENT_WEIGHTS), weights=list(AGENT_WEIGHTS.values()))[0]
            version = "v2" if agent == RELEASED_AGENT and rng.random() < story.v2_share(start) else "v1"
            mode = "live"
        task = AGENTS[agent].sample_task(rng).text
        plans.append(PlannedRun(index, agent, version, task, story.faults(agent, start), f"{seed}:{index}", start,
                                mode, story.carrier_latency_s(start), eval_run_id))
    plans.sort(key=lambda p: (p.start, p.index))
    return story, assign_sessions(plans, seed)
