"""Values that came from a span, made inert before they reach Streamlit's Markdown.

Why: agent names, versions, tool names, stop reasons, error types, status messages, step actions
and approval fields are written by whoever can send spans. Streamlit renders labels, captions,
alerts, expander titles and page links as Markdown, so a span could put a link, a remote image (a
tracking pixel fetched by the reviewer's browser), colour directives or emphasis in front of a
person. Every such value goes through `inert` (or `code`) before it is placed in Markdown, so it
reads as the text it is and nothing else.
"""

from __future__ import annotations

import re
import string

# Every ASCII punctuation character may be backslash-escaped in CommonMark and then renders as
# itself. Escaping all of them covers emphasis, links, images, autolinks (`<...>`, and `://`/`www.`
# literals, which need their punctuation unescaped), HTML, tables, headings, lists, maths (`$`) and
# Streamlit's `:color[...]` / `:material/...:` directives.
_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_BREAKS = re.compile(r"[\r\n\t\f\v\u2028\u2029]+")
# GFM turns bare `scheme://...`, `www....` and `user@host` into links after escapes are resolved, so
# those are broken with an invisible WORD JOINER (U+2060): the text reads the same, nothing links.
_AUTOLINKS = re.compile(r"(?i)(?<=[a-z0-9])(?=://)|(?<=www)(?=\.)|(?=@)")
_JOINER = "\u2060"


def inert(value: object) -> str:
    """`value` as literal Markdown text on one line (None is the empty string)."""
    if value is None:
        return ""
    text = _AUTOLINKS.sub(_JOINER, _BREAKS.sub(" ", str(value)))
    return _PUNCTUATION.sub(r"\\\1", text)


def code(value: object) -> str:
    """`value` as an inline code span: nothing inside a code span is interpreted. The fence is longer
    than any run of backticks in the value, as CommonMark requires."""
    text = _BREAKS.sub(" ", "" if value is None else str(value))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if text.startswith("`") or text.endswith("`") or longest else f"{fence}{text}{fence}"
