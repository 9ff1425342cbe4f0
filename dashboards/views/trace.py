"""Trace: one run, step by step (thought, action, arguments, observation, LLM calls, decisions),
its span timeline, budget use, and every span's attributes. Deep link: `?trace_id=<32 hex>`.

Large traces stay usable: steps are paged (STEPS_PER_PAGE), the timeline shows a window of spans,
and the span table is one virtualised grid.
"""

from __future__ import annotations

import streamlit as st

from dashboards import charts
from dashboards.text import code, inert
from dashboards.trace_view import (
    SOURCE_LABELS,
    LLMCall,
    StepView,
    agent_rows,
    build_trace_view,
    score_rows,
)
from dashboards.ui import COMPARE_PAGE, DEFAULT_MODE, client, fmt_ms, fmt_usd, guard, param, set_param

STEPS_PER_PAGE = 20
SPANS_PER_WINDOW = 300


def _pager(label: str, total: int, per_page: int, url_key: str) -> int:
    """A 1-based page number kept in the URL; returns the 0-based offset of that page."""
    pages = max(1, -(-total // per_page))
    try:
        wanted = min(max(int(param(url_key, "1")), 1), pages)
    except ValueError:
        wanted = 1
    if pages == 1:
        set_param(url_key, None)
        return 0
    page = st.number_input(f"{label} (of {pages})", 1, pages, wanted, key=f"pager_{url_key}")
    set_param(url_key, None if page == 1 else str(page))
    return (int(page) - 1) * per_page


def _step_label(step: StepView) -> str:
    flags = ("❌ " if step.has_error else "") + ("✂️ " if step.truncated else "")
    what = " · ".join(inert(x) for x in (step.kind, step.action) if x)
    return f"{flags}Step {step.index}" + (f" · {what}" if what else "") + f" · {fmt_ms(step.duration_ms)}"


def _render_llm_calls(calls: list[LLMCall]) -> None:
    """The LLM calls table, then each call's input/output messages (from its attributes or, for
    clients that log content, from its log records)."""
    st.dataframe(
        [
            {"model": x.model, "provider": x.provider, "attempt": x.attempt, "tokens in": x.input_tokens,
             "tokens out": x.output_tokens, "estimated": x.estimated, "cost $": x.cost_usd,
             "ms": round(x.duration_ms, 1), "fallback from": x.fallback_from, "error": x.error}
            for x in calls
        ],
        hide_index=True,
    )
    for n, call in enumerate(calls):
        if call.input_messages or call.output_messages:
            source = " (from logs)" if call.messages_from_logs else ""
            tabs = st.tabs([f"call {n + 1}: input messages{source}", f"call {n + 1}: output messages{source}"])
            tabs[0].code(call.input_messages or "(not captured)", language="json")
            tabs[1].code(call.output_messages or "(not captured)", language="json")


def _render_step(step: StepView) -> None:
    for err in step.errors:
        st.error(inert(err), icon=":material/error:")
    if step.thought:
        st.markdown("**Thought**")
        st.text(step.thought)
    st.markdown(f"**Action:** {code(step.action or '—')}" + (f" · parse: {code(step.parse)}" if step.parse else ""))
    for call in step.tool_calls:
        decision = f"decision **{inert(call.decision)}**" if call.decision else "decision not recorded"
        risk = f" · risk {inert(call.risk)}" if call.risk else ""
        st.markdown(f"**Tool** {code(call.tool)} · {decision}{risk} · {fmt_ms(call.duration_ms)}"
                    + (f" · {fmt_usd(call.cost_usd)}" if call.cost_usd else ""))
        if call.arguments:
            st.code(call.arguments, language="json")
        if call.error:
            st.error(f"tool error: {inert(call.error)}")
    if step.truncated:
        dropped = f"{step.dropped_tokens} tokens dropped" if step.dropped_tokens is not None else "cut"
        marks = "; marks: " + ", ".join(code(m.strip()) for m in step.marks) if step.marks else ""
        st.warning(f"Observation truncated ({dropped}){marks}", icon=":material/content_cut:")
    if step.observation:
        st.markdown("**Observation** (as the model saw it)")
        st.code(step.observation, language=None)
    if step.llm_calls:
        st.markdown("**LLM calls**")
        _render_llm_calls(step.llm_calls)
    if step.budget:
        b = step.budget
        st.caption(
            "budget: "
            + ", ".join(f"{k} {b.used[k]:g}" + (f"/{b.limit[k]:g}" if k in b.limit else "") for k in b.used)
            + (f" · headroom {b.headroom:.0%}" if b.headroom is not None else "")
            + (f" · exhausted: {inert(b.exhausted)}" if b.exhausted else "")
        )


st.title("Trace")
trace_id = st.text_input("Trace id", value=param("trace_id"), placeholder="32 hexadecimal characters").strip()
set_param("trace_id", trace_id or None)
if not trace_id:
    st.info("Open a trace from the Runs, Failures, Tools or Cost pages, or paste a trace id above.",
            icon=":material/info:")
    st.stop()

with guard():
    trace = client().trace(trace_id)
    view = build_trace_view(trace)
    run = view.run
    st.subheader(inert(run.name or run.agent or "run"))
    source = SOURCE_LABELS.get(run.stop_reason_source or "", "")
    if run.ok:
        st.success(f"ok · {inert(run.stop_reason or 'finish')}{source}", icon=":material/check_circle:")
    elif run.ok is False:
        st.error(f"failed · stop reason: {inert(run.stop_reason or 'unknown')}{source}", icon=":material/cancel:")
        if run.failure_evidence:
            st.caption("evidence")
            st.text(run.failure_evidence)
    m = [*st.columns(4), *st.columns(3)]
    m[0].metric("Agent", f"{inert(run.agent or '—')} {inert(run.version)}")
    m[1].metric("Steps", run.steps if run.steps is not None else len(view.steps))
    m[2].metric("LLM calls", run.llm_calls or 0)
    m[3].metric("Tool calls (errors)", f"{run.tool_calls or 0} ({run.tool_errors or 0})")
    m[4].metric("Tokens in / out", f"{run.input_tokens or 0:,} / {run.output_tokens or 0:,}")
    m[5].metric("Cost", fmt_usd(run.cost_usd))
    m[6].metric("Duration", fmt_ms(run.duration_ms))
    st.caption(f"project {inert(run.project)} · {inert(run.mode or DEFAULT_MODE)} run · {len(view.spans):,} spans · "
               f"started {inert(run.start_time)}")
    if run.agents:
        st.markdown("**Agents**" + (" (sub-agents: " + ", ".join(code(a) for a in run.sub_agents) + ")"
                                    if run.sub_agents else ""))
        st.dataframe(agent_rows(run), hide_index=True)
    st.page_link(COMPARE_PAGE, label="Compare with another run", query_params={"a": trace.trace_id},
                 icon=":material/compare_arrows:")
    if view.task:
        with st.expander("Task", expanded=True):
            st.text(view.task)
    if view.answer:
        with st.expander("Answer", expanded=True):
            st.text(view.answer)
    if view.evaluations:
        st.markdown("**Evaluations**")
        st.dataframe(
            [{"evaluation": e.name, "score": e.score_value, "label": e.score_label, "explanation": e.explanation,
              "span": e.span_id} for e in view.evaluations],
            hide_index=True,
        )
    if trace.scores:
        st.markdown("**Scores**")
        st.dataframe(score_rows(trace.scores), hide_index=True)
    if view.errors:
        lines = [
            f"- {'step ' + str(e.step_index) + ' · ' if e.step_index is not None else ''}{code(e.name)}: "
            f"{inert(e.error_type)} {inert(e.message)}"
            for e in view.errors[:20]
        ]
        more = f"\n\n… and {len(view.errors) - 20} more (see the Spans tab)" if len(view.errors) > 20 else ""
        st.error(f"**{len(view.errors)} span(s) with errors**\n\n" + "\n".join(lines) + more)

    steps_tab, timeline_tab, budget_tab, spans_tab = st.tabs(["Steps", "Timeline", "Budget", "Spans"])
    with steps_tab:
        if not view.steps:
            st.info("This trace has no step spans (it comes from another client or is not an agent run): "
                    "see the Timeline and Spans tabs.")
            if view.llm_calls:
                st.markdown(f"**LLM calls** ({len(view.llm_calls)})")
                _render_llm_calls(view.llm_calls[:STEPS_PER_PAGE])
                if len(view.llm_calls) > STEPS_PER_PAGE:
                    st.caption(f"first {STEPS_PER_PAGE} of {len(view.llm_calls)} LLM calls; see the Spans tab")
        else:
            only_errors = st.toggle("Only steps with errors", value=param("errors_only") == "1")
            set_param("errors_only", "1" if only_errors else None)
            steps = [s for s in view.steps if s.has_error] if only_errors else view.steps
            offset = _pager("Step page", len(steps), STEPS_PER_PAGE, "step_page")
            for step in steps[offset : offset + STEPS_PER_PAGE]:
                with st.expander(_step_label(step), expanded=step.has_error or len(view.steps) <= 3):
                    _render_step(step)
    with timeline_tab:
        offset = _pager("Span window", len(view.spans), SPANS_PER_WINDOW, "span_page")
        st.plotly_chart(charts.waterfall_figure(view.spans, offset, SPANS_PER_WINDOW), key="waterfall")
    with budget_tab:
        st.plotly_chart(charts.budget_figure(view.budgets), key="budget")
        if view.limits:
            st.dataframe([{"limit": k, "value": v} for k, v in view.limits.items()], hide_index=True)
    with spans_tab:
        t0 = min((s.start_time for s in view.spans), default=None)
        event = st.dataframe(
            [
                {"#": i, "span": ("· " * min(s.depth, 12)) + s.name, "operation": s.operation,
                 "start ms": round((s.start_time - t0).total_seconds() * 1000, 2) if t0 else None,
                 "duration ms": round(s.duration_ms, 2), "status": s.status,
                 "error": " ".join(x for x in (s.error_type, s.status_message) if x) or None,
                 "model": s.model, "tool": s.tool_name, "tokens in": s.input_tokens, "tokens out": s.output_tokens,
                 "cost $": s.cost_usd}
                for i, s in enumerate(view.spans)
            ],
            key="spans_table", hide_index=True, on_select="rerun", selection_mode="single-row",
        )
        selected = getattr(getattr(event, "selection", None), "rows", None) or []
        if selected:
            span = view.spans[selected[0]]
            st.markdown(f"**{inert(span.name)}** attributes")
            st.json(span.attributes, expanded=True)
            if span.events:
                st.markdown("events")
                st.json(span.events, expanded=False)
            if span.logs:
                st.markdown(f"log records ({len(span.logs)})")
                st.json([entry.model_dump(mode="json") for entry in span.logs], expanded=False)
        else:
            st.caption("Select a span to see its attributes, events and log records.")
        if trace.logs:
            with st.expander(f"Log records keyed to no span of this trace ({len(trace.logs)})"):
                st.json([entry.model_dump(mode="json") for entry in trace.logs], expanded=False)
