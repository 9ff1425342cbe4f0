"""Example agents driven by a simulated model: realistic telemetry without network or API keys.

    from kernel.examples import AGENTS, build_agent
    built = build_agent("ticket", "v2", seed=7)
    result = await built.agent.run(AGENTS["ticket"].sample_task(random.Random(7)).text)

`kernel.examples.demo.run_demo` runs a mixed workload through the real OTLP path
(`steplens demo`). The agents, their versions' documented differences and the simulated
model's faults are described in `ticket`, `ops` and `faults`.
"""

from __future__ import annotations

from kernel.examples.catalog import AGENTS, AgentSpec, BuiltAgent, build_agent, demo_policy
from kernel.examples.data import NotFound, Task
from kernel.examples.faults import FAULT_NAMES, FaultRates
from kernel.examples.simulated import Act, AgentPolicy, Answer, SimulatedLLM

__all__ = [
    "AGENTS",
    "FAULT_NAMES",
    "Act",
    "AgentPolicy",
    "AgentSpec",
    "Answer",
    "BuiltAgent",
    "FaultRates",
    "NotFound",
    "SimulatedLLM",
    "Task",
    "build_agent",
    "demo_policy",
]
