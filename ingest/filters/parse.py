"""Parsing a filter expression with a real grammar (lark, LALR) into ingest/filters/ast.py nodes.

Why a grammar and not string splitting: the filter reaches SQL, so what a string means must be decided
by one unambiguous parser, and every refusal must point at the token that caused it (line, column and
a caret under the excerpt), which lark's errors carry.

    attributes["gen_ai.tool.name"] = "refund" and attributes["amount"] > 500
    not (status = "ERROR" or tool_name in ("a", "b")) and search("timeout")
"""

from __future__ import annotations

import json
import math

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ingest.filters import ast

# Bounds that keep any input cheap to parse and compile (a refusal names the one exceeded).
MAX_FILTER_CHARS = 4000
MAX_STRING_CHARS = 1000
MAX_DEPTH = 24  # nesting of and/or/not/parentheses
MAX_TERMS = 64  # comparisons, contains, exists, in, search
MAX_IN_VALUES = 100

GRAMMAR = r"""
?start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: NOT not_expr -> negate
         | atom
?atom: "(" or_expr ")"
     | field OP value          -> compare
     | field CONTAINS STRING   -> contains
     | field EXISTS            -> exists
     | field IN "(" value ("," value)* ")" -> is_in
     | SEARCH "(" STRING ")"   -> search
field: ATTRIBUTES "[" STRING "]" -> attribute
     | SPAN "." NAME           -> span_column
     | NAME                    -> column
value: STRING | NUMBER | TRUE | FALSE

_OR.2: /or\b/i
_AND.2: /and\b/i
NOT.2: /not\b/i
CONTAINS.2: /contains\b/i
EXISTS.2: /exists\b/i
IN.2: /in\b/i
TRUE.2: /true\b/i
FALSE.2: /false\b/i
SEARCH.2: /search(?=\s*\()/i
ATTRIBUTES.2: /attributes(?=\s*\[)/i
SPAN.2: /span(?=\.)/i
OP: "!=" | ">=" | "<=" | "=" | ">" | "<"
NAME: /(?!(?:and|or|not|in|contains|exists|true|false)\b)[A-Za-z_][A-Za-z0-9_]*/i
STRING: /"(?:[^"\\\n]|\\.)*"/ | /'(?:[^'\\\n]|\\.)*'/
NUMBER: /-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/

%import common.WS
%ignore WS
"""

_PARSER = Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=False)

# What a token type means to a person reading an error.
_TOKEN_WORDS = {
    "STRING": 'a quoted string ("...")', "NUMBER": "a number", "NAME": "a column name",
    "OP": "a comparison (= != > >= < <=)", "LPAR": '"("', "RPAR": '")"', "COMMA": '","',
    "LSQB": '"["', "RSQB": '"]"', "DOT": '"."', "_AND": '"and"', "_OR": '"or"', "NOT": '"not"',
    "CONTAINS": '"contains"', "EXISTS": '"exists"', "IN": '"in"', "TRUE": "true", "FALSE": "false",
    "SEARCH": 'search("...")', "ATTRIBUTES": 'attributes["key"]', "SPAN": "span.<column>", "$END": "the end",
}  # fmt: skip


class FilterError(ValueError):
    """A filter the API refuses (400): the message names the problem and where it is."""

    def __init__(self, message: str, text: str, line: int, column: int) -> None:
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt(text, line, column)
        super().__init__(f"filter: {message} at line {line}, column {column}\n{self.excerpt}")


def excerpt(text: str, line: int, column: int, width: int = 60) -> str:
    """The offending line (cut to about `width` characters around the column) with a caret under it."""
    lines = text.splitlines() or [""]
    row = lines[min(max(line, 1), len(lines)) - 1]
    start = max(0, column - 1 - width // 2)
    piece = row[start : start + width]
    prefix = "…" if start > 0 else ""
    return f"{prefix}{piece}\n{' ' * (len(prefix) + column - 1 - start)}^"


def _pos(token: Token) -> ast.Pos:
    return ast.Pos(token.line or 1, token.column or 1, token.start_pos or 0)


def _string(token: Token) -> str:
    """A quoted literal's text: JSON string escapes (\\" \\\\ \\n \\u00e9), single or double quotes."""
    raw = str(token)
    body = raw[1:-1]
    if raw[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    try:
        value = json.loads(f'"{body}"')
    except json.JSONDecodeError as exc:
        raise _TokenError("bad escape in string", token) from exc
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _TokenError("string holds a lone surrogate escape: not Unicode text", token) from None
    if len(value) > MAX_STRING_CHARS:
        raise _TokenError(f"string longer than {MAX_STRING_CHARS} characters", token)
    return value


class _TokenError(Exception):
    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


@v_args(inline=True)
class _ToAst(Transformer):
    def attribute(self, kw: Token, key: Token) -> ast.Attribute:
        text = _string(key)
        if not text:
            raise _TokenError("attribute key is empty", key)
        return ast.Attribute(text, _pos(kw))

    def span_column(self, kw: Token, name: Token) -> ast.Column:
        return ast.Column(str(name).lower(), _pos(kw), span=True)

    def column(self, name: Token) -> ast.Column:
        return ast.Column(str(name).lower(), _pos(name))

    def value(self, token: Token) -> ast.Literal:
        if token.type == "STRING":
            return ast.Literal(_string(token), _pos(token))
        if token.type == "TRUE":
            return ast.Literal(True, _pos(token))
        if token.type == "FALSE":
            return ast.Literal(False, _pos(token))
        if len(token) > 40:
            raise _TokenError("number has more than 40 characters", token)
        number = float(token)
        if not math.isfinite(number) or abs(number) > 1e300:
            raise _TokenError("number out of range", token)
        return ast.Literal(number, _pos(token))

    def compare(self, field: ast.Field, op: Token, value: ast.Literal) -> ast.Compare:
        return ast.Compare(field, str(op), value)

    def contains(self, field: ast.Field, kw: Token, text: Token) -> ast.Contains:
        return ast.Contains(field, ast.Literal(_string(text), _pos(text)))

    def exists(self, field: ast.Field, kw: Token) -> ast.Exists:
        return ast.Exists(field)

    def is_in(self, field: ast.Field, kw: Token, *values: ast.Literal) -> ast.In:
        if len(values) > MAX_IN_VALUES:
            raise _TokenError(f"more than {MAX_IN_VALUES} values in `in (...)`", kw)
        return ast.In(field, tuple(values))

    def search(self, kw: Token, text: Token) -> ast.Search:
        value = _string(text)
        if not value.strip():
            raise _TokenError("search text is empty", text)
        return ast.Search(value, _pos(kw))

    def negate(self, kw: Token, item: ast.Node) -> ast.Not:
        return ast.Not(item)

    def and_expr(self, *items: ast.Node) -> ast.And:
        return ast.And(tuple(items))

    def or_expr(self, *items: ast.Node) -> ast.Or:
        return ast.Or(tuple(items))


def _expected(exc: UnexpectedInput) -> str:
    names = sorted({_TOKEN_WORDS.get(t, t.lower()) for t in getattr(exc, "expected", None) or ()})
    return f"; expected {', '.join(names[:8])}" if names else ""


def _check_shape(root: ast.Node, text: str) -> None:
    """Depth and size bounds, checked without recursion (a hostile filter may nest deeply)."""
    stack: list[tuple[ast.Node, int]] = [(root, 1)]
    terms = 0
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FilterError(f"nested deeper than {MAX_DEPTH} levels", text, 1, 1)
        if isinstance(node, ast.And | ast.Or):
            stack.extend((item, depth + 1) for item in node.items)
        elif isinstance(node, ast.Not):
            stack.append((node.item, depth + 1))
        else:
            terms += 1
            if terms > MAX_TERMS:
                raise FilterError(f"more than {MAX_TERMS} conditions", text, 1, 1)


def parse_filter(text: str) -> ast.Node:
    """The AST of `text`; raises FilterError (with line, column and a caret excerpt) when it is not one."""
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"filter longer than {MAX_FILTER_CHARS} characters", text, 1, MAX_FILTER_CHARS + 1)
    if not text.strip():
        raise FilterError("filter is empty", text, 1, 1)
    depth = best = 0
    for ch in text:  # parentheses counted before parsing: lark's tree building recurses per level
        depth += (ch == "(") - (ch == ")")
        best = max(best, depth)
    if best > MAX_DEPTH:
        raise FilterError(f"nested deeper than {MAX_DEPTH} levels", text, 1, text.index("(") + 1)
    try:
        tree = _PARSER.parse(text)
        node = _ToAst().transform(tree)
    except UnexpectedCharacters as exc:
        char = text[exc.pos_in_stream]
        what = "unterminated string" if char in "\"'" else f"unexpected character {char!r}"
        raise FilterError(f"{what}{_expected(exc)}", text, exc.line, exc.column) from None
    except UnexpectedEOF as exc:
        lines = text.splitlines() or [""]
        raise FilterError(f"filter ends too early{_expected(exc)}", text, len(lines), len(lines[-1]) + 1) from None
    except UnexpectedToken as exc:
        token = exc.token
        if token.type == "$END":
            lines = text.splitlines() or [""]
            raise FilterError(f"filter ends too early{_expected(exc)}", text, len(lines), len(lines[-1]) + 1) from None
        raise FilterError(f"unexpected {str(token)!r}{_expected(exc)}", text, exc.line, exc.column) from None
    except VisitError as exc:
        inner = exc.orig_exc
        if isinstance(inner, _TokenError):
            raise FilterError(inner.message, text, inner.token.line or 1, inner.token.column or 1) from None
        if isinstance(inner, RecursionError):
            raise FilterError(f"nested deeper than {MAX_DEPTH} levels", text, 1, 1) from None
        raise
    except RecursionError:  # a long chain of `not`: the tree is built recursively
        raise FilterError(f"nested deeper than {MAX_DEPTH} levels", text, 1, 1) from None
    _check_shape(node, text)
    return node
