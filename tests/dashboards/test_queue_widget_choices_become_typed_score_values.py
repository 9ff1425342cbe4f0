"""The Queues page's widget choices become the values their configs expect: a boolean radio's
"false" is the boolean false (the text "false" would be refused by a boolean config, or worse, be
truthy), a whole number stays an integer, an empty widget submits nothing; and the results table
has one column per person and config."""

from __future__ import annotations

from dashboards.queue_view import agreement_rows, result_rows, score_value, shown
from dashboards.queues_models import Queue, Results, ScoreConfig

BOOL = ScoreConfig(name="correct", data_type="boolean")
NUM = ScoreConfig(name="helpfulness", data_type="numeric", min=1, max=5)
CAT = ScoreConfig(name="tone", data_type="categorical", categories=["polite", "rude"])


def test_widget_choices_are_typed_values() -> None:
    assert score_value(BOOL, "false") is False and score_value(BOOL, "true") is True
    assert score_value(NUM, 3.0) == 3 and isinstance(score_value(NUM, 3.0), int)
    assert score_value(NUM, 2.5) == 2.5
    assert score_value(CAT, "rude") == "rude"
    assert all(score_value(c, None) is None for c in (BOOL, NUM, CAT))
    assert (shown(False), shown(4.0), shown("polite")) == ("false", "4", "polite")


def test_results_table_has_a_column_per_person_and_config() -> None:
    queue = Queue(name="q", score_configs=["correct", "tone"])
    results = Results.model_validate({
        "labels": {"b" * 32: {"bob": {"correct": True}}, "a" * 32: {"ann": {"correct": False, "tone": "rude"},
                                                                    "bob": {"correct": False}}},
        "agreement": [{"name": "correct", "raters": [{"raters": ["ann", "bob"], "runs": 1, "agreement": 1.0,
                                                      "kappa": None}]}],
    })
    assert result_rows(queue, results) == [
        {"run": "a" * 32, "ann · correct": "false", "ann · tone": "rude", "bob · correct": "false"},
        {"run": "b" * 32, "bob · correct": "true"},
    ]
    assert agreement_rows(results) == [{"score": "correct", "people": "ann & bob", "runs": 1, "agreement": 1.0,
                                        "kappa": None}]
