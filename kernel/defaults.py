"""The kernel's defaults, each named once, with the reason for its value.

The documents the kernel implements (a production ReAct kernel) give values for three of them: a
per-tool timeout (30 s), truncation that keeps the head and the tail of a long observation (a
70/30 or 60/40 split), and a system prompt asking for a three-part thought (what I know / what I
need / next action) and for evidence from the observations. The README's "Defaults and why"
section lists them with the places they apply; change a value here, not at its users.
"""

from __future__ import annotations

# Every tool call is cut after this many seconds (a `timeout` error observation, the run goes on).
# The documents' value: long enough for a slow search or carrier API, short enough that a hung
# dependency costs one step, not the run's wall clock. Applies to `@tool`, `Tool` and MCP tools.
TOOL_TIMEOUT_S = 30.0

# Share of a truncated observation's kept budget given to its head; the tail gets the rest.
# The documents give 70/30 or 60/40; 60/40 because the tail of tool output is where errors, stack
# traces, totals and "N more rows" lines are, which the model needs to recover or to answer, and
# the head already says what the output is.
TRUNCATION_HEAD_SHARE = 0.6

# Estimated tokens an observation may take in the prompt before it is truncated (head and tail).
OBSERVATION_MAX_TOKENS = 2000

# The ReAct agent's default system prompt: the documents' three-part thought and evidence rules.
SYSTEM_PROMPT = (
    "You are a careful agent. Solve the user's task step by step. Before every action, write your "
    "thought in three parts: what I know (facts from the task and from earlier observations), what I "
    "need (the one fact still missing), and next action (the single tool call that gets it, or the "
    "final answer when nothing is missing). Call one tool at a time and read its observation before "
    "deciding again. Every claim in your final answer must come from an observation: cite the tool "
    "and the fact it returned, never guess, and when the tools did not show something, say so "
    "instead of filling the gap."
)
