"""`[[evaluators]]` rules are checked when steplens.toml is loaded: the README's snippet loads as
written (the rules a reader copies work), and a rule that could never evaluate (a regex that does not
compile, a schema that is not one, an unknown kind, a categorical built-in, a judge without a model,
two rules of one name) stops the server with a message naming the problem, instead of failing on
every run later."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.config import load_settings

ROOT = Path(__file__).resolve().parents[3]


def _snippet() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Online evaluators", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_the_readme_snippet_loads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "steplens.toml"
    path.write_text(_snippet(), encoding="utf-8")
    rules = load_settings(path).evaluators
    assert [r.name for r in rules] == ["mentions-delivery", "no-refunds-without-approval", "helpfulness"]
    assert rules[0].sample_rate == 0.5 and rules[0].delay.total_seconds() == 30 and rules[0].ok is True
    judge = rules[2]
    assert judge.is_judge and judge.evaluator.fallback_models == ["gpt-4.1-mini"]  # type: ignore[union-attr]
    assert judge.score.type == "numeric" and (judge.score.min, judge.score.max, judge.score.pass_at) == (1, 5, 4)


BAD = {
    'evaluator = { kind = "regex", pattern = "(" }\nscore = { name = "s" }': "pattern does not compile",
    'evaluator = { kind = "json_schema", schema = { type = 7 } }\nscore = { name = "s" }': "not a valid JSON schema",
    'evaluator = { kind = "sentiment" }\nscore = { name = "s" }': "does not match any of the expected tags",
    'evaluator = { kind = "no_tool_error" }\nscore = { name = "s", type = "categorical", labels = ["a"] }':
        "built-in evaluators write boolean or numeric scores",
    'evaluator = { kind = "judge" }\nscore = { name = "s" }': "model",
    'evaluator = { kind = "judge", model = "m" }\nscore = { name = "s", type = "categorical" }': "needs `labels`",
    'sample_rate = 1.5\nevaluator = { kind = "no_tool_error" }\nscore = { name = "s" }': "sample_rate",
}


@pytest.mark.parametrize("body", list(BAD))
def test_a_rule_that_could_never_evaluate_is_refused_at_load(tmp_path: Path, body: str) -> None:
    path = tmp_path / "steplens.toml"
    path.write_text(f'[[evaluators]]\nname = "broken"\n{body}\n', encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_settings(path)
    assert BAD[body] in str(info.value)


def test_two_rules_of_one_name_are_refused(tmp_path: Path) -> None:
    rule = '[[evaluators]]\nname = "twice"\nevaluator = { kind = "no_tool_error" }\nscore = { name = "s" }\n'
    path = tmp_path / "steplens.toml"
    path.write_text(rule + rule, encoding="utf-8")
    with pytest.raises(ValidationError, match="evaluator rule names must be unique; repeated: twice"):
        load_settings(path)
