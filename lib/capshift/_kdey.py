"""KDEy-ML inference on QuaPy's fitted densities, vectorised: densities by BLAS, the ML weights by Newton.

QuaPy's :class:`quapy.method.aggregative.KDEyML` (Moreo et al. 2025) fits one Gaussian kernel density
estimate per class on the validation posteriors (scikit-learn ``KernelDensity``) and estimates a sample's
prevalence as the maximum-likelihood mixture weights (Eq. 11 of the KDEy paper):

.. math:: \\hat p = \\arg\\min_{p \\in \\Delta} -\\sum_k \\log\\big(\\textstyle\\sum_i p_i\\, d_i(x_k) + \\epsilon\\big)

with ``d_i`` the class-i density and ``epsilon = 1e-12`` (for 30 classes or more QuaPy works in log
space and smooths ``p`` by ``(p + eps) / (1 + n eps)`` instead; both forms are reproduced). Per sample, QuaPy
evaluates every density with ``KernelDensity.score_samples`` (a tree walk per class) and minimises with
``scipy.optimize`` SLSQP on finite-difference gradients at its default tolerance ``ftol = 1e-6``. At 26
classes and 7,000 validation points that is about 0.1 s for the densities and 0.1 s for SLSQP.

:class:`KDEyEvaluator` computes the same quantities differently, from the *same fitted* density objects:

- **Densities.** For Gaussian kernels the log density of test point x under class i is
  ``logsumexp_j(-||x - v_j||² / (2 h²)) - log N_i - (d/2) log(2 pi h²)`` over the class's centres v_j.
  The exponents ``-||x - v_j||² / (2 h²)`` of all test points of a batch against all centres come from one
  matrix product (BLAS) of the augmented points ``[x, -1, ||x||²]`` with the cached augmented centres
  ``[v / h², ||v||² / (2 h²), -1 / (2 h²)]``; they are <= 0, so ``exp`` cannot overflow, and the kernel
  sums per class are one ``np.add.reduceat`` (a test point far from every centre is redone with a shift).
  Relative to a test point's largest class density this equals scikit-learn's exact evaluation up to
  round-off (1e-12); a class density below about ``e^-700`` times the largest comes out as 0 (it cannot
  move the estimate).
- **Mixture weights.** The negative log-likelihood is convex on the simplex; a Newton method with an
  active set (the cells fixed at 0) and the exact Hessian ``sum_k d_k d_k^T / (p . d_k + eps)²`` solves
  it to round-off, with a backtracking line search and a ratio test that drops a class when its weight
  reaches 0; the classes whose gradient is below the multiplier of the sum constraint (KKT) are added back
  together, each started at the weight that minimises the objective along ``e_j - p`` (:func:`release_weight`).
  It stops when the squared Newton decrement is below ``1e-26 (1 + |f|)`` (or f stops decreasing at round-off)
  and the KKT conditions hold.

Because QuaPy's SLSQP stops at ``ftol = 1e-6``, its estimates differ from the exact optimum by up to about
1e-4 (measured on the offline datasets); this module's estimates are the exact optimum of QuaPy's objective,
which SLSQP reaches when run to a tight tolerance (the test compares with that).
"""
from __future__ import annotations

import numpy as np

__all__ = ["KDEyEvaluator", "KDEY_BACKENDS", "check_kdey_backend", "mixture_ml", "release_weight"]

KDEY_BACKENDS = ("capshift", "quapy")
_EPS = 1e-12          # QuaPy's epsilon in KDEyML.aggregate
_CHUNK = 1_000_000    # kernel entries (test points x centres) evaluated at once: 8 MB of float64


def check_kdey_backend(backend) -> str:
    """``backend`` lower-cased if it is one of :data:`KDEY_BACKENDS`; TypeError/ValueError otherwise."""
    if not isinstance(backend, str):
        raise TypeError(f"kdey_backend must be one of {KDEY_BACKENDS}, got {type(backend).__name__}")
    key = backend.lower()
    if key not in KDEY_BACKENDS:
        raise ValueError(f"unknown kdey_backend {backend!r}; choose one of {KDEY_BACKENDS} ('capshift': vectorised "
                         "densities and an exact Newton solve, 'quapy': QuaPy's KDEyML.aggregate)")
    return key


def mixture_ml(D, c, max_iter: int = 200, em_steps: int = 10) -> np.ndarray:
    """``argmin_{p in simplex} -sum_k log(p . D[:, k] + c[k])`` by an active-set Newton method.

    Parameters
    ----------
    D : ndarray, shape (n, m)
        Non-negative likelihoods of m items under n mixture components.
    c : ndarray, shape (m,)
        Positive offsets (QuaPy's epsilon).
    max_iter : int
        Cap on Newton iterations (the method converges quadratically; 5-30 iterations are typical).
    em_steps : int
        EM iterations from the uniform mixture before Newton's method; they only choose the start
        (the free set: the classes above ``1e-3 / n``); the KKT conditions decide the end.

    Returns
    -------
    ndarray, shape (n,)
        The minimiser (>= 0, sums to 1); unique up to directions in which the objective is flat.
    """
    n, m = D.shape
    p = np.full(n, 1.0 / n)
    if not np.any(D):
        # every likelihood underflowed to 0 (items far from every class): the objective is flat, and EM would
        # give p = 0 and then 0 / 0; QuaPy's KDEyML returns the uniform prevalence here too
        return p
    for _ in range(em_steps):  # a few EM steps (Saerens et al. 2002) find the classes with weight, cheaply
        p *= (D / (p @ D + c)).sum(axis=1) / m
        p /= p.sum()
    free = p > 1e-3 / n  # a first guess of the support: the KKT check below releases any class it misses
    if not free.any():
        free[np.argmax(p)] = True
    p = np.where(free, p, 0.0)
    p /= p.sum()

    def value(p):
        return -np.log(p @ D + c).sum()

    f, last = value(p), np.inf
    for _ in range(max_iter):
        r = 1.0 / (p @ D + c)
        Dr = D * r                                   # (n, m)
        g = -Dr.sum(axis=1)
        F = np.flatnonzero(free)
        nF = len(F)
        H = Dr[F] @ Dr[F].T
        H.flat[::nF + 1] += 1e-14 * (1.0 + H.diagonal().max())   # a flat direction must not stop the solve
        K = np.empty((nF + 1, nF + 1))
        K[:nF, :nF] = H
        K[:nF, nF] = K[nF, :nF] = 1.0
        K[nF, nF] = 0.0
        sol = np.linalg.solve(K, np.r_[-g[F], 0.0])
        d, mu = sol[:nF], -sol[nF]                   # Newton step on the free cells; mu ~ common gradient
        # squared Newton decrement d'Hd (= -g'd, as sum(d) = 0): >= 0 in floats too, where -g'd, a sum of
        # terms of the size of the gradient that cancel near the optimum, can come out negative
        dec = d @ H @ d
        # converged on the free set: a decrement far below f's round-off, or one that no longer shrinks
        done = dec <= 1e-26 * (1.0 + abs(f)) or (dec <= 1e-8 * (1.0 + abs(f)) and dec > 0.25 * last)
        last = dec
        if not done:
            neg = d < 0
            ratios = p[F][neg] / -d[neg]
            amax = min(1.0, ratios.min()) if len(ratios) else 1.0
            a = amax
            while True:                              # backtracking (Armijo); a full step near the optimum
                pn = p.copy()
                pn[F] += a * d
                np.clip(pn, 0.0, None, out=pn)
                fn = value(pn)
                if fn <= f - 1e-4 * a * dec or (a == 1.0 and dec <= 1e-8 * (1.0 + abs(f))) or a < 1e-12:
                    break
                a *= 0.5
            if fn > f and a < 1.0:                   # no decrease: the round-off floor of f is reached
                done = True
            else:
                if a == amax and amax < 1.0:         # blocked: the class(es) reaching 0 leave the free set
                    hit = F[neg][ratios <= amax * (1 + 1e-12)]
                    pn[hit] = 0.0
                    free[hit] = False
                    last = np.inf
                p, f = pn, fn
        if done:                                     # optimal on the free set: check the KKT conditions
            viol = np.flatnonzero(~free & (g < mu - 1e-10 * (1.0 + abs(mu))))
            if len(viol) == 0:
                break
            for j in viol:                           # every violator, each started at its best weight
                p = release_weight(D, c, p, j)
            free[viol] = True
            f, last = value(p), np.inf
    return p / p.sum()


def release_weight(D, c, p, j: int) -> np.ndarray:
    """The mixture ``(1 - t) p + t e_j`` that minimises ``-sum_k log(p . D[:, k] + c[k])`` over ``t`` in [0, 1].

    :func:`mixture_ml` starts a class that its KKT check releases here rather than at weight 0: from 0, the
    barrier ``-log(p . d_k + c_k)`` of an item that only class j explains lets a Newton step about double the
    class's weight (some 26 iterations from ``c = 1e-12`` to 1e-4, per class). The objective is convex in t,
    so its derivative ``phi'(t) = -sum_k (D[j, k] - p . D[:, k]) / (p . D[:, k] + t (D[j, k] - p . D[:, k]) + c_k)``
    is increasing; its root is found by bisection on ``log10 t`` in [-30, 0] (64 halvings: t to 1e-17
    relatively). ``t = 0`` where ``phi'(1e-30) >= 0`` (j wants no weight, or the objective is flat along ``e_j - p``),
    else ``t = 1`` where ``phi'(1) <= 0``.

    ``D`` float (n, m) >= 0, ``c`` float (m,) > 0, ``p`` float (n,) on the simplex, ``j`` a class index; no
    validation (the solver's inner step: :func:`mixture_ml` passes checked arrays). Returns float (n,) on the
    simplex. Source: the objective of KDEy-ML (Moreo et al. 2025, Eq. 11, QuaPy's epsilon as ``c``); the line
    search is this module's."""
    q = p @ D
    dj = D[j] - q

    def slope(t):
        return -(dj / (q + t * dj + c)).sum()

    if slope(1e-30) >= 0:
        t = 0.0
    elif slope(1.0) <= 0:
        t = 1.0
    else:
        lo, hi = -30.0, 0.0
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            if slope(10.0 ** mid) < 0:
                lo = mid
            else:
                hi = mid
        t = 10.0 ** (0.5 * (lo + hi))
    out = (1.0 - t) * p
    out[j] += t
    return out


class KDEyEvaluator:
    """Vectorised evaluation of a fitted QuaPy ``KDEyML``: log densities and ML prevalence estimates.

    Parameters
    ----------
    kdey : quapy.method.aggregative.KDEyML
        A fitted KDEyML (its ``mix_densities``: one scikit-learn ``KernelDensity`` per class, Gaussian
        kernel, Euclidean metric, as QuaPy builds them). Nothing is refitted; the centres are read from the
        fitted density objects.

    Raises
    ------
    ValueError
        If a density is not a Gaussian-kernel Euclidean ``KernelDensity`` with a numeric bandwidth (then use
        ``kdey_backend="quapy"``).
    """

    def __init__(self, kdey):
        kdes = list(kdey.mix_densities)
        self.kdey = kdey
        self.n = len(kdes)
        self.log_space = (kdey.kernel != "gaussian" and self.n >= 20) or self.n >= 30   # QuaPy's switch
        blocks, const, sizes = [], [], []
        for i, kde in enumerate(kdes):
            if getattr(kde, "kernel", None) != "gaussian" or getattr(kde, "metric", "euclidean") != "euclidean":
                raise ValueError(f"class {i}: the capshift KDEy backend needs Gaussian kernels with the Euclidean "
                                 "metric; use kdey_backend='quapy'")
            h2 = float(kde.bandwidth_) ** 2
            X = np.asarray(kde.tree_.data, dtype=float)
            # -||x - v||² / (2 h²) = [x, -1, ||x||²] . [v / h², ||v||² / (2 h²), -1 / (2 h²)]
            blocks.append(np.hstack([X / h2, (X * X).sum(axis=1, keepdims=True) / (2 * h2),
                                     np.full((len(X), 1), -0.5 / h2)]))
            sizes.append(len(X))
            const.append(-np.log(len(X)) - 0.5 * X.shape[1] * np.log(2 * np.pi * h2))
        self.sizes = np.asarray(sizes)
        self.starts = np.r_[0, np.cumsum(self.sizes)[:-1]]
        self.C = np.ascontiguousarray(np.vstack(blocks).T)          # (d + 2, N)
        self.const = np.asarray(const)

    def log_densities(self, posteriors) -> np.ndarray:
        """Log density of each class at each test point: (m, n) posteriors -> (n, m) log densities.

        The posteriors are first transformed as QuaPy does for its kernel (identity for Gaussian).
        """
        T = np.asarray(self.kdey.transform_posteriors(np.asarray(posteriors, dtype=float), self.kdey.kernel))
        m = len(T)
        Ta = np.hstack([T, -np.ones((m, 1)), (T * T).sum(axis=1, keepdims=True)])
        out = np.empty((m, self.n))
        rows = max(1, _CHUNK // self.C.shape[1])
        for s in range(0, m, rows):
            E = Ta[s:s + rows] @ self.C                      # (r, N) exponents -||x - v||² / (2 h²) <= 0
            np.exp(E, out=E)                                 # never overflows
            S = np.add.reduceat(E, self.starts, axis=1)      # (r, n) kernel sums per class
            with np.errstate(divide="ignore"):
                out[s:s + rows] = np.log(S)
            for k in np.flatnonzero(S.max(axis=1) < 1e-280):  # far from every centre: redo with a shift
                e = Ta[s + k] @ self.C
                top = e.max()
                with np.errstate(divide="ignore"):
                    out[s + k] = np.log(np.add.reduceat(np.exp(e - top), self.starts)) + top
        # a class e^-700 below the nearest one comes out as -inf (density 0; QuaPy's exp underflows there too)
        return out.T + self.const[:, None]

    def _objective(self, logd):
        """(D, c) of :func:`mixture_ml` for QuaPy's objective on these log densities."""
        if not self.log_space:
            D = np.exp(logd)
            return D, np.full(D.shape[1], _EPS)
        # -sum_k logsumexp(log((p + eps) / (1 + n eps)) + logd_k): up to constants, -sum_k log(p . D_k + eps s_k)
        D = np.exp(logd - logd.max(axis=0))
        return D, _EPS * D.sum(axis=0)

    def aggregate(self, posteriors) -> np.ndarray:
        """ML prevalence estimate (n,) of one sample's posteriors (m, n)."""
        D, c = self._objective(self.log_densities(posteriors))
        return mixture_ml(D, c)

    def aggregate_batch(self, posteriors_list) -> np.ndarray:
        """Estimates (k, n) for k samples: the densities of all their items in one vectorised pass."""
        if len(posteriors_list) == 0:
            return np.empty((0, self.n))
        sizes = [len(P) for P in posteriors_list]
        logd = self.log_densities(np.concatenate(posteriors_list))
        bounds = np.r_[0, np.cumsum(sizes)]
        return np.stack([mixture_ml(*self._objective(logd[:, a:b])) for a, b in zip(bounds[:-1], bounds[1:])])
