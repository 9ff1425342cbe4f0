"""Gray release: send a share of traffic to a candidate agent version, sticky per user, and
optionally mirror traffic to a shadow version that never acts and never answers.

Why a stable hash and not a random draw: a user who lands on the candidate must stay there (the
same answers, the same behaviour across a conversation), and raising the share must only move
users from stable to candidate, never back. `bucket(release, key)` is a number in [0, 1) from
SHA-256 of the release name and the key; a key is on the candidate iff its bucket is below the
share. Salting with the release's name keeps two releases' cohorts independent (the same 20% of
users are not the guinea pigs of every release).

What is recorded: the run span of a routed run carries `steplens.release.name` and
`steplens.release.cohort` (stable, candidate); a shadow run carries cohort `shadow`, mode shadow
(so live figures leave it out), `steplens.release.primary_trace_id` and an OTel link to the live
run it mirrors (design.md §2 "Gray release").
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from kernel import telemetry
from kernel.policy import shadow_scope
from kernel.types import RunResult, ToolCall
from tracer.conventions import ReleaseCohort, RunMode

log = logging.getLogger(__name__)

StickyBy = Literal["user", "conversation"]
_SCALE = float(2**64)


class Runnable(Protocol):
    """What a release routes to: a ReAct `Agent` or a `PlanAndExecuteAgent`."""

    name: str
    version: str

    async def run(self, task: str, *, conversation_id: str | None = None, user_id: str | None = None,
                  cancel: asyncio.Event | None = None) -> Any: ...


def bucket(release: str, key: str) -> float:
    """Where `key` falls in [0, 1) for `release`: the same for the same pair in every process."""
    digest = hashlib.sha256(f"{release}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


@dataclass(frozen=True)
class Routing:
    """The cohort a run goes to and why (`share`, `override`, or `no_key`: nothing to stick to)."""

    cohort: ReleaseCohort
    key: str | None
    reason: Literal["share", "override", "no_key"]


@dataclass
class ShadowRun:
    """A finished shadow run: what it answered (never shown to the user) and the side-effect calls
    it asked for, recorded instead of run."""

    primary_trace_id: str | None
    result: RunResult
    blocked_calls: list[ToolCall]


@dataclass
class Release:
    """A gray release of `candidate` next to `stable` (two versions of one agent).

    share: the fraction of keys (users, or conversations with `sticky_by="conversation"`) on the
    candidate, 0..1. overrides: key -> cohort, ahead of the share (testers always on the candidate,
    a complaining customer back on stable). A run with no key goes to stable: nothing to stick to.
    shadow: an agent (often the candidate itself) run on the same input after each live run whose
    key falls within `shadow_share`, in the background, side effects recorded not executed, its
    result kept in `shadows` and never returned; at most `max_pending_shadows` wait at once (beyond
    that a mirror is skipped and counted in `shadows_skipped`, so shadows never pile up in memory).
    Of the finished shadows only the newest `keep_shadows` are kept in `shadows` (a long-lived
    process would otherwise hold every shadow's result forever; the traces hold them all), while
    `shadows_finished` and `shadows_failed` count every one.
    """

    name: str
    stable: Runnable
    candidate: Runnable
    share: float = 0.0
    sticky_by: StickyBy = "user"
    overrides: Mapping[str, ReleaseCohort | str] = field(default_factory=dict)
    shadow: Runnable | None = None
    shadow_share: float = 1.0
    max_pending_shadows: int = 64
    keep_shadows: int = 256
    shadows: deque[ShadowRun] = field(default_factory=deque, init=False)
    shadows_skipped: int = field(default=0, init=False)
    shadows_finished: int = field(default=0, init=False)
    shadows_failed: int = field(default=0, init=False)
    _pending: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)

    def __setattr__(self, name: str, value: Any) -> None:
        # `share` is raised while the process serves traffic (release.share = 0.5): a bad value is
        # refused there too, and the share in force stays, rather than routing by a broken number.
        if name in ("share", "shadow_share"):
            value = _fraction(name, value)
        super().__setattr__(name, value)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a release needs a name: it salts the hash and names the cohorts in the traces")
        self.share = _fraction("share", self.share)
        self.shadow_share = _fraction("shadow_share", self.shadow_share)
        if self.sticky_by not in ("user", "conversation"):
            raise ValueError(f"sticky_by must be 'user' or 'conversation', not {self.sticky_by!r}")
        if self.stable.name != self.candidate.name:
            raise ValueError(f"stable and candidate must be versions of one agent, not {self.stable.name!r} and "
                             f"{self.candidate.name!r}: the comparison pairs them by agent")
        if self.stable.version == self.candidate.version:
            raise ValueError(f"stable and candidate are both version {self.stable.version!r}: give the candidate "
                             "its own version so its runs can be told apart")
        self.overrides = {str(k): _cohort(v) for k, v in self.overrides.items()}
        if self.max_pending_shadows < 1:
            raise ValueError("max_pending_shadows must be >= 1")
        if self.keep_shadows < 0:
            raise ValueError("keep_shadows must be >= 0 (0 keeps no finished shadow; their traces remain)")
        self.shadows = deque(maxlen=self.keep_shadows)

    # ---- routing (pure) ---------------------------------------------------------------------

    def key_of(self, user_id: str | None, conversation_id: str | None) -> str | None:
        """The sticky key: the user (or the conversation), falling back to the other one."""
        first, second = (user_id, conversation_id) if self.sticky_by == "user" else (conversation_id, user_id)
        return first if first else second if second else None

    def route(self, key: str | None, cohort: ReleaseCohort | str | None = None) -> Routing:
        """Which side `key` is on: an explicit `cohort`, else the overrides, else the share."""
        if cohort is not None:
            return Routing(_cohort(cohort), key, "override")
        if key is None:
            return Routing(ReleaseCohort.STABLE, None, "no_key")
        if key in self.overrides:
            return Routing(ReleaseCohort(self.overrides[key]), key, "override")
        side = ReleaseCohort.CANDIDATE if bucket(self.name, key) < self.share else ReleaseCohort.STABLE
        return Routing(side, key, "share")

    def mirrors(self, key: str | None) -> bool:
        """Whether a live run of `key` is also run in shadow (sticky too, with its own salt)."""
        if self.shadow is None or key is None:
            return False
        return bucket(f"{self.name}/shadow", key) < self.shadow_share

    # ---- running ----------------------------------------------------------------------------

    async def run(
        self,
        task: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        cohort: ReleaseCohort | str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> Any:
        """Run `task` on the version its key routes to and return that run's result (the user's
        answer). A shadow mirror, if any, starts after it in the background (`drain()` waits)."""
        routing = self.route(self.key_of(user_id, conversation_id), cohort)
        if routing.cohort == ReleaseCohort.SHADOW:
            raise ValueError("cohort 'shadow' is not a side a user can be served by: give stable or candidate")
        agent = self.candidate if routing.cohort == ReleaseCohort.CANDIDATE else self.stable
        tag = telemetry.ReleaseTag(self.name, routing.cohort.value)
        with telemetry.release_tag(tag):
            result = await agent.run(task, conversation_id=conversation_id, user_id=user_id, cancel=cancel)
        if self.mirrors(routing.key):
            self._start_shadow(task, user_id, conversation_id, tag.ref, getattr(result, "trace_id", None))
        return result

    def _start_shadow(self, task: str, user_id: str | None, conversation_id: str | None,
                      primary: Any, primary_trace_id: str | None) -> None:
        if len(self._pending) >= self.max_pending_shadows:
            self.shadows_skipped += 1
            log.warning("release %s: %d shadow runs already pending; this one is skipped", self.name,
                        len(self._pending))
            return
        task_ = asyncio.get_running_loop().create_task(
            self._shadow_run(task, user_id, conversation_id, primary, primary_trace_id))
        self._pending.add(task_)
        task_.add_done_callback(self._pending.discard)

    async def _shadow_run(self, task: str, user_id: str | None, conversation_id: str | None,
                          primary: Any, primary_trace_id: str | None) -> None:
        assert self.shadow is not None
        try:
            tag = telemetry.ReleaseTag(self.name, ReleaseCohort.SHADOW.value, primary=primary)
            with shadow_scope() as blocked, telemetry.release_tag(tag), telemetry.run_labels(mode=RunMode.SHADOW):
                result = await self.shadow.run(task, conversation_id=conversation_id, user_id=user_id)
            self.shadows.append(ShadowRun(primary_trace_id, result, list(blocked.calls)))
            self.shadows_finished += 1
        except Exception:  # a shadow is an experiment: its failure never reaches the user
            self.shadows_failed += 1
            log.warning("release %s: the shadow run failed", self.name, exc_info=True)

    async def drain(self, timeout_s: float | None = None) -> list[ShadowRun]:
        """Wait for the pending shadow runs (before shutdown, in tests); returns the finished ones
        kept (the newest `keep_shadows`)."""
        pending = list(self._pending)
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)
        return list(self.shadows)


def _fraction(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (a fraction of keys), not {value!r}")
    return value


def _cohort(value: ReleaseCohort | str) -> ReleaseCohort:
    try:
        cohort = ReleaseCohort(value)
    except ValueError:
        raise ValueError(f"unknown cohort {value!r}: use stable or candidate") from None
    if cohort == ReleaseCohort.SHADOW:
        raise ValueError("an override sends a key to stable or candidate; shadow runs mirror, they never serve")
    return cohort
