"""Big observations: a tool result over a size limit is saved aside and the model pages through it.

Why not only truncate: head+tail truncation (kernel/truncation.py) throws the middle away, and a
model that needs row 4,000 of a 10,000-row export can then only call the tool again and get cut
again. Saved aside, the full result stays with the run: the model gets the head, a marker saying
how much was cut and how to read more, and a `read_observation` tool (added to the run's tools the
first time something is saved aside, so runs that never need it never see it) returns any range.

The store lives and dies with its run (results can be large and private; nothing is written to
disk), and it is bounded: past `max_saved_chars` in total, the oldest saved result is forgotten and
reading it says so.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from kernel.tools import Tool, tool

READ_TOOL_NAME = "read_observation"


@dataclass(frozen=True)
class BigObservations:
    """Settings of `Agent(big_observations=...)`.

    limit_chars: a result longer than this is saved aside.
    head_chars: how much of it the model sees at once (the head).
    page_chars: the most one `read_observation` call returns.
    max_saved_chars: the most one run keeps saved aside (oldest results are forgotten first).
    """

    limit_chars: int = 8000
    head_chars: int = 2000
    page_chars: int = 4000
    max_saved_chars: int = 20_000_000

    def __post_init__(self) -> None:
        if not 0 < self.head_chars <= self.limit_chars:
            raise ValueError("head_chars must be in (0, limit_chars]")
        if not 0 < self.page_chars <= self.limit_chars:
            raise ValueError("page_chars must be in (0, limit_chars]: a page must never be saved aside itself")
        if self.max_saved_chars < self.limit_chars:
            raise ValueError("max_saved_chars must be >= limit_chars")


@dataclass(frozen=True)
class SavedAside:
    """A result saved aside: what the model sees instead, and what the tool span records."""

    ref: str
    size_chars: int
    shown: str


def marker(ref: str, shown: int, size: int, page: int) -> str:
    """What follows the head: how much was cut and the exact call that reads on."""
    return (
        f"\n[... output cut: showing characters 0-{shown} of {size}; {size - shown} more saved aside as "
        f"{ref!r}. To read on, call {READ_TOOL_NAME} with ref={ref!r}, offset={shown} "
        f"(at most {page} characters per call) ...]"
    )


class ObservationStore:
    """The results one run saved aside, by reference."""

    def __init__(self, settings: BigObservations) -> None:
        self.settings = settings
        self._saved: OrderedDict[str, str] = OrderedDict()
        self._total = 0
        self._count = 0

    def maybe_save(self, text: str) -> SavedAside | None:
        """Save `text` aside when it is over the limit; None when it fits as it is."""
        s = self.settings
        if len(text) <= s.limit_chars:
            return None
        self._count += 1
        ref = f"obs-{self._count}"
        self._saved[ref] = text
        self._total += len(text)
        while self._total > s.max_saved_chars and len(self._saved) > 1:
            _, old = self._saved.popitem(last=False)
            self._total -= len(old)
        head = text[: s.head_chars]
        return SavedAside(ref=ref, size_chars=len(text), shown=head + marker(ref, len(head), len(text), s.page_chars))

    def read(self, ref: str, offset: int, length: int | None) -> str:
        """Characters [offset, offset+length) of a saved result, with where they sit in the whole."""
        text = self._saved.get(ref)
        if text is None:
            known = ", ".join(self._saved) or "none"
            raise KeyError(f"no saved output {ref!r} in this run (saved: {known})")
        page = self.settings.page_chars if length is None else max(1, min(int(length), self.settings.page_chars))
        start = max(0, int(offset))
        end = min(len(text), start + page)
        tail = f"; next offset={end}" if end < len(text) else "; this is the end"
        return f"[{ref}: characters {start}-{end} of {len(text)}{tail}]\n{text[start:end]}"

    def read_tool(self) -> Tool:
        """The `read_observation` tool bound to this run's store."""

        @tool(name=READ_TOOL_NAME)
        async def read_observation(ref: str, offset: int = 0, length: int | None = None) -> str:
            """Read more of a tool output that was too long to show at once: `ref` is the name in
            the cut marker, `offset` the first character to read, `length` how many (capped)."""
            return self.read(ref, offset, length)

        return read_observation
