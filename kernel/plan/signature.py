"""Plan signatures with literal arguments normalised: how the oscillation guard sees "the same plan".

A replanner that keeps proposing the plan that just failed rarely repeats it verbatim: it changes a
number, a quoted name or an id and tries again. Comparing exact arguments misses that loop, so the
guard also compares a signature in which literals are placeholders: numbers become `<num>`, quoted
substrings `<str>`, id-like tokens (letters and digits mixed, uuids, long hex) `<id>`, and an argument
that is a single token (a name, a symbol, a key) becomes `<str>` as a whole. Multi-word text keeps its
words: a different question is a different plan. References to earlier results are already masked by
the caller (`#` plus their path) and are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

NUM, STR, ID = "<num>", "<str>", "<id>"

_MASKED_REF = re.compile(r"#(?:\.[A-Za-z0-9_-]+|\[\d+\])*")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HEX = re.compile(r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b")
_MIXED = re.compile(r"\b(?=[\w-]*[A-Za-z_])(?=[\w-]*\d)[\w-]+\b")
_NUMBER = re.compile(r"(?<![\w<])-?\d+(?:[.,]\d+)*(?![\w>])")


def _text(part: str) -> str:
    part = _QUOTED.sub(STR, part)
    part = _UUID.sub(ID, part)
    part = _HEX.sub(ID, part)
    part = _MIXED.sub(ID, part)
    return _NUMBER.sub(NUM, part)


def normalise_string(value: str) -> str:
    """One string argument with its literals replaced (masked references kept)."""
    if _MASKED_REF.fullmatch(value.strip()):
        return value.strip()
    pieces, last = [], 0
    for m in _MASKED_REF.finditer(value):
        pieces.append(_text(value[last:m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_text(value[last:]))
    out = " ".join("".join(pieces).split())
    if not _MASKED_REF.search(out) and len(out.split()) <= 1:
        return STR  # a single token is a literal value, whatever it spells
    return out


def normalise_literals(value: Any) -> Any:
    """`value` (nested dicts/lists) with every literal replaced by its placeholder; keys, booleans
    and null stay (they are the call's shape, not its data)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return NUM
    if isinstance(value, str):
        return normalise_string(value)
    if isinstance(value, dict):
        return {str(k): normalise_literals(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise_literals(v) for v in value]
    return STR
