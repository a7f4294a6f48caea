"""analysis/ in layers: no module imports from a layer above its own.

The order is read from docs/architecture.md ("layers: core < fio < ..."), so the documented
layers and the enforced ones cannot drift apart. Every import counts, at the top of a module or
inside a function, and so does a module named in a string to `importlib.import_module`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "analysis"
DOC = REPO / "docs" / "architecture.md"


def documented_layers() -> list[str]:
    match = re.search(r"^layers: (.+)$", DOC.read_text(), flags=re.MULTILINE)
    assert match, "docs/architecture.md has no 'layers: a < b < ...' line"
    return [name.strip() for name in match.group(1).split("<")]


def layer_of(module: str) -> str | None:
    """'analysis.rules.cases' -> 'rules'; the package itself and __main__ have no layer."""
    parts = module.split(".")
    if parts[0] != "analysis" or len(parts) < 2 or parts[1] == "__main__":
        return None
    return parts[1]


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every analysis import in the file, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # `from analysis import x` / `from analysis.sections import burst_part`: x may be a module
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if node.module == "analysis"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            found.append((node.lineno, node.args[0].value))
    return [(line, m) for line, m in found if m.split(".")[0] == "analysis"]


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_folder_is_a_documented_layer():
    layers = documented_layers()
    folders = sorted(p.name for p in PACKAGE.iterdir()
                     if p.is_dir() and p.name != "__pycache__")
    assert sorted(layers) == folders
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"], "a module outside every layer"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_import_runs_up(path):
    rank = {name: i for i, name in enumerate(documented_layers())}
    own = layer_of(".".join(path.relative_to(REPO).with_suffix("").parts))
    if own is None:
        return  # analysis/__init__.py and __main__.py sit above every layer
    upward = [f"line {line}: {module} ({layer_of(module)} is above {own})"
              for line, module in imports(path)
              if layer_of(module) in rank and rank[layer_of(module)] > rank[own]]
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path):
    """The rule can fail: an import of the report from the rules layer is caught."""
    fake = tmp_path / "x.py"
    fake.write_text("def f():\n    from analysis.report.build import main\n")
    (line, module), = imports(fake)
    rank = {name: i for i, name in enumerate(documented_layers())}
    assert line == 2 and rank[layer_of(module)] > rank["rules"]
