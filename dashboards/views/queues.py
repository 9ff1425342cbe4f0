"""Queues: work an annotation queue one run at a time, and read its results and agreement.

Why the person names themselves (sidebar, kept in the URL): a label's author is a person, not the
dashboards' API key, which a whole team shares; the server holds the run for that name under the
queue's lease so two people never label the same slot. Why the labels go in a form: the widgets'
values reach the server only on Submit (Ctrl+Enter), never half-filled on each click; Skip
(Alt+S) records a skip and Next (Alt+N) moves on once the run is decided. Writes need the
`annotate` scope; a read-only key still sees the queue's progress and results.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboards import queues_client as qc
from dashboards.client import AccessDenied, ApiError, NotFound
from dashboards.queue_view import BOOLEAN_CHOICES, agreement_rows, result_rows, score_value, shown
from dashboards.queues_models import Item, Queue, ScoreConfig
from dashboards.text import code, inert
from dashboards.trace_view import build_trace_view
from dashboards.ui import client, empty_state, fmt_pct, fmt_usd, guard, param, set_param, trace_link

SUBMIT_KEY, SKIP_KEY, NEXT_KEY = "Ctrl+Enter", "Alt+S", "Alt+N"
_FLASH = "queues_flash"

st.title("Queues")


def _current_key(queue: Queue, user: str) -> str:
    return f"queue_item::{queue.project}::{queue.name}::{user}"


def _flash(kind: str, message: str) -> None:
    st.session_state[_FLASH] = (kind, message)


def _take(queue: Queue, user: str) -> Item | None:
    """The run this person works on: the one they hold or decided last, else the next one."""
    key = _current_key(queue, user)
    if key not in st.session_state:
        st.session_state[key] = qc.take_next(client(), queue.name, user, queue.project).item
    return st.session_state[key]


def _progress(queue: Queue) -> None:
    p = queue.progress
    decided = p.done + p.skipped
    st.progress(decided / p.total if p.total else 0.0, text=f"{decided} of {p.total} runs decided")
    cols = st.columns(5)
    for col, (label, value) in zip(cols, (("Runs", p.total), ("Done", p.done), ("Skipped", p.skipped),
                                          ("In progress", p.in_progress), ("Pending", p.pending)), strict=True):
        col.metric(label, value)


def _show_run(trace_id: str) -> None:
    try:
        trace = client().trace(trace_id)
    except NotFound:
        st.warning("this run is no longer stored (removed by retention?): skip it to move on")
        return
    view = build_trace_view(trace)
    run = trace.run
    if run is not None:
        outcome = "ok" if run.ok else f"failed ({inert(run.stop_reason or 'unknown')})"
        st.markdown(f"**{inert(run.agent or 'unknown agent')}** {inert(run.version or '')} · {outcome} · "
                    f"{run.steps if run.steps is not None else '—'} steps · {run.tool_calls or 0} tool calls · "
                    f"{fmt_usd(run.cost_usd)}")
    trace_link(trace_id, f"open the whole trace {trace_id[:12]}…")
    st.markdown("**Task**")
    st.text(view.task or "(not recorded: content capture was off, or the client sends none)")
    st.markdown("**Answer**")
    st.text(view.answer or "(no answer recorded)")
    if view.steps:
        st.markdown(f"**Steps** ({len(view.steps)})")
    for step in view.steps:
        tools = ", ".join(code(t.tool) for t in step.tool_calls) or code(step.action or "—")
        with st.expander(f"Step {step.index} · {step.kind or 'step'} · {step.action or '—'}",
                         expanded=len(view.steps) <= 3):
            if step.thought:
                st.caption("thought")
                st.text(step.thought)
            st.markdown(f"tools: {tools}")
            for call in step.tool_calls:
                if call.arguments:
                    st.code(call.arguments, language="json")
                if call.error:
                    st.error(f"tool error: {inert(call.error)}")
                if call.result:
                    st.caption("result")
                    st.code(call.result, language=None)
            if step.observation and not any(c.result for c in step.tool_calls):
                st.caption("observation")
                st.code(step.observation, language=None)
            for err in step.errors:
                st.error(inert(err))


def _widget(config: ScoreConfig, key: str, current: Any) -> Any:
    label = config.name + (f" — {config.description}" if config.description else "")
    if config.data_type == "boolean":
        index = None if current is None else (0 if current else 1)
        return st.radio(label, BOOLEAN_CHOICES, index=index, horizontal=True, key=key)
    if config.data_type == "categorical":
        options = config.categories or []
        index = options.index(current) if current in options else None
        return st.radio(label, options, index=index, horizontal=True, key=key)
    return st.number_input(label, min_value=config.min, max_value=config.max,
                           value=None if current is None else float(current), key=key,
                           placeholder=f"{config.min if config.min is not None else '…'} to "
                                       f"{config.max if config.max is not None else '…'}")


def _label_form(queue: Queue, item: Item, user: str) -> None:
    mine = next((d for d in item.decisions if d.user == user), None)
    others = [d for d in item.decisions if d.user != user]
    if mine is not None:
        what = ", ".join(f"{inert(k)} = {inert(shown(v))}" for k, v in mine.values.items()) or "skipped"
        st.success(f"you {inert(mine.decision)} this run: {what}. Change it below, or press Next ({NEXT_KEY}).")
    if others:
        st.caption("also decided by: " + ", ".join(f"{inert(d.user)} ({inert(d.decision)})" for d in others))
    with st.form(key=f"labels::{queue.name}::{item.trace_id}", border=True):
        raw = {c.name: _widget(c, f"w::{queue.name}::{item.trace_id}::{c.name}",
                               mine.values.get(c.name) if mine else None) for c in queue.configs}
        comment = st.text_area("Comment (optional)", value=(mine.comment or "") if mine else "",
                               key=f"comment::{queue.name}::{item.trace_id}")
        left, right = st.columns(2)
        submitted = left.form_submit_button(f"Submit ({SUBMIT_KEY})", type="primary", shortcut=SUBMIT_KEY)
        skipped = right.form_submit_button(f"Skip ({SKIP_KEY})", shortcut=SKIP_KEY)
    if submitted:
        values = {c.name: v for c in queue.configs if (v := score_value(c, raw[c.name])) is not None}
        if not values:
            st.warning("pick a value for at least one score before submitting")
            return
        try:
            decided = qc.submit(client(), queue.name, item.trace_id, user, values, comment.strip() or None,
                                queue.project)
        except ApiError as exc:
            _flash("error", exc.message)
        else:
            st.session_state[_current_key(queue, user)] = decided
            _flash("success", f"labelled {item.trace_id[:12]}…: "
                              + ", ".join(f"{inert(k)} = {inert(shown(v))}" for k, v in values.items()))
        st.rerun()
    if skipped:
        try:
            qc.skip(client(), queue.name, item.trace_id, user, queue.project)
        except ApiError as exc:
            _flash("error", exc.message)
        else:
            st.session_state.pop(_current_key(queue, user), None)
            _flash("info", f"skipped {item.trace_id[:12]}…")
        st.rerun()


def _work(queue: Queue, user: str) -> None:
    if not queue.configs:
        st.warning("this queue's score configs are not declared on the server; nothing to label with")
        return
    try:
        item = _take(queue, user)
    except AccessDenied:
        st.warning("this dashboard's API key may not label runs (scope annotate): progress and results below "
                   "are still shown. Set STEPLENS_API_KEY to a key with the annotate scope to label.")
        return
    if item is None:
        st.success("nothing left for you in this queue: every run is decided or held by someone else.")
        if st.button(f"Look again ({NEXT_KEY})", shortcut=NEXT_KEY):
            st.session_state.pop(_current_key(queue, user), None)
            st.rerun()
        return
    decided = any(d.user == user for d in item.decisions)
    st.subheader(f"Run {item.trace_id}")
    st.caption(f"entered {inert(item.source)} · status {inert(item.status)}"
               + (f" · held by {', '.join(inert(h) for h in item.held_by)}" if item.held_by else ""))
    if st.button(f"Next ({NEXT_KEY})", shortcut=NEXT_KEY, disabled=not decided,
                 help="label or skip this run first: it is held for you until then"):
        st.session_state.pop(_current_key(queue, user), None)
        st.rerun()
    run_col, label_col = st.columns([3, 2])
    with run_col:
        _show_run(item.trace_id)
    with label_col:
        _label_form(queue, item, user)


def _results(queue: Queue) -> None:
    results = qc.results(client(), queue.name, queue.project)
    if not results.labels and not results.skipped_by:
        empty_state("no labels yet: the runs people label in this queue show here, with agreement once two "
                    "people label the same run.")
        return
    people = sorted(set(results.labelled_by) | set(results.skipped_by))
    st.markdown("**Who labelled what**")
    st.dataframe([{"person": p, "labelled": results.labelled_by.get(p, 0), "skipped": results.skipped_by.get(p, 0)}
                  for p in people], hide_index=True, key=f"people::{queue.name}")
    st.markdown("**Agreement** (runs labelled by two or more people)")
    cols = st.columns(max(1, len(results.agreement)))
    for col, config in zip(cols, results.agreement, strict=False):
        col.metric(f"{config.name}: agreement", fmt_pct(config.percent_agreement),
                   help=f"{config.runs_with_several_labels} runs, {config.pairs} pairs of labels")
    pairs = agreement_rows(results)
    if pairs:
        st.dataframe(pairs, hide_index=True, key=f"agreement::{queue.name}",
                     column_config={"kappa": st.column_config.NumberColumn("Cohen's kappa", format="%.3f")})
    else:
        st.caption("no run has labels from two people yet")
    st.markdown("**Labels**")
    st.dataframe(result_rows(queue, results), hide_index=True, key=f"labels::{queue.name}")


with guard():
    flash = st.session_state.pop(_FLASH, None)
    if flash is not None:
        getattr(st, flash[0])(flash[1])
    queues = qc.queues(client()).queues
    if not queues:
        empty_state("no annotation queues yet: create one with `POST /api/queues` or `[[queues]]` in steplens.toml "
                    "(README, \"Annotation queues\").")
    else:
        labels = [q.name if len({x.project for x in queues}) == 1 else f"{q.project}/{q.name}" for q in queues]
        wanted = param("queue")
        index = labels.index(wanted) if wanted in labels else 0
        chosen = st.selectbox("Queue", labels, index=index)
        set_param("queue", chosen)
        queue = queues[labels.index(chosen)]
        user = st.sidebar.text_input("Your name (the author of your labels)", value=param("user"),
                                     max_chars=200).strip()
        set_param("user", user or None)
        if queue.description:
            st.caption(inert(queue.description))
        st.caption(f"fills {', '.join(code(n) for n in queue.score_configs)} · sampling "
                   f"{queue.sampling_rate:.0%} · {queue.labels_per_item} person(s) per run"
                   + (f" · assignees {', '.join(inert(a) for a in queue.assignees)}" if queue.assignees else ""))
        if queue.last_error:
            st.error(f"the queue could not be filled: {inert(queue.last_error)}")
        _progress(queue)
        work, results_tab = st.tabs(["Label", "Results"])
        with work:
            if not user:
                st.info("enter your name in the sidebar to take runs from this queue (it is the author of your labels)")
            else:
                _work(queue, user)
        with results_tab:
            _results(queue)
