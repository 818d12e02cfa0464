"""The ``capshift`` console script (capshift.cli): one entry point for the grid and the book, with the earlier
``python -m capshift`` / ``python -m capshift.book`` forms as aliases."""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from capshift import cli

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).with_name("capshift")


def test_the_console_script_is_installed_and_lists_every_subcommand():
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="capshift")
    assert entry.value == "capshift.cli:main"
    assert SCRIPT.exists(), "pip install -e . puts the capshift script next to the interpreter"
    out = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    for command in ("run", "summary", "build", "chapter", "check", "colab"):
        assert command in out.stdout


def test_book_commands_are_the_book_runners(capsys):
    """``capshift check`` validates the chapters' parameters exactly as ``python -m capshift.book check``."""
    args = ["check", "--profile", "ci", "--toc", str(ROOT / "_toc.yml"), "--only", "intro"]
    assert cli.main(args) == 0
    ours = capsys.readouterr().out
    alias = subprocess.run([sys.executable, "-m", "capshift.book", *args], capture_output=True, text=True,
                           timeout=120, cwd=ROOT)
    assert alias.returncode == 0 and alias.stdout == ours
    plan = json.loads(ours[:ours.rindex("}") + 1])
    assert "intro" in plan and plan["intro"]


def test_a_bad_book_parameter_is_one_line_and_status_2(capsys):
    args = ["check", "--profile", "ci", "--toc", str(ROOT / "_toc.yml"), "--only", "intro", "-p", "no_such", "1"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such" in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize("argv", [["run", "--datasets", "nope", "--results", "R"], ["frobnicate"]])
def test_grid_argument_errors_exit_2_without_traceback(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("capshift")
    assert not (tmp_path / "R").exists()


def test_python_m_capshift_is_the_command_line_under_its_own_name(tmp_path):
    out = subprocess.run([sys.executable, "-m", "capshift", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("usage: python -m capshift ")
    usage = out.stdout.split("\n\n")[0]
    assert "{run,summary,build,chapter,check,colab,estimate}" in usage
    bad = subprocess.run([sys.executable, "-m", "capshift", "run", "--datasets", "no-such-dataset", "--results",
                          str(tmp_path / "R")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "no-such-dataset" in bad.stderr


def test_help_and_unknown_dataset_errors_list_the_offline_datasets(capsys, tmp_path, monkeypatch):
    from capshift import datasets
    offline = datasets.names(offline=True)
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = re.sub(r"-\s+", "-", " ".join(capsys.readouterr().out.split()))  # argparse wraps at spaces and hyphens
    assert all(name in out for name in offline), out
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--datasets", "habermann", "--results", "R"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exc.value.code == 2 and "habermann" in err and all(name in err for name in offline)


def _estimate_files(tmp_path):
    import numpy as np
    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + rng.normal(scale=0.5, size=400) > 0).astype(int)
    V = pd.DataFrame(X, columns=["a", "b"]).assign(y=y)
    sio.dump(LogisticRegression().fit(V[["a", "b"]], y), tmp_path / "m.skops")
    V.iloc[:200].to_csv(tmp_path / "val.csv", index=False)
    V.iloc[200:].drop(columns="y").to_parquet(tmp_path / "stream.parquet", index=False)
    return ["estimate", "--model", str(tmp_path / "m.skops"), "--validation", str(tmp_path / "val.csv"),
            "--label", "y", "--methods", "Naive", "--no-progress"]


def test_estimate_writes_the_table_and_the_plot(tmp_path, capsys):
    args = _estimate_files(tmp_path) + ["--unlabelled", str(tmp_path / "stream.parquet"), "--chunk-size", "50",
                                        "--out", str(tmp_path / "t.parquet")]
    assert cli.main(args) == 0
    import pandas as pd
    t = pd.read_parquet(tmp_path / "t.parquet")
    assert len(t) == 4 and {"estimate", "lower", "upper", "pps", "alert"} <= set(t.columns)
    assert (tmp_path / "t.png").stat().st_size > 0
    assert "4 batches" in capsys.readouterr().out


def test_estimate_size_bounds_reach_the_diagnostic_and_the_interval(tmp_path, capsys):
    import pandas as pd
    base = _estimate_files(tmp_path) + ["--unlabelled", str(tmp_path / "stream.parquet"), "--chunk-size", "50"]

    def run(*extra):
        out = tmp_path / f"t{len(list(tmp_path.glob('t*.csv')))}.csv"
        assert cli.main(base + ["--out", str(out), *extra]) == 0
        return pd.read_csv(out, keep_default_na=False)

    default = run()
    assert not default["note"].str.contains("a random").any()  # batches of 50: under the default bounds
    capped = run("--pps-max-items", "30")
    assert capped["note"].str.contains("tested on 30 of the batch's 50 items \\(a random 30").all()
    assert (capped["pps_pvalue"] != default["pps_pvalue"]).any()
    narrow = run("--max-cal-size", "20")  # calibrated at 20 items: a wider interval for batches of 50
    assert ((narrow["upper"] - narrow["lower"]) > (default["upper"] - default["lower"])).all()
    same = run("--max-cal-size", "none", "--pps-max-items", "none", "--max-fit-items", "none")
    pd.testing.assert_frame_equal(same, default)  # no bound is reached by batches of 50 and a V of 200
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(base + ["--out", str(tmp_path / "x.csv"), "--pps-max-items", "5"])
    assert exc.value.code == 2 and "pps_max_items" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(base + ["--out", str(tmp_path / "x.csv"), "--max-cal-size", "lots"])
    assert exc.value.code == 2 and "'none'" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [["--unlabelled", "/nonexistent"], ["--unlabelled", "STREAM", "--label", "nope"]])
def test_estimate_bad_input_is_one_line_status_2_and_writes_nothing(bad, tmp_path, capsys):
    args = _estimate_files(tmp_path) + [a.replace("STREAM", str(tmp_path / "stream.parquet")) for a in bad]
    args += ["--out", str(tmp_path / "t.csv")]
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("capshift estimate: error:")  # one line, no usage block
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "t.png").exists()


def test_estimate_writes_the_books_example_and_runs_on_it(tmp_path, capsys):
    assert cli.main(["estimate", "--write-example", str(tmp_path / "ex")]) == 0
    command = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert command[:2] == ["capshift", "estimate"]
    assert cli.main(command[1:] + ["--no-progress"]) == 0
    import pandas as pd
    table = pd.read_csv(tmp_path / "ex" / "table.csv")
    assert table["batch"].nunique() == 20 and table["estimate"].between(0, 1).all()
    with pytest.raises(SystemExit) as exc:  # without the files' arguments: one line naming them
        cli.main(["estimate", "--model", str(tmp_path / "ex" / "model.skops")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--validation, --label, --unlabelled, --out are required" in err[0]


def test_the_earlier_experiment_alias_says_where_the_command_line_went():
    out = subprocess.run([sys.executable, "-m", "capshift.experiment", "run"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1 and "python -m capshift run" in out.stderr and "Traceback" not in out.stderr


def test_every_subcommand_comes_from_the_one_registry(monkeypatch, capsys):
    from capshift import cli

    assert "{run,summary,build,chapter,check,colab,estimate}" in cli.build_parser().format_usage()
    calls = []

    def add_hello(sub):
        sub.add_parser("hello").add_argument("--who", default="reader")

    def run_hello(args, parser):
        calls.append((args.who, parser.prog))
        return 7

    monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + ((add_hello, run_hello),))
    assert cli.main(["hello", "--who", "you"]) == 7 and calls == [("you", "capshift hello")]
    assert ",estimate,hello}" in cli.build_parser().format_usage()


# ---- what a user reads: the help of each command, recorded under tests/data/cli_help/ ----
HELP = Path(__file__).resolve().parent / "data" / "cli_help"
UPDATE_HELP = "CAPSHIFT_UPDATE_HELP"


@pytest.mark.parametrize("command", ["capshift", "run", "summary", "estimate"])
def test_the_help_text_is_the_recorded_copy(command, monkeypatch, capsys):
    """``capshift [command] --help`` at 100 columns is tests/data/cli_help/<command>.txt, word for word (the run
    command's help lists the offline datasets and the registered protocols: users read them there too).

    The copies were recorded with Python 3.11 (the CI's), whose argparse heads the options "options:"; COLUMNS fixes
    the wrapping on every terminal and colour is off (Python 3.14's argparse colours a terminal's help). After a
    deliberate change of a help string, rewrite the copies with
    ``CAPSHIFT_UPDATE_HELP=1 .venv/bin/pytest tests/test_cli.py -k help_text`` and review their diff."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("PYTHON_COLORS", "0")
    monkeypatch.setenv("NO_COLOR", "1")
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"] if command == "capshift" else [command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert str(ROOT) not in text and str(Path.home()) not in text  # nothing of this machine
    path = HELP / f"{command}.txt"
    if os.environ.get(UPDATE_HELP) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    recorded = path.read_text(encoding="utf-8") if path.exists() else None
    assert text == recorded, (f"`capshift {'' if command == 'capshift' else command + ' '}--help` differs from "
                              f"{path.relative_to(ROOT)}; if the change is deliberate, rewrite the copies with "
                              f"{UPDATE_HELP}=1 .venv/bin/pytest tests/test_cli.py -k help_text and review git diff")


def test_the_usage_line_names_the_program(capsys):
    assert cli.build_parser().prog == "capshift"
    with pytest.raises(SystemExit) as exc:
        cli.main(["summary", "--help"], prog="python -m capshift")
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("usage: python -m capshift summary [-h]")
    with pytest.raises(SystemExit) as exc:  # a subcommand is required
        cli.main([])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "capshift: error: the following arguments are required: command"


# ---- each parsed command carries its own runner and its own parser ----
@pytest.mark.parametrize("argv, run", [
    (["run", "--datasets", "iris.2", "--results", "R"], "run_grid_command"),
    (["summary", "--results", "R"], "run_grid_command"),
    (["build"], "book_command"), (["chapter", "intro"], "book_command"), (["check"], "book_command"),
    (["colab", "--out", "C"], "book_command"), (["estimate"], "estimate_command")])
def test_each_command_carries_its_runner_and_its_parser(argv, run):
    parser = cli.build_parser("tool")
    assert parser.prog == "tool"
    args = parser.parse_args(argv)
    assert args.command == argv[0] and args.run is getattr(cli, run)
    assert args.command_parser.prog == f"tool {argv[0]}"
    with pytest.raises(SystemExit):  # the command's own parser: its errors name its usage
        args.command_parser.parse_args(["--no-such-option"])


def test_the_groups_add_their_parsers_and_return_the_first():
    import argparse
    sub = argparse.ArgumentParser(prog="x").add_subparsers(dest="command")
    assert cli.add_grid_commands(sub) is sub.choices["run"] and list(sub.choices) == ["run", "summary"]
    assert cli.add_estimate_command(sub) is sub.choices["estimate"] and sub.choices["estimate"].prog == "x estimate"


def test_a_book_command_reaches_the_book_runner_under_its_name(monkeypatch):
    seen = []
    monkeypatch.setattr(cli.book, "run_command", lambda args: seen.append((args.cmd, args.only)) or 5)
    assert cli.main(["check", "--only", "intro"]) == 5 and seen == [("check", ["intro"])]


# ---- run: every option reaches run_grid, and the summary it prints ----
def _grid_frame(failed=()):
    """A run_grid result: 4 rows of 2 measures, 2 cells reused, 1 computed, ``failed`` listed."""
    import pandas as pd
    df = pd.DataFrame({"measure": ["accuracy", "accuracy", "f1", "accuracy"],
                       "method": ["Naive", "LEAP_ACC", "Naive", "Naive"], "ae": [0.12344, 0.2, 0.05, 0.1]})
    df.attrs["cells"] = {"reused": 2, "computed": 1, "failed": len(failed)}
    df.attrs["failed"] = list(failed)
    return df


_FAILED = [{"dataset": "iris.2", "classifier": "lr", "method": "LEAP_ACC", "reason": "timeout after 60 s"},
           {"dataset": "wine.1", "classifier": "knn", "method": "Naive", "reason": "ValueError: no"}]
_FAILED_LINES = ("2 failed cell(s), without results (re-run the same command to retry them):\n"
                 "  iris.2 / lr / LEAP_ACC: timeout after 60 s\n  wine.1 / knn / Naive: ValueError: no\n")


def _grid_stand_in(calls, result, raises, also):
    """A stand-in for run_grid or load_results: records its ``(args, kwargs)`` in ``calls``, raises ``raises``, or
    warns about failed cells as the real one does (and ``also`` as a UserWarning) and returns ``result``."""
    import warnings
    from capshift.grid import FailedCellsWarning

    def stand_in(*args, **kwargs):
        calls.append((args, kwargs))
        if raises is not None:
            raise raises
        warnings.warn("some cells failed", FailedCellsWarning)
        if also:
            warnings.warn(also, UserWarning)
        return result

    return stand_in


def _fake_run_grid(monkeypatch, result=None, raises=None, also=None):
    """Replace capshift.cli's run_grid by a recorder (:func:`_grid_stand_in`); the grid takes 12.34 s by a fake
    clock."""
    import types
    calls = []
    clock = iter([100.0, 112.34])
    monkeypatch.setattr(cli, "run_grid", _grid_stand_in(calls, result, raises, also))
    monkeypatch.setattr(cli, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    return calls


def _main_without_warnings(argv):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the failed cells are listed on stderr, not warned about as well
        return cli.main(argv)


def test_run_passes_its_defaults_to_run_grid_and_prints_the_summary(monkeypatch, capsys):
    from capshift.experiment import DEFAULT_METHODS
    calls = _fake_run_grid(monkeypatch, _grid_frame())
    assert _main_without_warnings(["run", "--datasets", "iris.2", "--results", "R"]) == 0
    ((args, kwargs),) = calls
    assert args == (["iris.2"], ["lr"], list(DEFAULT_METHODS), "R")
    assert repr(kwargs.pop("protocol")) == "UPP()"
    assert kwargs == dict(n_samples=1000, sample_size=100, measures=["accuracy"], seed=0, solver="active_set",
                          n_jobs=-1, backend="loky", scheduler=None, progress=True, cell_timeout=1200.0)
    out = capsys.readouterr()
    assert out.out == ("2 cells reused, 1 computed, 0 failed; 4 rows in R (12.3 s)\n"
                       "mean AE by method:\n"
                       "measure   method  \n"
                       "accuracy  LEAP_ACC    0.2000\n"
                       "          Naive       0.1117\n"  # (0.12344 + 0.1) / 2 = 0.11172
                       "f1        Naive       0.0500\n")
    assert out.err == ""


def test_run_passes_every_option_to_run_grid(monkeypatch, capsys):
    from capshift import datasets
    calls = _fake_run_grid(monkeypatch, _grid_frame())
    argv = ["run", "--datasets", "binary", "wine.1", "multiclass", "--classifiers", "knn", "svm", "--methods", "Naive",
            "--results", "out/R", "--protocol", "app", "--protocol-param", "n_prevalences", "11", "--n-samples", "7",
            "--sample-size", "50", "--measures", "accuracy", "f1", "--seed", "3", "--solver", "osqp", "--n-jobs", "2",
            "--backend", "dask", "--scheduler", "tcp://host:8786", "--cell-timeout", "60.5", "--no-progress"]
    assert _main_without_warnings(argv) == 0
    ((args, kwargs),) = calls
    binary, multiclass = datasets.names(task="binary", offline=True), datasets.names(task="multiclass", offline=True)
    assert binary[:2] == ["spambase", "cmc.1"] and multiclass[-2:] == ["image-seg", "cmc"]  # the offline ones
    assert args == (binary + ["wine.1"] + multiclass, ["knn", "svm"], ["Naive"], "out/R")
    assert repr(kwargs.pop("protocol")) == "APP(n_prevalences=11)"  # "11" read as YAML: the int 11
    assert kwargs == dict(n_samples=7, sample_size=50, measures=["accuracy", "f1"], seed=3, solver="osqp",
                          n_jobs=2, backend="dask", scheduler="tcp://host:8786", progress=False, cell_timeout=60.5)
    assert capsys.readouterr().out.startswith("2 cells reused, 1 computed, 0 failed; 4 rows in out/R (12.3 s)\n")


def test_run_lists_the_failed_cells_on_stderr_and_exits_1(monkeypatch, capsys):
    _fake_run_grid(monkeypatch, _grid_frame(_FAILED))
    assert _main_without_warnings(["run", "--datasets", "iris.2", "--results", "R"]) == 1
    out = capsys.readouterr()
    assert out.out.startswith("2 cells reused, 1 computed, 2 failed; 4 rows in R (12.3 s)\nmean AE by method:\n")
    assert out.err == _FAILED_LINES


def test_run_without_rows_prints_no_mean(monkeypatch, capsys):
    import pandas as pd
    empty = pd.DataFrame({"measure": [], "method": [], "ae": []})
    empty.attrs.update(cells={"reused": 0, "computed": 0, "failed": 0}, failed=[])
    _fake_run_grid(monkeypatch, empty)
    assert _main_without_warnings(["run", "--datasets", "iris.2", "--results", "R"]) == 0
    assert capsys.readouterr().out == "0 cells reused, 0 computed, 0 failed; 0 rows in R (12.3 s)\n"


@pytest.mark.parametrize("raises, extra, message", [
    (ValueError("unknown dataset 'x'"), [], "unknown dataset 'x'"),
    (TypeError("seed must be an int"), [], "seed must be an int"),
    (None, ["--protocol-param", "nope", "1"], "protocol 'upp' has no parameter(s) ['nope']; its parameters are none")])
def test_run_errors_are_the_run_parsers_one_line(raises, extra, message, monkeypatch, capsys):
    _fake_run_grid(monkeypatch, _grid_frame(), raises=raises)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--datasets", "iris.2", "--results", "R", *extra])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"capshift run: error: {message}"


def test_an_unknown_protocol_is_refused_by_the_parser(monkeypatch, capsys):
    calls = _fake_run_grid(monkeypatch, _grid_frame())
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--datasets", "iris.2", "--results", "R", "--protocol", "nope"])
    assert exc.value.code == 2 and not calls
    assert capsys.readouterr().err.splitlines()[-1].startswith(  # argparse's choices (not make_protocol's error)
        "capshift run: error: argument --protocol: invalid choice: 'nope' (choose from ")


@pytest.mark.parametrize("argv", [["run", "--datasets", "iris.2", "--results", "R"], ["summary", "--results", "R"]])
def test_only_the_failed_cells_warning_is_silenced(argv, monkeypatch, capsys):
    import pandas as pd
    import warnings
    empty = pd.DataFrame({"measure": [], "method": [], "ae": []})
    empty.attrs.update(cells={"reused": 0, "computed": 0, "failed": 0}, failed=[])
    _fake_run_grid(monkeypatch, empty, also="the solver is slow")
    _fake_load_results(monkeypatch, empty, also="the solver is slow")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli.main(argv) == 0
    assert [(w.category, str(w.message)) for w in caught] == [(UserWarning, "the solver is slow")]


def test_an_interrupted_run_says_where_its_cells_are_and_exits_130(monkeypatch, capsys):
    _fake_run_grid(monkeypatch, raises=KeyboardInterrupt())
    assert cli.main(["run", "--datasets", "iris.2", "--results", "R"]) == 130
    out = capsys.readouterr()
    assert out.out == "" and out.err == ("interrupted: the finished cells are in R (the cell in hand was not "
                                         "written); re-run the same command to resume\n")


# ---- summary: the table of a results directory ----
def _fake_load_results(monkeypatch, result=None, raises=None, also=None):
    """Replace capshift.cli's load_results by a recorder (:func:`_grid_stand_in`)."""
    calls = []
    monkeypatch.setattr(cli, "load_results", _grid_stand_in(calls, result, raises, also))
    return calls


def test_summary_prints_the_mean_ae_per_dataset_and_method(monkeypatch, capsys):
    import pandas as pd
    df = pd.DataFrame({"classifier": ["lr"] * 5, "measure": ["accuracy"] * 5,
                       "dataset": ["wine.1", "wine.1", "wine.1", "iris.2", "iris.2"],
                       "method": ["Naive", "Naive", "LEAP_ACC", "Naive", "LEAP_ACC"],
                       "ae": [0.1, 0.12345, 0.3, 0.05, 0.07]})
    df.attrs["failed"] = []
    seen = _fake_load_results(monkeypatch, df)
    assert _main_without_warnings(["summary", "--results", "R"]) == 0
    assert seen == [(("R",), {})]
    out = capsys.readouterr()
    assert out.out == ("method                        Naive  LEAP_ACC\n"  # datasets and methods in the results' order
                       "classifier measure  dataset                  \n"
                       "lr         accuracy wine.1   0.1117      0.30\n"  # (0.1 + 0.12345) / 2 = 0.111725
                       "                    iris.2   0.0500      0.07\n")
    assert out.err == ""


@pytest.mark.parametrize("failed, status", [([], 0), (_FAILED, 1)])
def test_summary_of_an_empty_directory_says_so(failed, status, monkeypatch, capsys):
    import pandas as pd
    empty = pd.DataFrame()
    empty.attrs["failed"] = list(failed)
    _fake_load_results(monkeypatch, empty)
    assert _main_without_warnings(["summary", "--results", "R"]) == status
    out = capsys.readouterr()
    assert out.out == "R: no results\n" and out.err == (_FAILED_LINES if failed else "")


@pytest.mark.parametrize("raises", [ValueError("no results directory R"), TypeError("no results directory R")])
def test_summary_errors_are_the_summary_parsers_one_line(raises, monkeypatch, capsys):
    _fake_load_results(monkeypatch, raises=raises)
    with pytest.raises(SystemExit) as exc:
        cli.main(["summary", "--results", "R"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "capshift summary: error: no results directory R"


# ---- estimate: the size bounds, the arguments that reach capshift.estimate, the files and the line it prints ----
@pytest.mark.parametrize("text, bound", [("none", None), (" None ", None), ("NONE", None), ("12", 12), (" 7 ", 7)])
def test_a_size_bound_is_an_integer_or_none(text, bound):
    assert cli._bound(text) == bound


def test_a_bad_size_bound_names_none(capsys):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected a positive integer or 'none', got 'lots'$"):
        cli._bound("lots")
    with pytest.raises(SystemExit) as exc:
        cli.main(["estimate", "--max-cal-size", "lots"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("capshift estimate: error: argument --max-cal-size: expected "
                                                        "a positive integer or 'none', got 'lots'")


def _fake_estimate(monkeypatch, raises=None):
    """Replace capshift.estimate.estimate and capshift.plots.estimate_band by recorders: 3 batches in 5 rows, batch 0
    alerted (in 2 rows), batches 0 and 2 PPS doubtful (in 4 rows)."""
    import types
    import pandas as pd
    from capshift import estimate
    calls = {}
    ok, doubt = "PPS ok", estimate.PPS_DOUBTFUL
    table = pd.DataFrame({"batch": [0, 0, 1, 2, 2], "method": ["Naive", "LEAP_ACC"] * 2 + ["Naive"],
                          "estimate": [0.5, 0.6, 0.9, 0.8, 0.85], "pps": [doubt, doubt, ok, doubt, doubt],
                          "alert": [True, True, False, False, False]})

    def fake_estimate(*args, **kwargs):
        calls["estimate"] = (args, kwargs)
        if raises is not None:
            raise raises
        return types.SimpleNamespace(table=table, measure="f1", threshold=0.7, seconds=1.26)

    def fake_band(*args):
        calls["band"] = args

        def savefig(path, **kwargs):
            calls["savefig"] = (path, kwargs)
            Path(path).write_bytes(b"png")

        return types.SimpleNamespace(savefig=savefig)

    monkeypatch.setattr(cli._estimate, "estimate", fake_estimate)
    monkeypatch.setattr(cli._plots, "estimate_band", fake_band)
    return table, calls


def _estimate_argv(tmp_path, out="t.csv"):
    return ["estimate", "--model", "m.skops", "--validation", "v.csv", "--label", "y", "--unlabelled", "u.parquet",
            "--out", str(tmp_path / out)]


def test_estimate_passes_its_defaults_and_writes_the_table_and_the_plot(tmp_path, monkeypatch, capsys):
    import pandas as pd
    table, calls = _fake_estimate(monkeypatch)
    assert cli.main(_estimate_argv(tmp_path, "t.CSV")) == 0
    args, kwargs = calls["estimate"]
    assert args == ("m.skops", "v.csv", "y", "u.parquet")
    assert kwargs == dict(methods=["O-LEAP_KDEy"], measure="accuracy", interval=0.95, threshold=None, min_batch=30,
                          chunk_size=None, timestamp=None, period=None, trust_pickle=False, trusted=None,
                          max_fit_items=2000, max_cal_size=2000, pps_max_items=10_000, random_state=0, progress=True)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "t.CSV"), table)  # .CSV: still CSV
    assert calls["band"][0] is table and calls["band"][1:] == ("f1", 0.7)
    assert calls["savefig"] == (tmp_path / "t.png", {"dpi": 120})
    assert capsys.readouterr().out == (f"3 batches, 5 rows -> {tmp_path / 't.CSV'}; plot -> {tmp_path / 't.png'}; "
                                       "1 batch(es) alerted, 2 PPS doubtful (1.3 s)\n")


def test_estimate_passes_every_option(tmp_path, monkeypatch, capsys):
    import pandas as pd
    table, calls = _fake_estimate(monkeypatch)
    out, plot = tmp_path / "a" / "b" / "t.PARQUET", tmp_path / "c" / "d" / "p.PNG"  # folders created, suffixes any case
    argv = _estimate_argv(tmp_path)[:-2] + [
        "--out", str(out), "--plot", str(plot), "--chunk-size", "50", "--timestamp", "ts", "--period", "W",
        "--methods", "Naive", "LEAP_ACC", "--measure", "f1", "--interval", "0.9", "--threshold", "0.7",
        "--min-batch", "10", "--trust-pickle", "--trust", "a.B", "c.D", "--max-fit-items", "none",
        "--max-cal-size", "500", "--pps-max-items", "300", "--seed", "4", "--no-progress"]
    assert cli.main(argv) == 0
    assert calls["estimate"][1] == dict(
        methods=["Naive", "LEAP_ACC"], measure="f1", interval=0.9, threshold=0.7, min_batch=10, chunk_size=50,
        timestamp="ts", period="W", trust_pickle=True, trusted=["a.B", "c.D"], max_fit_items=None, max_cal_size=500,
        pps_max_items=300, random_state=4, progress=False)
    pd.testing.assert_frame_equal(pd.read_parquet(out), table)
    import pyarrow.parquet as pq
    assert pq.read_schema(out).names == list(table.columns)  # no index column
    assert calls["savefig"] == (plot, {"dpi": 120}) and plot.read_bytes() == b"png"
    assert capsys.readouterr().out.startswith(f"3 batches, 5 rows -> {out}; plot -> {plot}; ")


def test_estimate_writes_into_an_existing_folder(tmp_path, monkeypatch, capsys):
    _fake_estimate(monkeypatch)
    (tmp_path / "d").mkdir()
    argv = _estimate_argv(tmp_path, "d/t.parquet") + ["--plot", str(tmp_path / "d" / "t.png")]
    assert cli.main(argv) == 0 and (tmp_path / "d" / "t.parquet").exists()
    assert cli.main(argv) == 0  # and again over its own files


@pytest.mark.parametrize("given, missing", [
    ([], "--model, --validation, --label, --unlabelled, --out"),
    (["--model", "m", "--label", "y"], "--validation, --unlabelled, --out"),
    (["--model", "m", "--validation", "v", "--label", "y", "--unlabelled", "u"], "--out"),
    (["--validation", "v", "--label", "y", "--unlabelled", "u", "--out", "t.csv"], "--model")])
def test_estimate_names_the_missing_arguments_in_one_line(given, missing, monkeypatch, capsys):
    _, calls = _fake_estimate(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(["estimate", *given])
    assert exc.value.code == 2 and not calls
    assert capsys.readouterr().err == (f"capshift estimate: error: the arguments {missing} are required (or "
                                       "--write-example DIR for the book's example)\n")


@pytest.mark.parametrize("out, extra, message", [
    ("t.txt", [], "--out must end in .csv or .parquet, got 't.txt'"),
    ("t.csv", ["--plot", "p.jpg"], "--plot must end in .png, got 'p.jpg'")])
def test_estimate_checks_the_files_suffixes_first(out, extra, message, tmp_path, monkeypatch, capsys):
    _, calls = _fake_estimate(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(_estimate_argv(tmp_path, out) + extra)
    assert exc.value.code == 2 and not calls
    assert capsys.readouterr().err == f"capshift estimate: error: {message}\n"


@pytest.mark.parametrize("raises", [ValueError("no column 'y'\nthe columns are a, b"), TypeError("no column 'y'"),
                                    FileNotFoundError("no column 'y'")])
def test_estimate_errors_are_their_first_line_and_write_nothing(raises, tmp_path, monkeypatch, capsys):
    _fake_estimate(monkeypatch, raises=raises)
    with pytest.raises(SystemExit) as exc:
        cli.main(_estimate_argv(tmp_path, "new/t.csv"))
    assert exc.value.code == 2
    assert capsys.readouterr().err == "capshift estimate: error: no column 'y'\n"
    assert not (tmp_path / "new").exists()


def test_write_example_prints_the_command_that_estimates_on_it(tmp_path, monkeypatch, capsys):
    import types
    seen = []

    def write(folder):
        seen.append(folder)
        return {"model": folder / "model.skops", "validation": folder / "validation.csv",
                "unlabelled": folder / "batches"}

    def example_stream(**kwargs):
        seen.append(kwargs)
        return types.SimpleNamespace(label="target", write=write)

    monkeypatch.setattr(cli._estimate, "example_stream", example_stream)
    ex = tmp_path / "ex"
    assert cli.main(["estimate", "--write-example", str(ex), "--seed", "5"]) == 0
    assert seen == [{"random_state": 5}, ex]
    assert capsys.readouterr().out == (
        f"the example of book/your_data.md is in {ex}; estimate on it with:\n"
        f"capshift estimate --model {ex / 'model.skops'} --validation {ex / 'validation.csv'} --label target "
        f"--unlabelled {ex / 'batches'} --out {ex / 'table.csv'}\n")
