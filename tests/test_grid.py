"""Fast checks of capshift.grid's cells on disk (tests/test_runner.py runs whole grids; this file pins the parts).

Pinned here: the cache key's fields and the file name made of it, the code fingerprint as a hash of the source
files, a cell written and read back unchanged, a damaged or foreign cell recomputed with the warning that says
so, failures (a raising cell, a failed preparation, the time budget) recorded, reported and retried, the
quantifier store, load_results' selection, run_cells' and run_selection_study's keys and checks, and the
argument checks' messages. Every run is one tiny dataset (haberman) with Naive and n_samples <= 3.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from capshift import __version__, evaluation, grid, protocols, registry, selection
from capshift.evaluation import RESULT_COLUMNS
from capshift.leap import DEFAULT_SOLVER

KW = dict(n_samples=3, sample_size=20, progress=False)


def run(results, methods=("Naive",), **kw):
    return grid.run_grid(["haberman"], ["lr"], list(methods), results, **{**KW, **kw})


def assert_at_callers_line(w):
    """The warning points at the test's call (its stacklevel). Under mutmut a trampoline adds a frame to every
    call of the mutated module, so there only "not inside capshift.grid" is checked."""
    assert Path(w.filename).resolve() != Path(grid.__file__).resolve(), w.filename
    if not hasattr(grid, "mutants_x_run_grid__mutmut"):
        assert w.filename == __file__, w.filename


def only(paths):
    (p,) = paths
    return p


# ---- the cache key and the file name ----
def test_cell_key_holds_every_parameter_that_changes_a_number():
    key = grid.cell_key("haberman", "knn", "L-CBPE-authors", protocol="app", n_samples=np.int64(7),
                        sample_size=12.0, measures=("f1", "accuracy"), seed=np.int32(5), solver="highs")
    assert key == {"dataset": "haberman", "classifier": "knn", "method": "L-CBPE-authors",
                   "method_spec": "capshift.baselines.CBPE(calibration='lascal', table='column-normalised')",
                   "protocol": "app", "n_samples": 7, "sample_size": 12, "measures": ["f1", "accuracy"], "seed": 5,
                   "solver": "highs", "version": __version__, "code": grid.code_fingerprint()}
    assert tuple(key) == grid.KEY_FIELDS
    assert all(type(key[f]) is int for f in ("n_samples", "sample_size", "seed"))
    default = grid.cell_key("haberman", "lr", "Naive")
    assert default == {"dataset": "haberman", "classifier": "lr", "method": "Naive",
                       "method_spec": "capshift.baselines.Naive()", "protocol": "upp", "n_samples": 1000,
                       "sample_size": 100, "measures": ["accuracy"], "seed": 0, "solver": DEFAULT_SOLVER,
                       "version": __version__, "code": grid.code_fingerprint()}
    # a protocol with other parameters than its defaults is another key
    proto = protocols.make_protocol("app")
    params = proto.get_params()
    name, value = next(iter(params.items()))
    other = protocols.make_protocol("app", **{name: value + 1 if isinstance(value, int) else value})
    assert grid.cell_key("haberman", "lr", "Naive", protocol=other)["protocol"] == other.key()


def test_the_file_name_is_the_named_fields_and_a_hash_of_the_whole_key():
    key = grid.cell_key("haberman", "lr", "Naive", n_samples=3)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    assert grid._file_name(key) == f"haberman__lr__Naive__{digest}.parquet"
    assert grid._file_name(dict(reversed(list(key.items())))) == grid._file_name(key)  # equal keys, equal names
    names = {grid._file_name(key)}
    for field, value in [("dataset", "cmc.1"), ("classifier", "knn"), ("method", "LEAP_ACC"), ("method_spec", "x"),
                         ("protocol", "app"), ("n_samples", 4), ("sample_size", 21), ("measures", ["f1"]),
                         ("seed", 1), ("solver", "highs"), ("version", "9"), ("code", "0" * 16)]:
        names.add(grid._file_name({**key, field: value}))
    assert len(names) == 13  # any field changes the name
    odd = {**key, "dataset": "a b/c..d", "classifier": "é-x_y", "method": "RCA*"}
    assert re.fullmatch(r"a_b_c\.\.d___-x_y__RCA___[0-9a-f]{16}\.parquet", grid._file_name(odd))
    assert grid._file_name({**odd, "dataset": "ab\\/:c"}).startswith("ab_c__")


def test_the_code_fingerprint_is_a_hash_of_the_cell_modules_source(tmp_path, monkeypatch):
    root = tmp_path / "capshift"
    (root / "sub").mkdir(parents=True)
    files = {"grid.py": b"# grid\n", "a.py": b"x = 1\n", "cli.py": b"# not in cells\n", "plots.py": b"# no\n",
             "sub/cli.py": b"# a subpackage's cli is in cells\n", "notes.txt": b"not python\n"}
    for name, text in files.items():
        (root / name).write_bytes(text)
    monkeypatch.setattr(grid, "__file__", str(root / "grid.py"))
    fingerprint = grid.code_fingerprint.__wrapped__
    want = hashlib.sha256()
    for name in ("a.py", "grid.py", "sub/cli.py"):  # sorted paths, each path then its bytes
        want.update(name.encode())
        want.update(files[name])
    assert fingerprint() == want.hexdigest()[:16]
    (root / "cli.py").write_bytes(b"# edited\n")
    assert fingerprint() == want.hexdigest()[:16]
    (root / "a.py").write_bytes(b"x = 2\n")
    assert fingerprint() != want.hexdigest()[:16]
    (root / "a.py").write_bytes(files["a.py"])
    (root / "a.py").rename(root / "b.py")  # the same bytes under another name
    assert fingerprint() != want.hexdigest()[:16]
    assert grid.code_fingerprint() == grid.code_fingerprint() and re.fullmatch("[0-9a-f]{16}", grid.code_fingerprint())


# ---- one cell on disk ----
def test_a_cell_written_is_read_back_equal(tmp_path):
    df = run(None)
    key = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    path = tmp_path / grid._file_name(key)
    path.with_suffix(".failed.json").write_text("{}")  # a failure record of it goes when the cell is written
    grid._write_cell(path, df, key, {"cell_seconds": 1.5, "prepare_seconds": 0.25})
    assert not path.with_suffix(".failed.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, path.name + ".sha256"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert (tmp_path / (path.name + ".sha256")).read_text() == f"{digest}  {path.name}\n"
    got_key, frame, timing = grid._read_cell(path)
    assert got_key == key and timing == {"cell_seconds": 1.5, "prepare_seconds": 0.25}
    assert list(frame.columns) == list(df.columns) == RESULT_COLUMNS
    pd.testing.assert_frame_equal(frame, df)
    assert all(type(p) is tuple and all(type(v) is float for v in p) for p in frame.true_prev)
    meta = pq.read_schema(path).metadata
    assert json.loads(meta[b"capshift.cell"]) == key
    grid._write_cell(path, df, key)  # no timing: an empty one read back
    assert grid._read_cell(path)[2] == {}
    assert b"capshift.time" not in pq.read_schema(path).metadata


def test_a_frame_without_true_prev_is_kept_as_written_and_extra_columns_go_last(tmp_path):
    study = pd.DataFrame({"b": [1, 2], "a": ["x", "y"]})
    key = {"dataset": "d", "classifier": "c", "method": "m"}
    grid._write_cell(tmp_path / "s.parquet", study, key)
    pd.testing.assert_frame_equal(grid._read_cell(tmp_path / "s.parquet")[1], study)
    df = run(None)
    shuffled = df.assign(extra=1.0)[["extra"] + list(reversed(RESULT_COLUMNS))]
    grid._write_cell(tmp_path / "r.parquet", shuffled, key)
    back = grid._read_cell(tmp_path / "r.parquet")[1]
    assert list(back.columns) == RESULT_COLUMNS + ["extra"]
    pd.testing.assert_frame_equal(back[RESULT_COLUMNS], df)


def test_files_are_written_with_the_umask_and_no_temporary_file_is_left(tmp_path, monkeypatch):
    old = os.umask(0o027)
    try:
        grid._replace_atomically(tmp_path / "f", lambda tmp: Path(tmp).write_text("x"))
        assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640 and (tmp_path / "f").read_text() == "x"
        assert os.umask(0o027) == 0o027  # _umask left it as it was
    finally:
        os.umask(old)

    def fails(tmp):
        Path(tmp).write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grid._replace_atomically(tmp_path / "g", fails)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_an_absent_cell_is_none_without_a_warning(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert grid._read_cell(tmp_path / "absent.parquet") is None


@pytest.mark.parametrize("damage, reason", [
    ("no_sum", r"FileNotFoundError: .*\.sha256"),
    ("bytes", r"ValueError: its bytes differ from its checksum file: the file changed after it was written"),
    ("sum_name", r"ValueError: its bytes differ"),
    ("not_parquet", r"ArrowInvalid"),
    ("no_key", r"TypeError: 'NoneType' object is not subscriptable"),
])
def test_a_damaged_cell_is_ignored_with_a_warning_naming_it_and_what_follows(tmp_path, damage, reason):
    key = {"dataset": "d", "classifier": "c", "method": "m"}
    path = tmp_path / "c.parquet"
    grid._write_cell(path, pd.DataFrame({"a": [1]}), key)
    checksum = tmp_path / "c.parquet.sha256"
    if damage == "no_sum":
        checksum.unlink()
    elif damage == "bytes":
        path.write_bytes(path.read_bytes()[:-1] + b"\x00")
    elif damage == "sum_name":
        checksum.write_text(checksum.read_text().replace("c.parquet", "d.parquet"))
    else:
        if damage == "not_parquet":
            path.write_bytes(b"not a parquet file")
        else:
            pq.write_table(__import__("pyarrow").table({"a": [1]}), path)
        checksum.write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  c.parquet\n")
    with pytest.warns(RuntimeWarning) as rec:
        assert grid._read_cell(path, when_bad="so be it") is None
    (w,) = rec
    assert re.fullmatch(rf"ignoring results file {re.escape(str(path))} \({reason}.*\); so be it", str(w.message),
                        re.S)
    with pytest.warns(RuntimeWarning, match=r"; it is recomputed$"):
        grid._read_cell(path)


def test_a_damaged_or_foreign_cell_is_recomputed_with_a_warning_at_the_callers_line(tmp_path, monkeypatch):
    run(tmp_path)
    cell = only(tmp_path.glob("*.parquet"))
    want = grid._read_cell(cell)[1]
    cell.write_bytes(cell.read_bytes()[:-1] + b"\x00")
    with pytest.warns(RuntimeWarning, match=r"ignoring results file .*; it is recomputed") as rec:
        df = run(tmp_path)
    assert_at_callers_line(rec[0])  # the warning points at the call of run_grid
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 0}
    pd.testing.assert_frame_equal(df.drop(columns="seconds"), want.drop(columns="seconds"))
    # a file under the right name whose stored key is another cell's (intact checksum) is not trusted either
    other = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20, seed=1)
    grid._write_cell(cell, want, other)
    df = run(tmp_path)
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 0}
    assert grid._read_cell(cell)[0] == grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)


# ---- a second run, failures ----
def test_a_second_run_on_the_same_folder_computes_nothing(tmp_path, monkeypatch):
    first = run(tmp_path, methods=["Naive", "ATC"], measures=("accuracy", "f1"))
    assert first.attrs["cells"] == {"reused": 0, "computed": 2, "failed": 0} and first.attrs["failed"] == []
    calls = []
    monkeypatch.setattr(grid, "evaluate", lambda *a: calls.append(a))
    again = run(tmp_path, methods=["ATC", "Naive", "ATC"], measures=("accuracy", "f1"))
    assert calls == [] and again.attrs["cells"] == {"reused": 2, "computed": 0, "failed": 0}
    # grid order: dataset, classifier, method as given
    assert list(dict.fromkeys(again.method)) == ["ATC", "Naive"]
    pd.testing.assert_frame_equal(again[again.method == "Naive"].reset_index(drop=True),
                                  first[first.method == "Naive"].reset_index(drop=True))
    timing = grid._read_cell(only(tmp_path.glob("*Naive*.parquet")))[2]
    assert set(timing) == {"cell_seconds", "prepare_seconds"} and timing["cell_seconds"] > 0
    assert timing["prepare_seconds"] > 0 and timing["cell_seconds"] == round(timing["cell_seconds"], 4)


def test_without_a_folder_nothing_is_written_and_everything_is_computed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = run(None)
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 0} and list(tmp_path.iterdir()) == []
    assert list(df.columns) == RESULT_COLUMNS and len(df) == 3 and set(df.dataset) == {"haberman"}


def test_a_raising_cell_is_recorded_reported_and_retried(tmp_path, monkeypatch):
    real = evaluation.evaluate

    def raises(ctx, name, *args):
        if name == "Naive":
            raise RuntimeError("solver diverged\nsecond line")
        return real(ctx, name, *args)

    monkeypatch.setattr(grid, "evaluate", raises)
    with pytest.warns(grid.FailedCellsWarning) as rec:
        df = run(tmp_path, methods=["ATC", "Naive"])
    (w,) = [w for w in rec if w.category is grid.FailedCellsWarning]
    assert str(w.message) == ("1 cell(s) failed and have no results (run_grid; a re-run of the grid retries them):\n"
                              "  haberman / lr / Naive: RuntimeError: solver diverged")
    assert_at_callers_line(w)
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 1} and set(df.method) == {"ATC"}
    (failed,) = df.attrs["failed"]
    assert set(failed) == {"dataset", "classifier", "method", "reason", "seconds"}
    assert failed["reason"] == "RuntimeError: solver diverged" and failed["method"] == "Naive"
    assert failed["seconds"] >= 0 and failed["seconds"] == round(failed["seconds"], 3)
    record = json.loads(only(tmp_path.glob("*.failed.json")).read_text())
    assert record["key"] == grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    assert record["reason"] == "RuntimeError: solver diverged" and "RuntimeError: solver diverged" in record["traceback"]
    assert "raise RuntimeError" in record["traceback"] and record["when"].endswith("+00:00")
    key = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    assert only(tmp_path.glob("*.failed.json")).name == grid._file_name(key).replace(".parquet", ".failed.json")
    # load_results lists it too (and the frame of a failed-only folder is empty but has the columns)
    with pytest.warns(grid.FailedCellsWarning) as rec:
        loaded = grid.load_results(tmp_path)
    assert str(rec[0].message) == (f"1 cell(s) failed and have no results (load_results({str(tmp_path)!r}); a re-run "
                                   "of the grid retries them):\n  haberman / lr / Naive: RuntimeError: solver diverged")
    assert_at_callers_line(rec[0])
    assert loaded.attrs["failed"] == [{"dataset": "haberman", "classifier": "lr", "method": "Naive",
                                       "reason": "RuntimeError: solver diverged", "seconds": failed["seconds"]}]
    # the re-run retries the failed cell only, and its record goes
    monkeypatch.setattr(grid, "evaluate", real)
    with warnings.catch_warnings():
        warnings.simplefilter("error", grid.FailedCellsWarning)
        again = run(tmp_path, methods=["ATC", "Naive"])
    assert again.attrs["cells"] == {"reused": 1, "computed": 1, "failed": 0} and again.attrs["failed"] == []
    assert list(tmp_path.glob("*.failed.json")) == []


def test_a_failed_preparation_fails_every_cell_of_the_pair(tmp_path, monkeypatch):
    def contexts(*args, **kw):
        raise ValueError("no samples")

    monkeypatch.setattr(grid, "contexts", contexts)
    with pytest.warns(grid.FailedCellsWarning) as rec:
        df = run(tmp_path, methods=["Naive", "ATC"])
    assert str(rec[0].message).endswith("\n  haberman / lr / Naive: preparing (haberman, lr) failed: ValueError: no "
                                        "samples\n  haberman / lr / ATC: preparing (haberman, lr) failed: ValueError: "
                                        "no samples")
    assert str(rec[0].message).startswith("2 cell(s) failed")
    assert df.empty and list(df.columns) == RESULT_COLUMNS
    assert df.attrs["cells"] == {"reused": 0, "computed": 0, "failed": 2}
    assert len(list(tmp_path.glob("*.failed.json"))) == 2
    reasons = sorted(json.loads(p.read_text())["reason"] for p in tmp_path.glob("*.failed.json"))
    assert reasons == ["preparing (haberman, lr) failed: ValueError: no samples"] * 2
    assert not (tmp_path / grid.SHARED_DIR).exists()


def test_a_cell_past_its_budget_is_a_failure_naming_the_budget(tmp_path, monkeypatch):
    real = evaluation.evaluate

    def slow(ctx, name, *args):
        if name == "Naive":
            time.sleep(5)
        return real(ctx, name, *args)

    monkeypatch.setattr(grid, "evaluate", slow)
    t0 = time.perf_counter()
    with pytest.warns(grid.FailedCellsWarning):
        df = run(tmp_path, methods=["Naive", "ATC"], cell_timeout=0.25)
    assert time.perf_counter() - t0 < 4
    (failed,) = df.attrs["failed"]
    assert failed["reason"] == "time budget exceeded: stopped after 0.25 s (cell_timeout)"
    assert 0.2 <= failed["seconds"] < 3 and set(df.method) == {"ATC"}
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_failure_record(monkeypatch):
    try:
        raise OSError("disk\nfull")
    except OSError as exc:
        rec = grid._failure({"k": 1}, exc, 1.23456, 9)
    assert rec["key"] == {"k": 1} and rec["reason"] == "OSError: disk" and rec["seconds"] == 1.235
    assert rec["traceback"].endswith("OSError: disk\nfull\n")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", rec["when"])
    assert grid._failure({}, grid.CellTimeout(1.5), 0.0, 1.5)["reason"] == \
        "time budget exceeded: stopped after 1.5 s (cell_timeout)"

    def deep(n):
        if n == 0:
            raise KeyError("x")
        deep(n - 1)

    try:
        deep(10)
    except KeyError as exc:
        error = exc
    tb = grid._failure({}, error, 0.0, None)["traceback"]
    import traceback
    assert tb == "".join(traceback.format_exception(error)[-6:])
    assert not tb.startswith("Traceback")


def test_failure_records_are_read_and_a_damaged_one_is_left_out_with_a_warning(tmp_path):
    key = {"dataset": "d", "classifier": "c", "method": "m", "seed": 1}
    grid._write_failure(tmp_path / "a.parquet", {"key": key, "reason": "R", "seconds": 2.0, "traceback": "t"})
    (tmp_path / "b.failed.json").write_text("{not json")
    (tmp_path / "c.failed.json").write_text(json.dumps({"key": key}))
    (tmp_path / "d.failed.json").write_text(json.dumps({"key": key, "reason": "S"}))
    with pytest.warns(RuntimeWarning) as rec:
        out = grid._read_failures(tmp_path)
    assert out == [{"dataset": "d", "classifier": "c", "method": "m", "reason": "R", "seconds": 2.0, "key": key,
                    "file": "a.failed.json"},
                   {"dataset": "d", "classifier": "c", "method": "m", "reason": "S", "seconds": None, "key": key,
                    "file": "d.failed.json"}]
    messages = [str(w.message) for w in rec]
    assert len(messages) == 2
    assert messages[0].startswith(f"ignoring failure record {tmp_path / 'b.failed.json'} (JSONDecodeError: ")
    assert messages[1] == (f"ignoring failure record {tmp_path / 'c.failed.json'} (KeyError: 'reason'); its cell is "
                           "not listed as failed (a re-run of the grid retries it)")


# ---- the time budget and interrupts ----
def test_guarded_cuts_a_block_at_its_budget_and_restores_the_handlers():
    before_int, before_alarm = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM)
    t0 = time.perf_counter()
    with pytest.raises(grid.CellTimeout):
        with grid._guarded(0.2):
            assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.2
            time.sleep(5)
    assert 0.15 < time.perf_counter() - t0 < 3
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGINT) is before_int and signal.getsignal(signal.SIGALRM) is before_alarm
    with grid._guarded(None):  # no budget: no timer
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is before_alarm
    with grid._guarded(5.0):  # a block that ends in time leaves no timer behind
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before_alarm


def test_guarded_raises_again_what_a_dependency_swallowed():
    with pytest.raises(grid.CellTimeout):
        with grid._guarded(0.1):
            try:
                time.sleep(5)
            except BaseException:  # a dependency that swallows everything
                pass
    with pytest.raises(KeyboardInterrupt, match="interrupted while a cell was computed .*the cell is not kept"):
        with grid._guarded(None):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:  # scikit-learn's MLP only warns
                pass
    with pytest.raises(KeyboardInterrupt):
        with grid._guarded(2.0):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    with grid._guarded(2.0):  # nothing happened: nothing raised
        x = 1
    assert x == 1


def test_guarded_does_nothing_outside_the_main_thread():
    out = {}

    def body():
        try:
            with grid._guarded(0.1):
                out["alarm"] = signal.getsignal(signal.SIGALRM)
                time.sleep(0.3)
            out["end"] = "finished"
        except BaseException as exc:  # pragma: no cover - the failure the test looks for
            out["end"] = repr(exc)

    before = signal.getsignal(signal.SIGALRM)
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out == {"alarm": before, "end": "finished"}


# ---- the quantifier store ----
def test_the_quantifier_store_reads_from_disk_and_writes_only_on_flush(tmp_path):
    store = grid._QuantifierStore(tmp_path / "q")
    store["a"] = [1, 2]
    assert store.new == ["a"] and "a" in store and store["a"] == [1, 2]
    assert not (tmp_path / "q").exists()
    store.flush()
    assert store.new == [] and sorted(p.name for p in (tmp_path / "q").iterdir()) == ["a.joblib"]
    fresh = grid._QuantifierStore(str(tmp_path / "q"))
    assert fresh.directory == tmp_path / "q" and fresh.new == []
    assert "a" in fresh and dict(fresh) == {"a": [1, 2]} and fresh.new == []
    fresh2 = grid._QuantifierStore(tmp_path / "q")
    assert fresh2["a"] == [1, 2] and dict(fresh2) == {"a": [1, 2]}  # read on access, as `in` does
    assert "b" not in fresh2
    with pytest.raises(KeyError, match="'b'"):
        fresh2["b"]
    (tmp_path / "q" / "c.joblib").write_bytes(b"damaged")
    assert "c" not in fresh2 and "c" not in dict(fresh2)
    fresh2.flush()  # nothing new: nothing written
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == ["a.joblib", "c.joblib"]
    blocked = tmp_path / "file"
    blocked.write_text("x")
    bad = grid._QuantifierStore(blocked / "q")  # cannot be written: only the sharing is lost
    bad["z"] = 1
    bad.flush()
    assert bad.new == [] and bad["z"] == 1


def test_a_grid_keeps_the_shared_quantifiers_beside_its_cells(tmp_path):
    run(tmp_path, methods=["LEAP_KDEy"], n_samples=1)
    store = tmp_path / grid.SHARED_DIR / grid.code_fingerprint()
    assert store.is_dir() and list(store.glob("*.joblib"))
    assert grid.SHARED_DIR == ".shared-quantifiers"


# ---- load_results ----
@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("two_runs")
    run(d, methods=["Naive", "ATC"], seed=0)
    run(d, methods=["Naive"], seed=1, n_samples=2, measures=("accuracy", "f1"))
    return d


def test_load_results_has_the_key_fields_and_the_times(two_runs):
    df = grid.load_results(two_runs)
    extra = ["protocol", "n_samples", "sample_size", "measures", "seed", "solver", "version", "code"]
    assert list(df.columns) == RESULT_COLUMNS + extra + ["cell_seconds", "prepare_seconds"]
    assert len(df) == 3 + 3 + 2 * 2 and df.attrs["failed"] == []
    assert list(df.method) == ["ATC"] * 3 + ["Naive"] * 7  # sorted by dataset, classifier, method, then as stored
    assert set(df.measures) == {"accuracy", "accuracy,f1"} and set(df.code) == {grid.code_fingerprint()}
    assert set(df.version) == {__version__} and set(df.protocol) == {"upp"} and set(df.solver) == {DEFAULT_SOLVER}
    assert (df.cell_seconds > 0).all() and (df.prepare_seconds > 0).all()
    for path in two_runs.glob("*.parquet"):
        key, frame, timing = grid._read_cell(path)
        rows = df[(df.method == key["method"]) & (df.seed == key["seed"])]
        assert (rows.cell_seconds == timing["cell_seconds"]).all()
        assert (rows.prepare_seconds == timing["prepare_seconds"]).all()
        pd.testing.assert_frame_equal(rows[RESULT_COLUMNS].reset_index(drop=True), frame)


@pytest.mark.parametrize("where, n", [
    (dict(seed=0), 6), (dict(seed=1), 4), (dict(seed=[0, 1]), 10), (dict(seed=(1,)), 4), (dict(seed=2), 0),
    (dict(method="Naive"), 7), (dict(method=["ATC"]), 3), (dict(n_samples=2), 4), (dict(n_samples=3, method="Naive"), 3),
    (dict(measures=["accuracy", "f1"]), 4), (dict(measures=("accuracy",)), 6), (dict(measures=["f1", "accuracy"]), 0),
    (dict(measures=["accuracy"], seed=1), 0), (dict(dataset="haberman", classifier="lr"), 10),
    (dict(classifier="knn"), 0), (dict(protocol="app"), 0), (dict(version=__version__), 10),
])
def test_load_results_selects_exactly_the_rows_asked_for(two_runs, where, n):
    df = grid.load_results(two_runs, **where)
    assert len(df) == n
    for f, v in where.items():
        if f == "measures":
            assert set(df.measures) <= {",".join(v)}
        else:
            assert set(df[f]) <= set(v if isinstance(v, (list, tuple)) else [v])


def test_load_results_selects_failures_by_the_same_fields(tmp_path, monkeypatch):
    def raises(ctx, name, *args):
        raise RuntimeError("x")

    monkeypatch.setattr(grid, "evaluate", raises)
    with pytest.warns(grid.FailedCellsWarning):
        run(tmp_path, methods=["Naive", "ATC"])
    with pytest.warns(grid.FailedCellsWarning):
        assert [f["method"] for f in grid.load_results(tmp_path, method="ATC").attrs["failed"]] == ["ATC"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", grid.FailedCellsWarning)
        df = grid.load_results(tmp_path, seed=5)
    assert df.attrs["failed"] == [] and df.empty
    assert list(df.columns) == RESULT_COLUMNS + ["protocol", "n_samples", "sample_size", "measures", "seed", "solver",
                                                 "version", "code", "cell_seconds", "prepare_seconds"]


def test_load_results_refuses_unknown_fields_and_missing_folders(tmp_path):
    with pytest.raises(ValueError) as exc:
        grid.load_results(tmp_path, seeds=0, dataset="x", cell_seconds=1)
    assert str(exc.value) == (f"unknown field(s) ['cell_seconds', 'seeds'] to select by; choose from "
                              f"{list(grid.KEY_FIELDS)}")
    with pytest.raises(ValueError) as exc:
        grid.load_results(tmp_path / "absent")
    assert str(exc.value) == (f"results={str(tmp_path / 'absent')!r} is not a directory (run_grid or 'capshift run "
                              "--results DIR' creates it)")
    with pytest.raises(TypeError, match="^results must be a directory path, got int$"):
        grid.load_results(3)
    (tmp_path / "c.parquet").write_bytes(b"x")
    with pytest.warns(RuntimeWarning, match=r"; it is left out \(a re-run of the grid recomputes it\)$") as rec:
        assert grid.load_results(str(tmp_path)).empty
    assert_at_callers_line(rec[0])


def test_load_results_leaves_out_a_damaged_cell_and_keeps_the_others(tmp_path):
    run(tmp_path)
    (tmp_path / "a.parquet").write_bytes(b"x")  # sorted before haberman's cell
    (tmp_path / "a.parquet.sha256").write_text("0  a.parquet\n")
    with pytest.warns(RuntimeWarning, match=r"ignoring results file .*a\.parquet") as rec:
        df = grid.load_results(tmp_path)
    assert len(rec) == 1 and len(df) == 3 and list(df.index) == [0, 1, 2]


def test_load_results_without_a_time_record_gives_nan_times(tmp_path):
    df = run(None)
    key = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    grid._write_cell(tmp_path / grid._file_name(key), df, key)
    got = grid.load_results(tmp_path)
    assert got.cell_seconds.isna().all() and got.prepare_seconds.isna().all() and len(got) == 3


# ---- argument checks ----
@pytest.mark.parametrize("kw, exc, message", [
    (dict(n_jobs=0), ValueError, "n_jobs must be a positive number of workers or negative (-1 = all cores), got 0"),
    (dict(n_jobs=1.5), TypeError, "n_jobs must be an int, got 1.5 (float)"),
    (dict(backend="threads"), ValueError, "backend must be one of ('loky', 'dask', 'ray'), got 'threads'"),
    (dict(scheduler="tcp://x:1"), ValueError,
     "scheduler is only for backend='dask' or 'ray'; with backend='loky' leave it None"),
    (dict(backend="dask", scheduler=3), TypeError,
     "scheduler must be a scheduler address (str) or a distributed.Client, got int"),
    (dict(cell_timeout=0), ValueError, "cell_timeout must be in (0.0, inf), got 0"),
    (dict(cell_timeout=math.inf), ValueError, "cell_timeout must be in (0.0, inf), got inf"),
    (dict(cell_timeout="1"), TypeError, "cell_timeout must be a number, got '1' (str)"),
])
def test_backend_arguments_are_checked_before_any_work(tmp_path, monkeypatch, kw, exc, message):
    monkeypatch.setattr(grid, "contexts", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(exc) as got:
        run(tmp_path / "r", **kw)
    assert str(got.value) == message
    assert not (tmp_path / "r").exists()
    with pytest.raises(exc) as got:
        grid.run_cells(_cell_work, [({"dataset": "d", "classifier": "c", "method": "m"}, {"n": 1})],
                       tmp_path / "r", **{"progress": False, **kw})
    assert str(got.value) == message


def test_ray_is_refused_when_it_is_missing(tmp_path):
    pytest.importorskip("capshift")
    try:
        import ray  # noqa: F401
        pytest.skip("Ray is installed here")
    except ImportError:
        pass
    with pytest.raises(ValueError) as got:
        run(tmp_path, backend="ray")
    assert str(got.value) == ("backend='ray' needs Ray, which is not installed here: pip install 'capshift[ray]' or "
                              "'ray[default]' (or use backend='dask')")


def test_backend_values_that_pass():
    assert grid._check_backend_args(np.int64(-1), "loky", None, None) == (-1, None)
    n_jobs, budget = grid._check_backend_args(2, "dask", "tcp://x:1", 3)
    assert (n_jobs, budget) == (2, 3.0) and type(budget) is float and type(n_jobs) is int
    assert grid._check_backend_args(1, "loky", None, 1e-3) == (1, 1e-3)


@pytest.mark.parametrize("args, exc, message", [
    (dict(datasets="haberman"), TypeError,
     "datasets must be a list of names, got 'haberman'; e.g. datasets=['haberman']"),
    (dict(datasets=3), TypeError, "datasets must be a list of names, got 3; e.g. datasets=[3]"),
    (dict(datasets=[]), ValueError, "datasets is empty: name at least one"),
    (dict(classifiers=[]), ValueError, "classifiers is empty: name at least one"),
    (dict(methods="Naive"), TypeError, "methods must be a list of names, got 'Naive'; e.g. methods=['Naive']"),
    (dict(datasets=["haberman", 1]), TypeError, "datasets must hold names (str), got 1"),
    (dict(classifiers=["lr", "tree"]), ValueError,
     "unknown classifier 'tree' in classifiers; choose one of ['knn', 'lr', 'mlp', 'rf', 'svm']"),
])
def test_grid_arguments_are_checked_by_name(tmp_path, args, exc, message):
    kw = {"datasets": ["haberman"], "classifiers": ["lr"], "methods": ["Naive"], **args}
    with pytest.raises(exc) as got:
        grid.run_grid(kw.pop("datasets"), kw.pop("classifiers"), kw.pop("methods"), tmp_path, **KW)
    assert str(got.value) == message


def test_unknown_datasets_are_named_for_the_protocol(tmp_path):
    from capshift import datasets
    with pytest.raises(ValueError) as got:
        grid.run_grid(["haberman", "nope", "marketing"], ["lr"], ["Naive"], tmp_path, **KW)
    assert str(got.value) == (f"unknown dataset(s) ['nope', 'marketing'] in datasets; the offline ones are "
                              f"{', '.join(datasets.names(offline=True))} (all: capshift.datasets.names(paper=None))")
    with pytest.raises(ValueError) as got:
        grid.run_grid(["haberman", "diabetes"], ["lr"], ["Naive"], tmp_path, protocol="concept", **KW)
    assert str(got.value) == (f"unknown dataset(s) ['haberman'] in datasets for the dataset-shift protocol 'concept':"
                              f" it runs on {', '.join(datasets.SHIFT_DATASETS)} (capshift.datasets.SHIFT_DATASETS)")
    grid._check_datasets_for(["diabetes"], "concept")  # known: no error
    grid._check_datasets_for(["haberman", "cmc.1"], "upp")
    assert list(tmp_path.iterdir()) == []


def test_repeated_names_are_one_cell(tmp_path):
    df = grid.run_grid(["haberman", "haberman"], ["lr", "lr"], ["Naive", "Naive"], tmp_path, **KW)
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 0} and len(df) == 3
    assert grid._check_grid_args(("b", "a", "b"), "x") == ["b", "a"]


def test_a_bad_results_path_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError) as got:
        run(tmp_path / "f")
    assert str(got.value) == f"results={str(tmp_path / 'f')!r} exists and is not a directory: name a directory"
    with pytest.raises(ValueError, match=r"^results='.*/f/r' cannot be created \(.*\): choose a directory you can "
                                         r"write to$"):
        run(tmp_path / "f" / "r")
    with pytest.raises(TypeError, match="^results must be a directory path or None, got int$"):
        run(5)
    assert grid._check_results_dir(str(tmp_path / "new" / "deep")) == tmp_path / "new" / "deep"
    assert (tmp_path / "new" / "deep").is_dir() and list((tmp_path / "new" / "deep").iterdir()) == []


def test_progress_lines(tmp_path, capsys):
    run(tmp_path, progress=True)
    err = capsys.readouterr().err
    assert f"{tmp_path}: 0 cell(s) reused, 1 to compute" in err
    assert "cells: 0 reused, 1 computed, 0 failed" in err
    assert re.search(r"cells: 100%\|[^|]*\| 1/1 \[[^]]*(cell/s|s/cell)\]", err), err  # the bar over the cells
    run(None, progress=True)
    err = capsys.readouterr().err
    assert "to compute" not in err and "cells: 0 reused, 1 computed, 0 failed" in err
    run(tmp_path / "quiet", progress=False)  # a cell computed without a bar or a line
    assert capsys.readouterr().err == ""


# ---- run_cells and run_selection_study ----
def _cell_work(n, fail=False, sleep=0.0):
    """A study's cell: n rows (module level: picklable)."""
    if fail:
        raise ArithmeticError(f"bad n={n}")
    time.sleep(sleep)
    return pd.DataFrame({"n": [n] * n, "i": list(range(n)), "x": [0.5 * i for i in range(n)]})


def test_run_cells_writes_reuses_and_orders_its_cells(tmp_path):
    cells = [({"dataset": "b", "classifier": "c", "method": "m", "n": 2}, {"n": 2}),
             ({"dataset": "a", "classifier": "c", "method": "m", "n": 1}, {"n": 1})]
    df = grid.run_cells(_cell_work, cells, tmp_path, progress=False)
    assert df.attrs["cells"] == {"reused": 0, "computed": 2, "failed": 0} and df.attrs["failed"] == []
    want = pd.concat([_cell_work(2), _cell_work(1)], ignore_index=True)
    pd.testing.assert_frame_equal(df, want)
    files = sorted(p.name for p in tmp_path.glob("*.parquet"))
    key = {"dataset": "a", "classifier": "c", "method": "m", "n": 1, "version": __version__,
           "code": grid.code_fingerprint()}
    assert files == sorted([grid._file_name(key), grid._file_name({**key, "dataset": "b", "n": 2})])
    got_key, frame, timing = grid._read_cell(tmp_path / grid._file_name(key))
    assert got_key == key and timing["prepare_seconds"] == 0.0 and timing["cell_seconds"] >= 0
    pd.testing.assert_frame_equal(frame, _cell_work(1))
    again = grid.run_cells(_cell_work, list(reversed(cells)), tmp_path, progress=False)
    assert again.attrs["cells"] == {"reused": 2, "computed": 0, "failed": 0}
    pd.testing.assert_frame_equal(again, pd.concat([_cell_work(1), _cell_work(2)], ignore_index=True))
    # a cell whose key holds a tuple is keyed as its JSON (a list), so a re-run finds it
    tup = [({"dataset": "t", "classifier": "c", "method": "m", "p": (1, 2)}, {"n": 1})]
    grid.run_cells(_cell_work, tup, tmp_path, progress=False)
    assert grid.run_cells(_cell_work, tup, tmp_path, progress=False).attrs["cells"]["reused"] == 1
    nothing = grid.run_cells(_cell_work, cells, None, progress=False)
    assert nothing.attrs["cells"] == {"reused": 0, "computed": 2, "failed": 0}
    pd.testing.assert_frame_equal(nothing, want)


def test_run_cells_records_failures_and_budgets(tmp_path):
    cells = [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1, "fail": True}),
             ({"dataset": "b", "classifier": "c", "method": "m"}, {"n": 2}),
             ({"dataset": "s", "classifier": "c", "method": "m"}, {"n": 1, "sleep": 5.0})]
    with pytest.warns(grid.FailedCellsWarning) as rec:
        df = grid.run_cells(_cell_work, cells, tmp_path, progress=False, cell_timeout=0.3)
    assert str(rec[0].message) == ("2 cell(s) failed and have no results (run_cells; a re-run of the grid retries "
                                   "them):\n  a / c / m: ArithmeticError: bad n=1\n  s / c / m: time budget exceeded: "
                                   "stopped after 0.3 s (cell_timeout)")
    assert_at_callers_line(rec[0])
    pd.testing.assert_frame_equal(df, _cell_work(2))
    assert df.attrs["cells"] == {"reused": 0, "computed": 1, "failed": 2}
    assert sorted(p.name.split("__")[0] for p in tmp_path.glob("*.failed.json")) == ["a", "s"]
    failed = pd.DataFrame(df.attrs["failed"])
    assert list(failed.columns) == ["dataset", "classifier", "method", "reason", "seconds"]
    assert failed.seconds.iloc[0] < 0.3 and 0.25 < failed.seconds.iloc[1] < 3
    with pytest.warns(grid.FailedCellsWarning):
        empty = grid.run_cells(_cell_work, cells[:1], None, progress=False)
    assert empty.empty and list(empty.columns) == [] and empty.attrs["cells"]["failed"] == 1


def test_run_cells_checks_its_arguments(tmp_path):
    with pytest.raises(TypeError, match="^work must be a function returning a DataFrame, got int$"):
        grid.run_cells(3, [], tmp_path)
    with pytest.raises(ValueError, match=r"^cells is empty: pass at least one \(key, kwargs\) pair$"):
        grid.run_cells(_cell_work, iter([]), tmp_path)
    with pytest.raises(ValueError) as got:
        grid.run_cells(_cell_work, [({"dataset": "a", "classifier": "c"}, {})], tmp_path)
    assert str(got.value) == ("every cell key must be a dict with dataset, classifier and method, got "
                              "{'dataset': 'a', 'classifier': 'c'}")
    with pytest.raises(ValueError, match="every cell key must be a dict"):
        grid.run_cells(_cell_work, [(["dataset", "classifier", "method"], {})], tmp_path)
    with pytest.raises(TypeError, match="^a cell's kwargs must be a dict, got list$"):
        grid.run_cells(_cell_work, [({"dataset": "a", "classifier": "c", "method": "m"}, [])], tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="exists and is not a directory"):
        grid.run_cells(_cell_work, [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1})], tmp_path / "f")


def test_run_selection_study_builds_one_cell_per_dataset(tmp_path, monkeypatch):
    seen = {}

    def run_cells(work, cells, results, **kw):
        seen.update(work=work, cells=cells, results=results, kw=kw)
        return "ran"

    monkeypatch.setattr(grid, "run_cells", run_cells)
    out = grid.run_selection_study(["haberman", "cmc.1", "haberman"], tmp_path, families="lr", n_samples=np.int64(4),
                                   sample_size=30, seed=np.int64(2), methods=["DoC", "O-LEAP_KDEy"],
                                   measure="f1", mlp_hidden=(np.int64(5), 3.0), mlp_max_iter=7, n_jobs=2,
                                   backend="dask", scheduler="tcp://x:1", progress=False, cell_timeout=9.0)
    assert out == "ran" and seen["work"] is selection.study_cell and seen["results"] == tmp_path
    assert seen["kw"] == dict(n_jobs=2, backend="dask", scheduler="tcp://x:1", progress=False, cell_timeout=9.0)
    params = dict(families=["lr"], n_samples=4, sample_size=30, seed=2, methods=["DoC", "O-LEAP_KDEy"],
                  cautious="O-LEAP_KDEy", measure="f1", mlp_hidden=[5, 3], mlp_max_iter=7)
    assert seen["cells"] == [({"dataset": d, "classifier": "candidates", "method": "selection", **params,
                               "interval_params": selection.STUDY_INTERVALS}, {"dataset": d, **params})
                             for d in ("haberman", "cmc.1")]
    assert all(type(v) is int for v in (params["n_samples"], seen["cells"][0][0]["seed"]))
    assert [type(h) for h in seen["cells"][0][0]["mlp_hidden"]] == [int, int]
    grid.run_selection_study(["haberman"], methods="DoC", cautious=None, grid="small")
    (key, kwargs), = seen["cells"]
    assert key["methods"] == ["DoC"] and key["cautious"] is None and key["grid"] == "small" == kwargs["grid"]
    assert seen["results"] is None
    assert seen["kw"] == dict(n_jobs=1, backend="loky", scheduler=None, progress=True, cell_timeout=None)
    grid.run_selection_study(["haberman"])
    (key, kwargs), = seen["cells"]
    assert "grid" not in key and key["families"] == list(selection.FAMILIES)
    assert key["methods"] == list(selection.STUDY_METHODS) and key["cautious"] == "O-LEAP_KDEy"
    assert (key["n_samples"], key["sample_size"], key["seed"], key["measure"]) == (1000, 100, 0, "accuracy")
    assert (key["mlp_hidden"], key["mlp_max_iter"]) == ([100], 200)


@pytest.mark.parametrize("kw, exc, message", [
    (dict(datasets="haberman"), TypeError, "datasets must be a list of names"),
    (dict(datasets=["nope"]), ValueError, "nope"),
    (dict(families=["tree"]), ValueError, r"unknown candidate families \['tree'\]"),
    (dict(methods=["nope"]), ValueError, "nope"),
    (dict(methods=["DoC"]), ValueError, r"^cautious='O-LEAP_KDEy' must be one of methods \['DoC'\]$"),
    (dict(measure="nope"), ValueError, "nope"),
    (dict(n_samples=0), ValueError, "^n_samples must be >= 1, got 0$"),
    (dict(sample_size=0), ValueError, "^sample_size must be >= 1, got 0$"),
    (dict(mlp_max_iter=0), ValueError, "^mlp_max_iter must be >= 1, got 0$"),
    (dict(grid="huge"), ValueError, r"^grid must be one of \('paper', 'small'\), got 'huge'$"),
])
def test_run_selection_study_checks_its_arguments(tmp_path, monkeypatch, kw, exc, message):
    monkeypatch.setattr(grid, "run_cells", lambda *a, **k: pytest.fail("work started"))
    kw = {"datasets": ["haberman"], **kw}
    with pytest.raises(exc, match=message):
        grid.run_selection_study(kw.pop("datasets"), tmp_path, **kw)


# ---- where the work runs: a worker that cannot see the results folder, the order of the pairs ----
def test_cells_a_worker_could_not_write_are_written_by_the_main_process(tmp_path):
    from joblib import delayed
    good = {"dataset": "a", "classifier": "c", "method": "m"}
    bad = {"dataset": "b", "classifier": "c", "method": "m"}
    tasks = [delayed(grid._run_cell)(_cell_work, {"n": 2}, good, "a.parquet", None, None),
             delayed(grid._run_cell)(_cell_work, {"n": 1, "fail": True}, bad, "b.parquet", None, None)]
    frames = {"old.parquet": "reused"}
    counts, failures = grid._run_tasks(tasks, 2, tmp_path, frames, False, "loky", None, 1)
    assert counts == {"reused": 1, "computed": 1, "failed": 1}
    assert [f["reason"] for f in failures] == ["ArithmeticError: bad n=1"] and failures[0]["key"] == bad
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "a.parquet.sha256", "b.failed.json"]
    pd.testing.assert_frame_equal(frames["a.parquet"], _cell_work(2))
    key, frame, timing = grid._read_cell(tmp_path / "a.parquet")
    assert key == good and set(timing) == {"cell_seconds", "prepare_seconds"}
    pd.testing.assert_frame_equal(frame, _cell_work(2))
    assert json.loads((tmp_path / "b.failed.json").read_text())["reason"] == "ArithmeticError: bad n=1"
    # what a worker wrote itself is not written again
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    time.sleep(0.01)
    counts, _ = grid._run_tasks([delayed(grid._run_cell)(_cell_work, {"n": 2}, good, "a.parquet", None, str(tmp_path)),
                                 delayed(grid._run_cell)(_cell_work, {"n": 1, "fail": True}, bad, "b.parquet", None,
                                                         str(tmp_path))], 2, tmp_path, {}, False, "loky", None, 1)
    assert counts == {"reused": 0, "computed": 1, "failed": 1}
    # (the worker rewrote them once; the main process did not add a second write: one replace per file)
    assert {p.name for p in tmp_path.iterdir()} == set(before)


def test_a_pair_whose_folder_is_not_visible_writes_nothing(tmp_path):
    key = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    params = dict(protocol="upp", n_samples=3, sample_size=20, measures=["accuracy"], seed=0, solver=DEFAULT_SOLVER,
                  cell_timeout=None, store=str(tmp_path / "store"))
    out = grid._run_pair("haberman", "lr", [("Naive", key, "x.parquet")], params, str(tmp_path / "absent"))
    ((fname, got_key, frame, failure, timing),) = out
    assert (fname, got_key, failure) == ("x.parquet", key, None) and list(tmp_path.iterdir()) == []
    assert set(timing) == {"cell_seconds", "prepare_seconds"} and len(frame) == 3
    out = grid._run_pair("haberman", "lr", [("Naive", key, "x.parquet")], params, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.parquet", "x.parquet.sha256"]  # Naive shares nothing
    pd.testing.assert_frame_equal(grid._read_cell(tmp_path / "x.parquet")[1], out[0][2])
    pd.testing.assert_frame_equal(out[0][2].drop(columns="seconds"), frame.drop(columns="seconds"))


def test_pairs_run_classifier_by_classifier_and_the_frame_is_in_grid_order(tmp_path, monkeypatch):
    real, seen = evaluation.contexts, []

    def contexts(dataset, classifier, *args, **kw):
        seen.append((dataset, classifier))
        return real(dataset, classifier, *args, **kw)

    monkeypatch.setattr(grid, "contexts", contexts)
    df = grid.run_grid(["haberman", "cmc.1"], ["knn", "lr"], ["Naive"], tmp_path, **KW)
    assert seen == [("haberman", "knn"), ("cmc.1", "knn"), ("haberman", "lr"), ("cmc.1", "lr")]
    for path in tmp_path.glob("*.parquet"):  # each pair's preparation time, rounded to 0.1 ms
        prepare = grid._read_cell(path)[2]["prepare_seconds"]
        assert type(prepare) is float and 0 < prepare < 60 and abs(prepare * 1e4 - round(prepare * 1e4)) < 1e-6
    assert list(dict.fromkeys(zip(df.dataset, df.classifier))) == [("haberman", "knn"), ("haberman", "lr"),
                                                                   ("cmc.1", "knn"), ("cmc.1", "lr")]


def _blas_threads(n):
    """A study's cell that reports the BLAS threads it runs with (numpy's BLAS is loaded: it is imported)."""
    from threadpoolctl import threadpool_info
    time.sleep(0.0123)
    return pd.DataFrame({"threads": [max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")] * n})


def test_a_generic_cell_writes_its_frame_or_its_failure_where_it_runs(tmp_path):
    key = {"dataset": "a", "classifier": "c", "method": "m", "p": [1]}
    ((fname, got_key, frame, failure, timing),) = grid._run_cell(_blas_threads, {"n": 2}, key, "a.parquet", None,
                                                                 str(tmp_path))
    assert (fname, got_key, failure) == ("a.parquet", key, None)
    assert frame.threads.tolist() == [1, 1]  # one BLAS thread whatever the machine
    assert set(timing) == {"cell_seconds", "prepare_seconds"} and timing["prepare_seconds"] == 0.0
    assert 0.012 <= timing["cell_seconds"] < 2 and type(timing["cell_seconds"]) is float
    assert abs(timing["cell_seconds"] * 1e4 - round(timing["cell_seconds"] * 1e4)) < 1e-6  # rounded to 0.1 ms
    back_key, back, back_timing = grid._read_cell(tmp_path / "a.parquet")
    assert (back_key, back_timing) == (key, timing)
    pd.testing.assert_frame_equal(back, frame)
    out = grid._run_cell(_cell_work, {"n": 1, "fail": True}, key, "b.parquet", None, str(tmp_path))
    assert out[0][:3] == ("b.parquet", key, None) and out[0][4] is None
    record = json.loads((tmp_path / "b.failed.json").read_text())
    assert record["key"] == key and record["reason"] == "ArithmeticError: bad n=1" == out[0][3]["reason"]
    out = grid._run_cell(_cell_work, {"n": 1}, key, "c.parquet", None, str(tmp_path / "absent"))
    assert out[0][3] is None and not (tmp_path / "c.parquet").exists()


def test_a_failure_record_is_indented_json_with_anything_as_text(tmp_path):
    failure = {"key": {"dataset": "d"}, "reason": "R", "where": Path("/x"), "seconds": 1.0}
    grid._write_failure(tmp_path / "a.parquet", failure)
    assert (tmp_path / "a.failed.json").read_text() == json.dumps(failure, indent=1, default=str)
    assert json.loads((tmp_path / "a.failed.json").read_text())["where"] == "/x"
    assert (tmp_path / "a.failed.json").read_text().startswith('{\n "key": {\n  "dataset": "d"\n }')


def _writers(monkeypatch):
    """Record which function of capshift.grid writes each cell and failure record (its code's name)."""
    seen = []
    for name in ("_write_cell", "_write_failure"):
        real = getattr(grid, name)

        def spy(path, *args, real=real, name=name):
            seen.append((name, Path(path).name, sys._getframe(1).f_code.co_name))
            return real(path, *args)

        monkeypatch.setattr(grid, name, spy)
    return seen


def test_cells_are_written_by_the_worker_that_computes_them(tmp_path, monkeypatch):
    seen = _writers(monkeypatch)
    cells = [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1}),
             ({"dataset": "b", "classifier": "c", "method": "m"}, {"n": 1, "fail": True})]
    with pytest.warns(grid.FailedCellsWarning):
        grid.run_cells(_cell_work, cells, tmp_path, progress=False)
    assert [(w, f.split("__")[0]) for w, f, _ in seen] == [("_write_cell", "a"), ("_write_failure", "b")]
    assert all("_run_cell" in caller for *_, caller in seen), seen
    seen.clear()
    monkeypatch.setattr(grid, "evaluate", _fail_atc(evaluation.evaluate))
    with pytest.warns(grid.FailedCellsWarning):
        run(tmp_path / "g", methods=["Naive", "ATC"])
    assert [w for w, *_ in seen] == ["_write_cell", "_write_failure"]
    assert all("_run_pair" in caller for *_, caller in seen), seen


def _fail_atc(real):
    def evaluate(ctx, name, *args):
        if name == "ATC":
            raise RuntimeError("x")
        return real(ctx, name, *args)
    return evaluate


def test_without_a_folder_no_worker_writes_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "None").mkdir()  # what str(None) would name
    cells = [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1}),
             ({"dataset": "b", "classifier": "c", "method": "m"}, {"n": 1, "fail": True})]
    with pytest.warns(grid.FailedCellsWarning):
        grid.run_cells(_cell_work, cells, None, progress=False)
    monkeypatch.setattr(grid, "evaluate", _fail_atc(evaluation.evaluate))
    with pytest.warns(grid.FailedCellsWarning):
        run(None, methods=["Naive", "ATC"])
    assert list((tmp_path / "None").iterdir()) == [] and [p.name for p in tmp_path.iterdir()] == ["None"]


def _where(n):
    return pd.DataFrame({"pid": [os.getpid()] * n})


def test_run_cells_defaults_run_in_this_process_with_progress_and_a_budget(tmp_path, capsys, monkeypatch):
    budgets = []
    real = grid._guarded
    monkeypatch.setattr(grid, "_guarded", lambda budget: budgets.append(budget) or real(budget))
    df = grid.run_cells(_where, [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1})], tmp_path)
    assert df.pid.tolist() == [os.getpid()] and budgets == [grid.DEFAULT_CELL_TIMEOUT] == [1200.0]
    err = capsys.readouterr().err
    assert f"{tmp_path}: 0 cell(s) reused, 1 to compute" in err and "cells: 0 reused, 1 computed, 0 failed" in err


def test_load_results_orders_cells_by_their_key_not_their_file_name(tmp_path):
    df = run(None, methods=["Naive", "ATC"])
    naive, atc = (df[df.method == m].reset_index(drop=True) for m in ("Naive", "ATC"))
    base = grid.cell_key("haberman", "lr", "Naive", n_samples=3, sample_size=20)
    grid._write_cell(tmp_path / "a.parquet", naive, {**base, "seed": 1})
    grid._write_cell(tmp_path / "b.parquet", atc, {**base, "method": "ATC"})
    grid._write_cell(tmp_path / "c.parquet", naive.assign(sample=[7, 8, 9]), base)
    got = grid.load_results(tmp_path)
    assert list(got.index) == list(range(9))
    assert list(got.method) == ["ATC"] * 3 + ["Naive"] * 6
    assert list(got.seed) == [0, 0, 0, 1, 1, 1, 0, 0, 0]  # then as stored (file name order)
    assert list(got["sample"]) == [0, 1, 2, 0, 1, 2, 7, 8, 9]


def test_a_store_whose_folder_exists_is_flushed_into_it(tmp_path):
    (tmp_path / "q").mkdir()
    store = grid._QuantifierStore(tmp_path / "q")
    store["k"] = {"a": 1}
    store.flush()
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == ["k.joblib"]
    assert grid._QuantifierStore(tmp_path / "q")["k"] == {"a": 1}


def test_load_results_warns_of_a_damaged_failure_record_at_the_callers_line(tmp_path):
    (tmp_path / "x.failed.json").write_text("[]")
    with pytest.warns(RuntimeWarning, match=r"^ignoring failure record .*x\.failed\.json \(TypeError: ") as rec:
        df = grid.load_results(tmp_path)
    assert df.empty and df.attrs["failed"] == []
    assert_at_callers_line(rec[0])


# ---- the dask backend (an in-process cluster: fast) ----
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


def _where_run(n):
    """Where a cell runs: the process and whether in its main thread."""
    return pd.DataFrame({"pid": [os.getpid()] * n, "main": [threading.current_thread() is threading.main_thread()] * n})


def test_dask_runs_on_the_client_the_address_or_the_current_client(dask_client, tmp_path):
    here = pd.DataFrame({"pid": [os.getpid()], "main": [False]})  # the in-process cluster's worker thread
    cells = [({"dataset": "a", "classifier": "c", "method": "m"}, {"n": 1})]
    df = grid.run_cells(_where_run, cells, None, backend="dask", scheduler=dask_client, progress=False)
    pd.testing.assert_frame_equal(df, here)
    df = grid.run_cells(_where_run, cells, None, backend="dask", scheduler=dask_client.scheduler.address,
                        progress=False)
    pd.testing.assert_frame_equal(df, here)
    with dask_client.as_current():
        df = grid.run_cells(_where_run, cells, None, backend="dask", progress=False)
    pd.testing.assert_frame_equal(df, here)
    df = grid.run_cells(_where_run, cells, None, progress=False)
    pd.testing.assert_frame_equal(df, here.assign(main=True))  # loky, n_jobs=1: in this process's main thread


def test_a_grid_on_dask_gives_the_in_process_numbers(dask_client, tmp_path, monkeypatch):
    want = run(None, methods=["Naive", "ATC"])
    real, threads = evaluation.evaluate, []

    def evaluate(*args):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*args)

    monkeypatch.setattr(grid, "evaluate", evaluate)
    got = run(tmp_path, methods=["Naive", "ATC"], backend="dask", scheduler=dask_client)
    assert threads == [False, False]  # on the given cluster's worker threads, in this process
    assert got.attrs["cells"] == {"reused": 0, "computed": 2, "failed": 0}
    pd.testing.assert_frame_equal(got.drop(columns="seconds"), want.drop(columns="seconds"))
    assert len(list(tmp_path.glob("*.parquet"))) == 2


# ---- a pair's work: its budget, its timing, what each cell is evaluated with ----
def test_a_preparation_past_its_budget_fails_its_cells_naming_the_budget(tmp_path, monkeypatch):
    def contexts(*args, **kw):
        time.sleep(5)

    monkeypatch.setattr(grid, "contexts", contexts)
    t0 = time.perf_counter()
    with pytest.warns(grid.FailedCellsWarning):
        df = run(tmp_path, cell_timeout=0.2)
    assert time.perf_counter() - t0 < 4
    (failed,) = df.attrs["failed"]
    assert failed["reason"] == "preparing (haberman, lr) failed: time budget exceeded: stopped after 0.2 s (cell_timeout)"
    assert 0.15 <= failed["seconds"] < 3


def test_each_cell_is_evaluated_with_its_spec_and_solver_on_one_blas_thread(tmp_path, monkeypatch):
    from threadpoolctl import threadpool_info
    real, calls = evaluation.evaluate, []

    def evaluate(ctxs, name, spec, measures, solver=DEFAULT_SOLVER):
        threads = max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        calls.append((name, spec, measures, solver, threads))
        return real(ctxs, name, spec, measures, solver)

    monkeypatch.setattr(grid, "evaluate", evaluate)
    run(tmp_path, methods=["Naive", "ATC"], solver="slsqp", measures=("f1",))
    assert calls == [("Naive", registry.get("Naive"), ["f1"], "slsqp", 1), ("ATC", registry.get("ATC"), ["f1"], "slsqp", 1)]
    for path in tmp_path.glob("*.parquet"):
        timing = grid._read_cell(path)[2]
        for f in ("cell_seconds", "prepare_seconds"):
            assert type(timing[f]) is float and 0 < timing[f] < 60
            assert abs(timing[f] * 1e4 - round(timing[f] * 1e4)) < 1e-6  # rounded to 0.1 ms


def test_a_cell_is_stored_without_its_index_as_a_pandas_parquet_file(tmp_path):
    frame = pd.DataFrame({"a": [1.0, 2.0]}, index=[5, 6])
    grid._write_cell(tmp_path / "c.parquet", frame, {"dataset": "d"})
    back = grid._read_cell(tmp_path / "c.parquet")[1]
    pd.testing.assert_frame_equal(back, frame.reset_index(drop=True))
    meta = pq.read_schema(tmp_path / "c.parquet").metadata
    assert b"pandas" in meta and pq.read_schema(tmp_path / "c.parquet").names == ["a"]


def test_a_folder_that_cannot_be_written_is_refused_by_name(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores permission bits: sysfs, which no one writes files into, instead
        ro = Path("/sys/kernel")
        try:
            (ro / "capshift-probe").write_text("x")
        except OSError:
            pass
        else:  # pragma: no cover
            pytest.skip("no read-only directory here")
    with pytest.raises(ValueError) as got:
        grid._check_results_dir(ro)
    assert re.fullmatch(rf"results={re.escape(repr(str(ro)))} is not writable \((Permission denied|Read-only file "
                        r"system)\): choose a directory you can write to", str(got.value)), str(got.value)


def test_run_grid_defaults_are_run_experiments(tmp_path, monkeypatch, capsys):
    from capshift.experiment import DEFAULT_METHODS
    budgets, real = [], grid._guarded
    monkeypatch.setattr(grid, "_guarded", lambda budget: budgets.append(budget) or real(budget))

    def contexts(*args, **kw):  # stop before any work: the failure records carry the cells' keys
        raise ValueError("stop")

    monkeypatch.setattr(grid, "contexts", contexts)
    with pytest.warns(grid.FailedCellsWarning):
        df = grid.run_grid(["haberman"], results=tmp_path)
    methods = list(dict.fromkeys(registry.get(m).name for m in DEFAULT_METHODS))
    keys = [json.loads(p.read_text())["key"] for p in tmp_path.glob("*.failed.json")]
    assert sorted(k["method"] for k in keys) == sorted(methods)
    for k in keys:
        assert k == grid.cell_key("haberman", "lr", k["method"])  # lr, upp, 1000 samples of 100, accuracy, seed 0
    assert budgets == [grid.DEFAULT_CELL_TIMEOUT] and df.attrs["cells"]["failed"] == len(methods)
    assert f"{tmp_path}: 0 cell(s) reused, {len(methods)} to compute" in capsys.readouterr().err


def test_results_are_taken_as_each_task_finishes(tmp_path):
    """In-process (n_jobs=1) a task runs only once the main process has handled the one before: a cell that its
    worker could not write is on disk before the next cell starts (joblib's generator, not a list at the end)."""
    from joblib import delayed
    first = tmp_path / "a.parquet"

    def tasks():
        return [delayed(grid._run_cell)(_first_on_disk, {"path": str(first)},
                                        {"dataset": x, "classifier": "c", "method": "m"}, f"{x}.parquet", None, None)
                for x in "abc"]

    frames = {}
    grid._run_tasks(tasks(), 3, tmp_path, frames, False, "loky", None, 1)
    assert {k: v.on_disk.tolist() for k, v in frames.items()} == {"a.parquet": [False], "b.parquet": [True],
                                                                   "c.parquet": [True]}


def _first_on_disk(path):
    return pd.DataFrame({"on_disk": [Path(path).is_file()]})
