"""Who may look at the dashboards.

On localhost the person at the keyboard already owns the data, so no login. Beyond localhost a
login is required, and the app refuses to show anything when none is configured (failing open
would publish every trace of the project): Streamlit's OIDC login when `[auth]` is set in
`.streamlit/secrets.toml`, otherwise the password from `STEPLENS_UI_PASSWORD`.

The query API key never reaches the browser: the app calls the API from the server side.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

import streamlit as st

from dashboards.config import UISettings

log = logging.getLogger(__name__)

_SESSION_FLAG = "steplens_authenticated"


def is_loopback(address: str | None) -> bool:
    """True for 127.x, ::1 and localhost. An unset address means every interface: not loopback."""
    if not address:
        return False
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def oidc_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all, or an unreadable one: treat as "not configured"
        return False


def password_ok(given: str, settings: UISettings) -> bool:
    """Constant-time comparison, so response time does not reveal how much of a guess was right."""
    if settings.ui_password is None:
        return False
    return hmac.compare_digest(given.encode(), settings.ui_password.get_secret_value().encode())


def require_login(settings: UISettings) -> None:
    """Return when the viewer may see the dashboards; otherwise draw the login and stop the run."""
    address = st.get_option("server.address")
    if is_loopback(address):
        return
    if oidc_configured():
        if not st.user.is_logged_in:
            st.title("steplens")
            st.write("Log in to see the dashboards.")
            st.button("Log in", on_click=st.login, icon=":material/login:")
            st.stop()
        with st.sidebar:
            st.caption(f"signed in as {st.user.get('email') or st.user.get('name') or 'user'}")
            st.button("Log out", on_click=st.logout)
        return
    if settings.ui_password is None:
        st.error(
            f"The dashboards listen on {address or 'every interface'}, beyond localhost, and no login is "
            "configured. Set STEPLENS_UI_PASSWORD, or configure OIDC under [auth] in .streamlit/secrets.toml, "
            "or listen on 127.0.0.1 only."
        )
        st.stop()
    if st.session_state.get(_SESSION_FLAG):
        return
    st.title("steplens")
    with st.form("login"):
        given = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Log in")
    if submitted:
        if password_ok(given, settings):
            st.session_state[_SESSION_FLAG] = True
            st.rerun()
        log.warning("dashboard login failed")
        st.error("Wrong password.")
    st.stop()
