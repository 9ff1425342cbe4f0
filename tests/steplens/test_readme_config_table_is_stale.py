"""The README's configuration table is generated from the settings models (steplens/config_doc.py):
a setting added, renamed or re-defaulted without regenerating the README fails here, so the
documented defaults are the ones the code uses."""

from __future__ import annotations

from steplens.config_doc import END, README, START, render


def test_readme_configuration_table_matches_the_settings_models() -> None:
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text, "README.md lost its generated configuration table markers"
    current = START + text.split(START, 1)[1].split(END, 1)[0] + END
    assert current == render(), "README.md is stale: run `python -m steplens.config_doc`"


def test_every_server_setting_is_documented_with_its_env_name() -> None:
    from ingest.config import Settings

    table = render()
    for name in Settings.model_fields:
        assert f"`STEPLENS_{name.upper()}` / `{name}`" in table
