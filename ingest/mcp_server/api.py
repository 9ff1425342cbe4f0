"""The steplens query API as the MCP tools call it: one request each, failures as clear tool errors.

Why tool errors and not exceptions: a coding agent reads the error text and acts on it (fix the
filter, use another key), so each failure says what happened in words, with the server's reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from mcp.server.mcpserver.exceptions import ToolError

MAX_DETAIL = 600


@dataclass(frozen=True)
class SteplensApi:
    """Base URL of the steplens server and the read key sent with every call."""

    url: str
    key: str | None = None
    timeout_s: float = 30.0

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    async def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return await self._call("GET", path, params=_clean(params or {}))

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._call("POST", path, json=body)

    async def _call(self, method: str, path: str, **kw: Any) -> Any:
        try:
            async with httpx.AsyncClient(base_url=self.url.rstrip("/"), headers=self._headers(),
                                         timeout=self.timeout_s) as client:
                response = await client.request(method, "/api" + path, **kw)
        except httpx.TimeoutException:
            raise ToolError(f"steplens at {self.url} did not answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"cannot reach steplens at {self.url}: {type(exc).__name__}: {exc}") from None
        if response.status_code == 200:
            return response.json()
        raise ToolError(_explain(response))


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    """Query parameters without the unset ones; booleans as the API spells them."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None or value == "":
            continue
        out[key] = str(value).lower() if isinstance(value, bool) else value
    return out


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:MAX_DETAIL]
    detail = body.get("detail") if isinstance(body, dict) else None
    if detail is None and isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"].get("message")
    if isinstance(detail, list):  # FastAPI's 422: [{loc, msg}, ...]
        detail = "; ".join(f"{'.'.join(str(p) for p in d.get('loc', [])[1:]) or 'value'}: {d.get('msg')}"
                           for d in detail if isinstance(d, dict))
    return str(detail if detail is not None else body)[:MAX_DETAIL]


def _explain(response: httpx.Response) -> str:
    status, detail = response.status_code, _detail(response)
    if status == 401:
        return (f"steplens refused the API key (401: {detail}): give `steplens mcp` a read key of your project "
                "in STEPLENS_API_KEY (or the variable named by --api-key-env)")
    if status == 403:
        return f"the API key may not do this (403: {detail}): it needs the read scope"
    if status == 404:
        return f"not found (404): {detail}"
    if status == 504:
        return f"the query ran past the server's time limit (504): {detail}"
    if status >= 500:
        return f"steplens failed to answer ({status}): {detail}; retry shortly"
    return f"steplens refused the request ({status}): {detail}"
