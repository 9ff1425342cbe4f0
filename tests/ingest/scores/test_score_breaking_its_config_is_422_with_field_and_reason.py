"""A score that breaks its config (steplens.toml `[[scores]]` or POST /api/score-configs) is a 422
naming the field and the reason, and nothing of its batch is stored; a score without a config is
stored with its type inferred unless `scores_strict` is on.

The failure this covers: a helpfulness score of 7 on a 0..1 scale, or a label nobody declared,
stored and silently skewing every mean and label distribution computed afterwards."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ingest.config import load_settings
from ingest.scores.configs import ScoreConfig
from tests.ingest.api.harness import BACKENDS
from tests.ingest.scores.conftest import get_scores, post_scores

TRACE = "11111111111111111111111111111111"
CONFIGS = [
    ScoreConfig(name="helpfulness", data_type="numeric", min=0, max=1, description="0 useless .. 1 perfect"),
    ScoreConfig(name="correct", data_type="boolean"),
    ScoreConfig(name="tone", data_type="categorical", categories=["polite", "neutral", "rude"]),
]


def _violation(r: httpx.Response) -> tuple[list[Any], str]:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert len(detail) == 1, detail
    return detail[0]["loc"], detail[0]["msg"]


@pytest.mark.parametrize(
    ("score", "field", "reason"),
    [
        ({"name": "helpfulness", "value": 1.5}, "value", "above the maximum 1"),
        ({"name": "helpfulness", "value": -0.1}, "value", "below the minimum 0"),
        ({"name": "helpfulness", "value": "high"}, "value", "must be a number"),
        ({"name": "helpfulness", "value": True}, "value", "must be a number"),
        ({"name": "correct", "value": 1}, "value", "must be true or false"),
        ({"name": "correct", "value": True, "data_type": "categorical"}, "data_type", "declared boolean"),
        ({"name": "tone", "value": "sarcastic"}, "value", "not a label of 'tone': one of polite, neutral, rude"),
        ({"name": "tone", "value": 3}, "value", "must be a label"),
    ],
)
def test_file_config_violation_names_field_and_reason(
    start_ingest_server: Any, score: dict[str, Any], field: str, reason: str
) -> None:
    srv = start_ingest_server(grpc_port=0, scores=CONFIGS)
    ok = {"name": "helpfulness", "value": 0.5, "trace_id": TRACE}
    r = post_scores(srv.http_url, [ok, {**score, "trace_id": TRACE}])
    loc, msg = _violation(r)
    assert loc == ["body", "scores", 1, field]
    assert reason in msg
    assert srv.store.wait_loaded(10)
    assert get_scores(srv.http_url) == []  # the valid one of the batch was not stored either
    assert srv.metrics.scores_rejected.labels(reason="config")._value.get() == 2


def test_valid_scores_and_unconfigured_names_are_stored(start_ingest_server: Any) -> None:
    srv = start_ingest_server(grpc_port=0, scores=CONFIGS)
    batch = [{"name": "helpfulness", "value": 1, "trace_id": TRACE}, {"name": "correct", "value": True, "trace_id": TRACE},
             {"name": "tone", "value": "rude", "trace_id": TRACE}, {"name": "free_form", "value": "x", "trace_id": TRACE}]
    assert post_scores(srv.http_url, batch).status_code == 200
    assert srv.store.wait_loaded(10)
    got = {s["name"]: (s["data_type"], s["value"]) for s in get_scores(srv.http_url)}
    assert got == {"helpfulness": ("numeric", 1.0), "correct": ("boolean", True), "tone": ("categorical", "rude"),
                   "free_form": ("categorical", "x")}
    configs = httpx.get(srv.http_url + "/api/score-configs").json()["configs"]
    assert [(c["name"], c["origin"]) for c in configs] == [("correct", "file"), ("helpfulness", "file"), ("tone", "file")]


def test_strict_refuses_a_name_without_config(start_ingest_server: Any) -> None:
    srv = start_ingest_server(grpc_port=0, scores=CONFIGS, scores_strict=True)
    loc, msg = _violation(post_scores(srv.http_url, {"name": "free_form", "value": "x", "trace_id": TRACE}))
    assert loc == ["body", "scores", 0, "name"] and "no score config named 'free_form'" in msg


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_config_enforced_and_file_config_not_redefinable(start_ingest_server: Any, backend: str) -> None:
    srv = start_ingest_server(grpc_port=0, scores=CONFIGS, store=backend)
    base = srv.http_url
    r = httpx.post(base + "/api/score-configs", json={"name": "stars", "data_type": "numeric", "min": 1, "max": 5})
    assert r.status_code == 200, r.text
    loc, msg = _violation(post_scores(base, {"name": "stars", "value": 6, "trace_id": TRACE}))
    assert loc[-1] == "value" and "above the maximum 5" in msg
    assert post_scores(base, {"name": "stars", "value": 5, "trace_id": TRACE}).status_code == 200
    # redeclared wider: later scores follow the new config
    assert httpx.post(base + "/api/score-configs", json={"name": "stars", "data_type": "numeric", "max": 10}
                      ).status_code == 200
    assert post_scores(base, {"name": "stars", "value": 6, "trace_id": TRACE}).status_code == 200
    clash = httpx.post(base + "/api/score-configs", json={"name": "tone", "data_type": "boolean"})
    assert clash.status_code == 409 and "steplens.toml" in clash.text
    bad = httpx.post(base + "/api/score-configs", json={"name": "mood", "data_type": "categorical"})
    assert bad.status_code == 422 and "needs its categories" in bad.text
    names = {c["name"]: c["origin"] for c in httpx.get(base + "/api/score-configs").json()["configs"]}
    assert names["stars"] == "api" and names["tone"] == "file"


def test_score_configs_read_from_steplens_toml(tmp_path: Any) -> None:
    toml = tmp_path / "steplens.toml"
    toml.write_text('[[scores]]\nname = "helpfulness"\ndata_type = "numeric"\nmin = 0\nmax = 1\n\n'
                    '[[scores]]\nname = "tone"\ndata_type = "categorical"\ncategories = ["polite", "rude"]\n'
                    'project = "support"\n', encoding="utf-8")
    settings = load_settings(toml)
    assert [(c.name, c.project) for c in settings.scores] == [("helpfulness", None), ("tone", "support")]
    toml.write_text('[[scores]]\nname = "tone"\ndata_type = "categorical"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="needs its categories"):
        load_settings(toml)
    toml.write_text('[[scores]]\nname = "x"\ndata_type = "boolean"\n[[scores]]\nname = "x"\ndata_type = "numeric"\n',
                    encoding="utf-8")
    with pytest.raises(ValueError, match="declares 'x' twice"):
        load_settings(toml)
