"""Agent and workflow spans name their agent by each client's convention (OTel GenAI, OpenInference
with or without `agent.name`, Traceloop, pydantic-ai/Logfire, Langfuse), so per-agent figures work
for runs of every framework; a workflow is its own class, and memory operations have theirs."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from tracer import conventions as c


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


def test_genai_agent_name_version_and_id(capture):
    attrs = {
        c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT,
        c.GEN_AI_AGENT_NAME: "triage",
        c.GEN_AI_AGENT_VERSION: "3",
        c.GEN_AI_AGENT_ID: "asst_123",
    }
    with capture.tracer("strands").start_as_current_span("invoke_agent triage", attributes=attrs):
        pass
    (row,) = capture.rows()
    assert (row["operation"], row["agent_name"], row["agent_version"], row["agent_id"]) == (
        "agent", "triage", "3", "asst_123",
    )  # fmt: skip


def test_openinference_agent_without_agent_name_is_named_by_its_span(capture):
    """smolagents through OpenInference: the AGENT span is `<agent>.run` and carries no agent.name;
    CrewAI's is `<agent>._execute_core` with the agent's role as graph.node.id."""
    tracer = capture.tracer(c.OI_SMOLAGENTS_SCOPE)
    with (
        tracer.start_as_current_span("weather_agent.run", attributes={c.OI_SPAN_KIND: "AGENT"}),
        tracer.start_as_current_span("Step 1", attributes={c.OI_SPAN_KIND: "CHAIN"}),
    ):
        pass
    with tracer.start_as_current_span("agent", attributes={c.OI_SPAN_KIND: "AGENT", c.OI_AGENT_NAME: "named"}):
        pass
    crew = capture.tracer("openinference.instrumentation.crewai")
    crew_agent = {c.OI_SPAN_KIND: "AGENT", c.OI_GRAPH_NODE_ID: "researcher"}
    with crew.start_as_current_span("researcher._execute_core", attributes=crew_agent):
        pass
    other = capture.tracer("openinference.instrumentation.langchain")
    with other.start_as_current_span("Planner.run", attributes={c.OI_SPAN_KIND: "AGENT"}):
        pass
    rows = by_name(capture.rows())
    assert (rows["weather_agent.run"]["operation"], rows["weather_agent.run"]["agent_name"]) == ("agent", "weather_agent")
    assert (rows["Step 1"]["operation"], rows["Step 1"]["agent_name"]) == ("other", None)
    assert rows["agent"]["agent_name"] == "named"
    assert rows["researcher._execute_core"]["agent_name"] == "researcher"
    assert rows["Planner.run"]["agent_name"] == "Planner.run"  # the suffix is smolagents' only


def test_pydantic_ai_agent_run_and_tool_spans(capture):
    """pydantic-ai/Logfire: `agent run` names its agent in `agent_name`; `running tool` has only
    gen_ai.tool.name. Neither sets gen_ai.operation.name."""
    tracer = capture.tracer("pydantic-ai")
    run = {c.PYDANTIC_AI_AGENT_NAME: "weather", "model_name": "gpt-4o"}
    with (
        tracer.start_as_current_span("agent run", attributes=run),
        tracer.start_as_current_span("running tool", attributes={c.GEN_AI_TOOL_NAME: "get_forecast"}),
    ):
        pass
    rows = by_name(capture.rows())
    assert (rows["agent run"]["operation"], rows["agent run"]["agent_name"]) == ("agent", "weather")
    assert (rows["running tool"]["operation"], rows["running tool"]["tool_name"]) == ("tool", "get_forecast")


def test_workflows_are_their_own_class_and_named(capture):
    tracer = capture.tracer("workflows")
    flow = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_WORKFLOW, c.GEN_AI_WORKFLOW_NAME: "triage_flow"}
    agent = {c.GEN_AI_OPERATION_NAME: c.OP_INVOKE_AGENT, c.GEN_AI_AGENT_NAME: "a"}
    with (
        tracer.start_as_current_span("invoke_workflow triage_flow", attributes=flow),
        tracer.start_as_current_span("invoke_agent a", attributes=agent),
    ):
        pass
    with tracer.start_as_current_span(
        "planner.workflow", attributes={c.TRACELOOP_SPAN_KIND: "workflow", c.TRACELOOP_ENTITY_NAME: "planner"}
    ):
        pass
    # OpenInference LangGraph: the graph is the trace's root CHAIN; a nested CHAIN stays `other`.
    with (
        tracer.start_as_current_span("LangGraph", attributes={c.OI_SPAN_KIND: "CHAIN"}),
        tracer.start_as_current_span("agent", attributes={c.OI_SPAN_KIND: "CHAIN"}),
    ):
        pass
    rows = by_name(capture.rows())
    flow = rows["invoke_workflow triage_flow"]
    assert (flow["operation"], flow["agent_name"]) == ("workflow", "triage_flow")
    assert rows["invoke_agent a"]["operation"] == "agent"
    assert (rows["planner.workflow"]["operation"], rows["planner.workflow"]["agent_name"]) == ("workflow", "planner")
    assert (rows["LangGraph"]["operation"], rows["LangGraph"]["agent_name"]) == ("workflow", "LangGraph")
    assert (rows["agent"]["operation"], rows["agent"]["agent_name"]) == ("other", None)


def test_memory_operations_have_their_class(capture):
    tracer = capture.tracer("mem")
    for op in c.OP_MEMORY_NAMES:
        with tracer.start_as_current_span(f"{op} store", kind=SpanKind.CLIENT, attributes={c.GEN_AI_OPERATION_NAME: op}):
            pass
    rows = capture.rows()
    assert len(rows) == len(c.OP_MEMORY_NAMES) >= 5
    assert {r["operation"] for r in rows} == {"memory"}


def test_langfuse_observation_types_map_to_classes(capture):
    tracer = capture.tracer("langfuse-sdk")
    expected = {
        "generation": "llm", "embedding": "embedding", "agent": "agent", "tool": "tool",
        "retriever": "retrieval", "chain": "other", "evaluator": "other", "guardrail": "other",
        "span": "other", "event": "other",
    }  # fmt: skip
    for kind in expected:
        with tracer.start_as_current_span(f"lf-{kind}", attributes={c.LANGFUSE_OBSERVATION_TYPE: kind}):
            pass
    rows = by_name(capture.rows())
    assert {kind: rows[f"lf-{kind}"]["operation"] for kind in expected} == expected
    assert rows["lf-agent"]["agent_name"] == "lf-agent" and rows["lf-tool"]["tool_name"] == "lf-tool"


def test_langfuse_level_error_without_otel_status_is_an_error(capture):
    """Older Langfuse SDKs set only the level; the span status stayed UNSET."""
    attrs = {
        c.LANGFUSE_OBSERVATION_TYPE: "tool",
        c.LANGFUSE_OBSERVATION_LEVEL: c.LANGFUSE_LEVEL_ERROR,
        c.LANGFUSE_OBSERVATION_STATUS_MESSAGE: "timed out after 30 s",
        c.LANGFUSE_USER_ID: "u-9",
        c.LANGFUSE_SESSION_ID: "s-9",
        c.LANGFUSE_ENVIRONMENT: "prod",
        c.LANGFUSE_OBSERVATION_METADATA_PREFIX + "ticket": '"T-1"',
    }
    with capture.tracer("langfuse-sdk").start_as_current_span("lookup", attributes=attrs) as span:
        span.record_exception(TimeoutError("timed out after 30 s"))
    (row,) = capture.rows()
    assert (row["status"], row["status_message"], row["error_type"]) == ("ERROR", "timed out after 30 s", "TimeoutError")
    assert row["error_template"] == "timed out after <num> s"
    assert (row["user_id"], row["conversation_id"], row["environment"]) == ("u-9", "s-9", "prod")
    assert '"langfuse.observation.metadata.ticket"' in row["attributes"]  # metadata kept in attributes
