"""Every span name, attribute key and closed value set of the steplens span contract.

This module is the one place that knows attribute names (design.md §2). The kernel, the tracer
helpers and ingest's normalizer import these constants; nobody else spells an attribute name.
OTel GenAI names come from opentelemetry-semantic-conventions so that we track the spec; names
the spec does not cover live under `steplens.`.

It imports only the standard library and OpenTelemetry, so ingest may import it freely.
"""

from __future__ import annotations

from enum import StrEnum

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _g
from opentelemetry.semconv.attributes import error_attributes as _err

# --------------------------------------------------------------------------------------------
# Closed value sets
# --------------------------------------------------------------------------------------------


class StopReason(StrEnum):
    """Why a run ended (`steplens.run.stop_reason`). Only FINISH means ok=true."""

    FINISH = "finish"
    MAX_STEPS = "max_steps"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    TIMEOUT = "timeout"
    TOOL_ERROR_EXHAUSTED = "tool_error_exhausted"
    UNPARSABLE_EXHAUSTED = "unparsable_exhausted"
    LLM_UNAVAILABLE = "llm_unavailable"
    REPLAN_EXHAUSTED = "replan_exhausted"
    HANDOFF = "handoff"  # the model called the agent's designated escalation tool
    CANCELLED = "cancelled"
    INTERNAL_ERROR = "internal_error"


class HandoffReason(StrEnum):
    """Why a run was handed to a human (`steplens.run.handoff.reason`)."""

    LLM_UNAVAILABLE = "llm_unavailable"  # every model call failed
    MAX_STEPS = "max_steps"  # the step limit ended the run
    REPLAN_BREAKER = "replan_breaker"  # a replanning breaker gave up (stop reason replan_exhausted)
    ESCALATION = "escalation"  # the model called the designated escalation tool


class ToolErrorCode(StrEnum):
    """`error.type` on tool spans, and the `error` code inside error observations."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    DENIED = "denied"
    TIMEOUT = "timeout"
    EXCEPTION = "exception"
    RATE_LIMITED = "rate_limited"


class StepKind(StrEnum):
    """`steplens.step.kind`: what one loop iteration turned out to be."""

    TOOL = "tool"
    FINISH = "finish"
    FORMAT_ERROR = "format_error"
    LOOP_GUARD = "loop_guard"
    APPROVAL_WAIT = "approval_wait"


class ParseStatus(StrEnum):
    """`steplens.step.parse`: repaired output is usable but worth watching per model/prompt."""

    OK = "ok"
    REPAIRED = "repaired"
    UNPARSABLE = "unparsable"


class ToolDecision(StrEnum):
    """`steplens.tool.decision`: the side-effect policy's verdict (executed for read-only tools)."""

    EXECUTED = "executed"
    DENIED = "denied"
    SHADOWED = "shadowed"
    PENDING_APPROVAL = "pending_approval"


class RiskLevel(StrEnum):
    """`steplens.tool.risk`, declared by the tool's author; policies and approvals key on it."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class RunMode(StrEnum):
    """`steplens.run.mode`: lets dashboards keep shadow, eval and replay runs out of live figures."""

    LIVE = "live"
    SHADOW = "shadow"
    EVAL = "eval"
    REPLAY = "replay"


class ReleaseCohort(StrEnum):
    """`steplens.release.cohort`: which side of a gray release a run was (kernel.release)."""

    STABLE = "stable"
    CANDIDATE = "candidate"
    SHADOW = "shadow"  # a mirror of a live run on the same input, side effects blocked (mode shadow)


class ReplanGranularity(StrEnum):
    """`steplens.replan.granularity`: how much of the plan a replan may rewrite."""

    PATCH = "patch"
    TAIL = "tail"
    GLOBAL = "global"


class ReplanVerdict(StrEnum):
    """`steplens.replan.verdict`: admitted, or the guard that refused the replan."""

    ADMITTED = "admitted"
    STEP_BREAKER = "step_breaker"
    TOTAL_BREAKER = "total_breaker"
    TOKEN_GATE = "token_gate"
    OSCILLATION = "oscillation"
    REPLAN_BUDGET = "replan_budget"  # the run's cumulative replanning budget (tokens) would be passed
    TOOL_CALL_GATE = "tool_call_gate"  # too few tool calls (new evidence) since the last plan


class OperationClass(StrEnum):
    """The class ingest assigns to every span (design.md §3), whatever client sent it."""

    AGENT = "agent"
    STEP = "step"
    LLM = "llm"
    TOOL = "tool"
    TRUNCATE = "truncate"
    BUDGET = "budget"
    PLAN = "plan"
    REPLAN = "replan"
    RETRIEVAL = "retrieval"
    EMBEDDING = "embedding"
    OTHER = "other"
    WORKFLOW = "workflow"  # a run of several agents/steps under one name (invoke_workflow, Traceloop workflow)
    MEMORY = "memory"  # an agent memory operation (search/create/update/upsert/delete memory)


# --------------------------------------------------------------------------------------------
# Span names (format with the placeholder in braces)
# --------------------------------------------------------------------------------------------

SPAN_RUN = "invoke_agent {agent}"
SPAN_PLAN = "plan {agent}"
SPAN_REPLAN = "replan {agent}"
SPAN_STEP = "step {index}"
SPAN_BUDGET_CHECK = "budget_check"
SPAN_CHAT = "chat {model}"
SPAN_TOOL = "execute_tool {tool}"
SPAN_TRUNCATE = "truncate_observation"
SPAN_COMPACT = "compact_context"  # one context compaction before an LLM call (kernel/context.py)

# gen_ai.operation.name values
OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_PLAN = "plan"
OP_TEXT_COMPLETION = "text_completion"
OP_EMBEDDINGS = "embeddings"
OP_CREATE_AGENT = "create_agent"
OP_GENERATE_CONTENT = "generate_content"

TOOL_TYPE_FUNCTION = "function"

# --------------------------------------------------------------------------------------------
# OpenTelemetry GenAI attributes (current names)
# --------------------------------------------------------------------------------------------

GEN_AI_OPERATION_NAME = _g.GEN_AI_OPERATION_NAME
GEN_AI_PROVIDER_NAME = _g.GEN_AI_PROVIDER_NAME
GEN_AI_AGENT_NAME = _g.GEN_AI_AGENT_NAME
GEN_AI_AGENT_VERSION = _g.GEN_AI_AGENT_VERSION
GEN_AI_AGENT_ID = _g.GEN_AI_AGENT_ID
GEN_AI_CONVERSATION_ID = _g.GEN_AI_CONVERSATION_ID
GEN_AI_REQUEST_MODEL = _g.GEN_AI_REQUEST_MODEL
GEN_AI_RESPONSE_MODEL = _g.GEN_AI_RESPONSE_MODEL
GEN_AI_REQUEST_TEMPERATURE = _g.GEN_AI_REQUEST_TEMPERATURE
GEN_AI_REQUEST_MAX_TOKENS = _g.GEN_AI_REQUEST_MAX_TOKENS
GEN_AI_RESPONSE_FINISH_REASONS = _g.GEN_AI_RESPONSE_FINISH_REASONS
GEN_AI_RESPONSE_ID = _g.GEN_AI_RESPONSE_ID
GEN_AI_USAGE_INPUT_TOKENS = _g.GEN_AI_USAGE_INPUT_TOKENS
GEN_AI_USAGE_OUTPUT_TOKENS = _g.GEN_AI_USAGE_OUTPUT_TOKENS
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = _g.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = _g.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
GEN_AI_INPUT_MESSAGES = _g.GEN_AI_INPUT_MESSAGES
GEN_AI_OUTPUT_MESSAGES = _g.GEN_AI_OUTPUT_MESSAGES
GEN_AI_SYSTEM_INSTRUCTIONS = _g.GEN_AI_SYSTEM_INSTRUCTIONS
GEN_AI_TOOL_NAME = _g.GEN_AI_TOOL_NAME
GEN_AI_TOOL_CALL_ID = _g.GEN_AI_TOOL_CALL_ID
GEN_AI_TOOL_TYPE = _g.GEN_AI_TOOL_TYPE
GEN_AI_TOOL_DESCRIPTION = _g.GEN_AI_TOOL_DESCRIPTION
GEN_AI_TOOL_CALL_ARGUMENTS = _g.GEN_AI_TOOL_CALL_ARGUMENTS
GEN_AI_TOOL_CALL_RESULT = _g.GEN_AI_TOOL_CALL_RESULT
GEN_AI_TOOL_DEFINITIONS = _g.GEN_AI_TOOL_DEFINITIONS
GEN_AI_TOKEN_TYPE = _g.GEN_AI_TOKEN_TYPE
GEN_AI_DATA_SOURCE_ID = _g.GEN_AI_DATA_SOURCE_ID
ERROR_TYPE = _err.ERROR_TYPE

# Deprecated GenAI names that older clients still send (read by ingest, never written by us).
GEN_AI_SYSTEM = _g.GEN_AI_SYSTEM
GEN_AI_USAGE_PROMPT_TOKENS = _g.GEN_AI_USAGE_PROMPT_TOKENS
GEN_AI_USAGE_COMPLETION_TOKENS = _g.GEN_AI_USAGE_COMPLETION_TOKENS
GEN_AI_PROMPT = _g.GEN_AI_PROMPT
GEN_AI_COMPLETION = _g.GEN_AI_COMPLETION

# Other standard attributes we read or write.
ENDUSER_ID = "enduser.id"
SESSION_ID = "session.id"
SERVICE_NAME = "service.name"
SERVICE_VERSION = "service.version"
DEPLOYMENT_ENVIRONMENT_NAME = "deployment.environment.name"

# GenAI client metrics.
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"

# --------------------------------------------------------------------------------------------
# steplens attributes
# --------------------------------------------------------------------------------------------

# run span
RUN_OK = "steplens.run.ok"
RUN_STOP_REASON = "steplens.run.stop_reason"
RUN_STEPS = "steplens.run.steps"
RUN_MODE = "steplens.run.mode"
RUN_TASK = "steplens.run.task"  # content
RUN_ANSWER = "steplens.run.answer"  # content
# A run handed to a human (kernel.handoff): why (HandoffReason) and to whom (the policy's target).
RUN_HANDOFF_REASON = "steplens.run.handoff.reason"
RUN_HANDOFF_TARGET = "steplens.run.handoff.target"
# A run routed by a gray release (kernel.release): the release's name and the cohort it fell in;
# a shadow run also names the trace of the live run it mirrors (and links to that run span).
RELEASE_NAME = "steplens.release.name"
RELEASE_COHORT = "steplens.release.cohort"
RELEASE_PRIMARY_TRACE_ID = "steplens.release.primary_trace_id"
BUDGET_MAX_STEPS = "steplens.budget.max_steps"
BUDGET_MAX_INPUT_TOKENS = "steplens.budget.max_input_tokens"
BUDGET_MAX_OUTPUT_TOKENS = "steplens.budget.max_output_tokens"
BUDGET_MAX_COST_USD = "steplens.budget.max_cost_usd"
BUDGET_MAX_SECONDS = "steplens.budget.max_seconds"
BUDGET_MAX_CONSECUTIVE_ERRORS = "steplens.budget.max_consecutive_errors"
BUDGET_MAX_CONSECUTIVE_UNPARSABLE = "steplens.budget.max_consecutive_unparsable"
USAGE_INPUT_TOKENS = "steplens.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "steplens.usage.output_tokens"
USAGE_COST_USD = "steplens.usage.cost_usd"
USAGE_ESTIMATED = "steplens.usage.estimated"
EVAL_RUN_ID = "steplens.eval.run_id"
EVAL_CASE_ID = "steplens.eval.case_id"

# step span
STEP_INDEX = "steplens.step.index"
STEP_KIND = "steplens.step.kind"
STEP_ACTION = "steplens.step.action"
STEP_PARSE = "steplens.step.parse"
STEP_THOUGHT = "steplens.step.thought"  # content
STEP_OBSERVATION = "steplens.step.observation"  # content
PLAN_VERSION = "steplens.plan.version"
PLAN_STEP_ID = "steplens.plan.step_id"
PLAN_STEPS = "steplens.plan.steps"
ACTION_FINISH = "finish"

# chat span
LLM_ATTEMPT = "steplens.llm.attempt"
LLM_FALLBACK_FROM = "steplens.llm.fallback_from"
COST_USD = "steplens.cost.usd"

# tool span
TOOL_DECISION = "steplens.tool.decision"
TOOL_SIDE_EFFECT = "steplens.tool.side_effect"
TOOL_RISK = "steplens.tool.risk"
TOOL_TIMEOUT_S = "steplens.tool.timeout_s"

# truncate span
TRUNCATE_LIMIT_TOKENS = "steplens.truncate.limit_tokens"
TRUNCATE_INPUT_TOKENS = "steplens.truncate.input_tokens"
TRUNCATE_OUTPUT_TOKENS = "steplens.truncate.output_tokens"
TRUNCATE_DROPPED_TOKENS = "steplens.truncate.dropped_tokens"
TRUNCATE_TRUNCATED = "steplens.truncate.truncated"

# budget_check span: steplens.budget.<name>.used / .limit for each name below
BUDGET_NAMES = ("steps", "input_tokens", "cost_usd", "seconds")
BUDGET_EXHAUSTED = "steplens.budget.exhausted"
BUDGET_HEADROOM = "steplens.budget.headroom"


def budget_used(name: str) -> str:
    """`steplens.budget.<name>.used` for one of BUDGET_NAMES."""
    return f"steplens.budget.{name}.used"


def budget_limit(name: str) -> str:
    """`steplens.budget.<name>.limit` for one of BUDGET_NAMES."""
    return f"steplens.budget.{name}.limit"


# replan span
REPLAN_GRANULARITY = "steplens.replan.granularity"
REPLAN_CAUSE = "steplens.replan.cause"
REPLAN_FAILED_STEP = "steplens.replan.failed_step"
REPLAN_VERDICT = "steplens.replan.verdict"
REPLAN_FROM_VERSION = "steplens.replan.from_version"
REPLAN_TO_VERSION = "steplens.replan.to_version"
REPLAN_REEXECUTION_COST_USD = "steplens.replan.reexecution_cost_usd"
# What the replanner was given and what it changed (kernel/plan/agent.py), on every replan span:
REPLAN_ROUTE_RULE = "steplens.replan.route.rule"  # the granularity the router's rules gave
REPLAN_ROUTE_ESCALATED = "steplens.replan.route.escalated"  # raised because the same failure came back
REPLAN_ESCALATION_RESET = "steplens.replan.escalation_reset"  # a goal change cleared the router's memory
REPLAN_LESSONS = "steplens.replan.lessons"  # content (string[]): the lesson book the replanner got
REPLAN_VARIABLES_CLEAN = "steplens.replan.variables.clean"  # results usable as they are
REPLAN_VARIABLES_STALE = "steplens.replan.variables.stale"  # results computed for an older plan
REPLAN_VARIABLES_VOID = "steplens.replan.variables.void"  # results that must not be read
REPLAN_KEPT = "steplens.replan.kept"  # string[]: step ids carried into the new version
REPLAN_DROPPED = "steplens.replan.dropped"  # string[]: step ids the new version no longer has
REPLAN_ADDED = "steplens.replan.added"  # string[]: new step ids
REPLAN_TOOL_CALLS = "steplens.replan.tool_calls"  # tool calls since the last plan (the tool-call gate)
REPLAN_BUDGET_USED_TOKENS = "steplens.replan.budget.used_tokens"  # replanner tokens spent before this one
REPLAN_REFUSAL = "steplens.replan.refusal"  # why a breaker, gate or guard refused (verdict not admitted)
# One event on a refused replan span: which breaker/gate/guard (the verdict) and its reason.
EVENT_REPLAN_GUARD = "steplens.replan_guard"
REPLAN_GUARD_RULE = "steplens.replan_guard.rule"
REPLAN_GUARD_REASON = "steplens.replan_guard.reason"

# Event on a span that did not fail but was cut short because its run was cancelled (a cancelled
# tool call is not a tool error: tool `error.type` stays within ToolErrorCode).
EVENT_CANCELLED = "steplens.cancelled"

# Attributes that carry content (recorded only while capture is on, after redaction).
CONTENT_ATTRIBUTES = frozenset(
    {
        RUN_TASK,
        RUN_ANSWER,
        STEP_THOUGHT,
        STEP_OBSERVATION,
        GEN_AI_INPUT_MESSAGES,
        GEN_AI_OUTPUT_MESSAGES,
        GEN_AI_SYSTEM_INSTRUCTIONS,
        GEN_AI_TOOL_CALL_ARGUMENTS,
        GEN_AI_TOOL_CALL_RESULT,
    }
)

# --------------------------------------------------------------------------------------------
# Environment variables read by the tracer (documented in the README's configuration table)
# --------------------------------------------------------------------------------------------

ENV_CAPTURE_CONTENT = "STEPLENS_CAPTURE_CONTENT"
ENV_OTEL_CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENV_CONTENT_MAX_BYTES = "STEPLENS_CONTENT_MAX_BYTES"

# --------------------------------------------------------------------------------------------
# Foreign conventions that ingest's normalizer reads (OpenInference, OpenLLMetry)
# --------------------------------------------------------------------------------------------

OI_SPAN_KIND = "openinference.span.kind"
OI_LLM_MODEL_NAME = "llm.model_name"
OI_LLM_PROVIDER = "llm.provider"
OI_LLM_SYSTEM = "llm.system"
OI_TOKEN_PROMPT = "llm.token_count.prompt"
OI_TOKEN_COMPLETION = "llm.token_count.completion"
OI_TOKEN_TOTAL = "llm.token_count.total"
OI_TOKEN_CACHE_READ = "llm.token_count.prompt_details.cache_read"
OI_TOOL_NAME = "tool.name"
OI_SESSION_ID = "session.id"
OI_USER_ID = "user.id"
OI_AGENT_NAME = "agent.name"

TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
TRACELOOP_WORKFLOW_NAME = "traceloop.workflow.name"
LLM_USAGE_PROMPT_TOKENS = "llm.usage.prompt_tokens"
LLM_USAGE_COMPLETION_TOKENS = "llm.usage.completion_tokens"
LLM_USAGE_TOTAL_TOKENS = "llm.usage.total_tokens"
LLM_REQUEST_TYPE = "llm.request.type"

# More foreign names read by ingest's normalizer (added for ingest/normalize).
OI_LLM_INVOCATION_PARAMETERS = "llm.invocation_parameters"  # JSON string; holds the request model
TRACELOOP_ENTITY_VERSION = "traceloop.entity.version"
TRACELOOP_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read_input_tokens"  # pre-1.37 spelling
TRACELOOP_ASSOCIATION_USER_ID = "traceloop.association.properties.user_id"
TRACELOOP_ASSOCIATION_SESSION_ID = "traceloop.association.properties.session_id"
DEPLOYMENT_ENVIRONMENT = "deployment.environment"  # deprecated resource attribute, still common
EXCEPTION_EVENT = "exception"  # span event name of recorded exceptions
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"  # attribute of the `exception` event
EXCEPTION_STACKTRACE = "exception.stacktrace"  # attribute of the `exception` event

# Read by ingest's analytics (added for per-tool observation size of foreign clients).
OI_INPUT_VALUE = "input.value"  # OpenInference: a span's input (a tool's arguments)
OI_OUTPUT_VALUE = "output.value"  # OpenInference: a span's output (a tool's result)

# --------------------------------------------------------------------------------------------
# Span-level conventions of more foreign clients, read by ingest's normalizer (design.md §3):
# newer OTel GenAI names, Langfuse SDK, pydantic-ai/Logfire, Google ADK, OpenInference and
# OpenLLMetry usage details, client-reported costs.
# --------------------------------------------------------------------------------------------

OP_INVOKE_WORKFLOW = "invoke_workflow"
# GenAI memory operations (gen_ai.operation.name values of the GenAI semantic conventions).
OP_MEMORY_NAMES = (
    "create_memory", "update_memory", "upsert_memory", "search_memory", "delete_memory",
    "create_memory_store", "delete_memory_store",
)  # fmt: skip
GEN_AI_WORKFLOW_NAME = _g.GEN_AI_WORKFLOW_NAME
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = _g.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = _g.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK  # seconds
GEN_AI_REQUEST_STREAM = _g.GEN_AI_REQUEST_STREAM
GEN_AI_USAGE_COST = "gen_ai.usage.cost"  # USD the client computed (LiteLLM, OpenRouter-style clients)
GEN_AI_AGGREGATED_USAGE_INPUT_TOKENS = "gen_ai.aggregated_usage.input_tokens"  # pydantic-ai run totals
GEN_AI_AGGREGATED_USAGE_OUTPUT_TOKENS = "gen_ai.aggregated_usage.output_tokens"

# OpenInference usage details and client cost.
OI_TOKEN_CACHE_WRITE = "llm.token_count.prompt_details.cache_write"
OI_TOKEN_REASONING = "llm.token_count.completion_details.reasoning"
OI_COST_TOTAL = "llm.cost.total"

# OpenLLMetry (Traceloop) spellings of cache-creation and reasoning tokens.
TRACELOOP_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation_input_tokens"
TRACELOOP_USAGE_REASONING_TOKENS = "gen_ai.usage.reasoning_tokens"
LLM_USAGE_REASONING_TOKENS = "llm.usage.reasoning_tokens"

# pydantic-ai / Logfire: the agent run span names its agent in a bare `agent_name` attribute.
PYDANTIC_AI_AGENT_NAME = "agent_name"

# Google ADK: the span it makes for several tool calls answered together is not one tool call.
ADK_MERGED_TOOLS = "(merged tools)"

# OpenInference: an AGENT span's graph node id is its agent's id (CrewAI's role, OpenAI Agents' name).
OI_GRAPH_NODE_ID = "graph.node.id"
# smolagents through OpenInference names its agent span `<agent name>.run`.
OI_SMOLAGENTS_SCOPE = "openinference.instrumentation.smolagents"
SMOLAGENTS_RUN_SUFFIX = ".run"

# OpenAI Agents through OpenInference: a handoff is a TOOL span named `handoff to <agent>`, no tool.name.
OI_HANDOFF_PREFIX = "handoff to "

# LlamaIndex through OpenInference marks every method of an LLM object as an LLM span; these
# helpers build or read a request and never call the model.
OI_LLM_HELPER_METHODS = frozenset({"get_tool_calls_from_response"})

# Langfuse SDK (v3+, OTel based). Every key starts with LANGFUSE_PREFIX, so one check tells
# whether a span needs the Langfuse look-ups at all.
LANGFUSE_PREFIX = "langfuse."
LANGFUSE_OBSERVATION_TYPE = "langfuse.observation.type"
LANGFUSE_OBSERVATION_LEVEL = "langfuse.observation.level"
LANGFUSE_OBSERVATION_STATUS_MESSAGE = "langfuse.observation.status_message"
LANGFUSE_OBSERVATION_MODEL = "langfuse.observation.model.name"
LANGFUSE_OBSERVATION_USAGE_DETAILS = "langfuse.observation.usage_details"  # JSON object text
LANGFUSE_OBSERVATION_COST_DETAILS = "langfuse.observation.cost_details"  # JSON object text, USD
LANGFUSE_OBSERVATION_COMPLETION_START_TIME = "langfuse.observation.completion_start_time"  # JSON ISO time
LANGFUSE_OBSERVATION_METADATA_PREFIX = "langfuse.observation.metadata."
LANGFUSE_TRACE_NAME = "langfuse.trace.name"
LANGFUSE_TRACE_METADATA_PREFIX = "langfuse.trace.metadata."
LANGFUSE_USER_ID = "langfuse.user.id"
LANGFUSE_SESSION_ID = "langfuse.session.id"
LANGFUSE_ENVIRONMENT = "langfuse.environment"
LANGFUSE_VERSION = "langfuse.version"
LANGFUSE_RELEASE = "langfuse.release"
LANGFUSE_LEVEL_ERROR = "ERROR"
# Content of a Langfuse observation (JSON text of the decorated call's args/kwargs, or the value as
# sent): read by ingest's session transcripts (ingest/api/transcript.py).
LANGFUSE_OBSERVATION_INPUT = "langfuse.observation.input"
LANGFUSE_OBSERVATION_OUTPUT = "langfuse.observation.output"

# --------------------------------------------------------------------------------------------
# OTLP log records (events) that ingest stores and attaches to their spans
# --------------------------------------------------------------------------------------------

EVENT_NAME = "event.name"  # log attribute naming the event (before LogRecord.event_name existed)
GEN_AI_EVENT_INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"  # messages as attributes
GEN_AI_EVENT_SYSTEM_MESSAGE = "gen_ai.system.message"  # body {content}
GEN_AI_EVENT_USER_MESSAGE = "gen_ai.user.message"  # body {content}
GEN_AI_EVENT_ASSISTANT_MESSAGE = "gen_ai.assistant.message"  # body {content, tool_calls}
GEN_AI_EVENT_TOOL_MESSAGE = "gen_ai.tool.message"  # body {content, id}
GEN_AI_EVENT_CHOICE = "gen_ai.choice"  # body {index, finish_reason, message}
GEN_AI_INPUT_MESSAGE_EVENTS = {
    GEN_AI_EVENT_SYSTEM_MESSAGE: "system",
    GEN_AI_EVENT_USER_MESSAGE: "user",
    GEN_AI_EVENT_ASSISTANT_MESSAGE: "assistant",
    GEN_AI_EVENT_TOOL_MESSAGE: "tool",
}  # event name -> the role its message had
GEN_AI_EVENT_EVALUATION_RESULT = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME = _g.GEN_AI_EVALUATION_NAME
GEN_AI_EVALUATION_SCORE_VALUE = _g.GEN_AI_EVALUATION_SCORE_VALUE
GEN_AI_EVALUATION_SCORE_LABEL = _g.GEN_AI_EVALUATION_SCORE_LABEL
GEN_AI_EVALUATION_EXPLANATION = _g.GEN_AI_EVALUATION_EXPLANATION

# Marks ingest adds to what it had to cut at the door (design.md §3 "Input limits").
INGEST_TRUNCATED = "steplens.ingest.truncated"  # kvlist: where -> original size in bytes
INGEST_DROPPED_ATTRIBUTES = "steplens.ingest.dropped_attributes"  # attributes dropped over the count limit
INGEST_DROPPED_EVENTS = "steplens.ingest.dropped_events"  # events and links dropped over the count limit

# Read by ingest's run derivation (ingest/store/run_derive.py): how a foreign run's loop ended.
OI_LLM_FINISH_REASON = "llm.finish_reason"  # OpenInference: the model call's finish reason
SMOLAGENTS_MAX_STEPS = "smolagents.max_steps"  # smolagents run span: its step limit
OPENLIT_SMOLAGENTS_MAX_STEPS = "gen_ai.smolagents.max_steps"  # openlit over smolagents: the run's step limit
OPENLIT_SMOLAGENTS_STEP_NUMBER = "gen_ai.smolagents.step_number"  # openlit types smolagents steps as invoke_agent
OI_METADATA = "metadata"  # OpenInference: the run's metadata, JSON text (LangChain: lc_agent_name, ...)
LANGCHAIN_AGENT_NAME_KEY = "lc_agent_name"  # key in OpenInference metadata: the LangChain agent a span belongs to

# --------------------------------------------------------------------------------------------
# Tools served by an MCP server (kernel/mcp.py): on the `execute_tool` span. The OTel MCP
# conventions (now kept in the GenAI semantic-conventions repository) name the method, protocol
# version and network transport; they have no attribute for which server or which MCP transport,
# so those two live under steplens.
# --------------------------------------------------------------------------------------------

TOOL_MCP_SERVER = "steplens.tool.mcp.server"  # the server's name (configured, else its serverInfo name)
TOOL_MCP_TRANSPORT = "steplens.tool.mcp.transport"  # McpTransport value
MCP_METHOD_NAME = "mcp.method.name"  # semconv: "tools/call" on an MCP tool's span
MCP_PROTOCOL_VERSION = "mcp.protocol.version"  # semconv: the negotiated protocol version
MCP_METHOD_TOOLS_CALL = "tools/call"
NETWORK_TRANSPORT = "network.transport"  # semconv: "pipe" for stdio, "tcp" for HTTP
NETWORK_PROTOCOL_NAME = "network.protocol.name"  # semconv: "http" for streamable HTTP
NETWORK_PROTOCOL_HTTP = "http"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"


class McpTransport(StrEnum):
    """`steplens.tool.mcp.transport`: how the kernel reaches the server."""

    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable_http"


# network.transport per MCP transport (the semconv's "Recording MCP transport").
MCP_NETWORK_TRANSPORT = {McpTransport.STDIO: "pipe", McpTransport.STREAMABLE_HTTP: "tcp"}


# --------------------------------------------------------------------------------------------
# Loop guard (kernel/loop_guard.py): a refusal is an event on its step span, never a tool span,
# so guard refusals do not count as tool calls, tool errors or denials anywhere.
# --------------------------------------------------------------------------------------------


class GuardRule(StrEnum):
    """`steplens.guard.rule`: which loop-guard rule refused the model's action."""

    REPEATED_CALL = "repeated_call"  # the same tool with the same arguments, within the window
    SAME_TOOL_STREAK = "same_tool_streak"  # the same tool again and again with changed arguments
    UNACKNOWLEDGED_ERROR = "unacknowledged_error"  # a finish right after a failed tool call


EVENT_LOOP_GUARD = "steplens.loop_guard"  # event on the step span, one per refusal
GUARD_RULE = "steplens.guard.rule"
GUARD_SEVERITY = "steplens.guard.severity"  # soft (a warning) or hard (counts as a tool error)
GUARD_PREVIOUS_STEP = "steplens.guard.previous_step"  # the step of the call it repeats, if any
GUARD_MESSAGE = "steplens.guard.message"  # content: what the model was told instead
STEP_GUARD_EVENTS = "steplens.step.guard_events"  # on the step span: how many refusals it had
CONTENT_ATTRIBUTES = CONTENT_ATTRIBUTES | {GUARD_MESSAGE}
CONTENT_ATTRIBUTES = CONTENT_ATTRIBUTES | {REPLAN_LESSONS}  # lessons quote tool errors


# --------------------------------------------------------------------------------------------
# Full-text search (ingest/search): what counts as a span's content, whatever client sent it.
# --------------------------------------------------------------------------------------------

# Attributes indexed as content: ours and the GenAI conventions' (CONTENT_ATTRIBUTES), the OpenInference
# and Traceloop input/output, the deprecated GenAI prompt/completion.
SEARCH_CONTENT_ATTRIBUTES = CONTENT_ATTRIBUTES | {
    OI_INPUT_VALUE, OI_OUTPUT_VALUE, TRACELOOP_ENTITY_INPUT, TRACELOOP_ENTITY_OUTPUT, GEN_AI_PROMPT, GEN_AI_COMPLETION,
}
# Flattened message attributes (OpenInference `llm.input_messages.0.message.content`, OpenLLMetry
# `gen_ai.prompt.0.content`): every key under these prefixes is content.
SEARCH_CONTENT_PREFIXES = ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion.")
# Scores sent as `gen_ai.evaluation.result` events (tracer/feedback.py; design.md §3 "scores"): what the
# OTel attributes cannot say. Ingest reads them when it turns the event into a score.
SCORE_ID = "steplens.score.id"  # the score's idempotency id (a later event with it replaces the score)
SCORE_DATA_TYPE = "steplens.score.data_type"  # numeric, boolean or categorical (a boolean as value 1/0)


# --------------------------------------------------------------------------------------------
# Long-term memory (kernel/memory.py): one span per recall (`search_memory {store}`) and per write
# (`upsert_memory {store}`), named and keyed after the GenAI memory-operation proposal
# (semantic-conventions issue 2664); steplens adds what the injection cap did.
# --------------------------------------------------------------------------------------------

OP_SEARCH_MEMORY = "search_memory"
OP_UPSERT_MEMORY = "upsert_memory"
SPAN_MEMORY = "{operation} {store}"
GEN_AI_MEMORY_STORE_NAME = "gen_ai.memory.store.name"  # the store's name (e.g. the SQLite file's stem)
GEN_AI_MEMORY_SCOPE = "gen_ai.memory.scope"  # whose memory: "<agent id>/<user id or ->"
GEN_AI_MEMORY_ID = "gen_ai.memory.id"  # a write: the key written
GEN_AI_MEMORY_QUERY = "gen_ai.memory.query"  # content: what a recall searched for
GEN_AI_MEMORY_CONTENT = "gen_ai.memory.content"  # content: the value written
GEN_AI_MEMORY_SEARCH_RESULT_COUNT = "gen_ai.memory.search.result.count"  # memories recalled (injected)
MEMORY_CANDIDATES = "steplens.memory.candidates"  # memories of the scope inside the recency window
MEMORY_CAPPED = "steplens.memory.capped"  # relevant memories left out by the injection cap
MEMORY_INJECTED_CHARS = "steplens.memory.injected_chars"  # size of the block put into the context
CONTENT_ATTRIBUTES = CONTENT_ATTRIBUTES | {GEN_AI_MEMORY_QUERY, GEN_AI_MEMORY_CONTENT}
SEARCH_CONTENT_ATTRIBUTES = SEARCH_CONTENT_ATTRIBUTES | {GEN_AI_MEMORY_QUERY, GEN_AI_MEMORY_CONTENT}  # memories are findable

# --------------------------------------------------------------------------------------------
# Big observations (kernel/observations.py): a tool result over the size limit is saved aside for
# the run; the `execute_tool` span says how big it was and that the model saw only its head.
# --------------------------------------------------------------------------------------------

TOOL_RESULT_SIZE_CHARS = "steplens.tool.result.size_chars"  # the full result's length (set when saved aside)
TOOL_RESULT_SAVED_ASIDE = "steplens.tool.result.saved_aside"  # true: the model got the head and a marker
TOOL_RESULT_REF = "steplens.tool.result.ref"  # the reference the read tool pages the rest by
TOOL_RESULT_SHOWN_CHARS = "steplens.tool.result.shown_chars"  # how much of it the model saw at once


# --------------------------------------------------------------------------------------------
# What an LLM call is for, and which routing rule chose its model (chat span; kernel/llm/router.py)
# --------------------------------------------------------------------------------------------


class LLMPurpose(StrEnum):
    """Why the kernel called the model; every call site names one so a Router can route on it."""

    STEP = "step"  # a ReAct step, or plan-and-execute's solver
    PLAN = "plan"  # the first plan of plan-and-execute
    REPLAN = "replan"  # a plan revision
    SUMMARY = "summary"  # summarising old context during compaction
    JUDGE = "judge"  # grading another call's output (an LLM judge)


LLM_PURPOSE = "steplens.llm.purpose"  # on every chat span the kernel emits
LLM_ROUTE_RULE = "steplens.llm.route.rule"  # the Router rule that picked the model, or "default"
LLM_ROUTE_MODEL = "steplens.llm.route.model"  # the model the Router picked (before any fallback)
ROUTE_DEFAULT = "default"  # LLM_ROUTE_RULE when no rule matched


# --------------------------------------------------------------------------------------------
# compact_context span: one compaction of the prompt (kernel/context.py; design.md §2)
# --------------------------------------------------------------------------------------------


class CompactedKind(StrEnum):
    """What a compaction shortened or dropped."""

    OBSERVATION = "observation"  # an old tool result, replaced by a marker or a summary
    THOUGHT = "thought"  # an old reasoning text, replaced by a marker (the action stays)
    EMPTY_ROUND = "empty_round"  # an old round with no executed tool call and no new information


COMPACT_THRESHOLD_TOKENS = "steplens.compact.threshold_tokens"  # the watermark that triggered it
COMPACT_TOKENS_BEFORE = "steplens.compact.tokens_before"
COMPACT_TOKENS_AFTER = "steplens.compact.tokens_after"
COMPACT_SUMMARISED = "steplens.compact.summarised"  # observations replaced by a summary, not a marker
COMPACT_DROPPED_PREFIX = "steplens.compact.dropped."  # + CompactedKind value: how many of each
COMPACT_DROPPED = {kind: COMPACT_DROPPED_PREFIX + kind.value for kind in CompactedKind}


# --------------------------------------------------------------------------------------------
# Async tasks (kernel/tasks): a run the task runner started says which task it ran, how long the
# task waited in the queue before this run began, and which run of the task it is (a retryable
# task whose worker died is run again).
# --------------------------------------------------------------------------------------------

TASK_ID = "steplens.task.id"  # on the run span: the task id `TaskQueue.submit` answered
TASK_QUEUED_S = "steplens.task.queued_s"  # seconds from submit (or re-queue) to this run's start
TASK_ATTEMPT = "steplens.task.attempt"  # 1 for the first run of the task, 2 after one re-run, ...
