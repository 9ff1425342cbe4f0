"""Token estimates without a tokenizer.

Budgets and truncation need a token count for every model, offline and instantly; an exact
tokenizer exists only for some providers and would be a heavy dependency. The estimate:

- CJK characters (Han ideographs, Hiragana, Katakana, Hangul, CJK punctuation and full-width
  forms) count one token each: BPE vocabularies rarely merge them, so one per character is close
  and errs on the safe side.
- All other text counts one token per 4 characters (rounded up), the usual rule of thumb for
  English and code.

So `estimate_tokens("hello world")` is 3 and `estimate_tokens("你好世界")` is 4. The estimate is
additive up to rounding: the estimate of a concatenation is never more than the sum of the
estimates of its parts, which truncation relies on to stay within its budget.
"""

from __future__ import annotations

import json
import math
import re

from kernel.types import Message

CHARS_PER_TOKEN = 4
# Per-message framing (role, separators) in chat formats, and the priming of the reply: the
# figures OpenAI documents for its chat models, used here for every provider.
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3

_CJK_RE = re.compile(
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u2ff0-\u303f"  # ideographic description, CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f\u3130-\u318f\u3190-\u31ff"  # Bopomofo, Hangul compatibility Jamo, Kanbun...
    "\u3200-\u4dbf"  # enclosed CJK, compatibility, CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul Jamo extended, syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # half-width and full-width forms
    "\U00020000-\U0003134f"  # CJK extensions B-H
    "]"
)


def is_cjk(char: str) -> bool:
    return bool(_CJK_RE.match(char))


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text` (see the module docstring). None and non-strings are treated
    as their string form, None as empty."""
    if not text:
        return 0
    if not isinstance(text, str):
        text = str(text)
    cjk = len(_CJK_RE.findall(text))
    return cjk + math.ceil((len(text) - cjk) / CHARS_PER_TOKEN)


def estimate_messages_tokens(messages: list[Message]) -> int:
    """Estimated prompt tokens of a chat: content, tool calls and names of every message plus a
    fixed framing overhead per message and for the reply."""
    total = REPLY_PRIMING_TOKENS if messages else 0
    for m in messages:
        total += MESSAGE_OVERHEAD_TOKENS + estimate_tokens(m.content or "")
        if m.name:
            total += estimate_tokens(m.name)
        if m.tool_call_id:
            total += estimate_tokens(m.tool_call_id)
        for call in m.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False, default=str)
            total += estimate_tokens(call.name) + estimate_tokens(args) + estimate_tokens(call.id)
    return total
