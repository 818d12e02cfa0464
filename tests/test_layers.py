"""The import contract: capshift's layers (pyproject.toml, [tool.importlinter]) hold, checked by import-linter.

Layers, top to bottom: __main__ > cli > grid > experiment > uncertainty | shift_experiments | efficiency |
selection | estimate > evaluation > registry > the CAP methods (leap, baselines, quacc) > base > conformal |
equations > protocols > the foundation (datasets, reference, emq, quantifiers, shift, classifiers, significance,
pps_check, calibration) > tables > validation. The book runner and the
plots stay apart from the methods. A change that imports upward, makes a cycle, or makes the book runner depend
on a method fails here (and so ``make test``), with import-linter's report of the offending import chain.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lib" / "capshift"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_import_contract_holds():
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: install the test extras (pip install -e '.[test]')")
    res = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout and "4 kept" in res.stdout, res.stdout


def _imports(path: Path):
    """``(line, module imported, names, inside a function)`` of every capshift-internal import of a module."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        internal = node.level > 0 or (node.module or "").startswith("capshift")
        if not internal:
            continue
        up, in_function = parents.get(node), False
        while up is not None:
            in_function |= isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef))
            up = parents.get(up)
        yield node.lineno, node.module or "", [a.name for a in node.names], in_function


def _main_guard_lines(path: Path) -> set[int]:
    """Lines inside an ``if __name__ == "__main__":`` block (where a module may hand over to the CLI)."""
    lines = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            lines |= set(range(node.lineno, node.end_lineno + 1))
    return lines


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_private_name_and_no_function_level_import_across_modules(path):
    """No module imports another module's private names, and capshift modules are imported at module level only
    (an import inside a function is how a cycle hides from a reader; import-linter would still see it)."""
    guard = _main_guard_lines(path)
    for line, module, names, in_function in _imports(path):
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{path.name}:{line} imports private name(s) {private} of {module!r}: make them public"
        assert not in_function or line in guard, f"{path.name}:{line} imports {module!r} inside a function"


def test_the_contract_sees_an_upward_import(tmp_path):
    """The contract is not vacuous: a copy of the package with one upward import (base -> experiment) breaks it."""
    pkg = tmp_path / "lib" / "capshift"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "data"))
    base = pkg / "base.py"
    base.write_text(base.read_text() + "\nfrom .experiment import run_experiment  # noqa: E402\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {"PYTHONPATH": str(tmp_path / "lib"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=env)
    assert res.returncode != 0
    assert "capshift.base is not allowed to import capshift.experiment" in res.stdout, res.stdout
