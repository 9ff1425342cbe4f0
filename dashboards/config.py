"""Settings of the dashboards process, read from `STEPLENS_*` environment variables.

Why separate from ingest's Settings: the UI is a different process, usually with a different
(read-scoped) key, and must not need the server's database path or its key list to start.
`steplens ui` passes `--api` down as `STEPLENS_API_URL`, so the same variables configure a UI
started by hand with `streamlit run`.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_API = "http://127.0.0.1:4318"


class UISettings(BaseSettings):
    """What the dashboards need: where the query API is, the key to call it with, the login."""

    model_config = SettingsConfigDict(env_prefix="STEPLENS_", extra="ignore")

    api_url: str = Field(DEFAULT_API, description="Base URL of the query API (the ingest server).")
    api_key: SecretStr | None = Field(None, description="Read-scoped API key sent as `Authorization: Bearer`.")
    ui_password: SecretStr | None = Field(
        None, description="Password the dashboards ask for when they listen beyond localhost (unless OIDC is set)."
    )
    api_timeout_s: float = Field(30.0, description="Time limit of one query API request made by the dashboards.")
    cache_ttl_s: float = Field(15.0, description="How long the dashboards reuse a query API answer.")


def load_ui_settings() -> UISettings:
    """Fresh settings from the environment (cheap; read on every script run so tests can vary it)."""
    return UISettings()
