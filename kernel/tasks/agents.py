"""Turning a task's agent reference into an agent to run.

A task outlives the process that submitted it, so it names its agent rather than holding it. A
reference is, in the order tried:
- a name registered on the runner (`TaskRunner(agents={"weather": make_agent})`);
- `package.module:attribute`, imported by the runner: an agent, or a callable that builds one;
- `name@version` of an example agent (`ticket@v1`; `kernel.examples.catalog`), for trying tasks out.
A callable is called once per task, so agents with per-run state (a scripted or simulated model)
start fresh every time.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

AgentFactory = Callable[[], Any]


class UnknownAgent(LookupError):
    """A reference the runner cannot resolve; the task fails with this message as its reason."""


def _is_agent(obj: Any) -> bool:
    return callable(getattr(obj, "run", None)) and inspect.iscoroutinefunction(obj.run)


def _built(obj: Any, reference: str) -> Any:
    if _is_agent(obj):
        return obj
    if callable(obj):
        built = obj()
        if _is_agent(built):
            return built
        raise UnknownAgent(f"{reference!r} built a {type(built).__name__}, not an agent with `async run(task)`")
    raise UnknownAgent(f"{reference!r} is a {type(obj).__name__}, not an agent or a function that builds one")


def resolve_agent(reference: str, registered: Mapping[str, Any] | None = None) -> Any:
    """The agent `reference` names (see the module doc); raises UnknownAgent saying what to fix."""
    if registered and reference in registered:
        return _built(registered[reference], reference)
    if ":" in reference:
        module_name, _, attr = reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UnknownAgent(f"cannot import {module_name!r} for agent {reference!r}: {exc}") from exc
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UnknownAgent(f"{module_name!r} has no {attr!r} (agent {reference!r})")
            obj = getattr(obj, part)
        return _built(obj, reference)
    if "@" in reference:
        from kernel.examples.catalog import AGENTS, build_agent

        name, _, version = reference.partition("@")
        if name in AGENTS:
            try:
                return build_agent(name, version).agent
            except ValueError as exc:
                raise UnknownAgent(str(exc)) from exc
    known = ", ".join(sorted(registered or ())) or "none"
    raise UnknownAgent(f"unknown agent {reference!r}: not registered on this runner (registered: {known}), "
                       "not `module:attribute`, not an example agent `name@version`")
