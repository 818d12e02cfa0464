"""LEAP family: exact recovery on noise-free PPS, solver paths, estimator API, degenerate input."""
import pickle
import re
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from capshift.leap import (LEAP, OLEAP, SLEAP, CvxpyReference, TableSolver, _SimplexLSQ, leap_table, oleap_table,
                           sleap_table)
from capshift.quantifiers import Quantifier
from capshift.tables import accuracy, contingency_table, predicted_prevalence


def _pps(n, seed):
    rng = np.random.default_rng(seed)
    V = rng.random((n, n)) + n * np.eye(n)
    V /= V.sum()
    q = rng.dirichlet(np.ones(n))
    U = V / V.sum(1, keepdims=True) * q[:, None]  # C_U[i, :] = C_V[i, :] / p_i * q_i
    return V, U, q, predicted_prevalence(U)


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_noise_free_pps_recovery(n):
    V, U, q, g = _pps(n, n)
    np.testing.assert_allclose(sleap_table(V, q), U, atol=1e-8)
    T, path = leap_table(V, g, q, return_path=True)
    np.testing.assert_allclose(T, U, atol=1e-8)
    assert path == "exact"
    np.testing.assert_allclose(oleap_table(V, g, q), U, atol=1e-8)


def test_dense_slsqp_variant_agrees():
    V, U, q, g = _pps(3, 1)
    np.testing.assert_allclose(oleap_table(V, g, q, solver="slsqp"), U, atol=1e-6)


def test_batch_equals_loop_and_infeasible_takes_constrained_path():
    rng = np.random.default_rng(0)
    V, _, _, _ = _pps(4, 2)
    G, Q = rng.dirichlet(np.ones(4), 30), rng.dirichlet(np.ones(4), 30)  # inconsistent: often infeasible
    for method in ("leap", "oleap"):
        solver = TableSolver(V, method)
        T, paths = solver.solve(G, Q)
        assert T.shape == (30, 4, 4) and T.min() >= 0
        np.testing.assert_allclose(T.sum((1, 2)), 1)
        for k in (0, 7, 29):
            np.testing.assert_allclose(solver.solve(G[k], Q[k])[0][0], T[k], atol=1e-7)
    _, paths = TableSolver(V, "leap").solve(G, Q)
    assert "constrained" in set(paths)


def test_constrained_solution_is_optimal_on_simplex():
    rng = np.random.default_rng(5)
    V, _, _, _ = _pps(3, 5)
    s = TableSolver(V, "oleap")
    g, q = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    T = s.solve(g, q)[0][0]
    b = s.system.rhs(g, q)
    best = np.sum((s.system.A @ T.ravel() - b) ** 2)
    for _ in range(300):  # no random point of the simplex does better
        x = rng.dirichlet(np.ones(9) * 0.5)
        assert np.sum((s.system.A @ x - b) ** 2) >= best - 1e-9


def test_singular_rate_matrix_still_gives_a_valid_table():
    # identical rows of the rate matrix (h no better than chance): ACC's R^T q = gamma is singular,
    # LEAP's square system is not (see the module docstring); the table stays valid
    V = np.array([[0.3, 0.2], [0.3, 0.2]])
    assert np.linalg.matrix_rank(TableSolver(V, "leap").system.A.toarray()) == 4
    for g, q in [([0.6, 0.4], [0.5, 0.5]), ([0.6, 0.4], [0.9, 0.1]), ([0.1, 0.9], [0.5, 0.5])]:
        T, path = leap_table(V, g, q, return_path=True)
        assert np.isfinite(T).all() and T.min() >= 0 and T.sum() == pytest.approx(1)
        assert path == ("exact" if g[0] == 0.6 else "constrained")


def test_invalid_prevalence_and_tables():
    V, _, q, g = _pps(3, 0)
    with pytest.raises(ValueError, match="est_prev"):
        leap_table(V, g, [0.5, 0.6, 0.1])
    with pytest.raises(ValueError, match="pred_prev"):
        oleap_table(V, [1, 0], q)
    with pytest.raises(ValueError, match="no items"):
        sleap_table(np.array([[0.5, 0.5], [0, 0]]), [0.5, 0.5])
    with pytest.raises(ValueError, match="solver"):
        TableSolver(V, "leap", solver="gurobi")


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    n, d = 3, 4
    means = rng.normal(0, 2.0, (n, d))
    def draw(counts):
        y = np.repeat(np.arange(n), counts)
        return means[y] + rng.normal(size=(len(y), d)), y
    X_L, y_L = draw([300, 300, 300])
    X_V, y_V = draw([300, 300, 300])
    X_U, y_U = draw([600, 150, 50])  # strong PPS
    h = LogisticRegression().fit(X_L, y_L)
    return h, X_V, y_V, X_U, y_U


@pytest.mark.parametrize("Est", [SLEAP, LEAP, OLEAP])
def test_estimators_with_oracle_quantifier_track_true_accuracy(blobs, Est):
    h, X_V, y_V, X_U, y_U = blobs
    est = Est(h, quantifier="oracle").fit(X_V, y_V)
    q = np.bincount(y_U, minlength=3) / len(y_U)
    true_acc = accuracy(contingency_table(y_U, h.predict(X_U), 3))
    naive_err = abs(accuracy(est.val_table_) - true_acc)
    err = abs(est.predict(X_U, prevalence=q) - true_acc)
    assert err < 0.03 and err <= naive_err + 1e-9


@pytest.mark.parametrize("quantifier", ["acc", "kdey", "cc", "sld"])
def test_named_quantifiers_and_api(blobs, quantifier):
    h, X_V, y_V, X_U, y_U = blobs
    est = LEAP(h, quantifier=quantifier, random_state=0).fit(X_V, y_V)
    T = est.predict_table(X_U)
    assert T.shape == (3, 3) and T.min() >= 0 and T.sum() == pytest.approx(1)
    batch = est.predict_table_batch([X_U[:100], X_U[100:300]])
    assert batch.shape == (2, 3, 3)
    np.testing.assert_allclose(batch[0], est.predict_table(X_U[:100]), atol=1e-9)
    assert isinstance(est.predict(X_U, measure="f1"), float)
    # on these well-separated blobs every quantifier's estimate is consistent with V's rates, so the exact path is
    # taken, and then the column sums are the observed predicted fractions (Eq. 11; class 0's follows from Eq. 8)
    est.predict_table(X_U)
    assert list(est.paths_) == ["exact"]
    np.testing.assert_allclose(T.sum(0), np.bincount(h.predict(X_U), minlength=3) / len(X_U), atol=1e-9)


def test_kdey_is_deterministic(blobs):
    h, X_V, y_V, X_U, _ = blobs
    a = OLEAP(h, random_state=1).fit(X_V, y_V).predict_table(X_U[:200])
    b = OLEAP(h, random_state=1).fit(X_V, y_V).predict_table(X_U[:200])
    np.testing.assert_array_equal(a, b)


def test_degenerate_inputs(blobs):
    h, X_V, y_V, X_U, y_U = blobs
    est = OLEAP(h, quantifier="acc").fit(X_V, y_V)
    T = est.predict_table(X_U[:1])  # one-item sample
    assert np.isfinite(T).all() and T.sum() == pytest.approx(1)
    with pytest.raises(ValueError, match="empty"):
        est.predict_table(X_U[:0])
    with pytest.raises(ValueError, match="outside the codeframe"):
        LEAP(h, quantifier="acc").fit(X_V, np.where(y_V == 2, 5, y_V))
    with pytest.raises(ValueError, match="no items of class"):
        LEAP(h, quantifier="acc").fit(X_V[y_V != 2], y_V[y_V != 2])
    with pytest.raises(ValueError, match="prevalence"):
        LEAP(h, quantifier="oracle").fit(X_V, y_V).predict(X_U)
    with pytest.raises(TypeError, match="predict_proba"):
        LEAP(LinearSVC().fit(X_V, y_V), quantifier="sld").fit(X_V, y_V)
    with pytest.raises(ValueError, match="already be trained"):
        LEAP(LogisticRegression(), quantifier="acc").fit(X_V, y_V)
    with pytest.raises(ValueError, match="unknown quantifier"):
        LEAP(h, quantifier="xyz").fit(X_V, y_V)
    with pytest.raises(ValueError, match="unknown measure"):
        LEAP(h, quantifier="acc", measure="kappa").fit(X_V, y_V)


# -- Solvers against the exact optimum, their settings, messages, pickling, estimator plumbing (issue 32: mutation testing) ---
def _mut_V(n=3, seed=3):
    rng = np.random.default_rng(seed)
    V = rng.random((n, n)) + n * np.eye(n)
    return V / V.sum()


def _mut_problem(n=3, seed=3, k=4):
    """An O-LEAP system with inconsistent right-hand sides (active bounds at the optimum)."""
    rng = np.random.default_rng(seed)
    ts = TableSolver(_mut_V(n, seed), "oleap")
    G, Q = rng.dirichlet(np.ones(n) * 0.3, k), rng.dirichlet(np.ones(n) * 0.3, k)
    B = ts.system.rhs(G, Q)
    ref = ts.solve(G, Q)[0].reshape(k, -1)  # active-set: exact optimum
    return ts, G, Q, B, ref


def _lsq(ts, solver):
    keep = ts.system.group != 1  # _SimplexLSQ leaves Eq. 8 out
    return _SimplexLSQ(ts.system.A[keep], solver), keep


def test_reference_has_active_bounds():
    _, _, _, _, ref = _mut_problem()
    assert (ref == 0).any(axis=1).all()  # every optimum sits on a face of the simplex


@pytest.mark.parametrize("solver,atol", [("osqp", 1e-7), ("cvxpy", 1e-7), ("slsqp", 1e-7)])
def test_simplex_lsq_matches_active_set(solver, atol):
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, solver)
    for b, r in zip(B, ref):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. an unknown SLSQP option
            x = lsq.solve(b[keep])
        assert x.shape == (9,) and x.min() >= 0.0
        assert abs(x.sum() - 1.0) < 1e-14  # normalised by the sum
        np.testing.assert_allclose(x, r, atol=atol)
    T, paths = TableSolver(_mut_V(), "oleap", solver).solve(G, Q)
    np.testing.assert_allclose(T.reshape(len(B), -1), ref, atol=atol)


def test_slsqp_against_scipy_lsq_objective():
    ts, G, Q, B, ref = _mut_problem(n=2, seed=11, k=3)
    lsq, keep = _lsq(ts, "slsqp")
    A = ts.system.A.toarray()[keep]
    for b, r in zip(B, ref):
        x = lsq.solve(b[keep])
        f, f_ref = np.sum((A @ x - b[keep]) ** 2), np.sum((A @ r - b[keep]) ** 2)
        assert f <= f_ref + 1e-12
        np.testing.assert_allclose(x, r, atol=1e-7)


def test_osqp_settings():
    ts, *_ = _mut_problem()
    lsq, _ = _lsq(ts, "osqp")
    s = lsq.qp.settings
    assert (s.eps_abs, s.eps_rel, s.max_iter, bool(s.polishing), bool(s.verbose)) == (1e-9, 1e-9, 50000, True, False)


def test_osqp_is_silent_and_polished(capfd):
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, "osqp")
    x = lsq.solve(B[0][keep])
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    np.testing.assert_allclose(x, ref[0], atol=1e-10)


class _FakeQP:
    def __init__(self, x):
        self.x, self.calls = x, []

    def update(self, **kw):
        self.calls.append(("update", kw))

    def warm_start(self, **kw):
        self.calls.append(("warm_start", kw))

    def solve(self, **kw):
        self.calls.append(("solve", kw))
        return type("R", (), {"x": self.x})()


def test_osqp_warm_start_and_failure():
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, "osqp")
    x_ok = np.full(9, 2.0)
    lsq.qp = _FakeQP(x_ok)
    np.testing.assert_array_equal(lsq.solve(B[0][keep]), np.full(9, 1 / 9))
    (_, up), (_, ws), (_, sv) = lsq.qp.calls
    np.testing.assert_array_equal(ws["x"], np.full(9, 1 / 9))  # from the barycentre, whatever came before
    np.testing.assert_array_equal(ws["y"], np.zeros(10))
    assert sv == {"raise_error": False}
    np.testing.assert_allclose(up["q"], -2.0 * (lsq.A.T @ B[0][keep]))
    for bad in (None, np.full(9, np.nan)):
        lsq.qp = _FakeQP(bad)
        with pytest.raises(RuntimeError, match="^" + re.escape("OSQP failed on the constrained LEAP problem; try solver='slsqp'") + "$"):
            lsq.solve(B[0][keep])


def test_osqp_independent_of_previous_sample():
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, "osqp")
    lsq.solve(B[1][keep])
    a = lsq.solve(B[0][keep])
    fresh, _ = _lsq(ts, "osqp")
    np.testing.assert_array_equal(a, fresh.solve(B[0][keep]))


def test_cvxpy_failure_message():
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, "cvxpy")
    lsq.ref.solve = lambda Bk: np.full((len(Bk), 9), np.nan)
    with pytest.raises(RuntimeError, match="^" + re.escape("cvxpy + OSQP failed on the constrained LEAP problem; "
                                                           "try solver='active_set'") + "$"):
        lsq.solve(B[0][keep])


def test_unknown_solver_message():
    ts, *_ = _mut_problem()
    with pytest.raises(ValueError, match=re.escape("solver must be one of ('active_set', 'osqp', 'cvxpy', 'slsqp'), "
                                                   "got 'gurobi'")):
        _SimplexLSQ(ts.system.A, "gurobi")


@pytest.mark.parametrize("solver,name,atol", [(cp.CLARABEL, "CLARABEL", 1e-10), (cp.OSQP, "OSQP", 1e-7)])
def test_cvxpy_reference(solver, name, atol):
    ts, G, Q, B, ref = _mut_problem()
    A = ts.system.A.toarray()
    r = CvxpyReference(A, solver)
    X = r.solve(B[:2])
    assert r.prob.solver_stats.solver_name == name
    np.testing.assert_allclose(X, ref[:2], atol=atol)
    if name == "CLARABEL":
        assert r.kw == {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}
    else:
        assert r.kw == {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 50000}


def test_cvxpy_reference_failure_gives_nan_row():
    ts, G, Q, B, ref = _mut_problem()
    r = CvxpyReference(ts.system.A.toarray(), cp.CLARABEL)
    r.prob = type("P", (), {"solve": lambda self, **kw: None})()  # leaves x.value None: a failed solve
    X = r.solve(B[:2])
    assert X.shape == (2, 9) and np.isnan(X).all()


def test_pickled_solver_rebuilds_workspace():
    ts, G, Q, B, ref = _mut_problem()
    s = TableSolver(_mut_V(), "oleap", "osqp")
    T1 = s.solve(G, Q)[0]
    s2 = pickle.loads(pickle.dumps(s))
    assert s2._lsq is None and s2.solver == "osqp"
    np.testing.assert_array_equal(s2.solve(G, Q)[0], T1)


def test_constrained_empty_batch():
    s = TableSolver(_mut_V(), "oleap", "osqp")
    m = s.system.A.shape[0]
    assert s._constrained(np.empty((0, m))).shape == (0, 9)


def test_solve_messages_and_paths_dtype():
    V = _mut_V()
    s = TableSolver(V, "leap")
    q = np.array([0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"^pred_prev must have shape \(\.\.\., 3\)"):
        s.solve([0.5, 0.5], q)
    with pytest.raises(ValueError, match=r"^est_prev must have shape \(\.\.\., 3\)"):
        s.solve(q, [0.5, 0.5])
    _, paths = s.solve(q, q)
    assert paths.dtype == object


def test_exact_path_renormalises_after_clipping():
    # a PPS table with an empty cell; nudging gamma makes that cell a tiny negative (> -1e-9): the exact path
    # clips it and divides by the sum
    V = np.array([[0.4, 0.0, 0.1], [0.05, 0.2, 0.05], [0.0, 0.05, 0.15]])
    q = np.array([0.3, 0.3, 0.4])
    U = V / V.sum(1, keepdims=True) * q[:, None]
    g = U.sum(0)
    s = TableSolver(V, "leap")
    for d in (4e-10, -4e-10):
        gg = g + np.array([d, -d, 0.0])
        raw = np.linalg.solve(s.system.A.toarray(), s.system.rhs(gg[None], q[None])[0])
        T, paths = s.solve(gg, q)
        if raw.min() < -1e-12:
            assert paths[0] == "exact"
            assert abs(T.sum() - 1.0) < 1e-15
            assert T.min() == 0.0
            break
    else:
        pytest.fail("no tiny negative cell")


def test_leap_table_solver_and_batch():
    V = _mut_V()
    rng = np.random.default_rng(0)
    G, Q = rng.dirichlet(np.ones(3), 2), rng.dirichlet(np.ones(3), 2)
    with pytest.raises(ValueError, match="solver must be one of"):
        leap_table(V, G[0], Q[0], solver="gurobi")
    assert leap_table(V, G, Q).shape == (2, 3, 3)
    T, paths = leap_table(V, G, Q, return_path=True)
    assert T.shape == (2, 3, 3) and paths.shape == (2,)
    assert oleap_table(V, G, Q).shape == (2, 3, 3)


def test_sleap_messages():
    with pytest.raises(ValueError, match=r"^val_table entries must sum to 1"):
        sleap_table(np.array([[0.5, 0.5], [0.5, 0.5]]), [0.5, 0.5])
    with pytest.raises(ValueError, match=re.escape("val_table has no items of class(es) [1]: S-LEAP cannot rescale "
                                                   "an empty row")):
        sleap_table(np.array([[0.3, 0.3, 0.1], [0, 0, 0], [0.1, 0.1, 0.1]]), [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match=r"^est_prev must have shape \(\.\.\., 2\)"):
        sleap_table(np.array([[0.4, 0.1], [0.1, 0.4]]), [0.2, 0.3, 0.5])


@pytest.fixture(scope="module")
def mut_blobs():
    rng = np.random.default_rng(1)
    means = rng.normal(0, 2.0, (3, 4))
    y = np.repeat(np.arange(3), 60)
    X = means[y] + rng.normal(size=(len(y), 4))
    h = LogisticRegression().fit(X, y)
    return h, X, y


def test_estimator_defaults_and_reads():
    h = object()
    est = LEAP(h)
    assert est.quantifier == "kdey" and est.measure == "accuracy"
    assert LEAP(h, quantifier=Quantifier("acc")).reads_from_h() == ("decisions",)
    assert LEAP(h, quantifier=Quantifier("sld")).reads_from_h() == ("confidence",)
    assert LEAP(h, quantifier=object()).reads_from_h() == ()


def test_evidence(mut_blobs):
    h, X, y = mut_blobs
    assert LEAP(h, quantifier="acc").evidence() == (1, LEAP.evidence_reason)
    assert LEAP(h, quantifier="kdey").evidence() == (5, "its quantifier's posteriors on V are cross-validated in 5 "
                                                        "stratified folds")
    fitted = LEAP(h, quantifier="kdey", random_state=0).fit(X, y).quantifier_
    assert fitted.is_fitted and fitted.min_per_class == 5
    assert LEAP(h, quantifier=fitted).evidence() == (1, LEAP.evidence_reason)
    unfitted = Quantifier("kdey")
    assert LEAP(h, quantifier=unfitted).evidence()[0] == 5


def test_evidence_two_folds():
    from quapy.method.aggregative import ACC
    q = ACC(LogisticRegression(), val_split=2)
    assert Quantifier(q).min_per_class == 2
    assert LEAP(object(), quantifier=q).evidence() == (2, "its quantifier's posteriors on V are cross-validated in 2 "
                                                        "stratified folds")


def test_tables_from_prevalences(mut_blobs):
    h, X, y = mut_blobs
    q = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    sl = SLEAP(h, quantifier="oracle").fit(X, y)
    T = sl.tables_from_prevalences(q, q)
    np.testing.assert_allclose(T, sleap_table(sl.val_table_, q))
    assert sl.paths_.dtype == object and list(sl.paths_) == ["scaling", "scaling"]
    with pytest.raises(ValueError, match=r"^est_prev must have shape \(\.\.\., 3\)"):
        sl.tables_from_prevalences(q, q[:, :2] / q[:, :2].sum(1, keepdims=True))
    with pytest.raises(ValueError, match=r"^pred_prev must have shape \(\.\.\., 3\)"):
        sl.tables_from_prevalences(q[:, :2] / q[:, :2].sum(1, keepdims=True), q)
    with pytest.raises(ValueError, match=re.escape("pred_prev and est_prev must have the same shape (k, 3), got (2, 3) "
                                                   "and (1, 3)")):
        sl.tables_from_prevalences(q, q[0])
    ol = OLEAP(h, quantifier="oracle", solver="osqp").fit(X, y)
    assert ol.solver_.solver == "osqp" and ol.solver_.method == "oleap"


def test_slsqp_gets_true_derivatives_and_limits(monkeypatch):
    import capshift.leap as leap_mod
    from scipy.optimize import minimize as real_minimize
    seen = []

    def spy(fun, x0, **kw):
        seen.append((fun, x0, kw))
        return real_minimize(fun, x0, **kw)

    monkeypatch.setattr(leap_mod, "minimize", spy)
    ts, G, Q, B, ref = _mut_problem()
    lsq, keep = _lsq(ts, "slsqp")
    lsq.solve(B[0][keep])
    (fun, x0, kw), = seen
    np.testing.assert_array_equal(x0, np.full(9, 1 / 9))
    assert kw["options"] == {"ftol": 1e-14, "maxiter": 1000}
    rng = np.random.default_rng(0)
    for x in rng.dirichlet(np.ones(9), 3):  # the analytic gradient is the objective's (central differences)
        num = np.array([(fun(x + 1e-6 * e) - fun(x - 1e-6 * e)) / 2e-6 for e in np.eye(9)])
        np.testing.assert_allclose(kw["jac"](x), num, rtol=1e-6, atol=1e-9)
        (con,) = kw["constraints"]
        assert con["type"].lower() == "eq" and con["fun"](x) == pytest.approx(x.sum() - 1.0)
        np.testing.assert_array_equal(con["jac"](x), np.ones(9))  # the sum constraint's Jacobian, supplied
