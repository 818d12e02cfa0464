"""The active-set simplex least-squares solver (capshift._qp) against cvxpy + Clarabel, KKT, recovery."""
import cvxpy as cp
import numpy as np
import pytest

from capshift._qp import SimplexActiveSet
from capshift.leap import SOLVERS, TableSolver, leap_table, oleap_table
from capshift.tables import predicted_prevalence


def _table(n, kind, rng):
    V = rng.random((n, n)) + n * np.eye(n)
    if kind == "sparse":      # about half of the off-diagonal cells empty
        V *= (rng.random((n, n)) < 0.5) | np.eye(n, dtype=bool)
    elif kind == "zero_cell":  # one empty cell (a diagonal one: the classifier never gets class 1 right)
        V[1, 1] = 0.0
    elif kind == "singular":  # identical rate rows: h no better than chance on classes 0 and 1
        V[1] = V[0] * 0.5
    elif kind == "rare":      # a class with almost no validation items
        V[-1] *= 1e-4
    return V / V.sum()


def _objective(A, X, B):
    X = np.clip(X, 0.0, None)
    X = X / X.sum(axis=-1, keepdims=True)
    return ((X @ A.T - B) ** 2).sum(axis=-1)


def _clarabel(A, B):
    x, b = cp.Variable(A.shape[1]), cp.Parameter(A.shape[0])
    prob = cp.Problem(cp.Minimize(cp.sum_squares(A @ x - b)), [x >= 0, cp.sum(x) == 1])
    out = []
    for row in B:
        b.value = row
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        out.append(x.value)
    return np.array(out)


CASES = [(n, kind, method) for n, kind in [(2, "random"), (3, "random"), (3, "zero_cell"), (4, "singular"),
                                            (5, "sparse"), (5, "rare"), (8, "sparse"), (8, "random")]
         for method in ("leap", "oleap")]


@pytest.mark.parametrize("n,kind,method", CASES)
def test_same_optimum_as_clarabel(n, kind, method):
    rng = np.random.default_rng(n * 7 + len(kind))
    V = _table(n, kind, rng)
    G, Q = rng.dirichlet(np.ones(n), 12), rng.dirichlet(np.ones(n) * 0.5, 12)  # inconsistent
    ts = TableSolver(V, method)
    assert ts.solver == "active_set"
    T, paths = ts.solve(G, Q)
    assert T.min() >= 0 and np.allclose(T.sum((1, 2)), 1, atol=1e-12)
    A, B = ts.system.A.toarray(), ts.system.rhs(G, Q)
    f = _objective(A, T.reshape(len(B), -1), B)
    f_ref = _objective(A, _clarabel(A, B), B)
    assert np.all(f - f_ref <= 1e-9 * (1 + f_ref)), np.max((f - f_ref) / (1 + f_ref))
    if method == "leap":  # the exact path is the exact solution of the square system
        assert np.allclose(f[paths == "exact"], 0, atol=1e-20)


@pytest.mark.parametrize("n,kind", [(3, "random"), (6, "sparse"), (10, "random"), (4, "zero_cell")])
@pytest.mark.parametrize("max_pivots", [None, 0, 1])
def test_kkt_conditions(n, kind, max_pivots):
    # also with pivoting cut short, so the primal active-set method finishes the job
    rng = np.random.default_rng(n)
    V = _table(n, kind, rng)
    ts = TableSolver(V, "oleap")
    A = ts.system.A.toarray()
    qp = SimplexActiveSet(A, max_pivots=max_pivots)
    B = ts.system.rhs(rng.dirichlet(np.ones(n), 10), rng.dirichlet(np.ones(n) * 0.3, 10))
    X = qp.solve(B)
    assert np.any(qp.iterations_ > 0)
    Qm = A.T @ A
    for x, b in zip(X, B):
        grad = Qm @ x - A.T @ b                       # half the gradient of ||Ax - b||²
        free = x > 0
        nu = -grad[free].mean()
        lam = grad + nu                               # bound multipliers
        scale = 1 + np.abs(A.T @ b).max()
        assert np.abs(lam[free]).max() <= 1e-9 * scale  # stationarity on the free cells
        assert lam.min() >= -1e-9 * scale                # dual feasibility
        assert x.min() >= 0 and abs(x.sum() - 1) < 1e-12


def test_single_rhs_equals_batch_and_agrees_with_osqp():
    rng = np.random.default_rng(3)
    V = _table(6, "random", rng)
    G, Q = rng.dirichlet(np.ones(6), 8), rng.dirichlet(np.ones(6), 8)
    T, _ = TableSolver(V, "oleap").solve(G, Q)
    for k in (0, 5):
        np.testing.assert_allclose(TableSolver(V, "oleap").solve(G[k], Q[k])[0][0], T[k], atol=1e-13)
    T_osqp, _ = TableSolver(V, "oleap", "osqp").solve(G, Q)
    np.testing.assert_allclose(T, T_osqp, atol=1e-5)
    T_cvxpy, _ = TableSolver(V, "oleap", "cvxpy").solve(G, Q)  # the authors' cvxpy + OSQP problem
    np.testing.assert_allclose(T, T_cvxpy, atol=1e-5)


@pytest.mark.parametrize("n", [2, 5, 12])
def test_exact_recovery_on_consistent_pps(n):
    rng = np.random.default_rng(n)
    V = _table(n, "random", rng)
    q = rng.dirichlet(np.ones(n))
    U = V / V.sum(1, keepdims=True) * q[:, None]
    g = predicted_prevalence(U)
    np.testing.assert_allclose(oleap_table(V, g, q, solver="active_set"), U, atol=1e-12)
    np.testing.assert_allclose(leap_table(V, g, q, solver="active_set"), U, atol=1e-12)


def test_bad_solver_name_and_singular_system():
    V = _table(3, "random", np.random.default_rng(0))
    with pytest.raises(ValueError, match="solver must be one of"):
        TableSolver(V, "oleap", solver="cvxopt")
    assert SOLVERS[0] == "active_set"
    with pytest.raises(ValueError, match="singular"):
        SimplexActiveSet(np.ones((3, 2)))


@pytest.mark.parametrize("method", ["leap", "oleap"])
@pytest.mark.parametrize("kind", ["random", "sparse", "rare"])
def test_structured_solves_equal_dense_ones(method, kind):
    # the Woodbury null-space solves (block-diagonal plus low-rank Q) against the plain Cholesky of Q_FF;
    # low rank: Eq. 8 and the column sums (LEAP: without class 0, plus class 0's empty block)
    rng = np.random.default_rng(11)
    V = _table(9, kind, rng)
    ts = TableSolver(V, method)
    B = ts.system.rhs(rng.dirichlet(np.ones(9), 10), rng.dirichlet(np.ones(9) * 0.3, 10))
    qp = SimplexActiveSet(ts.system.A)
    assert qp.Bw is not None and qp.U.shape[1] == (1 + 9 if method == "oleap" else 1 + 8 + 9)
    X = qp.solve(B)
    qp.Bw = None
    np.testing.assert_allclose(X, qp.solve(B), atol=1e-10)


@pytest.mark.parametrize("method", ["leap", "oleap"])
@pytest.mark.parametrize("n,kind", [(3, "random"), (5, "rare"), (9, "sparse"), (9, "zero_cell")])
def test_batched_woodbury_solve_equals_dense_inverse(method, n, kind):
    # Q_FF^-1 y for random free sets (I + low rank per true class, LEAP's class 0 by its Schur complement)
    # against numpy's dense solve of the principal submatrix
    rng = np.random.default_rng(n + len(kind))
    ts = TableSolver(_table(n, kind, rng), method)
    qp = SimplexActiveSet(ts.system.A)
    A = ts.system.A.toarray()
    Qm = A.T @ A
    F = rng.random((20, n * n)) < 0.6
    F[0] = True                                              # nothing fixed
    F[1, :n] = False                                         # class 0's block entirely fixed
    Y = rng.normal(size=(20, 2, n * n)) * F[:, None, :]
    Z = qp._batch_solve(F.astype(float), Y)
    for f, y, z in zip(F, Y, Z):
        idx = np.flatnonzero(f)
        ref = np.zeros_like(y)
        ref[:, idx] = np.linalg.solve(Qm[np.ix_(idx, idx)], y[:, idx].T).T
        np.testing.assert_allclose(z, ref, atol=1e-9 * (1 + np.abs(ref).max()))


@pytest.mark.parametrize("method", ["leap", "oleap"])
def test_batched_pivoting_equals_one_sample_at_a_time(method):
    # the batch of samples solved together (and in chunks of 3) = each sample by the per-sample method
    rng = np.random.default_rng(5)
    ts = TableSolver(_table(7, "sparse", rng), method)
    B = ts.system.rhs(rng.dirichlet(np.ones(7), 25), rng.dirichlet(np.ones(7) * 0.3, 25))
    qp = SimplexActiveSet(ts.system.A)
    X = qp.solve(B)
    assert qp.iterations_.max() > 1                          # the pivoting had work to do
    U, C = B @ qp.M.T, B @ qp.A
    X_eq = U - ((U.sum(axis=1) - 1.0) / qp.s)[:, None] * qp.v
    todo = np.flatnonzero(X_eq.min(axis=1) < 0)
    X3, _ = qp._batch_pivoting(U[todo], C[todo], X_eq[todo], chunk=3)
    np.testing.assert_allclose(X3, X[todo], atol=1e-13)
    for k in todo[:6]:
        x1, _ = qp._active_set(U[k], C[k], X_eq[k])
        np.testing.assert_allclose(np.clip(x1, 0, None) / np.clip(x1, 0, None).sum(), X[k], atol=1e-10)
