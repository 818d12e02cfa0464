"""LEAP family: exact recovery on noise-free PPS, solver paths, estimator API, degenerate input."""
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from capshift.leap import LEAP, OLEAP, SLEAP, TableSolver, leap_table, oleap_table, sleap_table
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
