"""The lesson book: what failed, carried across replans in a few lines instead of history.

The replan prompt never carries old replan transcripts (they grow without bound and drag the
model back to plans that already failed); this bounded book is the only memory that crosses
versions. Oldest lessons go first: recent failures are the ones the next plan must avoid.
"""

from __future__ import annotations

from collections import deque

from kernel.plan.signals import FailureSignal, cap

MAX_LESSONS = 5
LESSON_CAP = 160


class LessonBook:
    def __init__(self, max_lessons: int = MAX_LESSONS) -> None:
        if max_lessons < 1:
            raise ValueError("max_lessons must be >= 1")
        self._lessons: deque[str] = deque(maxlen=max_lessons)

    def add(self, lesson: str) -> None:
        text = cap(lesson, LESSON_CAP)
        if text and text not in self._lessons:
            self._lessons.append(text)

    def learn(self, signal: FailureSignal) -> None:
        self.add(f"{signal.tool} ({signal.action or signal.step_id}) failed: {signal.kind.value}: {signal.message}")

    def lessons(self) -> list[str]:
        return list(self._lessons)

    def __len__(self) -> int:
        return len(self._lessons)
