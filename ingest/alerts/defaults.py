"""The built-in alert rules: what the server watches when the config names no `[[alerts]]`.

Why built in: the regressions that matter most for agents (a release that takes more steps, a
slow creep of steps, failing or costing more than last week, a release whose runs are judged worse:
any score, `score:*`, each score of each agent alerted on separately; a release that hands more runs
to a person, the transfer-to-human rate) need no knowledge of the agent, so
a new install should alert on them from the first start instead of waiting for the user to write
TOML. Any configured `[[alerts]]` replaces the whole set (a user who writes rules wants exactly
those); `alerts_defaults = false` turns it off.

Every rule covers every agent, each alerted on separately, and notifies the server log only (a
webhook needs a URL, which only the user has). With API keys configured there is one set per
configured project, so a key bound to a project sees and checks its own built-in rules.
"""

from __future__ import annotations

from datetime import timedelta

from ingest.alerts.rules import AlertRule, RuleKind, Severity


def _rules_for(project: str | None) -> list[AlertRule]:
    suffix = "" if project is None else f" [{project}]"
    common = {"project": project, "interval": timedelta(minutes=15), "cooldown": timedelta(hours=6)}
    return [
        AlertRule(name=f"steps per run: new release vs the previous{suffix}", kind=RuleKind.RELEASE,
                  metric="steps", severity=Severity.WARNING, **common),
        AlertRule(name=f"steps per run drift (CUSUM, 28 days){suffix}", kind=RuleKind.DRIFT, metric="steps",
                  lookback=timedelta(days=28), severity=Severity.WARNING, **common),
        AlertRule(name=f"failure rate: last 24 h vs the 7 days before{suffix}", kind=RuleKind.WINDOW,
                  metric="failure_rate", window=timedelta(hours=24), baseline=timedelta(days=7),
                  severity=Severity.WARNING, **common),
        AlertRule(name=f"cost per run: last 24 h vs the 7 days before{suffix}", kind=RuleKind.WINDOW,
                  metric="cost_usd", window=timedelta(hours=24), baseline=timedelta(days=7),
                  severity=Severity.INFO, **common),
        AlertRule(name=f"scores: new release vs the previous{suffix}", kind=RuleKind.RELEASE, metric="score:*",
                  severity=Severity.WARNING, **common),
        AlertRule(name=f"hand-off rate: new release vs the previous{suffix}", kind=RuleKind.RELEASE,
                  metric="handoff_rate", severity=Severity.WARNING, **common),
    ]


def builtin_rules(projects: list[str] | None = None) -> list[AlertRule]:
    """The built-in set: one for all data (`projects` None or empty), else one per project."""
    if not projects:
        return _rules_for(None)
    return [rule for project in sorted(set(projects)) for rule in _rules_for(project)]


def effective_rules(
    configured: list[AlertRule], defaults_on: bool, projects: list[str] | None = None
) -> tuple[list[AlertRule], bool]:
    """(the rules the server evaluates, whether they are the built-in set)."""
    if configured:
        return list(configured), False
    if defaults_on:
        return builtin_rules(projects), True
    return [], False
