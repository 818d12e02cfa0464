"""capshift.efficiency: the timing helper behind the efficiency chapter (warm, median of repeats), the random
problems it times the solvers on, the objective and workspace size it reports, and one small benchmark row.

Timings are hand-made: the tests replace the module's clock (``efficiency.time``) with :class:`_Clock`, which moves
only when a fake solver says it worked, so no test depends on how fast this machine is."""
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from capshift import efficiency


class _Clock:
    """A clock that moves only when told (``advance``), starting at 100 s (a clock's zero is arbitrary)."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(efficiency, "time", SimpleNamespace(perf_counter=c.perf_counter))
    return c


def _timed(clock, durations, outputs=None):
    """fn for time_per_sample: its i-th call takes durations[i] on the clock and returns i + 1; ``calls`` counts them."""
    calls = []

    def fn():
        clock.advance(durations[len(calls)])
        calls.append(1)
        return len(calls)

    return fn, calls


# time_per_sample: warm-up, median of repeats, budget (on a hand-made clock)

def test_time_per_sample_warms_up_and_takes_the_median(clock):
    fn, calls = _timed(clock, [5.0, 3.0, 1.0, 2.0])
    seconds, out = efficiency.time_per_sample(fn)  # default: three timed calls after one untimed warm-up
    assert len(calls) == 4  # one untimed warm-up call (5 s, not in the median), then three timed ones
    assert seconds == 2.0 and isinstance(seconds, float)  # median of 3, 1, 2
    assert out == 4  # the last timed call's output


def test_time_per_sample_median_of_an_even_number_of_repeats(clock):
    fn, calls = _timed(clock, [3.0, 1.0, 2.0, 4.0])
    seconds, out = efficiency.time_per_sample(fn, reps=4, warmup=False)
    assert len(calls) == 4 and seconds == 2.5 and out == 4  # no warm-up: every call is timed


@pytest.mark.parametrize("reps, timed", [(0, 1), (1, 1), (2.9, 2)])
def test_time_per_sample_times_int_reps_and_at_least_once(clock, reps, timed):
    fn, calls = _timed(clock, [0.5, 0.25, 0.75, 1.0])
    seconds, out = efficiency.time_per_sample(fn, reps=reps, warmup=False)
    assert len(calls) == timed and out == timed
    assert seconds == float(np.median([0.5, 0.25, 0.75][:timed]))


def test_time_per_sample_stops_once_the_repeats_reach_the_budget(clock):
    fn, calls = _timed(clock, [0.5, 0.25, 0.25, 1.0, 1.0])
    seconds, out = efficiency.time_per_sample(fn, reps=5, warmup=False, budget=1.0)
    assert len(calls) == 3 and out == 3  # 0.5 + 0.25 + 0.25 reaches the budget exactly: no fourth call
    assert seconds == 0.25
    fn, calls = _timed(clock, [1e6] * 5)
    assert efficiency.time_per_sample(fn, reps=5, warmup=False)[0] == 1e6 and len(calls) == 5  # no budget: all


def test_time_per_sample_stops_at_the_budget_and_times_at_least_once():
    calls = []
    seconds, _ = efficiency.time_per_sample(lambda: calls.append(1), reps=5, warmup=False, budget=0.0)
    assert len(calls) == 1 and np.isfinite(seconds)


# the random problems: validation tables and (gamma, q-hat) pairs

class _ScriptedRng:
    """An rng whose random(shape) returns the given arrays in turn (and records the shapes asked for)."""

    def __init__(self, *draws):
        self.draws, self.shapes = list(draws), []

    def random(self, shape):
        self.shapes.append(shape)
        return np.array(self.draws.pop(0))


def test_random_table_adds_n_on_the_diagonal_and_normalises():
    rng = _ScriptedRng([[0.5, 0.25], [0.75, 0.125]])
    V = efficiency.random_table(2, rng)
    # [[0.5 + 2, 0.25], [0.75, 0.125 + 2]] / 5.625
    np.testing.assert_allclose(V, np.array([[2.5, 0.25], [0.75, 2.125]]) / 5.625, rtol=1e-15)
    assert rng.shapes == [(2, 2)]  # one draw: the "random" kind empties no cell


def test_random_table_sparse_keeps_the_diagonal_and_the_cells_drawn_below_one_half():
    rng = _ScriptedRng([[0.5, 0.25], [0.75, 0.125]], [[0.9, 0.5], [0.25, 0.5]])
    V = efficiency.random_table(2, rng, "sparse")
    # mask: off-diagonal draws < 0.5 (0.5 itself is not), diagonal always: [[1, 0], [1, 1]]
    np.testing.assert_allclose(V, np.array([[2.5, 0.0], [0.75, 2.125]]) / 5.375, rtol=1e-15)
    assert rng.shapes == [(2, 2), (2, 2)]


def test_random_table_seeded():
    V = efficiency.random_table(4, np.random.default_rng(7))
    assert V.shape == (4, 4) and V.sum() == pytest.approx(1.0, abs=1e-15)
    off = V[~np.eye(4, dtype=bool)]
    assert V.diagonal().min() > 4 * off.max()  # n + U(0, 1) against U(0, 1), normalised alike: > n times
    np.testing.assert_array_equal(V, efficiency.random_table(4, np.random.default_rng(7), "random"))
    assert not np.allclose(V, efficiency.random_table(4, np.random.default_rng(8)))
    S = efficiency.random_table(6, np.random.default_rng(7), "sparse")
    assert S.sum() == pytest.approx(1.0, abs=1e-15) and (S.diagonal() > 0).all()
    assert 0 < (S == 0).sum() < 30  # some of the 30 off-diagonal cells emptied, not all


def test_inconsistent_prevalences_are_seeded_dirichlet_rows():
    G, Q = efficiency.inconsistent_prevalences(3, 5, np.random.default_rng(1))
    assert G.shape == Q.shape == (5, 3)
    np.testing.assert_allclose(G.sum(axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-15)
    rng = np.random.default_rng(1)  # two successive uniform Dirichlet draws of the same generator
    np.testing.assert_array_equal(G, rng.dirichlet(np.ones(3), 5))
    np.testing.assert_array_equal(Q, rng.dirichlet(np.ones(3), 5))
    G2, Q2 = efficiency.inconsistent_prevalences(3, 5, np.random.default_rng(1))
    np.testing.assert_array_equal(G, G2)
    np.testing.assert_array_equal(Q, Q2)
    assert not np.allclose(G, efficiency.inconsistent_prevalences(3, 5, np.random.default_rng(2))[0])


# the objective, and the workspace a TableSolver keeps

def test_objective_clips_renormalises_and_sums_squares_per_row():
    A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    X = np.array([[0.5, 0.5, -0.25], [2.0, 1.0, 1.0]])  # -> [0.5, 0.5, 0] and [0.5, 0.25, 0.25]
    B = np.array([[0.0, 1.0], [0.25, 1.0]])
    # residuals [0.5, -0.5] and [0.25, -0.5]
    np.testing.assert_allclose(efficiency.objective(A, X, B), [0.5, 0.3125], rtol=1e-15)


def test_workspace_bytes_counts_arrays_and_csr_storage_only():
    csr = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 1], dtype=np.int32), np.array([0, 1, 2], dtype=np.int32)),
                        shape=(2, 2))
    lsq = SimpleNamespace(G=np.zeros((3, 4)), A=csr, coo=sp.coo_matrix(np.eye(2)), n=7, name="active set",
                          active=np.zeros(5, dtype=np.int32))
    # 3 * 4 * 8 bytes, + CSR: data 2 * 8, indices 2 * 4, indptr 3 * 4, + 5 * 4; no COO (no .indices), int or str
    assert efficiency._workspace_bytes(SimpleNamespace(_lsq=lsq)) == 96 + 16 + 8 + 12 + 20
    assert efficiency._workspace_bytes(SimpleNamespace(_lsq=None)) == 0


# run: one row per n, on fake solvers with hand-made systems, solutions and costs

_A = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # 3 x 4, nnz 4
_B = np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [0.0, 0.0, 1.0]])
#: capshift's tables (flattened): f = 0 and 0.125 (after clipping the -1/16 cell); the third is past k_ref
_T = np.array([[0.5, 0.25, 0.25, 0.0], [0.5, 0.25, 0.25, -0.0625], [0.0, 0.5, 0.5, 0.0]])
_PATHS = np.array(["constrained", "unconstrained", "constrained"])
#: the references' solutions: Clarabel f = 1/8, 1/32, 0; OSQP f = 3/8, 1/32, 0
_X_REF = {"CLARABEL": np.array([[0.25, 0.25, 0.5, 0.0], [0.375, 0.125, 0.25, 0.25], [0.0, 0.0, 0.5, 0.5]]),
          "OSQP": np.array([[0.0, 0.5, 0.25, 0.25], [0.375, 0.125, 0.25, 0.25], [0.0, 0.0, 0.5, 0.5]])}
#: seconds per row of a reference solve
_REF_COST = {"OSQP": 0.125, "CLARABEL": 0.375}
_COLUMNS = ["n", "samples", "constrained", "osqp_ms", "clarabel_ms", "capshift_ms", "ratio_osqp", "ratio_clarabel",
            "gap", "abs_gap", "osqp_gap", "min_cell", "max_sum_err", "setup_s", "capshift_MB", "sparse_MB", "nnz_A"]


def _fake_solvers(monkeypatch, clock):
    """Replace TableSolver and CvxpyReference in efficiency by fakes; returns the lists of the fakes made."""
    made = {"table": [], "ref": []}

    class FakeTableSolver:
        def __init__(self, V, method):
            clock.advance(0.5)  # build time
            self.V, self.method, self.calls, self._lsq = V, method, [], None
            self.costs = [0.125, 4.0, 0.75, 0.375, 0.5, 0.5]  # setup solve, warm-up, timed
            self.system = SimpleNamespace(A=sp.csr_matrix(_A), rhs=self.rhs)
            made["table"].append(self)

        def rhs(self, G, Q):
            self.rhs_args = (G, Q)
            return _B[:len(G)]

        def solve(self, G, Q):
            self.calls.append((G, Q))
            self._lsq = SimpleNamespace(W=np.zeros(1000))  # 8000 bytes of workspace
            clock.advance(self.costs[len(self.calls) - 1])
            return _T[:len(G)].reshape(-1, 2, 2), _PATHS[:len(G)]

    class FakeReference:
        def __init__(self, A, solver):
            self.A, self.solver, self.sizes = A, solver, []
            made["ref"].append(self)

        def solve(self, B):
            np.testing.assert_array_equal(B, _B[:len(B)])
            self.sizes.append(len(B))
            clock.advance(_REF_COST[self.solver] * len(B))
            return _X_REF[self.solver][:len(B)]

    monkeypatch.setattr(efficiency, "TableSolver", FakeTableSolver)
    monkeypatch.setattr(efficiency, "CvxpyReference", FakeReference)
    return made


def test_run_times_gaps_and_sizes_on_hand_made_solvers(monkeypatch, clock):
    made = _fake_solvers(monkeypatch, clock)
    bench = efficiency.run([2], 3, osqp_samples=2, verbose=False)
    assert list(bench.columns) == _COLUMNS and len(bench) == 1
    row = bench.iloc[0]
    assert (row.n, row.samples, row.constrained, row.nnz_A) == (2, 3, 2, 4)
    # capshift: timed 0.75, 0.375, 0.5 after the 4 s warm-up: median 0.5 s for 3 samples; OSQP 0.25 s per call
    # of k_ref = 2 samples, Clarabel 0.75 s (timed twice: 1.5 s reaches the 1 s budget)
    expected = {"capshift_ms": 1e3 * 0.5 / 3, "osqp_ms": 125.0, "clarabel_ms": 375.0,
                "ratio_osqp": 0.125 / (0.5 / 3), "ratio_clarabel": 0.375 / (0.5 / 3),
                # (f_cap - f_cla) / (1 + f_cla): rows (0 - 1/8) / (9/8) and (1/8 - 1/32) / (33/32)
                "gap": 1 / 11, "abs_gap": 1 / 9, "osqp_gap": (3 / 8 - 1 / 8) / (9 / 8),
                "min_cell": -0.0625, "max_sum_err": 0.0625, "setup_s": 0.5 + 0.125,
                "capshift_MB": 8000 / 1e6, "sparse_MB": (4 * 12 + 4 * (3 + 1)) / 1e6}
    for column, value in expected.items():
        assert row[column] == pytest.approx(value, rel=1e-12, abs=1e-15), column
    (ts,) = made["table"]
    assert ts.method == "oleap"
    # the problem: the seed's validation table, then its (gamma, q-hat) pairs, from one generator
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(ts.V, efficiency.random_table(2, rng))
    G, Q = efficiency.inconsistent_prevalences(2, 3, rng)
    assert [(len(g), len(q)) for g, q in ts.calls] == [(1, 1), (3, 3), (3, 3), (3, 3), (3, 3)]
    np.testing.assert_array_equal(ts.calls[0][0], G[:1])
    np.testing.assert_array_equal(ts.calls[0][1], Q[:1])
    np.testing.assert_array_equal(ts.calls[-1][0], G)
    np.testing.assert_array_equal(ts.rhs_args[1], Q)
    osqp, cla = made["ref"]
    assert (osqp.solver, cla.solver) == ("OSQP", "CLARABEL")
    np.testing.assert_array_equal(osqp.A, _A)
    assert osqp.sizes == [1, 2, 2, 2]  # one compile-and-warm solve of B[:1], then reps=3 timed of B[:k_ref]
    assert cla.sizes == [1, 2, 2]  # stopped by the budget


def test_run_passes_its_options_on(monkeypatch, clock):
    made = _fake_solvers(monkeypatch, clock)
    bench = efficiency.run([2], 3, method="leap", tables="sparse", seed=4, osqp_samples=10, reps=2,
                           clarabel=False, verbose=False, budget=10.0)
    (ts,) = made["table"]
    assert ts.method == "leap"
    rng = np.random.default_rng(4)
    V = efficiency.random_table(2, rng, "sparse")
    assert (V == 0).sum() == 1  # this seed's sparse table empties an off-diagonal cell
    np.testing.assert_array_equal(ts.V, V)
    np.testing.assert_array_equal(ts.calls[-1][0], efficiency.inconsistent_prevalences(2, 3, rng)[0])
    assert len(ts.calls) == 1 + 1 + 2  # setup, warm-up, reps=2
    (osqp,) = made["ref"]  # no Clarabel
    assert osqp.sizes == [1, 3, 3]  # k_ref = min(samples, osqp_samples) = 3, reps=2
    row = bench.iloc[0]
    assert np.isnan(row.clarabel_ms) and np.isnan(row.ratio_clarabel)
    # the gaps are then against OSQP, on all 3 rows: capshift f = 0, 1/8, 1/2 against 3/8, 1/32, 0
    assert row.osqp_gap == 0.0
    assert row.gap == pytest.approx(0.5, rel=1e-12) and row.abs_gap == pytest.approx(0.5, rel=1e-12)


def test_run_times_each_reference_reps_times_or_until_the_budget(monkeypatch, clock):
    made = _fake_solvers(monkeypatch, clock)
    efficiency.run([2], 3, seed=5, osqp_samples=2, reps=2, verbose=False, budget=2.0)
    np.testing.assert_array_equal(made["table"][0].V, efficiency.random_table(2, np.random.default_rng(5)))
    assert len(made["table"][0].calls) == 1 + 1 + 2
    osqp, cla = made["ref"]
    assert osqp.sizes == [1, 2, 2] and cla.sizes == [1, 2, 2]  # reps=2 (OSQP 0.5 s, Clarabel 1.5 s in all)
    made = _fake_solvers(monkeypatch, clock)
    efficiency.run([2], 3, osqp_samples=2, reps=4, verbose=False, budget=0.5)
    assert len(made["table"][0].calls) == 1 + 1 + 4  # capshift is not held to the budget
    osqp, cla = made["ref"]
    assert osqp.sizes == [1, 2, 2] and cla.sizes == [1, 2]  # 0.25 + 0.25 and 0.75 reach 0.5 s


def test_run_prints_one_header_then_a_line_per_n(monkeypatch, clock, capsys):
    _fake_solvers(monkeypatch, clock)
    efficiency.run([2, 2], 3, osqp_samples=2)  # verbose by default
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].split() == _COLUMNS  # no index column
    values = ["2", "3", "2", "125", "375", "167", "0.75", "2.25", "0.0909", "0.111", "0.222", "-0.0625", "0.0625",
              "0.625", "0.008", "6.4e-05", "4"]  # "%.3g"
    assert lines[1].split() == values and lines[2].split() == values


def test_run_reports_warm_times_and_exact_gaps():
    bench = efficiency.run([2, 3], 5, osqp_samples=2, reps=2, verbose=False)
    assert list(bench.n) == [2, 3]
    assert (bench.capshift_ms > 0).all() and (bench.osqp_ms > 0).all()
    assert (bench.abs_gap >= bench.gap).all() and (bench.abs_gap < 1e-6).all()
    assert (bench.min_cell >= 0).all() and (bench.max_sum_err < 1e-12).all()


# inference_times: Figure 5's rows, on a fake dataset context, quantifier and methods

#: per-sample seconds of each label's predict_batch
_COST = {"ATC": 0.125, "DoC": 0.0625, "S-LEAP": 0.25, "LEAP dense": 0.5, "O-LEAP dense": 0.75, "LEAP sparse": 0.375,
         "O-LEAP sparse": 0.4375, "S-LEAP capshift": 0.03125, "LEAP capshift": 0.015625,
         "O-LEAP capshift": 0.0078125}
_BASE = {"ATC": 0.5, "DoC": 0.55, "S-LEAP_KDEy": 0.6, "LEAP_KDEy": 0.7, "O-LEAP_KDEy": 0.8}
#: what a variant's estimates add to its method's, per sample (i = 1..k) and dataset: 0 on capshift's backend
_OFFSET = {("quapy", None): 1 / 64, ("quapy", "slsqp"): 1 / 32, ("quapy", "cvxpy"): 1 / 16}


def _fake_figure5(monkeypatch, clock, n_classes):
    """Replace evaluation.prepare, Quantifier and registry.make_method by fakes; returns what they recorded."""
    log = {"prepare": [], "quant": [], "make": [], "fit": [], "predict": {}}
    labels = {(m, b, s): label for label, m, b, s in efficiency.FIGURE5_VARIANTS}

    def prepare(*args):
        log["prepare"].append(args)
        name, n_samples = args[0], args[4]
        split = SimpleNamespace(n_classes=n_classes[name], X_V=f"X_V {name}", y_V=f"y_V {name}")
        return SimpleNamespace(split=split, h=f"h {name}", samples=lambda: [f"sample {i}" for i in range(n_samples)])

    class FakeQuantifier:
        def __init__(self, *args, **kw):
            self.backend, self.backends = "capshift", []
            log["quant"].append((args, kw, self))

        def fit(self, X, y, n):
            warnings.warn("KDEy fit", UserWarning)
            self.fitted = (X, y, n)
            return self

        def set_kdey_backend(self, backend):
            self.backends.append(backend)
            self.backend = backend

    class FakeEstimator:
        def __init__(self, method, h, kw):
            self.method, self.h, self.kw = method, h, kw
            backend = kw["quantifier"].backend if "quantifier" in kw else None
            self.label = labels[(method, backend, kw.get("solver"))]

        def fit(self, X, y):
            warnings.warn("LEAP fit", UserWarning)
            log["fit"].append((self.label, X, y))

        def predict_batch(self, samples):
            log["predict"].setdefault(self.label, []).append(len(samples))
            clock.advance(_COST[self.label] * len(samples))
            q = self.kw.get("quantifier")
            offset = 0.0 if q is None or q.backend == "capshift" else _OFFSET[(q.backend, self.kw.get("solver"))]
            scale = n_classes[self.h.split()[1]]  # the dataset's
            return _BASE[self.method] + offset * scale * np.arange(1, len(samples) + 1)

    def make_method(method, h, random_state=0, **kw):
        log["make"].append((method, h, random_state, kw))
        return FakeEstimator(method, h, kw)

    monkeypatch.setattr(efficiency.evaluation, "prepare", prepare)
    monkeypatch.setattr(efficiency, "Quantifier", FakeQuantifier)
    monkeypatch.setattr(efficiency.registry, "make_method", make_method)
    return log


def test_inference_times_rows_per_sample_times_and_differences(monkeypatch, clock, capsys):
    log = _fake_figure5(monkeypatch, clock, {"small": 15, "large": 16})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = efficiency.inference_times(["small", "large"], n_samples=4)
    assert caught == []  # the fits' warnings are silenced
    assert capsys.readouterr().out == ""  # quiet by default
    assert list(frame.columns) == ["dataset", "n", "method", "ms", "max_diff"]
    labels = [label for label, *_ in efficiency.FIGURE5_VARIANTS]
    no_dense = [label for label in labels if "dense" not in label]  # SLSQP above dense_max_n=15 classes
    assert list(frame.method) == labels + no_dense
    assert list(frame.dataset) == ["small"] * len(labels) + ["large"] * len(no_dense)
    assert list(frame.n) == [15] * len(labels) + [16] * len(no_dense)
    assert list(frame.ms) == [1e3 * _COST[label] for label in labels + no_dense]
    # max |estimate - the same method's capshift estimate|: offset * n_classes * 4 samples; NaN without a
    # capshift counterpart (ATC, DoC) and for the capshift variants themselves
    diff = {"S-LEAP": 1 / 64, "LEAP dense": 1 / 32, "O-LEAP dense": 1 / 32, "LEAP sparse": 1 / 16, "O-LEAP sparse": 1 / 16}
    for row in frame.itertuples():
        if row.method in diff:
            assert row.max_diff == pytest.approx(diff[row.method] * row.n * 4, rel=1e-12), row
        else:
            assert np.isnan(row.max_diff), row
    # the runs: the datasets' contexts with the defaults, one KDEy quantifier per dataset
    assert log["prepare"] == [("small", "lr", [], "upp", 4, 100, 0), ("large", "lr", [], "upp", 4, 100, 0)]
    (args, kw, quant), (_, _, quant2) = log["quant"]
    assert args == ("kdey",) and kw == {"random_state": 0, "max_fit_items": None}
    assert quant.fitted == ("X_V small", "y_V small", 15) and quant2.fitted == ("X_V large", "y_V large", 16)
    assert quant.backends == ["quapy"] * 5 + ["capshift"] * 3
    assert quant2.backends == ["quapy"] * 3 + ["capshift"] * 3 + ["capshift"]  # the last left on capshift
    made = {(method, kw.get("solver"), "quantifier" in kw): (h, seed) for method, h, seed, kw in log["make"][:10]}
    assert made == {("ATC", None, False): ("h small", 0), ("DoC", None, False): ("h small", 0),
                    ("S-LEAP_KDEy", None, True): ("h small", 0), ("LEAP_KDEy", "slsqp", True): ("h small", 0),
                    ("O-LEAP_KDEy", "slsqp", True): ("h small", 0), ("LEAP_KDEy", "cvxpy", True): ("h small", 0),
                    ("O-LEAP_KDEy", "cvxpy", True): ("h small", 0), ("LEAP_KDEy", "active_set", True): ("h small", 0),
                    ("O-LEAP_KDEy", "active_set", True): ("h small", 0)}
    assert all(kw.get("quantifier", quant) is quant for *_, kw in log["make"][:10])
    assert log["fit"][0] == ("ATC", "X_V small", "y_V small") and log["fit"][-1][1:] == ("X_V large", "y_V large")
    # an untimed first sample, then repeats=3 timed batches of 4 (2.0 s budget: O-LEAP dense's 3 s batch once)
    assert log["predict"]["ATC"] == [1, 4, 4, 4, 1, 4, 4, 4]
    assert log["predict"]["O-LEAP dense"] == [1, 4] and log["predict"]["LEAP dense"] == [1, 4]


def test_inference_times_options(monkeypatch, clock, capsys):
    log = _fake_figure5(monkeypatch, clock, {"small": 3})
    variants = [("LEAP sparse", "LEAP_KDEy", "quapy", "cvxpy"), ("LEAP capshift", "LEAP_KDEy", "capshift", "active_set")]
    frame = efficiency.inference_times(["small"], n_samples=2, sample_size=50, seed=7, dense_max_n=2,
                                       variants=variants, repeats=2, verbose=True, budget=0.5)
    assert list(frame.method) == ["LEAP sparse", "LEAP capshift"]
    assert frame.max_diff.iloc[0] == pytest.approx(1 / 16 * 3 * 2, rel=1e-12) and np.isnan(frame.max_diff.iloc[1])
    assert log["prepare"] == [("small", "lr", [], "upp", 2, 50, 7)]
    assert log["quant"][0][1] == {"random_state": 7, "max_fit_items": None}
    assert [seed for _, _, seed, _ in log["make"]] == [7, 7]
    # LEAP sparse: 0.75 s a batch reaches the 0.5 s budget at once; LEAP capshift: repeats=2
    assert log["predict"] == {"LEAP sparse": [1, 2], "LEAP capshift": [1, 2, 2]}
    assert capsys.readouterr().out.splitlines() == [
        "{'dataset': 'small', 'n': 3, 'method': 'LEAP sparse', 'ms': 375.0}",
        "{'dataset': 'small', 'n': 3, 'method': 'LEAP capshift', 'ms': 15.625}"]
    efficiency.inference_times(["small"], variants=variants[1:])  # the defaults: 10 samples of 100, seed 0
    assert log["prepare"][-1] == ("small", "lr", [], "upp", 10, 100, 0)
