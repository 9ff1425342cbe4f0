"""The LLM judge as a program: `python -m kernel.eval.judge` reads one request (JSON) on stdin, asks
the judge model through the kernel's LLM adapters and prints one answer (JSON) on stdout.

The server's online evaluators start it per judgment (ingest/evaluators/judge.py says why a child
process); it is also usable alone. The judge is an `Agent` without tools in function-calling mode,
so the call gets what every kernel run gets: retries with backoff and the fallback chain
(`ResilientLLM`), a budget, a run that never raises, and, when `endpoint` is given, a trace of its
own: `invoke_agent steplens-judge` with mode `eval` and `steplens.eval.run_id` / `case_id` naming
the rule and the judged run, priced like any LLM call, exported before the answer is printed; its
chat spans say `steplens.llm.purpose=judge` (`Agent(purpose=...)`), not `step`.

Request: {"system", "prompt", "models": [{"model", "base_url", "api_key_env"}...], "temperature",
"max_tokens", "agent", "version", "eval_run_id", "eval_case_id", "endpoint" (OTLP/HTTP traces URL or
null)}. The endpoint's headers (the API key) come from `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, the
judge model's key from the variable `api_key_env` names: secrets never travel in the request.
Answer: {"ok", "answer", "stop_reason", "error", "trace_id", "cost_usd", "input_tokens",
"output_tokens", "exported"}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from kernel.agent import Agent
from kernel.budgets import Budget
from kernel.llm import OpenAICompatLLM, ResilientLLM
from kernel.telemetry import run_labels
from tracer.conventions import LLMPurpose, RunMode

MAX_ATTEMPTS_PER_MODEL = 3


def _llm(request: dict[str, Any]) -> ResilientLLM:
    chain = []
    for spec in request["models"]:
        kwargs: dict[str, Any] = {"model": spec["model"], "base_url": spec["base_url"],
                                  "temperature": float(request.get("temperature") or 0.0),
                                  "max_tokens": int(request.get("max_tokens") or 400)}
        if spec.get("api_key_env"):
            kwargs["api_key_env"] = spec["api_key_env"]
        chain.append(OpenAICompatLLM(**kwargs))
    return ResilientLLM(chain, max_attempts_per_model=MAX_ATTEMPTS_PER_MODEL, backoff_initial_s=0.2,
                        backoff_max_s=2.0)


async def judge(request: dict[str, Any]) -> dict[str, Any]:
    """Run the judge once; the answer document (never raises on what the model or network did)."""
    agent = Agent(
        str(request.get("agent") or "steplens-judge"), str(request.get("version") or "1"), _llm(request),
        tools=[], system_prompt=str(request["system"]), mode="function_calling",
        budget=Budget(max_steps=1, max_consecutive_unparsable=1), max_tokens=int(request.get("max_tokens") or 400),
        temperature=float(request.get("temperature") or 0.0), purpose=LLMPurpose.JUDGE,
    )
    with run_labels(mode=RunMode.EVAL, eval_run_id=request.get("eval_run_id"),
                    eval_case_id=request.get("eval_case_id")):
        result = await agent.run(str(request["prompt"]))
    return {
        "ok": result.ok, "answer": result.answer, "stop_reason": str(result.stop_reason), "error": result.error,
        "trace_id": result.trace_id, "cost_usd": result.cost_usd, "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
    }


def main() -> int:
    try:
        request = json.loads(sys.stdin.read())
        if not isinstance(request, dict) or not request.get("models"):
            raise ValueError("the request must be a JSON object with `models`")
    except ValueError as exc:
        print(json.dumps({"ok": False, "error": f"bad request: {exc}"}))
        return 2
    handle = None
    if request.get("endpoint"):
        from tracer.provider import setup

        handle = setup(endpoint=str(request["endpoint"]), service_name=None, schedule_delay_ms=50)
    answer = asyncio.run(judge(request))
    exported = True
    if handle is not None:
        handle.shutdown(10.0)
        stats = handle.stats()
        exported = stats.failed == 0 and stats.dropped == 0
    else:
        answer["trace_id"] = None
    answer["exported"] = exported
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
