"""The demo's long-term memory: the ticket agent remembers, per end user, what happened to their
orders, and recalls it in that user's later conversations.

The store is a `SQLiteMemoryStore` in a scratch directory that lives as long as the workload (a
new demo starts with no memories). The model writes with the `remember` tool (the ticket policy
keeps a refund, an escalation or a delayed shipment); each run recalls its user's memories into
the system prompt (`search_memory ticket-memory` and `upsert_memory ticket-memory` spans).

Determinism: what a run recalls depends on what the user's earlier runs wrote, so the runs of one
memory scope (agent version and user) run in plan order, each after the one before it has ended;
runs of other users still run concurrently. The demo's promise holds: the same seed gives the same
runs whatever the concurrency. No deadlock is possible: workers take plans in order, so a run
only ever waits for one taken before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from kernel.examples.history import PlannedRun
from kernel.examples.ticket import AGENT as TICKET
from kernel.memory import LongTermMemory, SQLiteMemoryStore

STORE_NAME = "ticket-memory"
# Recall settings: the lexical scorer's default floor (0.2) misses most "same order again" tickets,
# whose words beyond the order id differ; three memories at most keep the prompt short.
MIN_SCORE = 0.1
MAX_ITEMS = 3
AGENTS_WITH_MEMORY = frozenset({TICKET})


class DemoMemory:
    """The memory of one workload and the order its runs of one scope must keep."""

    def __init__(self, plans: Sequence[PlannedRun], directory: Path) -> None:
        self.store = SQLiteMemoryStore(directory / f"{STORE_NAME}.sqlite", name=STORE_NAME)
        self.memory = LongTermMemory(self.store, min_score=MIN_SCORE, max_items=MAX_ITEMS)
        self._done: dict[int, asyncio.Event] = {}
        self._after: dict[int, asyncio.Event] = {}
        last: dict[tuple[str, str, str], int] = {}
        for plan in plans:
            if not self.applies(plan):
                continue
            assert plan.user_id is not None
            key = (plan.agent, plan.version, plan.user_id)
            self._done[plan.index] = asyncio.Event()
            if key in last:
                self._after[plan.index] = self._done[last[key]]
            last[key] = plan.index

    @staticmethod
    def applies(plan: PlannedRun) -> bool:
        """Runs of an agent with memory that serve a known user (eval runs serve no one)."""
        return plan.agent in AGENTS_WITH_MEMORY and plan.user_id is not None

    def for_plan(self, plan: PlannedRun) -> LongTermMemory | None:
        return self.memory if self.applies(plan) else None

    @asynccontextmanager
    async def turn(self, plan: PlannedRun) -> AsyncIterator[None]:
        """Run `plan` after the previous run of its scope has ended; mark it ended after the block."""
        before = self._after.get(plan.index)
        if before is not None:
            await before.wait()
        try:
            yield
        finally:
            done = self._done.get(plan.index)
            if done is not None:
                done.set()

    def close(self) -> None:
        self.store.close()
