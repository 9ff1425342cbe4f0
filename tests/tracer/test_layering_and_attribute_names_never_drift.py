"""The dependency rules of design.md §1 and "attribute names live in tracer/conventions.py only",
checked on the source itself so a stray import or a hand-spelt attribute name fails the build
instead of surfacing as a broken ingest column weeks later.

- `tracer/` imports only OpenTelemetry, the standard library and itself;
- `kernel/` never imports `ingest`, `dashboards` or the CLI package `steplens`;
- outside conventions.py, no string literal in kernel/ or tracer/ spells a `gen_ai.*`,
  `steplens.*`, `error.*` or `exception.*` attribute name (docstrings and comments may).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STDLIB = frozenset(sys.stdlib_module_names)
ATTRIBUTE_NAME = re.compile(r"^(gen_ai|steplens|error|exception)\.[a-z_]+(\.[a-z_]+)*$")


def _sources(package: str) -> list[Path]:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no sources found under {package}/"
    return files


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _dynamic_imports(tree: ast.AST) -> set[str]:
    """Targets of `import_module("x.y")` / `importlib.import_module("x.y")` with a literal name."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "import_module" and isinstance(node.args[0].value, str):
                found.add(node.args[0].value.split(".")[0])
    return found


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def test_tracer_imports_only_opentelemetry_and_the_standard_library() -> None:
    offenders = []
    for path in _sources("tracer"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for root in _imported_roots(tree) | _dynamic_imports(tree):
            if root not in STDLIB and root not in {"opentelemetry", "tracer", "__future__"}:
                offenders.append(f"{path.relative_to(ROOT)} imports {root}")
    assert offenders == []


def test_kernel_never_imports_ingest_dashboards_or_the_cli() -> None:
    offenders = []
    for path in _sources("kernel"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for root in _imported_roots(tree) | _dynamic_imports(tree):
            if root in {"ingest", "dashboards", "steplens"}:
                offenders.append(f"{path.relative_to(ROOT)} imports {root}")
    assert offenders == []


def test_no_attribute_name_is_spelt_outside_the_conventions_module() -> None:
    conventions = ROOT / "tracer" / "conventions.py"
    offenders = []
    for path in _sources("kernel") + _sources("tracer"):
        if path == conventions:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and ATTRIBUTE_NAME.match(node.value)):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert offenders == []


def test_the_checks_themselves_can_fail() -> None:
    """Guard against a checker that silently matches nothing."""
    tree = ast.parse('"""doc with gen_ai.request.model"""\nimport duckdb\nx = "steplens.run.ok"\n')
    assert _imported_roots(tree) == {"duckdb"}
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in _docstring_nodes(tree)]
    assert [v for v in literals if ATTRIBUTE_NAME.match(v)] == ["steplens.run.ok"]
