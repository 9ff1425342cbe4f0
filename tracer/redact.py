"""Default redaction of secrets and personal data in captured content.

Content attributes end up in a database that more people can read than the agent's own logs, so
every captured string passes through a redactor before it touches a span. The defaults catch the
leaks we see most often in agent transcripts (provider API keys, cloud keys, bearer tokens,
`api_key=...` pairs, e-mail addresses, card numbers); a user hook can add more.

A redactor is any `Callable[[str], str]`. `build_redactor` chains the defaults with the user's
hook and fails *closed*: if the hook raises, the content is replaced by a marker rather than
exported unredacted.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

Redactor = Callable[[str], str]

_log = logging.getLogger(__name__)

REDACTION_FAILED = "[steplens: content withheld, redaction failed]"


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# Key names whose value is a secret whatever it looks like (used for `k=v` text and JSON keys).
SECRET_KEY_NAMES = re.compile(
    r"(?i)^(?:[a-z0-9_.-]*[_.-])?(?:api[_-]?key|apikey|secret|secret[_-]?key|client[_-]?secret|"
    r"access[_-]?token|refresh[_-]?token|auth[_-]?token|token|password|passwd|pwd|authorization|"
    r"private[_-]?key)$"
)

# (pattern, replacement, hints): the regex runs only if one hint occurs in the text (hints in
# lower case are searched in the lower-cased text). Substring tests are far cheaper than a regex
# scan, and clean text is the common case.
_Repl = str | Callable[[re.Match[str]], str]
_PATTERNS: tuple[tuple[re.Pattern[str], _Repl, tuple[str, ...], bool], ...] = (
    # `Authorization: Bearer xyz`, `bearer xyz`
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "Bearer " + _marker("token"), ("bearer",), True),
    # OpenAI / Anthropic style keys: sk-..., sk-proj-..., sk-ant-...
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), _marker("api_key"), ("sk-",), False),
    # AWS access key ids
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _marker("aws_key"), ("AKIA", "ASIA"), False),
    # GitHub, Google, Slack tokens
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), _marker("github_token"), ("gh",), False),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), _marker("google_key"), ("AIza",), False),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), _marker("slack_token"), ("xox",), False),
    # Generic `api_key=...`, `password: "..."`, `"token": "..."` (keeps the key, hides the value)
    (
        re.compile(
            r"(?i)(\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?token|"
            r"auth[_-]?token|token|password|passwd|pwd)\b[\"']?\s*[:=]\s*[\"']?)([^\s\"'&,;}]+)"
        ),
        lambda m: m.group(1) + _marker("secret"),
        ("key", "secret", "token", "passw", "pwd"),
        True,
    ),
    # E-mail addresses
    (
        re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
        _marker("email"),
        ("@",),
        False,
    ),
)

# 13 to 19 digits, optionally separated by single spaces or dashes.
_CARD = re.compile(r"(?<![0-9-])[0-9](?:[ -]?[0-9]){12,18}(?![0-9-])")
_NO_DIGITS = str.maketrans("", "", "0123456789")


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum: filters out order numbers and timestamps that merely look like cards."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_sub(m: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", m.group(0))
    if 13 <= len(digits) <= 19 and luhn_valid(digits):
        return _marker("card")
    return m.group(0)


def default_redact(text: str) -> str:
    """Apply the default patterns. Cheap on clean text: each pattern is one C-level scan."""
    lower: str | None = None
    for pattern, repl, hints, folded in _PATTERNS:
        if folded:
            if lower is None:
                lower = text.lower()
            haystack = lower
        else:
            haystack = text
        if any(h in haystack for h in hints):
            text = pattern.sub(repl, text)
            lower = None
    if len(text) - len(text.translate(_NO_DIGITS)) < 13:  # a card needs 13+ digits: skip the scan
        return text
    return _CARD.sub(_card_sub, text)


def build_redactor(hook: Redactor | None = None, *, defaults: bool = True) -> Redactor:
    """Chain the default patterns (unless `defaults=False`) with the user's hook.

    The result never raises and never returns the unredacted input after a hook failure.
    """

    def redact(text: str) -> str:
        try:
            if defaults:
                text = default_redact(text)
            if hook is not None:
                out = hook(text)
                if not isinstance(out, str):
                    raise TypeError(f"redaction hook returned {type(out).__name__}, not str")
                text = out
            return text
        except Exception as exc:  # noqa: BLE001 - a broken hook must not leak content or crash
            _log.warning("steplens redaction hook failed (%s); content withheld", type(exc).__name__)
            return REDACTION_FAILED

    return redact
