"""The per-attempt hook between the resilience layer and the tracer.

`ResilientLLM` runs every single try of every model inside one of these scopes, so the tracer can
open exactly one `chat {model}` span per attempt (design.md §2) without the kernel knowing about
spans, and the kernel keeps working with tracing off (the default scope does nothing).

A scope factory is any callable
    factory(*, model: str, provider: str, attempt: int, fallback_from: str | None)
        -> ContextManager[AttemptScope]
The yielded object must have `record_response(resp)` and `record_error(exc)`; it may also have
`record_request(messages=, tools=, temperature=, max_tokens=)`, called first when present. An
exception escaping the attempt also reaches the context manager's `__exit__`. A factory that wants
the request when it opens its span (e.g. `tracer.spans.chat_span(temperature=, max_tokens=,
input_messages=)`) reads `current_attempt_request()`: it is set while the factory is called.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from kernel.types import LLMResponse, Message

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AttemptRequest:
    """What one attempt sends; `temperature`/`max_tokens` None mean the adapter's defaults."""

    messages: list[Message]
    tools: list[dict] | None
    temperature: float | None
    max_tokens: int | None


_CURRENT_REQUEST: ContextVar[AttemptRequest | None] = ContextVar("steplens_attempt_request", default=None)


def current_attempt_request() -> AttemptRequest | None:
    """The request of the attempt being opened/run (None outside `ResilientLLM`)."""
    return _CURRENT_REQUEST.get()


@contextmanager
def attempt_request(request: AttemptRequest) -> Iterator[None]:
    token = _CURRENT_REQUEST.set(request)
    try:
        yield
    finally:
        _CURRENT_REQUEST.reset(token)


@dataclass(frozen=True)
class CallLabels:
    """What a chat span says about why this model answered: the call's purpose (conventions.
    LLMPurpose) and, when a `Router` chose the model, the rule's name and the model it picked.
    Carried in a context variable so it reaches spans opened deep inside ResilientLLM."""

    purpose: str | None = None
    route_rule: str | None = None
    route_model: str | None = None


_NO_LABELS = CallLabels()
_CURRENT_LABELS: ContextVar[CallLabels | None] = ContextVar("steplens_call_labels", default=None)


def current_call_labels() -> CallLabels:
    """The labels of the LLM call in progress (empty outside one)."""
    return _CURRENT_LABELS.get() or _NO_LABELS


@contextmanager
def call_labels(**changes: str | None) -> Iterator[CallLabels]:
    """Set some labels for the calls made inside; the others keep their current value."""
    current = current_call_labels()
    labels = CallLabels(**{**current.__dict__, **changes})
    token = _CURRENT_LABELS.set(labels)
    try:
        yield labels
    finally:
        _CURRENT_LABELS.reset(token)


class AttemptScope(Protocol):
    def record_response(self, resp: LLMResponse) -> None: ...

    def record_error(self, exc: BaseException) -> None: ...


ScopeFactory = Callable[..., AbstractContextManager[AttemptScope]]


class NullAttemptScope:
    """Records nothing: the scope used when no tracer is plugged in."""

    def record_response(self, resp: LLMResponse) -> None:
        return None

    def record_error(self, exc: BaseException) -> None:
        return None


class GuardedScope:
    """Forwards to a real scope but never lets an observability bug break a completion: hook
    failures are logged (loudly, with traceback) and the LLM call carries on."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        fn = getattr(self._inner, name, None)
        if fn is None:
            return
        try:
            fn(*args, **kwargs)
        except Exception:
            log.exception("attempt scope hook %s failed; continuing without it", name)

    def record_request(self, **kwargs: Any) -> None:
        self._call("record_request", **kwargs)

    def record_response(self, resp: LLMResponse) -> None:
        self._call("record_response", resp)

    def record_error(self, exc: BaseException) -> None:
        self._call("record_error", exc)


@contextmanager
def guarded(make: Callable[[], AbstractContextManager[Any]]) -> Iterator[GuardedScope]:
    """Enter the scope `make()` builds; if building or entering it fails, log and use a null one."""
    with ExitStack() as stack:
        try:
            inner = stack.enter_context(make())
        except Exception:
            log.exception("attempt scope could not be opened; continuing without it")
            inner = NullAttemptScope()
        yield GuardedScope(inner)
