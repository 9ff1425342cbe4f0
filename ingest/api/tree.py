"""Orders a trace's spans as a tree: parents before children, siblings by start time.

The list stays flat (easy to page through and to render as a waterfall) and each span carries its
`depth` and `children` ids. Spans whose parent never arrived are shown as extra roots rather than
hidden, and a parent cycle in hostile input cannot loop: every span is emitted exactly once.
Iterative, because 10,000-span traces can be 10,000 levels deep.
"""

from __future__ import annotations

from typing import Any


def _start_key(row: dict[str, Any]) -> tuple:
    return (row["start_time"], row["span_id"])


def order_as_tree(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return new dicts in depth-first order, each with `depth` and `children` set."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_id.setdefault(row["span_id"], row)  # a duplicated span id is shown once
    children: dict[str, list[dict[str, Any]]] = {}
    roots: list[dict[str, Any]] = []
    for row in by_id.values():
        parent = row.get("parent_span_id")
        if parent and parent in by_id and parent != row["span_id"]:
            children.setdefault(parent, []).append(row)
        else:
            roots.append(row)
    for kids in children.values():
        kids.sort(key=_start_key)

    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def walk(start: list[dict[str, Any]]) -> None:
        stack = [(row, 0) for row in reversed(sorted(start, key=_start_key))]
        while stack:
            row, depth = stack.pop()
            sid = row["span_id"]
            if sid in seen:
                continue
            seen.add(sid)
            kids = children.get(sid, [])
            out.append({**row, "depth": depth, "children": [k["span_id"] for k in kids]})
            stack.extend((k, depth + 1) for k in reversed(kids))

    walk(roots)
    if len(seen) < len(by_id):  # spans on a parent cycle: unreachable from any root
        walk([r for r in by_id.values() if r["span_id"] not in seen])
    return out
