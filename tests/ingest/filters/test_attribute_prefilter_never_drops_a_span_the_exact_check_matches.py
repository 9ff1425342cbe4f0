"""The raw-text pre-filter ahead of an attribute's JSON test (ingest/filters/prefilter.py) may only rule
out spans the exact test rejects. Checked on real DuckDB over attributes texts written the ways a JSON
encoder may write them (the store's compact encoder; the stdlib's default spacing and `\\uXXXX` escapes;
`\\/` for `/`; numbers in exponent form, which DuckDB renders back differently): every filter selects
the same rows with and without the pre-filter, and the pre-filter's pattern itself still tells LIKE's
`%` and `_`, quotes and look-alike values apart."""

from __future__ import annotations

import json
from collections.abc import Callable

import duckdb
import pytest

from ingest.filters.compile import span_predicate
from ingest.filters.parse import parse_filter
from ingest.filters.prefilter import raw_pattern
from ingest.normalize.values import to_json

KEY = "x.note.text"  # dotted: one flat key
OTHER = "x/odd~key"  # a key with the JSON pointer's own separators
VALUES: list[object] = [
    "50%_off", "50x-off", "a\\b/c", 'q"uote', "naïve π/2", "café", "500", 500, 500.0, 1e-7, True, "true",
    ["a b", "c/d"], "", "Tab\there", "line\nbreak", "x.note.text", "e+5",
]  # fmt: skip


def _ascii_spaced(attrs: dict) -> str:
    return json.dumps(attrs)  # ", " and ": " separators, non-ASCII as \uXXXX


def _slash_escaped(attrs: dict) -> str:
    return to_json(attrs).replace("/", "\\/")


def _exponent(attrs: dict) -> str:
    """Numbers written as 5e2-style text (valid JSON that DuckDB reads back as 500.0)."""
    def num(v: object) -> str:
        return f"{float(v):e}" if isinstance(v, int | float) and not isinstance(v, bool) else json.dumps(v)
    return "{" + ",".join(f"{json.dumps(k)}:{num(v)}" for k, v in attrs.items()) + "}"


ENCODERS: list[Callable[[dict], str]] = [to_json, _ascii_spaced, _slash_escaped, _exponent]


@pytest.fixture(scope="module")
def db():
    conn = duckdb.connect()
    conn.execute("CREATE TABLE spans (i INTEGER, attributes JSON, tool_name VARCHAR, agent_name VARCHAR)")
    rows, i = [], 0
    for value in VALUES:
        for key in (KEY, OTHER):
            for encode in ENCODERS:
                rows.append((i, encode({"before": 1, key: value, "after": "z"})))
                i += 1
    rows.append((i, to_json({"nested": {KEY: "500"}})))  # the key inside another value is not the key
    conn.executemany("INSERT INTO spans VALUES (?, ?, NULL, NULL)", rows)
    yield conn
    conn.close()


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _expressions() -> list[str]:
    out = []
    for key in (KEY, OTHER):
        a = f"attributes[{_q(key)}]"
        out += [f"{a} exists", f'{a} != "500"', f"{a} > 100", f"{a} = true", f'{a} in ("500", "café", "e+5")']
        for v in VALUES:
            text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
            out += [f"{a} = {_q(text)}", f"{a} contains {_q(text[1:4])}", f"{a} contains {_q(text.upper())}"]
        out += [f"{a} = {_q('500.0')}", f"{a} = {_q('1e-07')}", f"{a} contains {_q('0.0')}"]
    return out


def _rows(conn: duckdb.DuckDBPyConnection, expression: str, prefilter: bool) -> set[int]:
    pred = span_predicate(parse_filter(expression), expression, "s", None, prefilter)
    return {r[0] for r in conn.execute(f"SELECT i FROM spans s WHERE {pred.sql}", pred.params).fetchall()}


@pytest.mark.parametrize("expression", _expressions())
def test_prefilter_selects_what_the_exact_check_selects(db, expression):
    with_pre = span_predicate(parse_filter(expression), expression, "s", None, True)
    assert "LIKE" in with_pre.sql  # the pre-filter is there: this case tests it
    assert _rows(db, expression, True) == _rows(db, expression, False)


def test_the_cases_are_not_vacuous(db):
    """Most expressions above select something, so agreement is not two empty sets."""
    selected = [e for e in _expressions() if _rows(db, e, False)]
    assert len(selected) >= 0.7 * len(_expressions())


@pytest.mark.parametrize(
    ("value", "stored", "matches"),
    [
        ("a_b", "a_b", True), ("a_b", "axb", False), ("50%", "50%", True), ("x%y", "xzzy", False),
        ("re\\fund", "re\\\\fund", True), ("refund", "refunX", False), ('q"uote', 'q\\"uote', True),
        ("refund", "REFUND", False),
    ],
)  # fmt: skip
def test_pattern_keeps_like_specials_literal(value, stored, matches):
    text = '{"k.a":"' + stored + '"}'
    pattern = raw_pattern("k.a", value)
    assert pattern is not None
    got = duckdb.execute("SELECT ? LIKE ? ESCAPE '\\'", [text, pattern]).fetchone()[0]
    assert got is matches


def test_key_without_a_literal_character_has_no_pattern():
    assert raw_pattern("é/ü") is None
    assert raw_pattern("k", "ü") == "%k%"
