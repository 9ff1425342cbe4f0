"""The LLM judge's model calls say what they are for: `python -m kernel.eval.judge`, run as the
ingest evaluators run it (a child process, a local fake OpenAI-compatible server, its trace exported
to a real steplens ingest server), leaves chat spans with `steplens.llm.purpose=judge`, where every
call used to arrive as `step`. An agent built with `purpose=` is routed by it like any call site."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernel import Agent, Route, Router, ScriptedLLM
from tests.ingest.conftest import ingest_server, start_ingest_server  # noqa: F401 - fixtures
from tests.support.fake_openai import FakeOpenAI, TextReply
from tests.support.readme import ROOT, fetch_trace
from tracer import conventions as c


def test_the_judge_process_chat_spans_have_purpose_judge(ingest_server) -> None:  # noqa: F811
    with FakeOpenAI(default=TextReply('{"score": 5, "reason": "right"}')) as fake:
        request = {"system": "Grade the answer.", "prompt": "task: 2+2\nanswer: 4",
                   "models": [{"model": "gpt-4o-mini", "base_url": fake.base_url}],
                   "eval_run_id": "evaluator:correct", "eval_case_id": "run-1",
                   "endpoint": f"{ingest_server.http_url}/v1/traces"}
        out = subprocess.run([sys.executable, "-m", "kernel.eval.judge"], input=json.dumps(request),
                             capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["ok"] and answer["exported"] and json.loads(answer["answer"])["score"] == 5

    assert ingest_server.store.wait_loaded(30)
    trace = fetch_trace(ingest_server.http_url, answer["trace_id"])
    [chat] = [s for s in trace["spans"] if s["name"].startswith("chat ")]
    assert chat["attributes"][c.LLM_PURPOSE] == c.LLMPurpose.JUDGE
    assert trace["run"]["mode"] == "eval"


async def test_an_agent_built_for_judging_is_routed_as_judge() -> None:
    steps = ScriptedLLM(policy=lambda m, t: "Final Answer: step model", model="step-model")
    grader = ScriptedLLM(policy=lambda m, t: "Final Answer: 5", model="judge-model")
    router = Router(steps, [Route.for_purposes(grader, c.LLMPurpose.JUDGE, name="judges")])
    judged = await Agent("grader", "1", router, purpose="judge").run("grade this")
    plain = await Agent("worker", "1", router).run("do this")
    assert (judged.answer, plain.answer) == ("5", "step model")
    with pytest.raises(ValueError):
        Agent("grader", "1", router, purpose="grading")
