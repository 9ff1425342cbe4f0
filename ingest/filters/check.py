"""The one entry point the API uses: parse and type-check a filter before any query runs.

Why check before the read: compiling for real happens on the read cursor (search terms register their
hits there), and an error raised inside the read would look like a failed query; checked here, every
refusal is a 400 with its position before anything touches the store.
"""

from __future__ import annotations

from typing import Literal

from ingest.filters import ast
from ingest.filters.compile import run_predicate, span_predicate
from ingest.filters.parse import FilterError, parse_filter

Target = Literal["runs", "spans"]


def checked_filter(text: str, target: Target) -> ast.Node:
    """The filter's AST, refused (FilterError) when it does not parse or names what `target` lacks."""
    node = parse_filter(text)
    if target == "runs":
        run_predicate(node, text, resolve=lambda _text: None)
    else:
        span_predicate(node, text, resolve=lambda _text: None)
    return node


def has_search(node: ast.Node) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Search):
            return True
        if isinstance(n, ast.And | ast.Or):
            stack.extend(n.items)
        elif isinstance(n, ast.Not):
            stack.append(n.item)
    return False


__all__ = ["FilterError", "Target", "checked_filter", "has_search"]
