"""The demo's conversations: live runs of one agent chained into multi-turn sessions of one end user.

Why chained after planning and not drawn per run: a conversation is turns close together in time,
and the history draws each run's start on its own (the traffic shape). Walking the planned live runs
in start order, a run continues its agent's open conversation when it starts within `SESSION_GAP`
of that conversation's last turn and the conversation has turns left (1 to `MAX_TURNS`, drawn when
it opens); otherwise it opens a new one for a user drawn from `USERS`. Eval and shadow runs are no
one's conversation. Decided by (seed, run index) alone, like the rest of the demo, so the same seed
gives the same sessions.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta
from typing import TypeVar

USERS = 40
SESSION_GAP = timedelta(minutes=45)
MAX_TURNS = 4
LIVE = "live"

P = TypeVar("P")


@dataclasses.dataclass
class _Open:
    conversation_id: str
    user_id: str
    last: object
    turns_left: int


def assign_sessions(plans: list[P], seed: int) -> list[P]:
    """`plans` (PlannedRun, in start order; all None starts for a burst) with conversation and user ids."""
    open_: dict[str, _Open] = {}
    out: list[P] = []
    for plan in plans:
        if plan.mode != LIVE:  # type: ignore[attr-defined]
            out.append(plan)
            continue
        agent, start, index = plan.agent, plan.start, plan.index  # type: ignore[attr-defined]
        current = open_.get(agent)
        near = current is not None and (start is None or current.last is None or start - current.last <= SESSION_GAP)
        if current is not None and near and current.turns_left > 0:
            current.turns_left -= 1
            current.last = start
        else:
            rng = random.Random(f"session:{seed}:{index}")
            current = _Open(f"conv-{seed}-{index}", f"user-{rng.randrange(USERS):02d}", start,
                            rng.randrange(MAX_TURNS))
            open_[agent] = current
        out.append(dataclasses.replace(plan, conversation_id=current.conversation_id,  # type: ignore[type-var]
                                       user_id=current.user_id))
    return out
