"""The ``capshift`` console script (capshift.cli): one entry point for the grid and the book, with the earlier
``python -m capshift`` / ``python -m capshift.book`` forms as aliases."""
from __future__ import annotations

import importlib.metadata
import json
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
