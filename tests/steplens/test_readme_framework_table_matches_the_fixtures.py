"""The README's "Sending spans from your framework" table stays tied to what was actually run: every
captured fixture (tests/fixtures/frameworks/<name>/manifest.json) has a row and every row names
fixtures that exist; each `pip install` package of a row is one its fixtures installed (their
manifest's `packages`); each setup call, import and environment variable of a row appears in the
capture script that ran it (or the capture module that script reuses). A framework added without a
row, a row left behind by a removed fixture, or setup lines that were never run fail here."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
CAPTURE = FIXTURES / "capture"
HEADING = "## Sending spans from your framework"
_CODE = re.compile(r"`([^`]+)`")
_ENV = re.compile(r"^([A-Z][A-Z0-9_]+)(=\S*)?$")
_REUSED = re.compile(r"from tests\.fixtures\.frameworks\.capture(?:\.(\w+))? import \(?\s*(\w+)")


def _rows() -> list[dict[str, str]]:
    text = README.read_text(encoding="utf-8")
    assert HEADING in text, f"README.md lost its section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert {"Setup", "Fixture"} <= set(header), header
    rows = []
    for line in lines[2:]:  # after the header and its |---| line
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert len(cells) == len(header), f"README framework table row has {len(cells)} cells: {line[:80]}"
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _fixtures(row: dict[str, str]) -> list[str]:
    return _CODE.findall(row["Fixture"])


def _script_text(fixture: str) -> str:
    """The capture script of `fixture` and the capture modules it imports from (shared programs)."""
    manifest = json.loads((FIXTURES / fixture / "manifest.json").read_text())
    script = ROOT / manifest.get("capture_script", f"tests/fixtures/frameworks/capture/{fixture}.py")
    text = script.read_text(encoding="utf-8")
    for module, name in _REUSED.findall(text):
        reused = CAPTURE / f"{module or name}.py"
        if reused.is_file():
            text += reused.read_text(encoding="utf-8")
    return text


def _is_call(snippet: str) -> bool:
    """A literal setup line (a call or an import); `...` marks an abbreviated one, not checked."""
    return ("(" in snippet or snippet.startswith(("from ", "import "))) and "..." not in snippet


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_every_fixture_has_a_row_and_every_row_names_fixtures() -> None:
    captured = {m.parent.name for m in FIXTURES.glob("*/manifest.json")}
    assert len(captured) >= 10, captured
    named = [f for row in _rows() for f in _fixtures(row)]
    assert all(_fixtures(row) for row in _rows()), "a README framework row names no fixture"
    assert sorted(set(named)) == sorted(named), f"a fixture is named by two rows: {named}"
    assert set(named) - captured == set(), "README rows name fixtures that do not exist"
    assert captured - set(named) == set(), "captured fixtures without a README row"


def test_setup_lines_are_the_ones_the_capture_scripts_ran() -> None:
    wrong: dict[str, list[str]] = {}
    for row in _rows():
        fixtures = _fixtures(row)
        installed = {name for f in fixtures
                     for name in json.loads((FIXTURES / f / "manifest.json").read_text())["packages"]}  # fmt: skip
        scripts = _squash("".join(_script_text(f) for f in fixtures))
        for snippet in _CODE.findall(row["Setup"]):
            if snippet.startswith("pip install "):
                for package in snippet.removeprefix("pip install ").split():
                    if re.sub(r"\[.*\]", "", package.strip("'\"")) not in installed:
                        wrong.setdefault(row["Fixture"], []).append(f"{package}: not installed by the capture")
            elif env := _ENV.match(snippet):
                if env.group(1) not in scripts:
                    wrong.setdefault(row["Fixture"], []).append(f"{snippet}: variable not set by the capture")
                if env.group(2) and env.group(2)[1:] not in scripts and "//" not in env.group(2):
                    wrong.setdefault(row["Fixture"], []).append(f"{snippet}: value not the capture's")
            elif _is_call(snippet) and _squash(snippet) not in scripts:
                wrong.setdefault(row["Fixture"], []).append(f"{snippet}: not in the capture script")
    assert wrong == {}, wrong
