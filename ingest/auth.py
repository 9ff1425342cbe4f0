"""API keys: who is calling, which project their spans belong to, what they may do.

Why keys are kept only as SHA-256 digests and compared with `hmac.compare_digest` against every
configured key: the comparison time must not reveal how much of a guess was right, nor which key
matched. Keys never appear in logs or error messages; a key is named by its index and project.

Why the project comes from the key and never from the payload: a client holding the key of
project A must not be able to write spans into project B by setting a resource attribute.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from fastapi import Request
from starlette.datastructures import Headers
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ingest.config import Settings
from ingest.errors import ConfigError, Forbidden, IngestError, Unauthenticated

ALL_SCOPES: frozenset[str] = frozenset({"ingest", "read", "admin", "operator", "annotate"})
# What each scope grants besides itself. `annotate` writes scores (people labelling runs, an app's
# feedback endpoint) and nothing else. `admin` acts within its key's project only (decide approvals,
# evaluate that project's alert rules, declare score configs); `operator` is the one explicit cross-project scope (every
# project's data, server-wide /metrics). A key never gains another project through any other scope.
IMPLIED_SCOPES: dict[str, frozenset[str]] = {
    "admin": frozenset({"ingest", "read", "annotate"}),
    "operator": frozenset({"ingest", "read", "admin", "annotate"}),
}
OPEN_PATHS: frozenset[str] = frozenset({"/healthz"})


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. `projects` is None when the caller may see every project
    (an operator key, or a server without keys, where the local user owns all the data)."""

    project: str
    scopes: frozenset[str]
    name: str
    all_projects: bool = False

    @property
    def projects(self) -> tuple[str, ...] | None:
        return None if self.all_projects else (self.project,)

    def can_read(self, project: str) -> bool:
        return self.all_projects or project == self.project


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    principal: Principal


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class KeyRing:
    """The configured keys. Empty means no auth (allowed only on loopback, see `check_bind_policy`)."""

    def __init__(self, entries: Iterable[_Entry], default_project: str) -> None:
        self._entries = tuple(entries)
        self._anonymous = Principal(default_project, ALL_SCOPES, "anonymous", all_projects=True)

    @classmethod
    def from_settings(cls, settings: Settings, environ: dict[str, str] | None = None) -> KeyRing:
        """Resolve `key`/`key_env` of every configured key; a missing or empty one is a ConfigError."""
        env = os.environ if environ is None else environ
        entries = []
        for i, api_key in enumerate(settings.api_keys):
            label = f"api_keys[{i}] (project {api_key.project!r})"
            if api_key.key_env:
                secret = env.get(api_key.key_env, "")
                if not secret.strip():
                    raise ConfigError(f"{label}: environment variable {api_key.key_env} is unset or empty")
            else:
                secret = api_key.key
            if not secret.strip():
                raise ConfigError(f"{label}: give the key via key_env (an environment variable name) or key")
            if not api_key.project:
                raise ConfigError(f"{label}: project must not be empty")
            principal = Principal(
                api_key.project, frozenset(api_key.scopes), label, all_projects="operator" in api_key.scopes
            )
            entries.append(_Entry(_digest(secret.strip()), principal))
        return cls(entries, settings.default_project)

    @property
    def enabled(self) -> bool:
        return bool(self._entries)

    def authenticate(self, presented: str | None) -> Principal:
        """The principal of `presented`; anonymous when no keys are configured."""
        if not self._entries:
            return self._anonymous
        if not presented:
            raise Unauthenticated(
                "missing API key: send 'Authorization: Bearer <key>', 'x-api-key: <key>' or Basic credentials "
                "with the key as password"
            )
        digest = _digest(presented.strip())
        found: Principal | None = None
        for entry in self._entries:  # no early exit: time does not depend on which key matched
            if hmac.compare_digest(entry.digest, digest):
                found = entry.principal
        if found is None:
            raise Unauthenticated("unknown API key")
        return found


def has_scope(principal: Principal, scope: str) -> bool:
    """Whether the key holds `scope` itself or a scope implying it (IMPLIED_SCOPES)."""
    return scope in principal.scopes or any(scope in IMPLIED_SCOPES.get(held, ()) for held in principal.scopes)


def authorize(principal: Principal, scope: str) -> Principal:
    """The principal when it holds `scope` (directly or implied), else Forbidden."""
    if not has_scope(principal, scope):
        raise Forbidden(f"this API key lacks the {scope!r} scope")
    return principal


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key from `Authorization: Bearer <key>` (scheme case-insensitive), or the password of
    `Authorization: Basic <base64 user:key>`, or else `x-api-key`.

    Why Basic: the Langfuse SDK can only send `public_key:secret_key` as HTTP Basic credentials,
    so its secret key slot carries a steplens ingest key; the user part (the public key) is ignored.
    """
    if authorization:
        scheme, _, value = authorization.strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer" and value.strip():
            return value.strip()
        if scheme == "basic" and value.strip():
            password = _basic_password(value.strip())
            if password:
                return password
    if x_api_key and x_api_key.strip():
        return x_api_key.strip()
    return None


def _basic_password(token: str) -> str | None:
    """The password of Basic credentials; None when they are not valid base64 `user:password`."""
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, sep, password = decoded.partition(":")
    return (password.strip() or None) if sep else None


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind_policy(settings: Settings) -> None:
    """Refuse to listen beyond loopback without keys: an open ingest port lets anyone write and read."""
    if not settings.api_keys and not is_loopback(settings.host):
        raise ConfigError(
            f"refusing to listen on {settings.host} without API keys: anyone who can reach it could write "
            "and read traces. Either bind to loopback (--host 127.0.0.1) or configure keys in steplens.toml, "
            'e.g. [[api_keys]] key_env = "STEPLENS_INGEST_KEY", project = "myproject", '
            'scopes = ["ingest", "read"]'
        )


# ---------------------------------------------------------------------------------------------
# HTTP integration
# ---------------------------------------------------------------------------------------------

ErrorRenderer = Callable[[StarletteRequest, IngestError], Response]


class RequireKeyMiddleware:
    """With keys configured, every path except /healthz needs a valid key (any scope).

    Routes then check their scope with `require_scope`; doing authentication here as well means a
    router added later cannot forget it. The principal is left in `request.state.principal`.
    """

    def __init__(self, app: ASGIApp, keyring: KeyRing, render_error: ErrorRenderer) -> None:
        self.app = app
        self.keyring = keyring
        self.render_error = render_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            principal = self.keyring.authenticate(presented_key(headers.get("authorization"), headers.get("x-api-key")))
        except Unauthenticated as exc:
            await self.render_error(StarletteRequest(scope, receive), exc)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def require_scope(scope: str) -> Callable[[Request], Awaitable[Principal]]:
    """FastAPI dependency: the caller's Principal if their key has `scope` (401/403 otherwise).

    Usage: `def runs(caller: Principal = Depends(require_scope("read"))): ... caller.projects`.
    Needs `app.state.keyring` (set by `create_app`).
    """
    if scope not in ALL_SCOPES:
        raise ValueError(f"unknown scope {scope!r}; one of {sorted(ALL_SCOPES)}")

    async def dependency(request: Request) -> Principal:
        principal = getattr(request.state, "principal", None)
        if principal is None:
            keyring: KeyRing = request.app.state.keyring
            principal = keyring.authenticate(
                presented_key(request.headers.get("authorization"), request.headers.get("x-api-key"))
            )
        return authorize(principal, scope)

    return dependency
