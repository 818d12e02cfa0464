"""Mutation testing of one module of lib/capshift (issue 32): mutmut 3 on a scratch copy of the repository, with
the tests that exercise that module, so that a module's run takes minutes rather than the whole suite's hours.

    .venv/bin/python benchmarks/mutate.py pps_check              # or: make mutate MODULE=pps_check
    .venv/bin/python benchmarks/mutate.py tables --tests tests/test_tables.py tests/test_properties.py

The scratch copy ($TMPDIR/capshift-mutate/<module>, or --work) holds the package (in src/), tests/ and a
pyproject.toml whose ``[tool.mutmut]`` section names the module (``only_mutate``) and its tests
(``pytest_add_cli_args_test_selection``: by default tests/test_<module>.py and every other test file that imports
the module, without the book, browser and packaging tests, which build the whole book). mutmut then mutates every
function of the module, maps each mutant to the tests that reach its function, and runs those.

Mutants listed in benchmarks/mutation/equivalent.yml (``module: {mutant name: one-line reason}``) are counted out:
an equivalent mutant changes no behaviour (a reviewer must be able to check the reason). The score is
killed / (mutants - equivalent); timeouts count as killed (mutmut's convention: the mutant hangs the tests).
mutmut runs each mutant's tests in a process forked from its own, which has imported the tests and may hold
threads (a loky executor, tqdm's monitor); a child forked while one of them holds a lock hangs on it (a futex wait,
no CPU), and mutmut reports an unkilled mutant as a timeout. So every timeout, and every mutant left unchecked by an
interrupted run, is run again outside mutmut: pytest in a fresh interpreter on the same scratch copy with
``MUTANT_UNDER_TEST`` set (:func:`recheck`), all of the module's selected tests; only a mutant whose tests still run
past the time limit counts as a timeout.

Writes benchmarks/mutation/<module>.csv (one row per mutant: name, status, equivalent reason) and updates
benchmarks/mutation/scores.csv (one row per module: mutants, killed, survived, equivalent, score, seconds, date,
commit). Prints the surviving mutants' diffs (``mutmut show``) for the next test to pin.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "mutation"
#: Test files that build or serve the whole book or check packaging: too slow to run once per mutant, and they
#: test the chapters, not a module's numbers.
SLOW_TESTS = {"test_book.py", "test_site.py", "test_packaging.py", "test_workflows.py"}
#: Test files that read the repository's lib/ layout (import-linter's contracts): the scratch copy puts the package in
#: src/, so they fail there before any mutant runs; they check imports, not a module's behaviour.
LAYOUT_TESTS = {"test_layers.py"}
#: What mutmut reports, and whether it counts as killed.
KILLED = {"killed", "timeout"}
MUTMUT = Path(sys.executable).with_name("mutmut")
#: Files beside the package that the tests read (copied to the scratch folder and by mutmut to its mutants/).
BOOK_FILES = ("_toc.yml", "_config.yml", "references.bib", "book")


def default_tests(module: str) -> list[str]:
    """tests/test_<module>.py and the other test files that import ``capshift.<module>`` (by name), without
    :data:`SLOW_TESTS` and :data:`LAYOUT_TESTS`."""
    pattern = re.compile(rf"capshift\.{module}\b|from capshift import [^\n]*\b{module}\b|from \.{module}\b")
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        if path.name in SLOW_TESTS | LAYOUT_TESTS:
            continue
        if path.name == f"test_{module}.py" or pattern.search(path.read_text()):
            found.append(f"tests/{path.name}")
    return found


def scratch_copy(work: Path, module: str, tests: list[str]) -> None:
    """lib/, tests/ and a pyproject.toml with the module's [tool.mutmut] section, under ``work`` (emptied)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    # the package goes to src/: mutmut 3 puts mutants/src (./ or source/) first on the tests' sys.path and names
    # mutants after their module (capshift.<module>), which a lib/ layout would break
    shutil.copytree(ROOT / "lib", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    # the book's table of contents, configuration and chapters: tests/test_bad_inputs.py checks `capshift.book`'s
    # errors against them (the built book, book/_build, is not needed)
    for name in BOOK_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("_build", "__pycache__"))
        else:
            shutil.copy2(ROOT / name, work / name)
    pyproject = (ROOT / "pyproject.toml").read_text()
    section = "\n".join([
        "", "[tool.mutmut]",
        'source_paths = ["src"]',
        f"also_copy = {list(BOOK_FILES)!r}".replace("'", '"'),
        f'only_mutate = ["src/capshift/{module}.py"]',
        f"pytest_add_cli_args_test_selection = {tests!r}".replace("'", '"'),
        'pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider"]',
        "",
    ])
    (work / "pyproject.toml").write_text(pyproject + section)


def results(work: Path) -> dict[str, str]:
    """``{mutant name: status}`` from ``mutmut results --all true``."""
    out = subprocess.run([str(MUTMUT), "results", "--all", "true"], cwd=work, capture_output=True, text=True,
                         check=True).stdout
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s+(\S+): (.+)$", out, flags=re.M)}


#: Modules held to a lower score, with the reason (issue 32: "the book runner and plotting may be lower").
EXEMPT = {
    "book": "the book runner: it drives papermill and jupyter-book, and tests/test_book.py and tests/test_site.py "
            "check what it builds, but each of those runs takes minutes, too slow to run once per mutant",
    "plots": "plotting: its output is an image that the chapters show and the browser test looks at",
    "__main__": "two lines that call capshift.cli",
    "__init__": "the package's imports",
}
TARGET = 0.9
#: The columns of scores.csv.
FIELDS = ["module", "mutants", "killed", "survived", "equivalent", "score", "seconds", "date", "commit", "tests",
          "workers"]


def write_summary(rows: dict) -> None:
    """benchmarks/mutation/README.md: every module of lib/capshift with its recorded score (scores.csv), the
    modules not yet run, and the whole run's time (the sum of the recorded runs, one mutmut worker each unless
    stated)."""
    modules = sorted(p.stem for p in (ROOT / "lib" / "capshift").glob("*.py"))
    lines = ["# Mutation scores of lib/capshift (issue 32)", "",
             "Written by `benchmarks/mutate.py` from `scores.csv` after each run; how to run it is in CONTRIBUTING.md "
             f"(\"Mutation testing\"). Target: a score of at least {TARGET} on every module that holds numerics or "
             "logic, equivalent mutants counted out (their reasons: `equivalent.yml`).", "",
             "| module | mutants | killed | survived | equivalent | score | seconds | workers | commit | date |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    total = 0
    for m in modules:
        r = rows.get(m)
        if r is None:
            lines.append(f"| {m} | {'exempt (below)' if m in EXEMPT else 'not yet run'} | | | | | | | | |")
            continue
        total += int(r["seconds"])
        mark = "" if float(r["score"]) >= TARGET else " (below target)"
        lines.append(f"| {m} | {r['mutants']} | {r['killed']} | {r['survived']} | {r['equivalent']} | "
                     f"{r['score']}{mark} | {r['seconds']} | {r.get('workers') or '?'} | {r['commit']} | {r['date']} |")
    done = sum(m in rows for m in modules)
    lines += ["", f"Recorded: {done} of {len(modules)} modules. The whole run of the recorded modules took {total:,} s "
              f"({total / 3600:.1f} h) of wall time, module by module, with the mutmut workers listed, on a 2-core "
              "machine.", "", "Exempt (a lower score is accepted):", ""]
    lines += [f"- `{m}`: {why}" for m, why in EXEMPT.items()]
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


def _env(pythonpath: str) -> dict:
    """The environment of mutmut's and of the re-checks' test runs: this one, no display, ``PYTHONPATH`` set."""
    return {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": pythonpath}


#: mutmut's exit codes for a mutant: its tests passed (survived), failed (killed), ran past the limit (timeout).
SURVIVED_EXIT, KILLED_EXIT, TIMEOUT_EXIT = 0, 1, -24


def recheck(work: Path, module: str, tests: list, limit: float = 120.0, workers: int = 1) -> dict:
    """Run again, outside mutmut, the mutants of the run in ``work`` that it reported as timeouts or left
    unchecked: ``pytest -x`` on ``tests`` in a fresh interpreter per mutant (``MUTANT_UNDER_TEST`` set, the scratch
    package first on the path), ``workers`` at a time, each stopped after ``limit`` seconds. Their exit codes are
    written into mutmut's meta file of the module, so that ``mutmut results`` reads them. Returns ``{status:
    count}`` of the mutants rechecked."""
    from concurrent.futures import ThreadPoolExecutor
    meta = work / "mutants" / "src" / "capshift" / f"{module}.py.meta"
    todo = [name for name, s in results(work).items() if s in ("timeout", "not checked")]
    env = _env("src")

    def run(name):
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                               cwd=work / "mutants", env={**env, "MUTANT_UNDER_TEST": name}, capture_output=True,
                               timeout=limit)
        except subprocess.TimeoutExpired:
            return name, TIMEOUT_EXIT
        if r.returncode not in (SURVIVED_EXIT, KILLED_EXIT):
            raise RuntimeError(f"pytest ended with status {r.returncode} on {name}:\n{r.stdout[-2000:]}")
        return name, r.returncode

    with ThreadPoolExecutor(workers) as pool:
        codes = dict(pool.map(run, todo))
    data = json.loads(meta.read_text())
    data["exit_code_by_key"].update(codes)
    meta.write_text(json.dumps(data))
    names = {SURVIVED_EXIT: "survived", KILLED_EXIT: "killed", TIMEOUT_EXIT: "timeout"}
    return dict(Counter(names[code] for code in codes.values()))


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def record(module: str, status: dict, run: dict) -> tuple:
    """Write benchmarks/mutation/<module>.csv (each mutant, its status and its reason if equivalent), the module's
    row of scores.csv (``run``: seconds, date, commit, tests, workers) and README.md. Returns (n, killed,
    survivors, equivalent, score)."""
    equivalent = (yaml.safe_load((OUT / "equivalent.yml").read_text()) or {}).get(module) or {} \
        if (OUT / "equivalent.yml").exists() else {}
    OUT.mkdir(exist_ok=True)
    with open(OUT / f"{module}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mutant", "status", "equivalent"])
        for name, s in sorted(status.items()):
            w.writerow([name, s, equivalent.get(name, "")])
    n = len(status)
    killed = sum(s in KILLED for s in status.values())
    eq = sum(1 for name, s in status.items() if name in equivalent and s not in KILLED)
    survivors = [name for name, s in status.items() if s not in KILLED and name not in equivalent]
    renumbered = sorted(name for name, s in status.items() if name in equivalent and s in KILLED)
    if renumbered:
        # mutmut numbers a function's mutants in order: an edit of the function renumbers them, and an entry of
        # equivalent.yml may then name another mutant
        print(f"equivalent.yml lists {len(renumbered)} mutant(s) that were killed: was the function edited? "
              f"check their diffs (mutmut show) against the reasons: {' '.join(renumbered)}", file=sys.stderr)
    score = killed / (n - eq) if n > eq else float("nan")
    rows = {}
    scores = OUT / "scores.csv"
    if scores.exists():
        with open(scores) as f:
            rows = {r["module"]: r for r in csv.DictReader(f)}
    rows[module] = {"module": module, "mutants": n, "killed": killed, "survived": len(survivors), "equivalent": eq,
                    "score": f"{score:.3f}", **run}
    # written whole to a temporary file and moved into place: runs of other modules read it meanwhile
    tmp = scores.with_suffix(f".{os.getpid()}.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, restval="", extrasaction="ignore")
        w.writeheader()
        w.writerows(sorted(rows.values(), key=lambda r: r["module"]))
    os.replace(tmp, scores)
    write_summary(rows)
    return n, killed, survivors, eq, score


def reapply_equivalents(module: str) -> int:
    """``--reapply-equivalents``: the recorded statuses of <module>.csv recounted with equivalent.yml."""
    with open(OUT / "scores.csv") as f:
        row = next((r for r in csv.DictReader(f) if r["module"] == module), None)
    if row is None or not (OUT / f"{module}.csv").exists():
        print(f"no recorded run of {module} to recount: run `benchmarks/mutate.py {module}` first", file=sys.stderr)
        return 1
    with open(OUT / f"{module}.csv") as f:
        status = {r["mutant"]: r["status"] for r in csv.DictReader(f)}
    run = {k: row[k] for k in ("seconds", "date", "commit", "tests", "workers")}
    n, killed, survivors, eq, score = record(module, status, run)
    print(f"{module} (recounted): {n} mutants, {killed} killed, {len(survivors)} survived, {eq} equivalent: score "
          f"{score:.3f}; survivors: {' '.join(survivors) or 'none'}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module", help="a module of lib/capshift, without .py (e.g. pps_check)")
    ap.add_argument("--tests", nargs="+", default=None, help="test files to run (default: see default_tests)")
    ap.add_argument("--work", default=None, help="scratch folder (default $TMPDIR/capshift-mutate/<module>)")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reapply-equivalents", action="store_true",
                    help="no run: recount the recorded run (benchmarks/mutation/<module>.csv) with equivalent.yml "
                         "as it is now (after reasons were added or a renumbering was mapped); the run's time, "
                         "commit and date stay those recorded")
    args = ap.parse_args(argv)
    module = args.module.removesuffix(".py")
    if not (ROOT / "lib" / "capshift" / f"{module}.py").exists():
        ap.error(f"lib/capshift/{module}.py does not exist")
    if args.reapply_equivalents:
        return reapply_equivalents(module)
    tests = args.tests or default_tests(module)
    if not tests:
        ap.error(f"no test file imports capshift.{module}: name them with --tests")
    work = Path(args.work) if args.work else Path(tempfile.gettempdir()) / "capshift-mutate" / module
    commit = git_commit()  # the code and tests copied now
    scratch_copy(work, module, tests)
    print(f"mutating lib/capshift/{module}.py against {' '.join(tests)} in {work}", flush=True)
    t0 = time.perf_counter()
    env = _env("")
    subprocess.run([str(MUTMUT), "run", "--max-children", str(args.max_children)], cwd=work, env=env)
    rechecked = recheck(work, module, tests, workers=args.max_children)
    if rechecked:
        print(f"timeouts and unchecked mutants run again outside mutmut: {rechecked}", flush=True)
    seconds = time.perf_counter() - t0
    status = results(work)
    if not any(s in KILLED for s in status.values()):
        # mutmut stops before mutating when the tests fail on the unmutated code (or when it crashed): nothing
        # was measured
        print(f"no mutant was killed: did mutmut run, and do the tests pass on the unmutated code in {work}? (see "
              "mutmut's output above); no score recorded", file=sys.stderr)
        return 1
    run = {"seconds": f"{seconds:.0f}", "date": str(date.today()), "commit": commit, "tests": " ".join(tests),
           "workers": args.max_children}
    n, killed, survivors, eq, score = record(module, status, run)
    print(f"{module}: {n} mutants, {killed} killed, {len(survivors)} survived, {eq} equivalent: score {score:.3f} "
          f"({seconds:.0f} s)")
    for name in survivors:
        print(subprocess.run([str(MUTMUT), "show", name], cwd=work, capture_output=True, text=True).stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
