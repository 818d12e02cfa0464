"""The resumable grid runner (capshift.grid): resume, cache keys, atomic files, the Dask backend, the CLI."""
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from capshift import cli, evaluation, experiment, grid
from capshift.experiment import run_experiment

GRID = dict(datasets=["haberman", "cmc.1"], classifiers=["lr", "knn"], methods=["Naive", "LEAP_ACC", "S-LEAP_CC"])
KW = dict(n_samples=12, sample_size=40, measures=("accuracy", "f1"), seed=2, progress=False)
N_CELLS = 2 * 2 * 3


def numbers(df):
    """Everything but the measured times."""
    return df.drop(columns="seconds")


def assert_same_numbers(got, want, what):
    """``got`` equals ``want`` to the last bit; else the message names the rows and columns that differ, with
    their values in full precision (a difference in h's predictions shows as "true" and "shift" together)."""
    assert list(got.columns) == list(want.columns) and len(got) == len(want), what
    differ = [(i, c, got[c].iat[i], want[c].iat[i]) for c in got.columns for i in range(len(got))
              if not (got[c].iat[i] == want[c].iat[i] or (pd.isna(got[c].iat[i]) and pd.isna(want[c].iat[i])))]
    rows = sorted({i for i, *_ in differ})
    assert not differ, (f"{what}: {len(rows)} rows differ from the in-process run, e.g. "
                        + "; ".join(f"row {i} ({got.dataset.iat[i]}, {got.classifier.iat[i]}, {got.method.iat[i]}, "
                                    f"sample {got['sample'].iat[i]}) {c}: {a!r} != {b!r}"
                                    for i, c, a, b in differ[:8]))


def cells(directory):
    return sorted(p.name for p in Path(directory).glob("*.parquet"))


class Interrupted(KeyboardInterrupt):
    """A simulated interruption of the run (an error in a cell is a failed cell instead, and the grid goes on)."""


class Counter:
    """Wraps grid.evaluate (one method on the contexts of a pair): counts computed cells, and raises after ``fail_after`` of them."""

    def __init__(self, fail_after=None):
        self.calls, self.fail_after, self.real = [], fail_after, evaluation.evaluate

    def __call__(self, ctx, name, *args):
        if self.fail_after is not None and len(self.calls) == self.fail_after:
            raise Interrupted("simulated interruption")
        self.calls.append((ctx[0].split.name, ctx[0].classifier, name))
        return self.real(ctx, name, *args)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run (in-process, n_jobs=1)."""
    d = tmp_path_factory.mktemp("reference")
    return d, grid.run_grid(**GRID, results=d, **KW)


def test_grid_is_run_experiment_per_pair(reference):
    _, df = reference
    assert len(df) == N_CELLS * 12 * 2
    assert list(dict.fromkeys(zip(df.dataset, df.classifier, df.method))) == [
        (d, c, m) for d in GRID["datasets"] for c in GRID["classifiers"] for m in GRID["methods"]]
    for d in GRID["datasets"]:
        for c in GRID["classifiers"]:
            one = run_experiment(d, c, GRID["methods"], **KW)
            got = df[(df.dataset == d) & (df.classifier == c)].reset_index(drop=True)
            pd.testing.assert_frame_equal(numbers(got), numbers(one), check_dtype=False)


def test_interrupted_run_resumes_to_the_same_frame(reference, tmp_path, monkeypatch):
    _, full = reference
    k = 4
    broken = Counter(fail_after=k)
    monkeypatch.setattr(grid, "evaluate", broken)
    with pytest.raises(Interrupted):
        grid.run_grid(**GRID, results=tmp_path, **KW)
    assert len(cells(tmp_path)) == k  # every finished cell is on disk at once, nothing else
    # no temporary file left, here or in the store of shared quantifiers
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".parquet", ".sha256", ".joblib")]
    kept = {p: p.stat().st_mtime_ns for p in tmp_path.glob("*.parquet")}

    again = Counter()
    monkeypatch.setattr(grid, "evaluate", again)
    resumed = grid.run_grid(**GRID, results=tmp_path, **KW)
    assert len(again.calls) == N_CELLS - k and not set(again.calls) & set(broken.calls)  # only the missing cells
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # finished cells are not rewritten
    pd.testing.assert_frame_equal(numbers(resumed), numbers(full))

    third = Counter()
    monkeypatch.setattr(grid, "evaluate", third)
    pd.testing.assert_frame_equal(grid.run_grid(**GRID, results=tmp_path, **KW), resumed)  # times too: all read
    assert third.calls == []


@pytest.mark.parametrize("change", [dict(seed=3), dict(n_samples=13), dict(sample_size=41), dict(measures=("f1",)),
                                    dict(protocol="app"), dict(solver="slsqp"), "version", "code",
                                    "method_params"])
def test_changed_parameter_recomputes(reference, tmp_path, monkeypatch, change):
    import shutil

    src, _ = reference
    for p in Path(src).glob("*.parquet*"):  # each cell and its checksum file
        shutil.copy(p, tmp_path)
    kw, grid_args = dict(KW), dict(GRID, datasets=["haberman"], classifiers=["lr"])
    if change == "version":
        monkeypatch.setattr(grid, "__version__", "999.0")
    elif change == "code":  # an edited method without a version bump: its cells are stale
        monkeypatch.setattr(grid, "code_fingerprint", lambda: "0123456789abcdef")
    elif change == "method_params":  # the registry now builds LEAP_ACC differently: a stale cell must not be used
        from capshift import registry
        spec = registry.METHODS["LEAP_ACC"]
        monkeypatch.setitem(registry.METHODS, "LEAP_ACC", type(spec)(spec.name, spec.cls, spec.family,
                                                                     {**spec.params, "solver": "slsqp"}))
    else:
        kw.update(change)
    counter = Counter()
    monkeypatch.setattr(grid, "evaluate", counter)
    before = set(cells(tmp_path))
    df = grid.run_grid(**grid_args, results=tmp_path, **kw)
    changed = ["LEAP_ACC"] if change == "method_params" else grid_args["methods"]
    assert sorted(c[2] for c in counter.calls) == sorted(changed)
    assert len(set(cells(tmp_path)) - before) == len(changed) and before <= set(cells(tmp_path))
    if isinstance(change, dict) and "n_samples" in change:
        assert df["sample"].max() == 12
    if isinstance(change, dict) and "measures" in change:
        assert set(df["measure"]) == {"f1"}


def test_cell_files_carry_their_key_and_a_foreign_or_damaged_file_is_recomputed(reference, tmp_path, monkeypatch):
    import shutil

    src, _ = reference
    for p in Path(src).glob("*.parquet*"):  # each cell and its checksum file
        shutil.copy(p, tmp_path)
    files = sorted(tmp_path.glob("haberman__lr__*.parquet"))
    assert len(files) == 3
    for p in files:
        meta = pq.read_schema(p).metadata[b"capshift.cell"]
        assert b'"seed": 2' in meta and b'"version"' in meta
    # a file whose stored key is not the one asked for (e.g. a hash collision or a renamed file) is not trusted
    naive = next(p for p in files if "__Naive__" in p.name)
    other = next(p for p in tmp_path.glob("cmc.1__lr__Naive__*.parquet"))
    shutil.copy(other, naive)
    Path(f"{naive}.sha256").write_text(f"{hashlib.sha256(naive.read_bytes()).hexdigest()}  {naive.name}\n")  # intact
    damaged = next(p for p in files if "__LEAP_ACC__" in p.name)
    damaged.write_bytes(damaged.read_bytes()[:100])
    counter = Counter()
    monkeypatch.setattr(grid, "evaluate", counter)
    with pytest.warns(RuntimeWarning, match="ignoring results file .*__LEAP_ACC__.*checksum.*it is recomputed"):
        grid.run_grid(["haberman"], ["lr"], GRID["methods"], tmp_path, **KW)
    assert sorted(c[2] for c in counter.calls) == ["LEAP_ACC", "Naive"]
    assert pq.read_table(damaged).num_rows == 12 * 2


def test_cells_are_written_atomically(tmp_path, monkeypatch):
    real_write, real_replace = pq.write_table, os.replace
    replaced = []

    def replace(src, dst):  # the final name appears only by a rename of a complete file in the same directory
        assert Path(src).parent == Path(dst).parent and not Path(dst).exists()
        if str(dst).endswith(".parquet"):
            assert pq.read_table(src).num_rows > 0
            replaced.append(Path(dst).name)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, **KW)
    assert replaced == cells(tmp_path)

    def half_write(table, where, **kw):  # the process dies half-way through writing the second file
        if half_write.n == 1:
            Path(where).write_bytes(b"PAR1 partial")
            raise Interrupted("killed while writing")
        half_write.n += 1
        return real_write(table, where, **kw)

    half_write.n = 0
    monkeypatch.setattr(pq, "write_table", half_write)
    with pytest.raises(Interrupted):
        grid.run_grid(["cmc.1"], ["lr"], ["Naive", "LEAP_ACC"], tmp_path, **KW)
    assert len(cells(tmp_path)) == 2  # haberman's cell and cmc.1's first; no partial file under a final name
    assert not [p for p in tmp_path.iterdir() if p.suffix not in (".parquet", ".sha256")]  # the temporary file is gone
    monkeypatch.setattr(pq, "write_table", real_write)
    counter = Counter()
    monkeypatch.setattr(grid, "evaluate", counter)
    grid.run_grid(["cmc.1"], ["lr"], ["Naive", "LEAP_ACC"], tmp_path, **KW)
    assert [c[2] for c in counter.calls] == ["LEAP_ACC"]


def test_load_results(reference, tmp_path):
    src, full = reference
    df = grid.load_results(src)
    assert len(df) == len(full) and {"seed", "n_samples", "protocol", "measures", "version"} <= set(df.columns)
    assert set(df["seed"]) == {2} and set(df["measures"]) == {"accuracy,f1"}
    # where the time went: per cell (fit + predict) and per (dataset, classifier) pair (shared preparation)
    assert (df["cell_seconds"] > 0).all() and (df["prepare_seconds"] > 0).all()
    assert df.groupby(["dataset", "classifier"])["prepare_seconds"].nunique().eq(1).all()
    key = ["dataset", "classifier", "method", "measure", "sample"]
    a = df[full.columns].sort_values(key, ignore_index=True)
    b = full.sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(a, b)
    assert grid.load_results(src, seed=3).empty
    assert len(grid.load_results(src, classifier="knn", method=["Naive", "LEAP_ACC"])) == 2 * 2 * 12 * 2
    (Path(src) / ".stray.parquet.123.tmp").write_bytes(b"x")  # an interrupted write is not a result
    assert len(grid.load_results(src)) == len(full)


def test_dask_local_cluster_gives_the_loky_frame(reference, tmp_path):
    """Same numbers to the last bit in-process (n_jobs=1), in 2 loky processes and on a Dask LocalCluster with 2
    worker processes: every task runs with one BLAS thread (without that, LEAP's solutions differ by ~1e-10
    between the main process and single-threaded workers)."""
    from distributed import Client, LocalCluster

    small = dict(GRID, methods=["Naive", "LEAP_ACC"])
    _, full = reference
    serial = full[full.method.isin(small["methods"])].reset_index(drop=True)
    t0 = time.perf_counter()
    loky = grid.run_grid(**small, results=tmp_path / "loky", n_jobs=2, **KW)
    t_loky = time.perf_counter() - t0
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        t0 = time.perf_counter()
        dask = grid.run_grid(**small, results=tmp_path / "dask", backend="dask", scheduler=client, **KW)
        t_dask = time.perf_counter() - t0
        # the tasks ran on the cluster's worker processes, not here
        assert sum(client.run(lambda: __import__("sys").modules.get("capshift.grid") is not None).values()) >= 1
        by_address = grid.run_grid(**small, results=tmp_path / "addr", backend="dask",
                                   scheduler=cluster.scheduler_address, **KW)
    for backend, other in (("loky", loky), ("dask", dask), ("dask by address", by_address)):
        assert_same_numbers(numbers(other), numbers(serial), backend)
    assert cells(tmp_path / "dask") == cells(tmp_path / "loky")
    print(f"loky (2 processes) {t_loky:.1f} s, dask LocalCluster (2 workers) {t_dask:.1f} s")


def test_ray_backend_runs_or_says_it_is_missing(tmp_path):
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="backend='ray' needs Ray"):
            grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, backend="ray", **KW)
        return
    df = grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path / "ray", backend="ray", n_jobs=2, **KW)
    ref = grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path / "ref", **KW)
    pd.testing.assert_frame_equal(numbers(df), numbers(ref))


@pytest.mark.parametrize("argv,message", [
    ([], "command"),
    (["run", "--results", "R"], "--datasets"),
    (["run", "--datasets", "haberman"], "--results"),
    (["run", "--datasets", "nope", "--results", "R"], "unknown dataset"),
    (["run", "--datasets", "haberman", "--classifiers", "xgb", "--results", "R"], "unknown classifier"),
    (["run", "--datasets", "haberman", "--methods", "LEAP_XYZ", "--results", "R"], "unknown method"),
    (["run", "--datasets", "haberman", "--n-samples", "abc", "--results", "R"], "--n-samples"),
    (["run", "--datasets", "haberman", "--n-samples", "0", "--results", "R"], "n_samples"),
    (["run", "--datasets", "haberman", "--measures", "nope", "--results", "R"], "measure"),
    (["run", "--datasets", "haberman", "--backend", "spark", "--results", "R"], "backend"),
    (["run", "--datasets", "haberman", "--scheduler", "tcp://x:1", "--results", "R"], "scheduler"),
    (["run", "--datasets", "haberman", "--n-jobs", "0", "--results", "R"], "n_jobs"),
    (["run", "--datasets", "haberman", "--protocol", "uniform", "--results", "R"], "protocol"),
    (["summary", "--results", "/nonexistent/capshift-results"], "not a directory"),
    (["run", "--datasets", "haberman", "--cell-timeout", "0", "--results", "R"], "cell_timeout"),
    (["run", "--datasets", "haberman", "--cell-timeout", "soon", "--results", "R"], "--cell-timeout"),
])
def test_cli_argument_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.strip().splitlines()[-1].count("error:") == 1
    assert not (tmp_path / "R").exists() or not list((tmp_path / "R").iterdir())


def test_cli_runs_and_resumes(tmp_path):
    cmd = [sys.executable, "-m", "capshift", "run", "--datasets", "haberman", "--classifiers", "lr",
           "--methods", "Naive", "LEAP_ACC", "--results", str(tmp_path / "res"), "--n-samples", "12",
           "--sample-size", "40", "--seed", "2", "--measures", "accuracy", "f1", "--n-jobs", "1", "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "0 cells reused, 2 computed, 0 failed" in out.stdout and "RuntimeWarning" not in out.stderr
    df = grid.load_results(tmp_path / "res")
    ref = grid.run_grid(["haberman"], ["lr"], ["Naive", "LEAP_ACC"], None, **KW)
    key = ["method", "measure", "sample"]
    pd.testing.assert_frame_equal(numbers(df[ref.columns].sort_values(key, ignore_index=True)),
                                  numbers(ref.sort_values(key, ignore_index=True)))
    summary = subprocess.run([sys.executable, "-m", "capshift", "summary", "--results",
                              str(tmp_path / "res")], capture_output=True, text=True, timeout=120)
    assert summary.returncode == 0 and "LEAP_ACC" in summary.stdout and "haberman" in summary.stdout


def test_the_cli_runs_every_registered_protocol_and_keys_cells_by_it(tmp_path):
    from capshift import protocols

    res = tmp_path / "res"
    base = [sys.executable, "-m", "capshift", "run", "--datasets", "haberman", "--methods", "Naive", "--results",
            str(res), "--n-samples", "6", "--sample-size", "30", "--n-jobs", "1", "--no-progress"]
    for name in protocols.names("pps"):
        out = subprocess.run(base + ["--protocol", name], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "0 cells reused, 1 computed" in out.stdout, out.stderr
    again = subprocess.run(base + ["--protocol", "npp"], capture_output=True, text=True, timeout=120)
    assert "1 cells reused, 0 computed" in again.stdout  # resumable: the npp cell is on disk under its own key
    for name in protocols.names("pps"):
        df = grid.load_results(res, protocol=name)
        ref = grid.run_grid(["haberman"], ["lr"], ["Naive"], None, protocol=name, n_samples=6, sample_size=30,
                            progress=False)
        assert np.array_equal(df.sort_values("sample")["true"], ref.sort_values("sample")["true"])
    bad = subprocess.run(base + ["--protocol", "uniform"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "invalid choice: 'uniform'" in bad.stderr and "npp" in bad.stderr


# ---------------------------------------------------------------------------------------- integrity (issue 18)
SMALL = dict(datasets=["haberman"], classifiers=["lr"], methods=["Naive", "LEAP_KDEy"])


def test_an_interrupt_a_dependency_swallows_aborts_the_cell_and_the_run(tmp_path, monkeypatch):
    """Ctrl-C while KDEy's surrogate MLP trains: scikit-learn catches it and only warns; the runner must still stop,
    write nothing of that pair, and a resume must give the numbers of an uninterrupted run."""
    import signal

    from sklearn.neural_network import MLPClassifier

    clean = grid.run_grid(**SMALL, results=tmp_path / "clean", **KW)
    real = MLPClassifier._backprop
    calls = []

    def interrupted_backprop(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 5:  # a few mini-batches in: the user presses Ctrl-C
            os.kill(os.getpid(), signal.SIGINT)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(MLPClassifier, "_backprop", interrupted_backprop)
    with pytest.warns(UserWarning, match="Training interrupted by user"), pytest.raises(KeyboardInterrupt):
        grid.run_grid(**SMALL, results=tmp_path / "run", **KW)
    assert len(calls) >= 5 and cells(tmp_path / "run") == []  # the half-trained surrogate reached no cell
    assert not list((tmp_path / "run").rglob("*.joblib"))  # nor the store of shared quantifiers
    monkeypatch.setattr(MLPClassifier, "_backprop", real)
    resumed = grid.run_grid(**SMALL, results=tmp_path / "run", **KW)
    assert resumed.attrs["cells"] == {"reused": 0, "computed": 2, "failed": 0}
    pd.testing.assert_frame_equal(numbers(resumed), numbers(clean), check_exact=True)


def test_a_hanging_cell_is_cut_at_its_budget_recorded_and_retried(reference, tmp_path, monkeypatch, capsys):
    real = evaluation.evaluate

    def hangs_on_leap_acc(ctx, name, *args):
        if name == "LEAP_ACC" and ctx[0].split.name == "haberman":
            time.sleep(3600)
        return real(ctx, name, *args)

    monkeypatch.setattr(grid, "evaluate", hangs_on_leap_acc)
    small = dict(GRID, classifiers=["lr"])
    t0 = time.perf_counter()
    with pytest.warns(grid.FailedCellsWarning, match="haberman / lr / LEAP_ACC: time budget exceeded"):
        df = grid.run_grid(**small, results=tmp_path, cell_timeout=1.5, **KW)
    assert time.perf_counter() - t0 < 60
    assert df.attrs["cells"] == {"reused": 0, "computed": 5, "failed": 1}
    assert [(f["dataset"], f["classifier"], f["method"]) for f in df.attrs["failed"]] == [("haberman", "lr", "LEAP_ACC")]
    df.to_parquet(tmp_path / "elsewhere.pq")  # the report is plain data: the frame still saves
    assert not ((df.dataset == "haberman") & (df.method == "LEAP_ACC")).any()  # no number for a failed cell
    _, full = reference
    others = full[(full.classifier == "lr") & ~((full.dataset == "haberman") & (full.method == "LEAP_ACC"))]
    pd.testing.assert_frame_equal(numbers(df), numbers(others.reset_index(drop=True)))
    (record,) = tmp_path.glob("*.failed.json")
    assert "time budget exceeded" in record.read_text()
    # load_results and the summary command report it
    with pytest.warns(grid.FailedCellsWarning, match="LEAP_ACC"):
        loaded = grid.load_results(tmp_path)
    assert len(loaded.attrs["failed"]) == 1 and len(loaded) == len(df)
    assert cli.main(["summary", "--results", str(tmp_path)]) == 1
    assert "haberman / lr / LEAP_ACC: time budget exceeded" in capsys.readouterr().err
    # a damaged failure record is named, not silently dropped
    good = record.read_text()
    record.write_text(good[:20])
    with pytest.warns(RuntimeWarning, match="ignoring failure record"):
        assert grid.load_results(tmp_path).attrs["failed"] == []
    record.write_text(good)
    # a raising cell is a failed cell too, with its reason; a re-run retries only the failed cells
    monkeypatch.setattr(grid, "evaluate", Counter())
    again = grid.run_grid(**small, results=tmp_path, cell_timeout=1.5, **KW)
    assert grid.evaluate.calls == [("haberman", "lr", "LEAP_ACC")]
    assert again.attrs["cells"] == {"reused": 5, "computed": 1, "failed": 0}
    assert not list(tmp_path.glob("*.failed.json"))  # the record goes when the cell is done
    pd.testing.assert_frame_equal(numbers(again), numbers(full[full.classifier == "lr"].reset_index(drop=True)))


def test_a_raising_cell_is_recorded_with_its_reason(tmp_path, monkeypatch):
    real = evaluation.evaluate

    def raises(ctx, name, *args):
        if name == "Naive":
            raise RuntimeError("solver diverged")
        return real(ctx, name, *args)

    monkeypatch.setattr(grid, "evaluate", raises)
    with pytest.warns(grid.FailedCellsWarning, match="Naive: RuntimeError: solver diverged"):
        df = grid.run_grid(["haberman"], ["lr"], ["Naive", "LEAP_ACC"], tmp_path, **KW)
    assert set(df.method) == {"LEAP_ACC"} and [f["reason"] for f in df.attrs["failed"]] == ["RuntimeError: solver diverged"]


def test_sigkill_mid_run_then_resume_gives_the_uninterrupted_numbers(tmp_path):
    """The process is killed (SIGKILL: no handler runs) after its first cells are on disk; the same command
    resumes, reusing them, and the results are those of an uninterrupted run."""
    import signal

    args = ["--datasets", "haberman", "cmc.1", "wdbc", "--classifiers", "lr", "--methods", "Naive", "LEAP_ACC",
            "S-LEAP_CC", "--n-samples", "12", "--sample-size", "40", "--seed", "2", "--measures", "accuracy", "f1",
            "--n-jobs", "1", "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "capshift", "run", *args, "--results",
                             str(tmp_path / "res")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while len(cells(tmp_path / "res")) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(cells(tmp_path / "res"))
    assert 0 < done < 9, "the kill landed mid-run"
    out = subprocess.run([sys.executable, "-m", "capshift", "run", *args, "--results",
                          str(tmp_path / "res")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    reused = int(out.stdout.split(" cells reused")[0])
    assert done - 1 <= reused <= done  # a cell half-written when killed is not a cell (its checksum is absent)
    ref = grid.run_grid(["haberman", "cmc.1", "wdbc"], ["lr"], ["Naive", "LEAP_ACC", "S-LEAP_CC"], None, **KW)
    df = grid.load_results(tmp_path / "res")
    key = ["dataset", "method", "measure", "sample"]
    pd.testing.assert_frame_equal(numbers(df[ref.columns].sort_values(key, ignore_index=True)),
                                  numbers(ref.sort_values(key, ignore_index=True)))


def test_every_changed_byte_of_a_cell_is_detected(tmp_path):
    grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, **KW)
    (cell,) = tmp_path.glob("*.parquet")
    checksum = Path(f"{cell}.sha256")
    for path in (cell, checksum):
        original = path.read_bytes()
        for offset in range(len(original)):
            flipped = bytearray(original)
            flipped[offset] ^= 0x20
            path.write_bytes(bytes(flipped))
            with pytest.warns(RuntimeWarning, match="ignoring results file"):
                assert grid._read_cell(cell) is None, f"byte {offset} of {path.name} changed unnoticed"
        path.write_bytes(original)
    assert grid._read_cell(cell) is not None


def test_files_follow_the_umask_and_summary_recomputes_nothing(tmp_path):
    old = os.umask(0o022)
    try:
        grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, **KW)
    finally:
        os.umask(old)
    for p in tmp_path.iterdir():
        assert p.stat().st_mode & 0o777 == 0o644, p.name
    (cell,) = tmp_path.glob("*.parquet")
    cell.write_bytes(cell.read_bytes()[:-1] + b"\x00")
    with pytest.warns(RuntimeWarning, match="it is left out") as rec:
        assert grid.load_results(tmp_path).empty
    assert not any("recomputed" in str(w.message) for w in rec)


@pytest.mark.parametrize("where", ["file", "below_file", "uncreatable", "read_only"])
def test_a_bad_results_path_is_refused_before_any_work(tmp_path, monkeypatch, capsys, where):
    (tmp_path / "f").write_text("x")
    path = {"file": tmp_path / "f", "below_file": tmp_path / "f" / "results", "uncreatable": Path("/proc/capshift"),
            "read_only": tmp_path / "ro"}[where]
    if where == "read_only":
        path.mkdir()
        path.chmod(0o500)
        if os.access(path, os.W_OK):  # root ignores permission bits: a read-only file system instead
            path = Path("/sys/kernel")
    counter = Counter()
    monkeypatch.setattr(grid, "evaluate", counter)
    with pytest.raises(ValueError, match="results="):
        grid.run_grid(["haberman"], ["lr"], ["Naive"], path, **KW)
    assert counter.calls == []
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--datasets", "haberman", "--methods", "Naive", "--results", str(path), "--no-progress"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and "results=" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("budget, exc", [(0, ValueError), (-1, ValueError), (float("nan"), ValueError),
                                         ("10", TypeError), (True, TypeError)])
def test_a_bad_time_budget_is_refused(tmp_path, budget, exc):
    with pytest.raises(exc, match="cell_timeout"):
        grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, cell_timeout=budget, **KW)


def _sleep_guarded(budget):
    """In a loky worker: is the budget enforced there (tasks run in the worker process's main thread)?"""
    t0 = time.perf_counter()
    try:
        with grid._guarded(budget):
            time.sleep(30)
    except grid.CellTimeout:
        return "timeout", time.perf_counter() - t0
    return "finished", time.perf_counter() - t0


def test_the_budget_holds_in_loky_workers():
    from joblib import Parallel, delayed
    out = Parallel(n_jobs=2, backend="loky")(delayed(_sleep_guarded)(0.5) for _ in range(2))
    assert all(kind == "timeout" and secs < 10 for kind, secs in out), out


def test_progress_reports_reused_computed_and_failed(tmp_path, capsys):
    grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, **{**KW, "progress": True})
    err = capsys.readouterr().err
    assert "0 cell(s) reused, 1 to compute" in err and "cells: 0 reused, 1 computed, 0 failed" in err
    grid.run_grid(["haberman"], ["lr"], ["Naive"], tmp_path, **{**KW, "progress": True})
    assert "cells: 1 reused, 0 computed, 0 failed" in capsys.readouterr().err


def test_the_code_fingerprint_leaves_out_only_modules_no_cell_imports(tmp_path, monkeypatch):
    import grimp

    graph = grimp.build_graph("capshift")
    needed = {m.rpartition(".")[2] for m in graph.find_upstream_modules("capshift.grid")} | {"grid"}
    assert not needed & set(grid.NOT_IN_CELLS), "a module the grid imports can change a cell: fingerprint it"
    assert {m.rpartition(".")[2] for m in graph.modules} >= set(grid.NOT_IN_CELLS)  # no stale names
    # the fingerprint reads the files: an edit of a cell's module changes it, an edit of the presentation does not
    root = tmp_path / "capshift"
    shutil.copytree(Path(grid.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__", "data"))
    monkeypatch.setattr(grid, "__file__", str(root / "grid.py"))
    fingerprint = grid.code_fingerprint.__wrapped__  # without its cache (one value per process)
    before = fingerprint()
    (root / "presentation.py").write_text((root / "presentation.py").read_text() + "\n# a comment\n")
    assert fingerprint() == before
    (root / "leap.py").write_text((root / "leap.py").read_text() + "\n# a comment\n")
    assert fingerprint() != before


def test_the_cli_runs_a_dataset_shift_family_resumably_with_its_parameters(tmp_path):
    # a dataset-shift family through the same grid: cells keyed by the family and its changed parameters, the rows
    # those of run_grid with the same Protocol object, each sample with its condition (degree), resumable
    from capshift import protocols

    res = tmp_path / "res"
    cmd = [sys.executable, "-m", "capshift", "run", "--datasets", "marketing", "--methods", "Naive", "ATC",
           "--results", str(res), "--protocol", "local-covariate", "--protocol-param", "repeats", "1",
           "--protocol-param", "train_size", "400", "--n-samples", "2", "--sample-size", "40", "--n-jobs", "1",
           "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "0 cells reused, 2 computed" in out.stdout, out.stderr
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert "2 cells reused, 0 computed" in again.stdout
    proto = protocols.make_protocol("local-covariate", repeats=1, train_size=400)
    df = grid.load_results(res, protocol=proto.key())
    ref = grid.run_grid(["marketing"], ["lr"], ["Naive", "ATC"], None, protocol=proto, n_samples=2, sample_size=40,
                        progress=False)
    key = ["method", "sample"]
    assert len(df) == len(ref) == 2 * 11 * 2  # 11 test prevalences x 2 samples, per method
    pd.testing.assert_frame_equal(df[ref.columns].sort_values(key, ignore_index=True)[["true", "predicted", "degree"]],
                                  ref.sort_values(key, ignore_index=True)[["true", "predicted", "degree"]])
    assert sorted(df["degree"].unique()) == sorted(np.round(np.arange(0.25, 0.751, 0.05) - 0.5, 2))
    # a shift family refuses the LEAP datasets, naming the ones it runs on
    bad = subprocess.run(cmd[:5] + ["haberman"] + cmd[6:], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "marketing" in bad.stderr


def test_the_cli_runs_every_dataset_shift_family_resumably(tmp_path):
    # each registered shift family from the command line, small: computed once, then read back
    from capshift import protocols

    base = [sys.executable, "-m", "capshift", "run", "--datasets", "marketing", "--methods", "Naive", "--results",
            str(tmp_path), "--protocol-param", "repeats", "1", "--protocol-param", "train_size", "300",
            "--n-samples", "1", "--sample-size", "30", "--n-jobs", "1", "--no-progress"]
    for name in protocols.names("shift"):
        first = subprocess.run(base + ["--protocol", name], capture_output=True, text=True, timeout=300)
        assert first.returncode == 0 and "0 cells reused, 1 computed" in first.stdout, (name, first.stderr)
        again = subprocess.run(base + ["--protocol", name], capture_output=True, text=True, timeout=300)
        assert "1 cells reused, 0 computed" in again.stdout, (name, again.stderr)
    df = grid.load_results(tmp_path)
    assert df["degree"].notna().all() and df["trial"].nunique() > 1
