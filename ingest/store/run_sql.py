"""Run facts shared by the load merge (ingest/store/loading.py) and the trace-level derivation
(ingest/store/run_derive.py): root kinds, stop-reason sources and the failure signature, so both
write the runs row the same way."""

from __future__ import annotations

from tracer.conventions import OperationClass

# runs.root_kind: where the row's root-derived fields came from.
ROOT_AGENT = "agent"  # an agent or workflow span (or a foreign workflow/graph root)
ROOT_PARENTLESS = "root"  # the parentless span of a trace without one

# The class of workflow spans (`gen_ai.operation.name=invoke_workflow`, Traceloop workflows): the top of
# a run like an agent span, whichever of the two classes a convention maps them to.
WORKFLOW_CLASS = OperationClass.WORKFLOW.value

# runs.stop_reason_source: how ok / stop_reason / steps were found.
SOURCE_REPORTED = "reported"  # the run span said so (steplens.run.*: our kernel)
SOURCE_INFERRED = "inferred"  # derived from the trace's spans (design.md §3 "Runs of foreign clients")

# A failed run's signature: where and how its last error happened, e.g.
# `tool[lookup] timeout: tool timed out after <num> s`; the stop reason alone when no span failed.
FAILURE_SIGNATURE_SQL = """CASE WHEN ok = false THEN
    CASE WHEN last_error_kind IS NULL THEN coalesce(stop_reason, 'unknown')
    ELSE concat(
        last_error_kind,
        CASE WHEN last_error_tool IS NOT NULL THEN concat('[', last_error_tool, ']') ELSE '' END,
        CASE WHEN last_error_type IS NOT NULL THEN concat(' ', last_error_type) ELSE '' END,
        CASE WHEN last_error_template IS NOT NULL THEN concat(': ', last_error_template) ELSE '' END)
    END
END"""
