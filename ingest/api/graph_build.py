"""The agent graph of a set of runs: who calls whom, how often, how often it fails, how slow, what it costs.

Nodes are agents, tools and models (`agent:<name>`, `tool:<name>`, `llm:<model>`). Every span that
is a call (an agent span, a counted tool call, a counted LLM call) is an edge from its caller: the
nearest enclosing span that is itself a node (its agent, or the tool an agent-as-tool runs inside),
whatever framework spans (steps, turns, graph nodes) lie between. A run's top span is its agent
(`runs.agent`: OpenAI Agents' unnamed `Agent workflow` is the agent it handed control to first). An
agent span naming the agent that already calls it is that agent going on (no self edge); a different
agent under it is a handoff or sub-agent edge. OpenAI Agents' handoff target runs as a SIBLING of the
agent that handed off, under the workflow, so its edge comes from the run's agent.

What counts as a call is design.md §3's rule: an LLM span with an LLM span under it wraps that call,
one with no usage, no response model and no error made no request; a tool span with a tool span under
it, a synthetic one (ADK's `(merged tools)`) or one naming no tool (a handoff) is not a tool call.

Edge figures are over its calls (callee spans): `calls`, `errors` (the callee span failed),
`error_rate`, `p50_ms`/`p95_ms` of the callee span's duration, `cost_usd` of the counted calls in the
callee's subtree (a tool's own price plus an agent-as-tool's model calls; null when none is priced),
tokens alike, `runs` and example trace ids (failed calls first, then the newest).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tracer.conventions import OperationClass as Op

EXAMPLES = 5
_AGENTIC = frozenset({Op.AGENT.value, Op.WORKFLOW.value})
_SYNTHETIC_TOOL = "(merged"


def node_id(kind: str, name: str) -> str:
    return f"{kind}:{name}"


def quantile(values: list[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (DuckDB's quantile_cont, the other endpoints' p95)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass
class _Edge:
    calls: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)
    cost: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    traces: set[tuple[str, str]] = field(default_factory=set)
    examples: list[tuple[bool, Any, str]] = field(default_factory=list)  # (failed, start, trace id)


@dataclass
class _Node:
    kind: str
    name: str
    calls: int = 0
    errors: int = 0
    runs: int = 0  # runs it is the top agent of
    traces: set[tuple[str, str]] = field(default_factory=set)


def _failed(span: dict[str, Any]) -> bool:
    return span["status"] == "ERROR" or span["error_type"] is not None


class _Trace:
    """One run's spans as a tree, with which of them are calls (design.md §3)."""

    def __init__(self, run: dict[str, Any], spans: list[dict[str, Any]]) -> None:
        self.run = run
        self.by_id = {s["span_id"]: s for s in spans}
        self.children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for s in spans:
            parent = s["parent_span_id"] if s["parent_span_id"] in self.by_id else None
            self.children[parent].append(s)
        for kids in self.children.values():
            kids.sort(key=lambda s: (s["start_time"], s["span_id"]))
        self.below: dict[str, set[str]] = {}  # span id -> operation classes in its subtree (not itself)
        for root in self.children[None]:
            self._classes_below(root)
        self.agent_of = self._agent_spans()

    def _classes_below(self, span: dict[str, Any]) -> set[str]:
        # iterative post-order: a 10,000-span trace must not hit the recursion limit
        stack: list[tuple[dict[str, Any], bool]] = [(span, False)]
        while stack:
            node, done = stack.pop()
            kids = self.children.get(node["span_id"], [])
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids)
                continue
            classes: set[str] = set()
            for k in kids:
                classes.add(k["operation"])
                classes |= self.below[k["span_id"]]
            self.below[node["span_id"]] = classes
        return self.below[span["span_id"]]

    def _agent_spans(self) -> dict[str, str]:
        """span id -> the agent it stands for: the run's top span, the run's derived agent spans
        (runs.agents: includes a LangChain sub-agent's CHAIN span), and agent/workflow spans naming one."""
        agents: dict[str, str] = {}
        for s in self.by_id.values():
            if s["operation"] in _AGENTIC and s["agent_name"]:
                agents[s["span_id"]] = s["agent_name"]
        listed = self.run.get("agents")
        if isinstance(listed, str):
            try:
                listed = json.loads(listed)
            except ValueError:
                listed = []
        for entry in listed or []:
            if isinstance(entry, dict) and entry.get("agent") and entry.get("span_id"):
                agents[entry["span_id"]] = entry["agent"]
        root = self.run.get("root_span_id")
        if root and self.run.get("agent"):
            agents[root] = self.run["agent"]
        return agents

    def node_of(self, span: dict[str, Any]) -> tuple[str, str] | None:
        """(kind, name) when the span is a node: an agent span, a counted tool or LLM call."""
        sid = span["span_id"]
        if sid in self.agent_of:
            return Op.AGENT.value, self.agent_of[sid]
        op = span["operation"]
        if op == Op.TOOL.value:
            name = span["tool_name"]
            if not name or name.startswith(_SYNTHETIC_TOOL) or Op.TOOL.value in self.below.get(sid, ()):
                return None
            return Op.TOOL.value, name
        if op == Op.LLM.value:
            if Op.LLM.value in self.below.get(sid, ()):
                return None  # wraps the call under it
            made_request = (span["input_tokens"] is not None or span["output_tokens"] is not None
                            or span["response_model"] is not None or _failed(span))  # fmt: skip
            if not made_request:
                return None
            return Op.LLM.value, span["model"] or span["response_model"] or "unknown"
        return None

    def calls_cost(self, span: dict[str, Any]) -> tuple[float | None, int, int]:
        """(cost, input tokens, output tokens) of the counted LLM and tool calls in `span`'s subtree."""
        cost: float | None = None
        tokens_in = tokens_out = 0
        stack = [span]
        while stack:
            s = stack.pop()
            node = self.node_of(s)
            if node is not None and node[0] != Op.AGENT.value:
                if s["cost_usd"] is not None:
                    cost = (cost or 0.0) + s["cost_usd"]
                if node[0] == Op.LLM.value:
                    tokens_in += s["input_tokens"] or 0
                    tokens_out += s["output_tokens"] or 0
            stack.extend(self.children.get(s["span_id"], []))
        return cost, tokens_in, tokens_out


class GraphBuilder:
    """Accumulates runs into one graph; `answer()` is the JSON shape of /api/graph."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Node] = {}
        self.edges: dict[tuple[str, str], _Edge] = defaultdict(_Edge)
        self.runs = 0

    def _node(self, kind: str, name: str) -> _Node:
        key = node_id(kind, name)
        if key not in self.nodes:
            self.nodes[key] = _Node(kind, name)
        return self.nodes[key]

    def add_run(self, run: dict[str, Any], spans: list[dict[str, Any]]) -> None:
        self.runs += 1
        tree = _Trace(run, spans)
        key = (run["project"], run["trace_id"])
        run_agent = run.get("agent")
        if run_agent:
            top = self._node(Op.AGENT.value, run_agent)
            top.runs += 1
            top.traces.add(key)
        caller0 = node_id(Op.AGENT.value, run_agent) if run_agent else None
        stack: list[tuple[dict[str, Any], str | None]] = [(s, caller0) for s in reversed(tree.children[None])]
        while stack:
            span, caller = stack.pop()
            node = tree.node_of(span)
            here = caller
            if node is not None:
                target = node_id(*node)
                if target != caller:
                    n = self._node(*node)
                    n.traces.add(key)
                    if caller is not None and span["span_id"] != run.get("root_span_id"):
                        self._call(tree, key, caller, target, span, n)
                here = target
            stack.extend((k, here) for k in reversed(tree.children.get(span["span_id"], [])))

    def _call(self, tree: _Trace, key: tuple[str, str], source: str, target: str, span: dict[str, Any],
              node: _Node) -> None:
        edge = self.edges[(source, target)]
        failed = _failed(span)
        edge.calls += 1
        edge.errors += failed
        node.calls += 1
        node.errors += failed
        edge.durations.append(span["duration_ms"])
        cost, tokens_in, tokens_out = tree.calls_cost(span)
        if cost is not None:
            edge.cost = (edge.cost or 0.0) + cost
        edge.input_tokens += tokens_in
        edge.output_tokens += tokens_out
        edge.traces.add(key)
        edge.examples.append((failed, span["start_time"], key[1]))

    def answer(self) -> dict[str, Any]:
        nodes = [
            {"id": k, "kind": n.kind, "name": n.name, "calls": n.calls, "errors": n.errors,
             "error_rate": n.errors / n.calls if n.calls else None, "runs": n.runs, "traces": len(n.traces)}
            for k, n in sorted(self.nodes.items())
        ]  # fmt: skip
        edges = []
        for (source, target), e in sorted(self.edges.items()):
            examples = sorted(e.examples, key=lambda x: (not x[0], -_epoch(x[1])))
            edges.append({
                "source": source, "target": target, "calls": e.calls, "errors": e.errors,
                "error_rate": e.errors / e.calls if e.calls else None,
                "p50_ms": quantile(e.durations, 0.5), "p95_ms": quantile(e.durations, 0.95),
                "cost_usd": e.cost, "input_tokens": e.input_tokens, "output_tokens": e.output_tokens,
                "runs": len(e.traces), "example_traces": list(dict.fromkeys(t for _, _, t in examples))[:EXAMPLES],
            })  # fmt: skip
        return {"nodes": nodes, "edges": edges}


def _epoch(value: Any) -> float:
    return value.timestamp() if hasattr(value, "timestamp") else 0.0


def build_graph(runs: list[dict[str, Any]], spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The graph of `runs` from their `spans` (rows with `project` and `trace_id`)."""
    by_run: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in spans:
        by_run[(s["project"], s["trace_id"])].append(s)
    builder = GraphBuilder()
    for run in runs:
        builder.add_run(run, by_run.get((run["project"], run["trace_id"]), []))
    return {"runs": builder.runs, **builder.answer()}
