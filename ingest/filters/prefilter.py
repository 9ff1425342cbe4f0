"""A cheap necessary condition on an attribute term: a LIKE pattern over the raw attributes JSON text.

Why: the exact test of `attributes["k"] = "v"` parses every span's attributes JSON
(`json_extract_string`), about 1 s per week of spans at 10M spans when almost nothing matches. A LIKE
over the same JSON's text is several times cheaper, so the compiler tests it first and runs the exact
check only on the spans whose text could hold the key and value. The pattern never decides a match,
it only rules out spans that cannot match, so the filter's semantics are the exact check's.

Why the pattern is exact (a span it rules out never matches the exact check):
- A member of the attributes object is written `"<key>":<value>`, the key before its value, and the
  characters of the key and of a string value appear in order. Every JSON encoder the store writes
  with (pydantic-core, the stdlib fallback, DuckDB) writes printable ASCII other than `"`, `\\` and `/`
  as itself and non-ASCII unescaped; those three and control characters may be escaped (`\\"`, `\\/`,
  `\\n`), so they become `%` (any text) in the pattern, as does non-ASCII. LIKE's own `%` and `_` are
  escaped and stay literal.
- The exact check compares DuckDB's rendering of the value: a number re-rendered (`5e2` is read back
  as `500.0`), an object or list re-rendered without the writer's spacing. Digits, `.`, `e`, `E`, `+`
  and `-` of the compared value therefore also become `%`; structure (`{`, `:`, `,`, `]`) keeps its
  order in any rendering and whitespace outside strings is what a compact rendering drops.
So the pattern is the key's literal runs, then the value's, with `%` between runs.
"""

from __future__ import annotations

# Characters an encoder may escape: they say nothing about the stored text.
_ESCAPABLE = frozenset('"\\/')
# Characters DuckDB may change when it renders a number (or a list or object holding one) back as text.
_NUMBER = frozenset("0123456789.eE+-")
_LIKE_SPECIAL = frozenset("%_\\")


def _literal(ch: str, volatile: frozenset[str]) -> bool:
    """True when `ch` appears as itself in every stored text that holds it."""
    return " " <= ch <= "~" and ch not in _ESCAPABLE and ch not in volatile


def _runs(text: str, volatile: frozenset[str]) -> list[str]:
    """The maximal runs of literal characters of `text`, in order (not LIKE-escaped)."""
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if _literal(ch, volatile):
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def _escape(run: str) -> str:
    return "".join("\\" + ch if ch in _LIKE_SPECIAL else ch for ch in run)


def _all_runs(key: str, value: str | None) -> list[str]:
    return _runs(key, frozenset()) + (_runs(value, _NUMBER) if value is not None else [])


def raw_pattern(key: str, value: str | None = None) -> str | None:
    """A LIKE pattern (escape character `\\`) the attributes text of every span whose `key` is present,
    and whose value renders as text containing `value` when given, matches; None when the key has no
    literal character (nothing cheap to test)."""
    if not _runs(key, frozenset()):
        return None
    return "%" + "%".join(_escape(run) for run in _all_runs(key, value)) + "%"


def raw_needle(key: str, value: str | None = None) -> str | None:
    """A literal run of the pattern for DuckDB's `contains()`, which is cheaper than LIKE and so rules
    out most spans before the pattern is matched: the value's longest run (a key like
    `gen_ai.usage.input_tokens` is on most spans, a value rarely), else the key's. Case-sensitive: only
    ahead of LIKE, never of ILIKE."""
    key_runs = _runs(key, frozenset())
    if not key_runs:
        return None
    value_runs = _runs(value, _NUMBER) if value is not None else []
    return max(value_runs or key_runs, key=len)
