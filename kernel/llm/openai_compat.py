"""Adapter for any OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, Ollama, LiteLLM…).

It speaks plain HTTP via httpx rather than the `openai` SDK so that the kernel controls timeouts,
retries (done once, in `ResilientLLM`, not twice) and error classification. Its one promise: it
never raises on what the model *said* (bad tool-call JSON becomes `format_error`), and every
transport/HTTP failure leaves as a classified `LLMError`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from kernel.llm.base import LLMError
from kernel.llm.estimate import estimate_usage
from kernel.types import LLMResponse, Message, ToolCall, Usage

log = logging.getLogger(__name__)

# Non-retryable error codes that another model (or provider) may well not have.
MODEL_LEVEL_CODES = frozenset(
    {"model_not_found", "context_length_exceeded", "model_not_available", "unsupported_model"}
)
_MAX_ERROR_TEXT = 300


def to_openai_message(msg: Message) -> dict[str, Any]:
    """Our `Message` in the wire shape; tool-call arguments go back out as JSON strings."""
    out: dict[str, Any] = {"role": msg.role, "content": msg.content}
    if msg.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments_out(c.arguments)},
            }
            for c in msg.tool_calls
        ]
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    if msg.name is not None:
        out["name"] = msg.name
    return out


def _arguments_out(arguments: dict[str, Any]) -> str:
    # Arguments we could not parse were kept verbatim under `_raw`; send them back as the model
    # wrote them, so the conversation history stays truthful.
    if set(arguments) == {"_raw"} and isinstance(arguments["_raw"], str):
        return arguments["_raw"]
    return json.dumps(arguments)


def to_openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """Accept tools already in OpenAI shape, or bare `{name, description, parameters}` schemas."""
    if "type" in tool:
        return tool
    params = tool.get("parameters", tool.get("input_schema", {"type": "object", "properties": {}}))
    fn: dict[str, Any] = {"name": tool.get("name"), "parameters": params}
    if tool.get("description"):
        fn["description"] = tool["description"]
    return {"type": "function", "function": fn}


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait, from `retry-after-ms`, or `Retry-After` (delta seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        log.warning("ignoring unparsable Retry-After header %r", value[:50])
        return None


def _error_from_response(resp: httpx.Response) -> LLMError:
    status = resp.status_code
    code: str | None = None
    message = resp.text[:_MAX_ERROR_TEXT]
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            raw = err.get("code") or err.get("type")
            code = str(raw) if raw not in (None, "") else None
            message = str(err.get("message") or message)[:_MAX_ERROR_TEXT]
        elif isinstance(err, str):
            message = err[:_MAX_ERROR_TEXT]
    retryable = status == 429 or status >= 500 or status == 408
    model_level = not retryable and (status in (401, 403, 404) or code in MODEL_LEVEL_CODES)
    return LLMError(
        f"HTTP {status}: {message}",
        error_type=code or "HTTPStatusError",
        retryable=retryable,
        status_code=status,
        retry_after=parse_retry_after(resp.headers) if retryable else None,
        model_level=model_level,
    )


def _text_of(content: Any) -> str | None:
    """`content` may be a string, null, or (some servers) a list of typed parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(parts) or None
    return str(content)


def parse_tool_calls(raw_calls: Any) -> tuple[list[ToolCall], list[str]]:
    """Tool calls from the wire; problems become messages, never exceptions."""
    calls: list[ToolCall] = []
    problems: list[str] = []
    if not isinstance(raw_calls, list):
        return calls, ([f"tool_calls is {type(raw_calls).__name__}, not a list"] if raw_calls else [])
    for i, raw in enumerate(raw_calls):
        fn = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(fn, dict):
            problems.append(f"tool call #{i} has no function object")
            continue
        call_id = str(raw.get("id") or f"call_{i}")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            problems.append(f"tool call #{i} ({call_id}) has no function name")
            name = ""
        args_raw = fn.get("arguments")
        arguments: dict[str, Any]
        if isinstance(args_raw, dict):
            arguments = args_raw
        elif args_raw is None or args_raw == "":
            arguments = {}
        else:
            text = args_raw if isinstance(args_raw, str) else json.dumps(args_raw)
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                arguments = {"_raw": text}
                problems.append(f"tool call {name!r} ({call_id}) arguments are not valid JSON: {exc}")
            else:
                if isinstance(parsed, dict):
                    arguments = parsed
                else:
                    arguments = {"_raw": text}
                    problems.append(
                        f"tool call {name!r} ({call_id}) arguments are JSON {type(parsed).__name__}, "
                        "not an object"
                    )
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return calls, problems


def _usage_of(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cached_input_tokens=int(cached or 0),
    )


class OpenAICompatLLM:
    """Implements `LLM` over `POST {base_url}/chat/completions`.

    The API key comes from `api_key`, else from the environment variable named `api_key_env`;
    with neither, no Authorization header is sent (local servers). It is kept private and never
    appears in reprs, logs or error messages.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        provider: str = "openai",
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._client = client
        self._owns_client = client is None

    def __repr__(self) -> str:
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r}, provider={self.provider!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s))
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it (a caller's client is theirs)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> OpenAICompatLLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def request_body(
        self,
        messages: list[Message],
        tools: list[dict] | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [to_openai_message(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
        }
        if tools:
            body["tools"] = [to_openai_tool(t) for t in tools]
        return body

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict] | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> LLMResponse:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body = self.request_body(messages, tools, temperature, max_tokens)
        try:
            resp = await self._http().post(
                f"{self.base_url}/chat/completions",
                json=body,
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            )
        except httpx.TimeoutException as exc:
            raise LLMError(f"{self.model}: request timed out ({type(exc).__name__})",
                           error_type=type(exc).__name__, retryable=True) from exc
        except httpx.TransportError as exc:
            raise LLMError(f"{self.model}: connection failed ({type(exc).__name__}: {exc})",
                           error_type=type(exc).__name__, retryable=True) from exc
        if resp.status_code >= 400:
            raise _error_from_response(resp)
        return self._parse(resp, messages, tools)

    def _parse(self, resp: httpx.Response, messages: list[Message], tools: list[dict] | None) -> LLMResponse:
        try:
            data = resp.json()
        except ValueError as exc:
            # A 200 with a broken body is usually a proxy hiccup: worth another try.
            raise LLMError(f"{self.model}: response body is not JSON: {resp.text[:_MAX_ERROR_TEXT]!r}",
                           error_type="invalid_response", retryable=True,
                           status_code=resp.status_code) from exc
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMError(f"{self.model}: response has no choices", error_type="invalid_response",
                           retryable=True, status_code=resp.status_code)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        calls, problems = parse_tool_calls(message.get("tool_calls"))
        out = LLMResponse(
            text=_text_of(message.get("content")),
            tool_calls=calls,
            model=str(data.get("model") or self.model),
            provider=self.provider,
            finish_reason=choice.get("finish_reason"),
            format_error="; ".join(problems) or None,
        )
        out.usage = _usage_of(data.get("usage")) or estimate_usage(messages, tools, out)
        return out
