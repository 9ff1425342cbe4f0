"""Error message templates: the variable parts of an error message masked, so failures group.

Why masking instead of an LLM or fuzzy matching: the same failure ("timeout after 30 s calling
https://api/x/123") must land in the same cluster every time, cheaply, on the writer thread, at
load time. Numbers, ids, hex, uuids, paths, URLs, quoted values, emails and timestamps are the
parts that differ between occurrences of one failure; what remains is the failure's shape.

The normalizer (ingest/normalize/derived.py) computes `spans.error_template` for error spans only,
in the normalize worker processes, so the single DuckDB writer never runs Python per span.
"""

from __future__ import annotations

import functools
import re

MAX_TEMPLATE_CHARS = 240
MAX_MESSAGE_CHARS = 4096  # of a message, masked; the rest never changes its group
TEMPLATE_CACHE_SIZE = 512  # distinct messages remembered per process (each at most MAX_MESSAGE_CHARS)

# Applied in order: quoted values and whole tokens (emails, URLs, uuids, times, paths) first, so
# the digits inside them are not masked piecemeal by the later number rule.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![\w'])'[^'\n]{0,500}'(?!\w)"), "'<str>'"),
    (re.compile(r'"[^"\n]{0,500}"'), '"<str>"'),
    (re.compile(r"`[^`\n]{0,500}`"), "`<str>`"),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), "<email>"),
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+"), "<url>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<id>"),
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"),
        "<time>",
    ),
    (re.compile(r"(?<![\w/.~])(?:~|\.{1,2})?/[^\s'\"<>,;)\]]+"), "<path>"),
    (re.compile(r"\b[A-Za-z]:\\[^\s'\"<>,;)\]]*"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<id>"),
    # Hex runs of 12+ (trace/span ids, digests) and word tokens mixing letters with 3+ digits
    # (call_8f3a21c, req-20931, chatcmpl-AbC1234) are ids; model names like gpt-4o are not.
    (re.compile(r"\b[0-9a-fA-F]{12,}\b"), "<id>"),
    (re.compile(r"\b(?=[\w-]*[A-Za-z])(?=(?:[\w-]*\d){3})[\w-]{6,}\b"), "<id>"),
    # Numbers, with a unit glued on kept (5s, 300ms, 2GB); not inside words (gpt-4o, utf-8).
    (
        re.compile(r"(?<![\w.-])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?=(?:ms|us|ns|s|m|h|d|[kKmMgGtT]i?[bB]|%)?\b)"),
        "<num>",
    ),
    (re.compile(r"\s+"), " "),
)


def message_template(message: str | None) -> str | None:
    """`message` with its variable parts masked (`<num>`, `<id>`, `<path>`, `'<str>'`, ...).

    None for no message; an empty result becomes None too, so "no message" is one group.
    """
    if message is None:
        return None
    return _masked(str(message)[:MAX_MESSAGE_CHARS])


@functools.lru_cache(maxsize=TEMPLATE_CACHE_SIZE)
def _masked(text: str) -> str | None:
    """The template of at most MAX_MESSAGE_CHARS of text. Cached: one failure repeats its message
    over many spans (a tool timing out, a provider returning 500), and the fourteen passes above
    cost ~15 us per message; the cache holds at most TEMPLATE_CACHE_SIZE texts of bounded size."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    text = text.strip()
    if len(text) > MAX_TEMPLATE_CHARS:
        text = text[: MAX_TEMPLATE_CHARS - 1] + "…"
    return text or None


def safe_template(message: str | None) -> str | None:
    """`message_template` that never raises: a weird message must not fail its span's whole batch."""
    try:
        return message_template(message)
    except Exception:  # noqa: BLE001 - keep the span; the marker says the message could not be masked
        return "<unparsable message>"
