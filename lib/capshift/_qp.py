"""Exact active-set solver of ``min ||A x - b||²`` over the probability simplex, for a fixed A.

This is the constrained problem of LEAP's fallback and of O-LEAP (LEAP 2025, Sect. 4.5): the
unknowns are the n² cells of the test table, ``x >= 0`` and ``sum(x) = 1``. Only ``b`` changes
from one test sample to the next, so everything that depends on ``A`` is computed once:

- the Gram matrix ``Q = A^T A`` (positive definite: LEAP's square system is invertible, see
  :mod:`capshift.leap`, and O-LEAP's system contains it), its inverse ``Q^-1`` (Cholesky), the
  map ``M = Q^-1 A^T`` from a right-hand side to the unconstrained minimiser, and ``v = Q^-1 1``.

For a batch of right-hand sides, ``u = M b`` and the minimiser under ``sum(x) = 1`` alone,
``u - v (1^T u - 1) / (1^T v)``, are one matrix product; a sample whose minimiser has no negative
cell is solved (no bound is active, so the KKT conditions hold). For the others the question is
which cells are 0 at the optimum (the working set W). Given W, the equality-constrained problem
``x_W = 0, sum(x) = 1`` is solved exactly, in the *range space* (a ``(|W|+1)``-square system of
entries of ``Q^-1``) when W is small, in the *null space* (``Q`` restricted to the free cells F,
the multiplier of the sum eliminated) when W is large: ``O(min(|W|, |F|)^3)`` per solve.
W is found by

1. block principal pivoting (Kim & Park 2011; Judice & Pires 1994), started from the negative
   cells of the equality-only minimiser: swap every cell whose value (free) or bound multiplier
   (fixed) has the wrong sign, with the usual backup rule (swap only the largest index when the
   number of wrong signs stops decreasing). It typically ends in 2-7 solves for n <= 26;
2. if it has not ended after ``max_pivots`` solves, a primal active-set method (Nocedal & Wright
   2006, Alg. 16.3) from its last working set, which is finite: keep a feasible point, step
   towards the equality-constrained solution until a cell hits 0 (it joins W), or release the
   cell of W with the most negative multiplier; stop when every multiplier is >= 0.

One step of iterative refinement on the final KKT system removes the round-off of ``Q^-1``. The
solution is exact up to round-off: there is no convergence tolerance, only one on the sign of
the multipliers (``1e-12 (1 + max |A^T b|)``).

**Many samples at once.** For the LEAP and O-LEAP systems (n >= 3) the pivoting runs on the whole batch of
samples together (:meth:`SimplexActiveSet._batch_pivoting`): every iteration is one set of array operations
over all samples still unsettled, so Python's per-call overhead is paid once per iteration, not once per
sample. Its null-space solves use the structure of Q: the rate and row-sum equations of true class i give a
diagonal block ``I + (rank <= 3)`` (rank 2 for O-LEAP, 3 for LEAP), the column sums and Eq. 8 a rank
``n + 1`` term across blocks; Woodbury's identity turns ``Q_FF^-1`` into small per-class ``<= 3``-square
systems plus one ``(n+1)``-square Schur complement per sample, ``O(n^3)`` work instead of ``O(|F|^3)``
(see :meth:`SimplexActiveSet._batch_solve`). A sample that the pivoting does not settle finishes alone
with the primal method above.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dposv

__all__ = ["SimplexActiveSet"]


def _spd_solve(S, r):
    """Solve ``S z = r`` for a symmetric positive definite S: LAPACK's posv (Cholesky) called directly,
    which at these sizes is twice as fast as ``np.linalg.solve``; LU if S is not numerically PD."""
    _, z, info = dposv(S.T, r)  # S.T is F-contiguous: no copy of the (symmetric) matrix
    return z if info == 0 else np.linalg.solve(S, r)


def _inv_small(A):
    """Inverses of a stack of 1x1, 2x2 or 3x3 matrices by the adjugate (one vectorised expression; LAPACK
    called per matrix costs ~1 us each); larger: ``np.linalg.inv``. The matrices here are nonsingular by
    construction (see :meth:`SimplexActiveSet._batch_solve`)."""
    k = A.shape[-1]
    if k == 1:
        return 1.0 / A
    if k == 2:
        a, b, c, d = A[..., 0, 0], A[..., 0, 1], A[..., 1, 0], A[..., 1, 1]
        det = a * d - b * c
        return np.stack([np.stack([d, -b], -1), np.stack([-c, a], -1)], -2) / det[..., None, None]
    if k == 3:
        a = [[A[..., i, j] for j in range(3)] for i in range(3)]
        cof = [[a[(j + 1) % 3][(i + 1) % 3] * a[(j + 2) % 3][(i + 2) % 3]
                - a[(j + 1) % 3][(i + 2) % 3] * a[(j + 2) % 3][(i + 1) % 3] for j in range(3)] for i in range(3)]
        det = a[0][0] * cof[0][0] + a[0][1] * cof[1][0] + a[0][2] * cof[2][0]
        return np.stack([np.stack(row, -1) for row in cof], -2) / det[..., None, None]
    return np.linalg.inv(A)


class SimplexActiveSet:
    """``argmin_{x >= 0, sum x = 1} ||A x - b||²`` for one fixed A and many b.

    Parameters
    ----------
    A : array-like or sparse, shape (m, N)
        The system matrix; ``A^T A`` must be positive definite on ``{d : sum(d) = 0}`` (true for
        the LEAP and O-LEAP systems; include Eq. 8, the all-ones row: it makes ``A^T A`` itself
        positive definite without changing the minimiser on the simplex).
    max_iter : int or None
        Cap on primal active-set iterations per sample (default ``10 N``); reaching it raises
        ``RuntimeError`` (never observed: the method is finite, this only guards against cycling).
    max_pivots : int or None
        Cap on block-pivoting iterations per sample before the primal active-set method takes
        over (default ``5 sqrt(N) + 20``; 0 skips pivoting).

    Attributes
    ----------
    iterations_ : ndarray of int, shape (k,)
        Iterations (pivoting + active set) per sample of the last :meth:`solve`; 0 when the
        minimiser under ``sum(x) = 1`` alone is already non-negative.
    """

    def __init__(self, A, max_iter: int | None = None, max_pivots: int | None = None):
        self.As = sp.csr_matrix(A, dtype=float)          # O(n^3) non-zeros: Q x = A^T (A x) is cheap
        self.AsT = self.As.T.tocsr()
        A = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)
        self.A = np.ascontiguousarray(A)
        self.N = A.shape[1]
        Q = A.T @ A
        try:
            cf = cho_factor(Q, lower=False)
        except np.linalg.LinAlgError:
            raise ValueError("A^T A is singular: the least-squares problem has no unique minimiser "
                             "(does every class occur in the validation table?)") from None
        self.Q = Q
        Qi = cho_solve(cf, np.eye(self.N))
        self.Qi = 0.5 * (Qi + Qi.T)
        self.M = self.Qi @ A.T            # b -> unconstrained minimiser
        self.v = self.Qi.sum(axis=1)      # Q^-1 1
        self.s = float(self.v.sum())      # 1^T Q^-1 1
        self._structure(A)
        self.max_iter = 10 * self.N if max_iter is None else int(max_iter)
        self.max_pivots = 5 * int(np.sqrt(self.N)) + 20 if max_pivots is None else int(max_pivots)
        self.iterations_ = np.zeros(0, dtype=int)

    # --------------------------------------------------------------------------------------
    def solve(self, B) -> np.ndarray:
        """Minimisers for right-hand sides ``B`` of shape (m,) or (k, m); returns (N,) or (k, N)."""
        B = np.asarray(B, dtype=float)
        single = B.ndim == 1
        B = np.atleast_2d(B)
        U = B @ self.M.T                              # unconstrained minimisers Q^-1 A^T b, (k, N)
        C = B @ self.A                                # linear terms c = A^T b, (k, N)
        mu = (U.sum(axis=1) - 1.0) / self.s
        X = U - mu[:, None] * self.v                  # minimisers under sum(x) = 1 alone
        iters = np.zeros(len(B), dtype=int)
        todo = np.flatnonzero(X.min(axis=1) < 0.0)
        if self.Bw is not None and len(todo):
            X[todo], iters[todo] = self._batch_pivoting(U[todo], C[todo], X[todo])
        else:
            for k in todo:
                X[k], iters[k] = self._active_set(U[k], C[k], X[k])
        self.iterations_ = iters
        np.clip(X, 0.0, None, out=X)
        X /= X.sum(axis=1, keepdims=True)
        return X[0] if single else X

    def _Qx(self, x):
        """``Q x = A^T (A x)`` with the sparse A."""
        return self.AsT @ (self.As @ x)

    def _structure(self, A):
        """Detect "block diagonal plus low rank": with the N = n² cells in n blocks of n (the true-class rows
        of the table), the equations that touch one block only (LEAP's rate and row-sum equations) give a
        block-diagonal part of Q, the few others (Eq. 8 and the column sums) a low-rank part ``U U^T``. When
        every diagonal block is positive definite (O-LEAP's system; LEAP's drops class 0's equations, whose
        block then is the identity, subtracted again as a rank-n term) the null-space solves use Woodbury's
        identity: n solves of n x n blocks plus one small capacitance system, ``O(n^4)`` instead of
        ``O(|F|^3)`` with up to ``n^6 / 8``."""
        self.Bw = None
        nb = int(round(np.sqrt(self.N)))
        if nb * nb != self.N or nb < 3:
            return
        blk = np.arange(self.N) // nb
        A = np.asarray(A)
        nz = A != 0
        lo = np.where(nz.any(axis=1), np.where(nz, blk, nb).min(axis=1), -1)
        hi = np.where(nz, blk, -1).max(axis=1)
        within = (lo == hi) & (lo >= 0)
        cross = ~within & nz.any(axis=1)
        if cross.sum() > 2 * nb + 2:
            return
        Bw = np.zeros((nb, nb, nb))
        for i in range(nb):
            Ai = A[within & (lo == i)][:, i * nb:(i + 1) * nb]
            Bw[i] = Ai.T @ Ai
        # a block without equations of its own (LEAP drops class 0's): identity there, minus the identity as
        # a low-rank term, so that Q = B + V diag(sign) V^T with B positive definite
        empty = ~Bw.any(axis=(1, 2))
        Bw[empty] = np.eye(nb)
        try:
            np.linalg.cholesky(Bw)
        except np.linalg.LinAlgError:
            return
        V = [A[cross].T]
        for i in np.flatnonzero(empty):
            E = np.zeros((self.N, nb))
            E[i * nb:(i + 1) * nb] = np.eye(nb)
            V.append(E)
        self.nb, self.Bw, self.U = nb, Bw, np.ascontiguousarray(np.hstack(V))
        self.sign = np.r_[np.ones(int(cross.sum())), -np.ones(nb * int(empty.sum()))]
        self._identity_plus_low_rank(np.ascontiguousarray(A[cross].T), empty)

    def _identity_plus_low_rank(self, Ux, empty):
        """Prepare the batched solves of :meth:`_batch_solve`: each diagonal block with equations of its own as
        ``I + V_i diag(lam_i) V_i^T`` (eigendecomposition of ``B_i - I``), the cross equations ``Ux`` (N, r)
        and the cells of the blocks without equations of their own (``empty``).

        The block of true class i holds its rate equations (Eq. 15) ``x_ij - r_ij s_i = 0`` and its row sum
        (Eq. 21), whose Gram matrix is ``I - r 1^T - 1 r^T + (|r|^2 + 1) 1 1^T``: the identity plus rank 2
        (rank 3 for LEAP, which drops the rate equation of column 0). So on the cells of those blocks
        ``Q = I + L K L^T`` with L of only ``~3n`` columns (block-diagonal ``V_i`` and the ``n + 1`` cross
        equations), and every principal submatrix is inverted by Woodbury's identity through a small
        capacitance matrix. LEAP's class-0 block (its cells occur in the cross equations only) is eliminated
        last, by a Schur complement of at most n cells."""
        nb = self.nb
        lam, vec = np.linalg.eigh(self.Bw - np.eye(nb))                  # (nb, n), (nb, n, n)
        keep = np.abs(lam) > 1e-10 * (1.0 + np.abs(lam).max(axis=1, keepdims=True))
        keep[empty] = False
        km = max(int(keep.sum(axis=1).max()), 1)
        V = np.zeros((nb, nb, km))
        lam_inv = np.ones((nb, km))                                        # padding: V = 0, 1/lam = 1
        for i in range(nb):
            k = np.flatnonzero(keep[i])
            V[i, :, :len(k)] = vec[i][:, k]
            lam_inv[i, :len(k)] = 1.0 / lam[i, k]
        self.lam_inv = lam_inv
        rc = Ux.shape[1]
        self.Ux = Ux
        self.regular = np.repeat(~empty, nb).astype(float)               # cells of blocks with own equations
        self.empty_cells = np.flatnonzero(np.repeat(empty, nb))
        self.U0 = Ux[self.empty_cells]                                     # (N0, r)
        Ub = Ux.reshape(nb, nb, rc)
        # cell-wise products as sparse maps from a batch of free masks (s, N) to the capacitance blocks (one
        # product each): Cbb[i] = V_i^T diag(f_i) V_i, Cbc[i] = V_i^T diag(f_i) U_i, and L^T = [V | Ux]^T
        blockdiag = lambda X: sp.block_diag([sp.csr_matrix(b) for b in X], format="csr")    # noqa: E731
        self.VV_T = blockdiag((V[:, :, :, None] * V[:, :, None, :]).reshape(nb, nb, km * km)).T.tocsr()
        self.VU_T = blockdiag((V[:, :, :, None] * Ub[:, :, None, :]).reshape(nb, nb, km * rc)).T.tocsr()
        self.L = sp.hstack([blockdiag(V), sp.csr_matrix(Ux)], format="csr")           # (N, nb km + rc)
        self.L_T = self.L.T.tocsr()
        self.Ux_T = sp.csr_matrix(Ux.T)
        # Ux^T diag(f) Ux: one sparse product with the cell-wise outer products of Ux's rows
        Us = sp.csr_matrix(Ux)
        rows, cols, vals = [], [], []
        for cell in range(self.N):
            lo, hi = Us.indptr[cell], Us.indptr[cell + 1]
            idx, val = Us.indices[lo:hi], Us.data[lo:hi]
            rows.extend([cell] * len(idx) ** 2)
            cols.extend((idx[:, None] * rc + idx[None, :]).ravel())
            vals.extend(np.outer(val, val).ravel())
        self.T_cc = sp.csr_matrix((vals, (rows, cols)), shape=(self.N, rc * rc)).T.tocsr()

    def _batch_solve(self, F, Y):
        """``Q_FF^-1 y_F`` for a batch: F (s, N) free masks (float 0/1), Y (s, t, N) right-hand sides (zero on
        the fixed cells); returns (s, t, N), zero on the fixed cells.

        On the free cells of the regular blocks (mask D), ``H = I + D L K L^T D`` is inverted by Woodbury:
        ``H^-1 y = y - D L C^-1 L^T y`` with ``C = K^-1 + L^T D L``; C's block-diagonal part (one
        ``km``-square block per true class, ``km`` <= 3) is eliminated first, leaving the Schur complement
        ``S = I + U^T B_D^-1 U`` on the r cross equations as the only dense solve: ``O(n^3)`` per sample, all
        samples of the batch in the same array operations. The free cells of empty blocks (LEAP's class 0)
        couple only through the cross equations ``U0``; their Schur complement is ``U0 S^-1 U0^T``."""
        s, N = F.shape
        nb, km = self.lam_inv.shape
        rc = self.Ux.shape[1]
        K = nb * km
        t = Y.shape[1]
        N0 = len(self.empty_cells)
        Fr = F * self.regular
        FrT = np.ascontiguousarray(Fr.T)
        Cbb = (self.VV_T @ FrT).T.reshape(s, nb, km, km)
        Cbb[..., np.arange(km), np.arange(km)] += self.lam_inv
        Cbc = (self.VU_T @ FrT).T.reshape(s, K, rc)
        S = (self.T_cc @ FrT).T.reshape(s, rc, rc)
        S[:, np.arange(rc), np.arange(rc)] += 1.0
        Cbb_inv = _inv_small(Cbb)                                                   # (s, nb, km, km)
        G = (Cbb_inv @ Cbc.reshape(s, nb, km, rc)).reshape(s, K, rc)
        S -= np.swapaxes(Cbc, 1, 2) @ G                                             # Schur complement (s, rc, rc)
        Yr = Y * self.regular
        w = (self.L_T @ Yr.reshape(s * t, N).T).reshape(K + rc, s, t).transpose(1, 0, 2)   # L^T y, (s, K + rc, t)
        wb = w[:, :K].reshape(s, nb, km, t)
        rhs = w[:, K:] - np.swapaxes(G, 1, 2) @ w[:, :K]
        if N0 == 0:
            ac = np.linalg.solve(S, rhs)                                            # (s, rc, t)
        else:
            F0 = F[:, self.empty_cells]
            u0 = self.U0[None] * F0[:, :, None]                                     # (s, N0, rc)
            sol = np.linalg.solve(S, np.concatenate([rhs, np.swapaxes(u0, 1, 2)], axis=2))
            ac, P = sol[..., :t], sol[..., t:]                                      # P = S^-1 u0^T
            # U^T H^-1 y_r = S^-1 U^T B^-1 y_r = ac: the empty cells' system needs no extra pass over the cells
            S0 = u0 @ P                                                             # (s, N0, N0)
            S0[:, np.arange(N0), np.arange(N0)] += 1.0 - F0                          # identity on fixed cells
            x0 = np.linalg.solve(S0, np.swapaxes(Y[:, :, self.empty_cells], 1, 2) - u0 @ ac)   # (s, N0, t)
            # H^-1 (y_r - U u0^T x0) = y_r - D (V (ab - G a) + U (ac + a)) with a = S^-1 u0^T x0 = P x0
            ac = ac + P @ x0
        ab = sum(Cbb_inv[..., :, q, None] * wb[:, :, None, q, :] for q in range(km)).reshape(s, K, t) - G @ ac
        coef = np.concatenate([ab, ac], axis=1).transpose(1, 0, 2).reshape(K + rc, s * t)
        Z = Yr - (self.L @ coef).T.reshape(s, t, N) * Fr[:, None, :]
        if N0:
            Z[:, :, self.empty_cells] = np.swapaxes(x0, 1, 2)
        return Z

    def _batch_eqp(self, inW, C):
        """Equality-constrained minimisers of a batch of working sets: inW (s, N) bool, C (s, N) linear terms.
        Returns (X, multipliers of x_W = 0 with the sign convention of :meth:`_eqp` (> 0: wrong sign),
        nu); samples whose free set is empty get NaN."""
        F = (~inW).astype(float)
        Z = self._batch_solve(F, np.stack([C * F, F], axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            nu = (Z[:, 0].sum(axis=1) - 1.0) / Z[:, 1].sum(axis=1)
        X = Z[:, 0] - nu[:, None] * Z[:, 1]
        X[inW] = 0.0
        QX = (self.AsT @ (self.As @ X.T)).T
        M = C - QX - nu[:, None]                                           # = -(bound multipliers)
        return X, M, nu

    def _batch_pivoting(self, U, C, X_eq, chunk: int = 256):
        """Block principal pivoting (:meth:`_pivoting`) run on many samples at once, with the structured
        solves of :meth:`_batch_solve`; samples not settled within ``max_pivots`` iterations finish with the
        primal active-set method, one by one. Returns (X, iterations)."""
        k = len(C)
        X_out = np.empty_like(X_eq)
        iters = np.zeros(k, dtype=int)
        for lo in range(0, k, chunk):
            sl = slice(lo, min(lo + chunk, k))
            X_out[sl], iters[sl] = self._pivot_chunk(U[sl], C[sl], X_eq[sl])
        return X_out, iters

    def _pivot_chunk(self, U, C, X_eq):
        k, N = C.shape
        tol = 1e-12 * (1.0 + np.abs(C).max(axis=1))
        inW = X_eq < 0.0
        best = np.full(k, N + 1)
        backup = np.full(k, 3)
        X_out = np.empty_like(X_eq)
        iters = np.zeros(k, dtype=int)
        act = np.arange(k)
        for it in range(1, self.max_pivots + 1):
            if len(act) == 0:
                break
            X, M, nu = self._batch_eqp(inW[act], C[act])
            W = inW[act]
            bad = (~W & (X < 0.0)) | (W & (M > tol[act, None]))
            n_bad = bad.sum(axis=1)
            ok = (n_bad == 0) & np.isfinite(nu)
            X_out[act[ok]] = X[ok]
            iters[act[ok]] = it
            improved = n_bad < best[act]
            best[act] = np.where(improved, n_bad, best[act])
            backup[act] = np.where(improved, 3, backup[act] - 1)
            full = improved | (backup[act] >= 0)
            last = N - 1 - np.argmax(bad[:, ::-1], axis=1)                 # the largest wrong-sign index
            swap = bad & full[:, None]
            swap[np.flatnonzero(~full), last[~full]] = True
            keep = ~ok & np.isfinite(nu) & (W.sum(axis=1) < N)
            sub = act[keep]
            inW[sub] ^= swap[keep]
            act = sub
        for j in np.setdiff1d(np.arange(k), np.flatnonzero(iters)):          # unsettled: primal active set
            X_out[j], iters[j] = self._active_set(U[j], C[j], X_eq[j])
        return X_out, iters

    def _eqp_structured(self, W, c):
        """Null-space solve with ``x_W = 0`` by Woodbury on the block-diagonal plus low-rank Q (see
        :meth:`_structure`): (x, multipliers of x_W = 0, nu)."""
        N, nb, U = self.N, self.nb, self.U
        r = U.shape[1]
        free = np.ones(N, dtype=bool)
        free[W] = False
        if not free.any():
            raise np.linalg.LinAlgError("no free cell")
        M = free.reshape(nb, nb)
        B = self.Bw * (M[:, :, None] & M[:, None, :])      # Q's blocks restricted to the free cells
        bi, bj = np.nonzero(~M)
        B[bi, bj, bj] = 1.0                                  # identity on the fixed cells (their rhs is 0)
        UF = U * free[:, None]
        R = np.empty((N, 2 + r))
        R[:, 0] = c * free
        R[:, 1] = free
        R[:, 2:] = UF
        Z = np.linalg.solve(B, R.reshape(nb, nb, 2 + r)).reshape(N, 2 + r)
        S = UF.T @ Z[:, 2:]
        S.flat[::r + 1] += self.sign                         # capacitance diag(sign) + U_F^T B^-1 U_F
        Y = Z[:, :2] - Z[:, 2:] @ np.linalg.solve(S, UF.T @ Z[:, :2])   # Q_FF^-1 [c_F, 1_F]
        nu = (Y[:, 0].sum() - 1.0) / Y[:, 1].sum()
        x = Y[:, 0] - nu * Y[:, 1]
        x[W] = 0.0
        lam = self._Qx(x)[W] - c[W] + nu
        return x, -lam, nu

    # --------------------------------------------------------------------------------------
    def _eqp(self, W, u, c):
        """Minimiser with ``x_W = 0`` and ``sum(x) = 1``: (x, multipliers of x_W = 0, nu)."""
        N = self.N
        nW = len(W)
        if self.Bw is not None and nW > 0.05 * N:  # structured null-space solve (few fixed cells: range space)
            return self._eqp_structured(W, c)
        if nW <= N - nW:  # range space: (|W|+1) system of Q^-1 entries
            Qi, v = self.Qi, self.v
            S = np.empty((nW + 1, nW + 1))
            S[:nW, :nW] = Qi[W].T[W]  # symmetric: Qi[W][:, W], gathered 3x faster than np.ix_
            S[:nW, nW] = S[nW, :nW] = v[W]
            S[nW, nW] = self.s
            r = np.empty(nW + 1)
            r[:nW] = u[W]
            r[nW] = u.sum() - 1.0
            m = _spd_solve(S, r) if nW else r / self.s
            if 8 * nW < N:
                x = u - Qi[:, W] @ m[:nW] - v * m[nW]
            else:  # a full mat-vec is cheaper than gathering many columns
                mW = np.zeros(N)
                mW[W] = m[:nW]
                x = u - Qi @ mW - v * m[nW]
            x[W] = 0.0
            return x, m[:nW], m[nW]
        # null space: Q_FF x_F = c_F - nu 1, nu fixed by sum(x_F) = 1
        free = np.ones(N, dtype=bool)
        free[W] = False
        F = np.flatnonzero(free)
        if len(F) == 0:
            raise np.linalg.LinAlgError("no free cell")
        rhs = np.empty((len(F), 2))
        rhs[:, 0] = c[F]
        rhs[:, 1] = 1.0
        ab = _spd_solve(self.Q[F].T[F], rhs)
        nu = (ab[:, 0].sum() - 1.0) / ab[:, 1].sum()
        x = np.zeros(N)
        x[F] = ab[:, 0] - nu * ab[:, 1]
        lam = self._Qx(x)[W] - c[W] + nu   # bound multipliers (>= 0 at the optimum)
        return x, -lam, nu

    def _active_set(self, u, c, x_eq):
        scale = 1.0 + np.abs(c).max()
        tol = 1e-12 * scale
        inW, it, done = self._pivoting(u, c, x_eq < 0.0, tol)
        if done is not None:
            return done, it
        # primal active set (finite), started from the pivoting's last working set
        x = np.zeros(self.N) if inW.all() else np.where(inW, 0.0, np.clip(self._eqp(np.flatnonzero(inW), u, c)[0], 0.0, None))
        if not x.sum() > 0:
            inW = x_eq < 0.0
            x = np.where(inW, 0.0, x_eq)
        x /= x.sum()
        inW = x <= 0.0
        for it in range(it + 1, it + self.max_iter + 1):
            W = np.flatnonzero(inW)
            xs, m, nu = self._eqp(W, u, c)
            neg = xs < 0.0
            if neg.any():                                   # blocked: step to the first cell that hits 0
                d = xs - x
                cand = np.flatnonzero(neg & (d < 0.0))
                ratios = x[cand] / -d[cand]
                j = np.argmin(ratios)
                alpha = min(max(ratios[j], 0.0), 1.0)
                x = x + alpha * d
                hit = cand[ratios <= ratios[j] * (1 + 1e-12) + 1e-300]
                x[hit] = 0.0
                inW[hit] = True
                np.clip(x, 0.0, None, out=x)
                continue
            x = xs
            if len(W) == 0 or m.max() <= tol:               # multipliers lambda_W = -m >= 0: optimal
                return self._refine(W, x, m, nu, c), it
            inW[W[np.argmax(m)]] = False                    # release the most violated bound
        raise RuntimeError(f"active-set solver did not converge in {self.max_iter} iterations")

    def _pivoting(self, u, c, inW, tol):
        """Block principal pivoting (Kim & Park 2011, after Judice & Pires 1994) on the KKT system.

        Solve the equality-constrained problem of the working set; swap every cell whose value
        (free cell) or multiplier (fixed cell) has the wrong sign; when the number of such cells
        stops decreasing, swap fewer (three tries of the full swap, then the largest index only).
        Usually the exact working set in a few iterations. Returns ``(inW, iterations, x or None)``.
        """
        N, max_iter = self.N, self.max_pivots
        best, backup = N + 1, 3
        for it in range(1, max_iter + 1):
            W = np.flatnonzero(inW)
            if len(W) == N:
                return inW, it, None
            xs, m, nu = self._eqp(W, u, c)
            bad_free = np.flatnonzero(~inW & (xs < 0.0))
            bad_fixed = W[m > tol]
            n_bad = len(bad_free) + len(bad_fixed)
            if n_bad == 0:
                return inW, it, self._refine(W, xs, m, nu, c)
            if n_bad < best:
                best, backup = n_bad, 3
                swap = np.r_[bad_free, bad_fixed]
            elif backup > 0:
                backup -= 1
                swap = np.r_[bad_free, bad_fixed]
            else:
                swap = np.array([max(np.r_[bad_free, bad_fixed])])
            inW[swap] = ~inW[swap]
        return inW, max_iter, None

    def _refine(self, W, x, m, nu, c):
        """One step of iterative refinement on the KKT system of the final working set (if its residual
        is above round-off)."""
        nW = len(W)
        if nW > self.N - nW:
            return x  # null-space solve used Q directly: already accurate
        # Q x + E^T mu = c, E x = e with E = [I_W; 1^T], mu = (m, nu)
        r1 = c - self._Qx(x) - nu
        r1[W] -= m
        r2 = np.r_[-x[W], 1.0 - x.sum()]
        if np.abs(r1).max() <= 1e-13 * (1.0 + np.abs(c).max()) and np.abs(r2).max() <= 1e-14:
            return x  # already accurate: skip the correction solve
        t = self.Qi @ r1
        S = np.empty((nW + 1, nW + 1))
        S[:nW, :nW] = self.Qi[W].T[W]
        S[:nW, nW] = S[nW, :nW] = self.v[W]
        S[nW, nW] = self.s
        rhs = np.r_[t[W], t.sum()] - r2
        dm = _spd_solve(S, rhs) if nW else rhs / self.s
        dx = t - self.Qi[:, W] @ dm[:nW] - self.v * dm[nW]
        x = x + dx
        x[W] = 0.0
        return x
