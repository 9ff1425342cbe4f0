"""Models drift from the requested format; each dialect must be understood, and the status must
say whether it was canonical (ok), needed repair (repaired) or could not be read (unparsable)."""

from __future__ import annotations

import pytest

from kernel.parsing import EXPECTED_FORMAT, make_call_id, parse_text
from tracer.conventions import ParseStatus

OK, REPAIRED, UNPARSABLE = ParseStatus.OK, ParseStatus.REPAIRED, ParseStatus.UNPARSABLE
Q = {"query": "x"}


@pytest.mark.parametrize(
    ("text", "status", "name", "args"),
    [
        # canonical forms
        ('Thought: look it up\nAction: search\nAction Input: {"query": "x"}', OK, "search", Q),
        ('{"thought": "t", "action": "search", "args": {"query": "x"}}', OK, "search", Q),
        ('I will search.\n```json\n{"action": "search", "args": {"query": "x"}}\n```', OK, "search", Q),
        ("Action: search\nAction Input: {}", OK, "search", {}),
        # braces inside strings, nested objects
        (
            '{"action": "run", "args": {"code": "if x: {y}", "opts": {"a": {"b": 1}}}}',
            OK,
            "run",
            {"code": "if x: {y}", "opts": {"a": {"b": 1}}},
        ),
        (
            '{"action": "say", "args": {"text": "a \\"quoted\\" } brace"}}',
            OK,
            "say",
            {"text": 'a "quoted" } brace'},
        ),
        # key aliases
        ('{"tool": "search", "arguments": {"query": "x"}}', REPAIRED, "search", Q),
        ('{"name": "search", "parameters": {"query": "x"}}', REPAIRED, "search", Q),
        ('{"action": "search", "action_input": {"query": "x"}}', REPAIRED, "search", Q),
        ('{"function": {"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}}', REPAIRED, "search", Q),
        # JSON repair: single quotes, smart quotes, trailing commas, unclosed braces
        ("{'action': 'search', 'args': {'query': 'x',},}", REPAIRED, "search", Q),
        (
            "{\u201caction\u201d: \u201csearch\u201d, \u201cargs\u201d: {\u201cquery\u201d: \u201cx\u201d}}",
            REPAIRED,
            "search",
            Q,
        ),
        ('Let me look: {"action": "search", "args": {"query": "x"', REPAIRED, "search", Q),
        ("Action: search\nAction Input: {'query': 'x'}", REPAIRED, "search", Q),
        # ReAct drift
        ('**Action:** search\n**Action Input:** {"query": "x"}', REPAIRED, "search", Q),
        ('action: search\naction input: {"query": "x"}', REPAIRED, "search", Q),
        ('Action: `search`\nAction Input: ```json\n{"query": "x"}\n```', REPAIRED, "search", Q),
        ('Action: search({"query": "x"})', REPAIRED, "search", Q),
        (
            'Action: search\nAction Input: {"query": "x"}\nObservation: sunny\nFinal Answer: sunny',
            REPAIRED,
            "search",
            Q,
        ),
        ('Action: search\nAction Input: {"query": "x"} and then I will read it', REPAIRED, "search", Q),
        ('Action:\n```\n{"action": "search", "action_input": {"query": "x"}}\n```', REPAIRED, "search", Q),
        # non-object arguments are kept under _raw
        ("Action: search\nAction Input: weather in Paris", REPAIRED, "search", {"_raw": "weather in Paris"}),
        ('Action: search\nAction Input: "Paris"', REPAIRED, "search", {"_raw": "Paris"}),
        ('{"action": "search", "args": ["a", "b"]}', REPAIRED, "search", {"_raw": ["a", "b"]}),
    ],
)
def test_tool_call_dialects(text: str, status: ParseStatus, name: str, args: dict) -> None:
    out = parse_text(text)
    assert out.status == status, out
    assert out.final_answer is None and out.error is None
    assert [(c.name, c.arguments) for c in out.calls] == [(name, args)]


@pytest.mark.parametrize(
    ("text", "status", "answer"),
    [
        (
            "Thought: I know\nFinal Answer: Paris is the capital.\nIt has 2M people.",
            OK,
            "Paris is the capital.\nIt has 2M people.",
        ),
        ('{"action": "finish", "args": {"answer": "Paris"}}', OK, "Paris"),
        ('Action: finish\nAction Input: {"answer": "Paris"}', OK, "Paris"),
        ("**Final Answer:** Paris", REPAIRED, "Paris"),
        ('Action: Final Answer\nAction Input: "Paris"', REPAIRED, "Paris"),
        ('{"action": "Final Answer", "action_input": "Paris"}', REPAIRED, "Paris"),
        ('{"final_answer": "Paris"}', REPAIRED, "Paris"),
        ('Action: finish\nAction Input: {"result": "Paris"}', REPAIRED, "Paris"),
        ('{"action": "finish", "args": {"answer": {"city": "Paris"}}}', OK, '{"city": "Paris"}'),
    ],
)
def test_finish_dialects(text: str, status: ParseStatus, answer: str) -> None:
    out = parse_text(text)
    assert out.status == status, out
    assert out.final_answer == answer and out.calls == [] and out.is_final


@pytest.mark.parametrize(
    ("text", "error_part"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (
            "The capital is Paris.",
            'no `Action:` line, no `Final Answer:` line and no JSON object with an "action"',
        ),
        ('{"city": "Paris"}', 'has no "action" key'),
        ("Thought: hmm\nAction: \nAction Input: {}", "`Action:` must be followed by a tool name"),
        ("Final Answer:   ", "`Final Answer:` is empty"),
        ('{"action": "finish", "args": {}}', '"finish" action needs args {"answer"'),
    ],
)
def test_unparsable_output_says_exactly_why(text: str, error_part: str) -> None:
    out = parse_text(text)
    assert out.status == UNPARSABLE
    assert out.error is not None and error_part in out.error
    assert out.calls == [] and out.final_answer is None and not out.is_final


def test_thought_is_extracted_from_label_key_or_prose() -> None:
    assert (
        parse_text('Thought: check docs\nAction: search\nAction Input: {"query": "x"}').thought
        == "check docs"
    )
    assert parse_text('{"thought": "from key", "action": "a", "args": {}}').thought == "from key"
    assert parse_text('I should search first.\n```json\n{"action": "a", "args": {}}\n```').thought == (
        "I should search first."
    )
    assert parse_text('{"action": "a", "args": {}}').thought is None


def test_final_answer_before_action_wins_and_action_before_final_wins() -> None:
    first_final = parse_text('Final Answer: done\nAction: search\nAction Input: {"query": "x"}')
    assert first_final.final_answer is not None and first_final.final_answer.startswith("done")
    first_action = parse_text('Action: search\nAction Input: {"query": "x"}\nFinal Answer: done')
    assert [c.name for c in first_action.calls] == ["search"] and first_action.final_answer is None


def test_several_json_actions_become_several_calls_and_finish_among_them_is_dropped() -> None:
    several = parse_text('[{"action": "a", "args": {"n": 1}}, {"action": "b", "args": {}}]')
    assert several.status == OK and [c.name for c in several.calls] == ["a", "b"]
    mixed = parse_text('{"action": "a", "args": {}}\n{"action": "finish", "args": {"answer": "too early"}}')
    assert mixed.status == REPAIRED and [c.name for c in mixed.calls] == ["a"] and mixed.final_answer is None


def test_call_ids_are_deterministic_per_content() -> None:
    text = '{"action": "search", "args": {"query": "x"}}'
    ids = {parse_text(text).calls[0].id for _ in range(3)}
    assert ids == {make_call_id(0, "search", Q)}
    other = parse_text('{"action": "search", "args": {"query": "y"}}').calls[0].id
    assert other != next(iter(ids))
    assert next(iter(ids)).startswith("call_0_")


def test_expected_format_describes_both_forms() -> None:
    for part in ("Thought:", "Action:", "Action Input:", "Final Answer:", '"action"', '"args"', "finish"):
        assert part in EXPECTED_FORMAT
    # The examples in EXPECTED_FORMAT are themselves canonical.
    example = 'Thought: t\nAction: search\nAction Input: {"query": "weather in Paris"}'
    assert parse_text(example).status == OK
