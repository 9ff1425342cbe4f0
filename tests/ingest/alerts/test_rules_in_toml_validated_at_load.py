"""Alert rules come from steplens.toml: the documented example loads as written, and a rule that
could never work (unknown metric or channel, threshold rule without threshold, drift on a rate,
duplicate names, bad duration) is refused at load with the reason, never skipped silently."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.alerts.rules import RuleKind
from ingest.config import load_settings

DOCS = Path(__file__).resolve().parents[3] / "docs" / "alerts.md"


def _documented_toml() -> str:
    text = DOCS.read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, flags=re.S)
    assert blocks, "docs/alerts.md lost its steplens.toml example"
    return blocks[0]


def test_documented_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "steplens.toml"
    path.write_text(_documented_toml())
    settings = load_settings(path)
    rules = {r.name: r for r in settings.alerts}
    assert set(rules) == {"support steps per release", "failure rate up", "cost ceiling", "steps creep",
                          "correct per release", "helpfulness slide"}
    assert rules["correct per release"].metric == "score:correct" and rules["correct per release"].kind is RuleKind.RELEASE
    assert rules["helpfulness slide"].metric == "score:helpfulness" and rules["helpfulness slide"].kind is RuleKind.DRIFT
    assert rules["support steps per release"].kind is RuleKind.RELEASE
    assert rules["support steps per release"].cooldown == timedelta(hours=6)
    assert rules["cost ceiling"].threshold == 0.25 and rules["cost ceiling"].window == timedelta(hours=1)
    assert rules["steps creep"].drift.reference_buckets == 7 and rules["steps creep"].lookback == timedelta(days=28)
    [channel] = settings.alert_channels
    assert channel.url_env == "STEPLENS_SLACK_WEBHOOK_URL" and channel.url == ""


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[alerts]]\nname = "a"\nmetric = "stepz"\n', "unknown metric 'stepz'"),
        ('[[alerts]]\nname = "a"\nkind = "threshold"\n', "needs `threshold`"),
        ('[[alerts]]\nname = "a"\nkind = "drift"\nmetric = "failure_rate"\n', "mean steps per run"),
        ('[[alerts]]\nname = "a"\nchannels = ["pager"]\n', "unknown channel(s) pager"),
        ('[[alerts]]\nname = "a"\n[[alerts]]\nname = "a"\n', "repeated: a"),
        ('[[alerts]]\nname = "a"\ncooldown = "soon"\n', "not a duration"),
        ('[[alerts]]\nname = "a"\nseverity = "urgent"\n', "severity"),
        ('[[alerts]]\nname = "a"\nthreshhold = 3\n', "threshhold"),
        ('[[alerts]]\nname = "a"\nmetric = "score:"\n', "score name must be 1 to 200 characters"),
        ('[[alerts]]\nname = "a"\nmetric = "score:tone="\n', "the label after '=' is empty"),
        ('[[alerts]]\nname = "a"\nkind = "drift"\nmetric = "score:*"\n', "drift watches"),
        ('[[alerts]]\nname = "a"\nkind = "threshold"\nthreshold = 1\nmetric = "score:*"\n', "not score:*"),
    ],
)
def test_unworkable_rules_are_refused_with_the_reason(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "steplens.toml"
    path.write_text(toml)
    with pytest.raises(ValidationError) as info:
        load_settings(path)
    assert message in str(info.value)
