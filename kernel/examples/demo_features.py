"""The kernel features the demo adds to the example agents, opened once per workload.

- MCP tools: the ops agent reads the repository through a real MCP server (kernel.examples.demo_mcp);
- long-term memory: the ticket agent remembers and recalls per user (kernel.examples.demo_memory);
- hand-offs: the ticket agent's model may call `transfer_to_human` (kernel.examples.demo_handoff).

`kernel.examples.demo` opens this around its workers, asks `options(plan)` for each run's extra
`build_agent` arguments and runs each run inside `turn(plan)`. `build_agent` without them builds the
plain example agents (tests and evals use those), whose behaviour this leaves unchanged.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.examples import ops, ticket
from kernel.examples.demo_handoff import TICKET_HANDOFF
from kernel.examples.demo_mcp import repo_tools
from kernel.examples.demo_memory import DemoMemory
from kernel.examples.history import PlannedRun
from kernel.tools import Tool


@dataclass
class DemoFeatures:
    repo_tools: list[Tool]
    memory: DemoMemory

    def options(self, plan: PlannedRun) -> dict[str, Any]:
        """Extra `build_agent` arguments for this run."""
        if plan.agent == ops.AGENT:
            return {"replace_tools": self.repo_tools}
        if plan.agent == ticket.AGENT:
            return {"memory": self.memory.for_plan(plan), "handoff": TICKET_HANDOFF}
        return {}

    def turn(self, plan: PlannedRun):  # noqa: ANN201 - an async context manager
        return self.memory.turn(plan)


@asynccontextmanager
async def demo_features(plans: Sequence[PlannedRun]) -> AsyncIterator[DemoFeatures]:
    """Start the MCP server and the memory store for a workload of `plans`; stop them after."""
    with tempfile.TemporaryDirectory(prefix="steplens-demo-memory-") as scratch:
        async with repo_tools() as tools:
            memory = DemoMemory(plans, Path(scratch))
            try:
                yield DemoFeatures(tools, memory)
            finally:
                memory.close()
