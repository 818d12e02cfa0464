"""The active-set simplex least-squares solver (capshift._qp) against cvxpy + Clarabel, KKT, recovery."""
import itertools

import cvxpy as cp
import numpy as np
import pytest

from capshift._qp import SimplexActiveSet, _inv_small, _spd_solve
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


def _assert_kkt(A, X, B, tol=1e-9):
    """The KKT conditions of min ||A x - b||² on the simplex, row by row of X and B."""
    Qm = A.T @ A
    for x, b in zip(X, B):
        grad = Qm @ x - A.T @ b                       # half the gradient of ||Ax - b||²
        free = x > 0
        nu = -grad[free].mean()
        lam = grad + nu                               # bound multipliers
        scale = 1 + np.abs(A.T @ b).max()
        assert np.abs(lam[free]).max() <= tol * scale  # stationarity on the free cells
        assert lam.min() >= -tol * scale                # dual feasibility
        assert x.min() >= 0 and abs(x.sum() - 1) < 1e-12


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
    _assert_kkt(A, X, B)


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


# Exact optima of small QPs (a general A, not a LEAP table): hand-solved projections onto the simplex, the minimiser
# found by trying every support, the path of the pivoting and of the primal active-set method, and refinement

def _by_enumeration(A, b):
    """The minimiser by brute force: for every support F, the KKT system of ``x_F`` free and ``x = 0`` elsewhere
    (``Q_FF x_F + nu = c_F``, ``sum(x_F) = 1``); the one with ``x_F >= 0`` and bound multipliers
    ``Q x - c + nu >= 0`` is the unique optimum (A^T A is positive definite)."""
    N = A.shape[1]
    for k in range(1, N + 1):
        for F in itertools.combinations(range(N), k):
            x, m, _ = _eq_solve(A, b, np.setdiff1d(np.arange(N), F))
            if x.min() >= -1e-12 and m.max(initial=0.0) <= 1e-12:
                return x
    raise AssertionError("no support satisfies the KKT conditions")


def _eq_solve(A, b, W):
    """Minimiser of ``||A x - b||²`` with ``x_W = 0`` and ``sum(x) = 1`` from its dense KKT system:
    ``(x, m, nu)`` with ``Q_FF x_F + nu = c_F`` and ``m = (c - Q x - nu)_W`` (minus the bound multipliers)."""
    N = A.shape[1]
    Qm, c = A.T @ A, A.T @ b
    F = np.setdiff1d(np.arange(N), W)
    k = len(F)
    K = np.block([[Qm[np.ix_(F, F)], np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
    sol = np.linalg.solve(K, np.r_[c[F], 1.0])
    x = np.zeros(N)
    x[F] = sol[:k]
    return x, (c - Qm @ x - sol[k])[W], sol[k]


@pytest.mark.parametrize("max_pivots", [None, 0])
def test_projection_onto_simplex_by_hand(max_pivots):
    # A = I: the Euclidean projection onto the simplex, x = max(b - nu, 0) with nu fixed by sum(x) = 1
    qp = SimplexActiveSet(np.eye(3), max_pivots=max_pivots)
    x = qp.solve([1.0, 0.5, -1.0])                           # nu = 0.25 on the free cells {0, 1}
    assert x.shape == (3,)
    np.testing.assert_allclose(x, [0.75, 0.25, 0.0], atol=1e-15)
    np.testing.assert_array_equal(qp.iterations_, [1])      # x_eq = (7/6, 2/3, -5/6): fixing cell 2 is optimal
    assert qp.iterations_.dtype.kind == "i"
    X = qp.solve([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [1.0, -1.0, -1.0], [2, 0, 0]])   # ints are fine too
    np.testing.assert_allclose(X, [[0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], atol=1e-15)
    # a point of the simplex (even with a zero cell) is its own projection: no iteration; a vertex in one
    np.testing.assert_array_equal(qp.iterations_, [0, 0, 1, 1])
    assert X.shape == (4, 3) and qp.iterations_.dtype.kind == "i"


def test_pivoting_path_by_hand():
    # b = (1, .2, .05, -.5), A = I: x_eq = b + 1/16 fixes cell 3; then nu = 1/12 makes cell 2 negative: the
    # pivoting swaps it in (2 solves); without pivoting the primal method starts from the clipped point of the
    # first solve, whose zeros {2, 3} are the optimal working set (1 solve); one pivot then one primal step: 2
    b = np.array([1.0, 0.2, 0.05, -0.5])
    for max_pivots, iters in [(None, 2), (0, 1), (1, 2), (2, 2)]:
        qp = SimplexActiveSet(np.eye(4), max_pivots=max_pivots)
        np.testing.assert_allclose(qp.solve(b), [0.9, 0.1, 0.0, 0.0], atol=1e-15)
        assert qp.iterations_.tolist() == [iters], max_pivots


def test_default_iteration_caps():
    # documented defaults: max_iter = 10 N, max_pivots = 5 sqrt(N) + 20 (integer part of the root)
    qp = SimplexActiveSet(np.eye(5))
    assert (qp.max_iter, qp.max_pivots) == (50, 5 * 2 + 20)
    qp = SimplexActiveSet(np.eye(4), max_iter=7, max_pivots=3)
    assert (qp.max_iter, qp.max_pivots) == (7, 3)
    assert qp.iterations_.shape == (0,) and qp.iterations_.dtype.kind == "i"   # no solve yet


def test_integer_and_boolean_systems_are_numbers():
    # A of ints or bools is read as numbers: A^T A = [[2, 1], [1, 2]], not the boolean product (all True, singular)
    b = np.array([1.0, 2.0, 0.0])
    x_ref = SimplexActiveSet(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])).solve(b)
    np.testing.assert_allclose(x_ref, [1.0, 0.0], atol=1e-15)   # (t - 2)² + (1 - t)² at x = (t, 1 - t): t = 1
    for dtype in (int, bool):
        A = np.array([[1, 1], [1, 0], [0, 1]], dtype=dtype)
        np.testing.assert_allclose(SimplexActiveSet(A).solve(b), x_ref, atol=1e-15)
    with pytest.raises(ValueError, match=r"^A\^T A is singular: the least-squares problem has no unique minimiser "
                                         r"\(does every class occur in the validation table\?\)$"):
        SimplexActiveSet(np.array([[1.0, 1.0], [2.0, 2.0]]))


def test_small_inverses_by_adjugate():
    # stacks of 1x1, 2x2, 3x3 matrices (the adjugate formula) and larger (LAPACK), as a stack or a single matrix
    rng = np.random.default_rng(6)
    for k in (1, 2, 3, 4):
        A = rng.normal(size=(5, k, k)) + 3 * np.eye(k)
        np.testing.assert_allclose(_inv_small(A) @ A, np.broadcast_to(np.eye(k), A.shape), atol=1e-12)
        np.testing.assert_allclose(_inv_small(A[0]), np.linalg.inv(A[0]), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(_inv_small(np.array([[[4.0]], [[0.5]]])), [[[0.25]], [[2.0]]])


@pytest.mark.parametrize("N", [3, 5, 10])
@pytest.mark.parametrize("max_pivots", [None, 0, 1])
def test_dense_system_equals_enumeration(N, max_pivots):
    # a general A (no block structure: per-sample solves, range and null space), right-hand sides far from the
    # range of A so that many bounds are active; one call for the batch = one call per row
    rng = np.random.default_rng(N)
    A = rng.normal(size=(N + 2, N))
    B = rng.normal(size=(12, N + 2)) * 2
    qp = SimplexActiveSet(A, max_pivots=max_pivots)
    X = qp.solve(B)
    ref = np.array([_by_enumeration(A, b) for b in B])
    np.testing.assert_allclose(X, ref, atol=1e-12)
    np.testing.assert_array_equal(qp.iterations_ == 0, ref.min(axis=1) > 0)   # 0: no bound active
    _assert_kkt(A, X, B, tol=1e-12)
    for k in (0, 7):
        np.testing.assert_allclose(qp.solve(B[k]), X[k], atol=1e-14)


def test_primal_method_blocked_step_and_release_by_hand():
    # Q = A^T A = [[6, -3, 4], [-3, 5, -1], [4, -1, 3]], c = A^T b = (-7, 3, -4). Optimum: the vertex e_2 with
    # nu = c_1 - Q_11 = -2 and bound multipliers Q e_2 - c + nu = (2, 0, 1) >= 0. Without pivoting: x_eq fixes
    # cells {0, 1}, whose solution is e_3 (1 solve); cell 1's multiplier is -11: released; the solve with W = {0}
    # gives (0, 1.1, -0.1): blocked, the step stops at e_2 where cell 2 hits 0 (2); W = {0, 2} is optimal (3)
    A = np.array([[-1.0, 0.0, -1.0], [1.0, 1.0, 1.0], [-2.0, 2.0, -1.0]])
    b = np.array([-2.0, -3.0, 3.0])
    for max_pivots in (0, None):
        qp = SimplexActiveSet(A, max_pivots=max_pivots, max_iter=3)
        np.testing.assert_allclose(qp.solve(b), [0.0, 1.0, 0.0], atol=1e-15)
        assert qp.iterations_.tolist() == [3]
    with pytest.raises(RuntimeError, match=r"^active-set solver did not converge in 2 iterations$"):
        SimplexActiveSet(A, max_pivots=0, max_iter=2).solve(b)


def test_refinement_step_solves_the_kkt_system():
    # one step of iterative refinement on the (linear) KKT system of a working set W lands on its exact solution
    # from any x and nu: a perturbation within the constraints (r2 = 0), or off them with Q x + nu 1 unchanged
    # (r1 = 0), is removed; W empty, |W| = N/2 and |W| < N/2 (range space) all take the correction
    rng = np.random.default_rng(4)
    A = rng.normal(size=(8, 6))
    qp = SimplexActiveSet(A)
    Qm = A.T @ A
    rhs = [A @ np.full(6, 1 / 6), *(rng.normal(size=8) for _ in range(12))]
    sizes = set()
    for b in rhs:
        x = _by_enumeration(A, b)
        W, F = np.flatnonzero(x == 0), np.flatnonzero(x > 0)
        if len(W) > 3:
            continue
        sizes.add(len(W))
        c = A.T @ b
        nu = (c - Qm @ x)[F].mean()
        m = (c - Qm @ x - nu)[W]
        np.testing.assert_allclose(qp._refine(W, x, m, nu, c), x, atol=1e-14)
        d = np.zeros(6)
        d[F] = rng.normal(size=len(F)) * 1e-4
        d[F] -= d[F].mean()                                   # sum(x) and x_W unchanged
        np.testing.assert_allclose(qp._refine(W, x + d, m, nu, c), x, atol=1e-12)
        np.testing.assert_allclose(qp._refine(W, x - 1e-4 * qp.v, m, nu + 1e-4, c), x, atol=1e-12)
        np.testing.assert_allclose(qp._refine(W, x, m + 1e-4, nu, c), x, atol=1e-12)   # wrong multipliers: x stays
    assert sizes == {0, 1, 2, 3}


def test_spd_solve_falls_back_to_lu():
    # Cholesky (LAPACK posv) for a positive definite S; posv fails on an indefinite S (at its first or second
    # leading minor), which is then solved by LU
    np.testing.assert_allclose(_spd_solve(np.array([[4.0, 2.0], [2.0, 3.0]]), np.array([2.0, 5.0])), [-0.5, 2.0])
    np.testing.assert_allclose(_spd_solve(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1.0, 2.0])), [2.0, 1.0])
    np.testing.assert_allclose(_spd_solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([1.0, 2.0])), [1.0, 0.0])


@pytest.mark.parametrize("kind", ["dense", "leap", "oleap", "blocks"])
def test_equality_constrained_solves_equal_dense_kkt(kind):
    # the solve of one working set W (x_W = 0, sum(x) = 1), whichever way it is done: range space (few fixed cells,
    # gathering columns of Q^-1 or not), null space (many), Woodbury on a LEAP / O-LEAP table; down to one free cell
    rng = np.random.default_rng(8)
    if kind == "dense":
        A = rng.normal(size=(14, 12))
    elif kind == "blocks":                                   # one cross equation (see the test below)
        A = np.vstack([np.eye(9), np.r_[np.ones(5), np.zeros(4)], np.zeros(9)])
    else:
        A = TableSolver(_table(4, "random", rng), kind).system.A.toarray()
    N = A.shape[1]
    qp = SimplexActiveSet(A)
    assert (qp.Bw is None) == (kind == "dense")
    b = rng.normal(size=len(A))
    u, c = qp.M @ b, A.T @ b
    for nW in (0, 1, 2, 3, N // 2, N // 2 + 1, N - 2, N - 1):
        W = np.sort(rng.choice(N, nW, replace=False))
        x, m, nu = qp._eqp(W, u, c)
        x_ref, m_ref, nu_ref = _eq_solve(A, b, W)
        scale = 1 + np.abs(x_ref).max() + abs(nu_ref)
        np.testing.assert_allclose(x, x_ref, atol=1e-10 * scale, err_msg=str(nW))
        np.testing.assert_allclose(m, m_ref, atol=1e-10 * scale * (1 + np.abs(c).max()), err_msg=str(nW))
        assert abs(nu - nu_ref) <= 1e-10 * scale * (1 + np.abs(c).max())


@pytest.mark.parametrize("n,kind", [(7, "sparse"), (9, "zero_cell")])
@pytest.mark.parametrize("max_pivots", [None, 1, 3])
def test_batched_pivoting_takes_the_per_sample_path(n, kind, max_pivots):
    # the pivoting run on the batch swaps the same cells, iteration for iteration, as the per-sample pivoting (the
    # same backup rule, used here), and hands the same samples over to the primal method after max_pivots: the same
    # iterations_ (O-LEAP: no optimum is degenerate here, so no sign is decided by round-off)
    rng = np.random.default_rng(5)
    ts = TableSolver(_table(n, kind, rng), "oleap")
    B = ts.system.rhs(rng.dirichlet(np.ones(n), 12), rng.dirichlet(np.ones(n) * 0.3, 12))
    qp = SimplexActiveSet(ts.system.A, max_pivots=max_pivots)
    X = qp.solve(B)
    U, C = B @ qp.M.T, B @ qp.A
    X_eq = U - ((U.sum(axis=1) - 1.0) / qp.s)[:, None] * qp.v
    todo = np.flatnonzero(X_eq.min(axis=1) < 0)
    assert len(todo) >= 10 and np.all(qp.iterations_[todo] >= 2)
    if max_pivots is None:  # the batch settles every sample itself: none is left to the per-sample method
        batch_only = SimplexActiveSet(ts.system.A)
        batch_only._active_set = lambda *args: pytest.fail("a sample was left to the per-sample method")
        np.testing.assert_array_equal(batch_only.solve(B), X)
        np.testing.assert_allclose(batch_only.solve(B[todo[0]]), X[todo[0]], atol=1e-14)   # a batch of one
    for k in todo:
        x1, it = qp._active_set(U[k], C[k], X_eq[k])
        assert it == qp.iterations_[k], k
        np.testing.assert_allclose(np.clip(x1, 0, None) / np.clip(x1, 0, None).sum(), X[k], atol=1e-10)


def test_block_structure_of_a_general_sparse_system():
    # the Woodbury solves are used for any A whose N = nb² cells split into nb blocks of equations plus a few cross
    # equations: here 9 unit rows (Q's blocks: the identity), one cross equation over cells 0-4 only (not the last
    # cell) and an empty row; N = 10 is not a square: no structure, the projection onto the simplex
    A = np.vstack([np.eye(9), np.r_[np.ones(5), np.zeros(4)], np.zeros(9)])
    qp = SimplexActiveSet(A)
    assert qp.Bw is not None and qp.U.shape[1] == 1
    rng = np.random.default_rng(9)
    B = rng.normal(size=(6, 11)) * 0.5
    np.testing.assert_allclose(qp.solve(B), [_by_enumeration(A, b) for b in B], atol=1e-12)
    qp = SimplexActiveSet(np.eye(10))
    assert qp.Bw is None
    b = np.r_[0.8, 0.5, np.zeros(8)]                         # nu = 0.15 on the free cells {0, 1}
    np.testing.assert_allclose(qp.solve(b), np.r_[0.65, 0.35, np.zeros(8)], atol=1e-15)


def test_primal_method_path_on_dense_systems():
    # without pivoting, the primal method steps towards each equality-constrained solution only as far as the first
    # cell that hits 0 (the smallest ratio; ties within 1e-12 join W together): two problems with blocked steps,
    # their optimum and the number of steps it takes
    for seed, row, iters in [(0, 52, 4), (3, 16, 5)]:
        rng = np.random.default_rng(seed)
        A = rng.normal(size=(7, 6))
        b = (rng.normal(size=(60, 7)) * 2)[row]
        qp = SimplexActiveSet(A, max_pivots=0)
        np.testing.assert_allclose(qp.solve(b), _by_enumeration(A, b), atol=1e-12)
        assert qp.iterations_.tolist() == [iters], seed
