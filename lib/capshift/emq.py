"""Evaluation measures for quantification (EMQs) and checkers of their properties (Sebastiani, IRJ 2020).

Holds the nine EMQs of Sebastiani's axiomatic study (AE, NAE, RAE, NRAE, SE, DR, KLD, NKLD, PD), vectorised
over leading batch dimensions of ``(..., |C|)`` prevalence arrays, with the paper's smoothing; one property
checker per property (IoI, NN, IND, MON, IMP, REL, ABS, MAX) returning a :class:`Verdict` with its evidence;
the printed values of the paper's Appendix 2 tables (package data ``capshift/data/emq_appendix2.csv``) and
what the appendices prove or refute (:data:`PAPER_VERDICTS`); and two CAP error measures viewed as functions
of flattened contingency tables (``ae_accuracy``, ``table_error``), so the same checkers apply to them.

Conventions
-----------
A *distribution* is a float array of shape ``(..., n)``, ``n >= 2``, non-negative, summing to 1 along the
last axis (tolerance ``ATOL``). A measure ``D(p, p_hat)`` takes the true ``p`` and the predicted ``p_hat``
(leading dimensions broadcast) and returns a float64 array of shape ``(...)`` (a numpy scalar for 1-d
input). Smoothing (RAE, NRAE, DR, KLD, NKLD, PD): ``p_s(c) = (eps + p(c)) / (eps * n + 1)`` applied to
both arguments, with ``eps = 1 / (2 |sigma|)`` (pass ``sample_size=|sigma|`` or ``eps``); AE, NAE and SE
are not smoothed and ignore both. Natural logarithm throughout (the paper's footnote 11).

Source: F. Sebastiani, *Evaluation measures for quantification: an axiomatic approach*, Information
Retrieval Journal 23:255-288 (2020), doi:10.1007/s10791-019-09363-y: Sect. 4 (measures), footnotes 11-14
and 18-20, Appendices 1-3.
"""
from __future__ import annotations

import importlib.resources
import math
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Callable

import numpy as np
import pandas
import quapy.error as qerr

from .validation import ATOL, check_int
from .validation import check_distribution as _check_distribution
from .tables import accuracy

__all__ = [
    "ATOL", "MEASURES", "SMOOTHED", "QUAPY_FUNCTIONS", "PROPERTIES", "PAPER_VERDICTS",
    "check_distribution", "resolve_eps", "smooth",
    "ae", "nae", "rae", "nrae", "se", "dr", "kld", "nkld", "pd", "get_measure",
    "flatten_tables", "ae_accuracy", "table_error",
    "Counterexample", "Verdict", "check_property", "check_ioi", "check_nn", "check_ind", "check_mon",
    "check_imp", "check_rel", "check_abs", "check_max", "perverse", "property_table",
    "appendix2_printed", "appendix2_recomputed",
]

#: Tolerance on ``sum(p) == 1`` and on tiny negative entries (which are clipped to 0): capshift's one tolerance.


# ---------------------------------------------------------------------------------------------------- validation
def check_distribution(p, name: str = "p", atol: float = ATOL) -> np.ndarray:
    """Validate a (batch of) distribution(s); return it as a float64 array of shape ``(..., n)``.

    The one probability-vector check of capshift (:func:`capshift.validation.check_distribution`): entries in
    ``[-atol, 0)`` (round-off of solvers) are clipped to 0; anything more negative is an error.

    Raises
    ------
    TypeError
        Non-numeric input.
    ValueError
        Fewer than 1 dimension or fewer than 2 classes, NaN/inf, negative entries, or sums that differ
        from 1 by more than ``atol``; the message names ``name`` and says how to fix it (for tables use
        :func:`flatten_tables`).
    """
    return _check_distribution(p, name, atol=atol)


def _pair(p, p_hat) -> tuple[np.ndarray, np.ndarray]:
    p, p_hat = check_distribution(p, "p"), check_distribution(p_hat, "p_hat")
    if p.shape[-1] != p_hat.shape[-1]:
        raise ValueError(f"p and p_hat must be distributions over the same codeframe, got {p.shape[-1]} and "
                         f"{p_hat.shape[-1]} classes (shapes {p.shape} and {p_hat.shape})")
    try:
        return tuple(np.broadcast_arrays(p, p_hat))
    except ValueError as e:
        raise ValueError(f"the leading (batch) dimensions of p {p.shape} and p_hat {p_hat.shape} do not "
                         "broadcast; pass arrays of the same shape, or one distribution against a batch") from e


#: Smallest smoothing constant: the smallest normal float64 (below it, 1/eps and the measures overflow).
_EPS_MIN = float(np.finfo(np.float64).tiny)


def resolve_eps(sample_size=None, eps=None) -> float:
    """The smoothing constant: ``eps`` if given, else ``1 / (2 * sample_size)`` (the paper's Sect. 4.3 rule).

    Raises ValueError if neither or both are given, or if ``eps`` is not a finite number >= the smallest
    normal float (about 2.2e-308; smaller values make the smoothed measures inf or NaN) or ``sample_size``
    not an integer in 1..1/(2 * that); TypeError for non-numeric values.
    """
    if (sample_size is None) == (eps is None):
        raise ValueError("smoothed EMQs (RAE, NRAE, DR, KLD, NKLD, PD) need exactly one of sample_size "
                         "(|sigma|, then eps = 1/(2|sigma|)) or eps; the paper's Appendix 2 uses "
                         "sample_size=1_000_000")
    if eps is not None:
        if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)):
            raise TypeError(f"eps must be a float, got {type(eps).__name__}")
        if not (math.isfinite(eps) and eps >= _EPS_MIN):
            raise ValueError(f"eps must be a finite number >= {_EPS_MIN:.3g} (smaller values overflow the smoothed "
                             f"measures to inf/NaN), got {eps!r}")
        return float(eps)
    sample_size = check_int(sample_size, "sample_size", max_value=int(0.5 / _EPS_MIN))
    return 1.0 / (2.0 * sample_size)


def smooth(p, eps: float) -> np.ndarray:
    """Smoothed distribution ``(eps + p) / (eps * n + 1)``, shape of ``p`` (Sebastiani 2020, Sect. 4.3).

    This is ``quapy.error.smooth`` (QuaPy 0.2.3 computes exactly this; its docstring writes the denominator
    as ``eps * n + sum(p)``, the same value for a valid distribution, which :func:`check_distribution`
    guarantees). Raises the errors of :func:`check_distribution` and :func:`resolve_eps`.
    """
    return qerr.smooth(check_distribution(p), resolve_eps(eps=eps))


def _out(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)[()]


# ------------------------------------------------------------------------------------------------------ measures
def ae(p, p_hat, *, sample_size=None, eps=None):
    """Absolute error ``AE = (1/n) sum_c |p_hat(c) - p(c)|`` (Sebastiani 2020, Sect. 4.1, Eq. 8).

    ``p``, ``p_hat``: distributions ``(..., n)`` (broadcast); returns float64 ``(...)``. Not smoothed
    (``sample_size``/``eps`` are ignored). Computed by ``quapy.error.ae`` (identical formula).
    Raises ValueError/TypeError on invalid distributions or shapes.
    """
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.ae(p, p_hat))


def nae(p, p_hat, *, sample_size=None, eps=None):
    """Normalised absolute error ``NAE = sum_c |p_hat(c) - p(c)| / (2 (1 - min_c p(c)))`` (Sect. 4.1).

    ``AE / z_AE`` with ``z_AE = 2(1 - min p)/n`` the largest AE possible for ``p``; range [0, 1]. Shapes as
    :func:`ae`; not smoothed. Computed by ``quapy.error.nae`` (identical formula).
    """
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.nae(p, p_hat))


def rae(p, p_hat, *, sample_size=None, eps=None):
    """Relative absolute error ``RAE = (1/n) sum_c |p_hat_s(c) - p_s(c)| / p_s(c)`` on smoothed values (Sect. 4.3).

    Needs ``sample_size`` or ``eps`` (:func:`resolve_eps`). Shapes as :func:`ae`. Computed by
    ``quapy.error.rae(p, p_hat, eps)`` (identical formula and smoothing).
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.rae(p, p_hat, eps=e))


def nrae(p, p_hat, *, sample_size=None, eps=None):
    """Normalised RAE: ``sum_c (|p_hat_s - p_s| / p_s) / (n - 1 + (1 - min p_s) / min p_s)`` (Sect. 4.3).

    Smoothed; needs ``sample_size`` or ``eps``. Computed by ``quapy.error.nrae`` (identical formula and
    smoothing). Note: because the perverse estimator's smoothed values are ``(1+eps)/(1+n eps)`` and
    ``eps/(1+n eps)``, not 1 and 0, its NRAE is ``1 - O(eps)``, not exactly 1.
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.nrae(p, p_hat, eps=e))


def se(p, p_hat, *, sample_size=None, eps=None):
    """Squared error ``SE = (1/n) sum_c (p_hat(c) - p(c))^2`` (Sect. 4.2). Not smoothed.

    Computed by ``quapy.error.se`` (identical formula). Shapes as :func:`ae`.
    """
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.se(p, p_hat))


def dr(p, p_hat, *, sample_size=None, eps=None):
    """Discordance ratio ``DR = (1/n) sum_c [1 - min(p_s, p_hat_s) / max(p_s, p_hat_s)]`` (Sect. 4.4).

    Smoothed; needs ``sample_size`` or ``eps``. QuaPy has no DR: computed here with numpy on
    ``quapy.error.smooth`` values. Shapes as :func:`ae`.
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    ps, qs = qerr.smooth(p, e), qerr.smooth(p_hat, e)
    return _out((1.0 - np.minimum(ps, qs) / np.maximum(ps, qs)).mean(axis=-1))


def kld(p, p_hat, *, sample_size=None, eps=None):
    """Kullback-Leibler divergence ``KLD = sum_c p_s(c) log(p_s(c) / p_hat_s(c))`` (Sect. 4.7, Eq. 14).

    Smoothed (Eq. 15), natural log (footnote 11); needs ``sample_size`` or ``eps``. Computed by
    ``quapy.error.kld(p, p_hat, eps)`` (identical formula and smoothing). Shapes as :func:`ae`.
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    return _out(qerr.kld(p, p_hat, eps=e))


def nkld(p, p_hat, *, sample_size=None, eps=None):
    """Normalised KLD ``NKLD = 2 e^KLD / (e^KLD + 1) - 1`` (= tanh(KLD/2); Sect. 4.8, Eq. 16, footnotes 12-13).

    Smoothed; needs ``sample_size`` or ``eps``. Computed by ``quapy.error.nkld`` (identical formula and
    smoothing). Range [0, 1): it never reaches 1 because the smoothed KLD is finite (footnote 14).
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    # QuaPy's tanh-form can round a zero KLD to -1e-16; NKLD >= 0 by definition
    return _out(np.maximum(qerr.nkld(p, p_hat, eps=e), 0.0))


def pd(p, p_hat, *, sample_size=None, eps=None):
    """Pearson divergence ``PD = sum_c (p_s(c) - p_hat_s(c))^2 / p_hat_s(c)`` (Sect. 4.9).

    Smoothed; needs ``sample_size`` or ``eps``. The full sum over classes, as the derivatives of
    Appendix 3 (Theorem 2) imply; the PD column of the paper's Appendix 2 tables is not this sum (see
    the book's chapter ``emq_axioms``). QuaPy has no PD: computed here with numpy on
    ``quapy.error.smooth`` values. Shapes as :func:`ae`.
    """
    e = resolve_eps(sample_size, eps)
    p, p_hat = _pair(p, p_hat)
    ps, qs = qerr.smooth(p, e), qerr.smooth(p_hat, e)
    return _out(((ps - qs) ** 2 / qs).sum(axis=-1))


#: The nine EMQs by the paper's names.
MEASURES: dict[str, Callable] = {"AE": ae, "NAE": nae, "RAE": rae, "NRAE": nrae, "SE": se, "DR": dr,
                                 "KLD": kld, "NKLD": nkld, "PD": pd}
#: The EMQs that smooth p and p_hat (and so need ``sample_size`` or ``eps``).
SMOOTHED = frozenset({"RAE", "NRAE", "DR", "KLD", "NKLD", "PD"})
#: Which QuaPy function computes each measure (None: numpy here, QuaPy 0.2.3 has none).
QUAPY_FUNCTIONS = {"AE": "quapy.error.ae", "NAE": "quapy.error.nae", "RAE": "quapy.error.rae",
                   "NRAE": "quapy.error.nrae", "SE": "quapy.error.se", "DR": None, "KLD": "quapy.error.kld",
                   "NKLD": "quapy.error.nkld", "PD": None}


def get_measure(measure, sample_size=None, eps=None) -> Callable:
    """A two-argument measure ``D(p, p_hat)``: a name of :data:`MEASURES` (case-insensitive) with its smoothing
    bound, or a callable (returned unchanged; ``sample_size``/``eps`` then unused).

    The returned function has a ``name`` attribute. Raises ValueError for an unknown name or a smoothed
    measure without ``sample_size``/``eps``; TypeError for anything else.
    """
    if callable(measure):
        return measure
    if not isinstance(measure, str):
        raise TypeError(f"measure must be a name of {list(MEASURES)} or a callable D(p, p_hat), "
                        f"got {type(measure).__name__}")
    key = measure.upper()
    if key not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; choose one of {list(MEASURES)} or pass a callable")
    kwargs = {}
    if key in SMOOTHED:
        kwargs["eps"] = resolve_eps(sample_size, eps)
    f = partial(MEASURES[key], **kwargs)
    f.name = key
    return f


def _name(measure) -> str:
    if isinstance(measure, str):
        return measure.upper()
    return getattr(measure, "name", None) or getattr(measure, "__name__", None) or repr(measure)


# ---------------------------------------------------------------------------------- CAP errors on tables
def flatten_tables(C, name: str = "C") -> np.ndarray:
    """Contingency table(s) ``(..., n, n)`` (summing to 1) as distributions over the n² cells, ``(..., n²)``.

    Row-major: cell ``(i, j)`` (true i, predicted j) is entry ``i * n + j``. This is how QuAcc (Volpi et al.
    2025) treats a table as a prevalence vector over the cell codeframe, so any EMQ applies to it.
    Returns float64 ``(..., n²)``. Raises ValueError for a non-square last pair of axes, and the errors of
    :func:`check_distribution` (tolerance ``ATOL`` on the sum; :func:`capshift.tables.check_table` would also
    admit a relative ``1e-5``).
    """
    C = np.asarray(C, dtype=np.float64)
    if C.ndim < 2 or C.shape[-1] != C.shape[-2] or C.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., n, n) with n >= 2, got {C.shape}")
    return check_distribution(C.reshape(C.shape[:-2] + (-1,)), name)


def _side(n2: int, name: str) -> int:
    n = math.isqrt(n2)
    if n * n != n2 or n < 2:
        raise ValueError(f"{name} must be a flattened n x n table (n² entries, n >= 2), got {n2} entries; "
                         "use flatten_tables")
    return n


def ae_accuracy(p, p_hat, *, sample_size=None, eps=None):
    """Absolute error on accuracy ``|tr C - tr C_hat|`` as a function of flattened tables (``(..., n²)``).

    The error the LEAP and QuAcc papers report for CAP (LEAP 2025, Sect. 5.3), viewed as a measure of the
    distance between two distributions over the n² cells, so that the EMQ property checkers apply to it.
    ``p``: true table, ``p_hat``: estimated table, both from :func:`flatten_tables`. Not smoothed.
    Returns float64 ``(...)``. Raises ValueError if the last dimension is not a perfect square >= 4.
    """
    p, p_hat = _pair(p, p_hat)
    n = _side(p.shape[-1], "p")
    table = p.shape[:-1] + (n, n)  # undo flatten_tables (row-major)
    return _out(np.abs(accuracy(p.reshape(table)) - accuracy(p_hat.reshape(table))))


ae_accuracy.name = "AE(acc)"


def table_error(measure, C, C_hat, sample_size=None, eps=None):
    """An EMQ (name or callable) applied to flattened tables: ``D(flatten(C), flatten(C_hat))``, shape ``(...)``.

    ``C``, ``C_hat``: ``(..., n, n)`` tables summing to 1 (true and estimated). Smoothing as for prevalence
    vectors, over n² cells. Raises the errors of :func:`flatten_tables` and :func:`get_measure`.
    """
    f = get_measure(measure, sample_size=sample_size, eps=eps)
    return f(flatten_tables(C, "C"), flatten_tables(C_hat, "C_hat"))


# ------------------------------------------------------------------------------------------ properties
#: The eight properties of Sebastiani (2020), Sect. 3, in the paper's order.
PROPERTIES = ("IoI", "NN", "IND", "MON", "IMP", "REL", "ABS", "MAX")

#: The keys of one explicit scenario (a dict of distributions) for each property.
SCENARIO_KEYS = {
    "IoI": ("p", "p_hat"), "NN": ("p", "p_hat"),
    "IND": ("p", "p_hat_1", "p_hat_2", "q", "q_hat_1", "q_hat_2"),
    "MON": ("p", "p_hat_1", "p_hat_2"), "IMP": ("p", "p_hat_1", "p_hat_2"),
    "REL": ("p_1", "p_hat_1", "p_2", "p_hat_2"), "ABS": ("p_1", "p_hat_1", "p_2", "p_hat_2"),
    "MAX": ("p_1", "p_2"),
}

#: What must hold in a scenario for the property to be respected there.
REQUIREMENT = {
    "IoI": "D(p, p_hat) = 0 if p_hat = p, and D(p, p_hat) > 0 otherwise",
    "NN": "D(p, p_hat) >= 0",
    "IND": "sign(D(p, p_hat_1) - D(p, p_hat_2)) = sign(D(q, q_hat_1) - D(q, q_hat_2))",
    "MON": "D(p, p_hat_1) < D(p, p_hat_2)",
    "IMP": "D(p, p_hat_1) = D(p, p_hat_2)",
    "REL": "D(p_1, p_hat_1) > D(p_2, p_hat_2)",
    "ABS": "D(p_1, p_hat_1) = D(p_2, p_hat_2)",
    "MAX": "D(p_1, perverse(p_1)) = D(p_2, perverse(p_2))",
}

#: What Sebastiani (2020) establishes in its appendices: (measure, property) -> (verdict, where).
#: "proved": Appendix 1 (AE) or 3 (MON of KLD, PD); "stated": asserted without proof ("immediate to
#: verify", Appendix 3); "refuted": an Appendix 2 table and the sentence that concludes it. Pairs absent
#: here are settled (if at all) in the paper's main text, which the project could not read.
PAPER_VERDICTS = {
    **{("AE", prop): ("proved", "Appendix 1") for prop in ("IoI", "NN", "IND", "MON", "IMP", "ABS")},
    ("KLD", "MON"): ("proved", "Appendix 3, Theorem 1"), ("PD", "MON"): ("proved", "Appendix 3, Theorem 2"),
    ("KLD", "IND"): ("stated", "Appendix 3"), ("PD", "IND"): ("stated", "Appendix 3"),
    **{(m, "MAX"): ("refuted", "Appendix 2.1") for m in ("AE", "RAE", "SE", "DR", "KLD", "PD")},
    **{(m, "IMP"): ("refuted", "Appendix 2.2") for m in ("DR", "KLD", "NKLD", "PD")},
    **{(m, "REL"): ("refuted", "Appendix 2.3") for m in ("AE", "NAE", "NRAE", "SE", "KLD", "NKLD", "PD")},
    **{(m, "ABS"): ("refuted", "Appendix 2.4") for m in ("NAE", "RAE", "NRAE", "DR", "KLD", "NKLD", "PD")},
}


@dataclass(frozen=True)
class Counterexample:
    """A scenario in which a property's requirement fails: a proof that the measure lacks the property.

    ``scenario``: name -> distribution (tuple of floats); ``values``: the measure's values in it (floats);
    ``requirement``: what should have held (:data:`REQUIREMENT`); ``violation``: by how much it fails
    (>= 0; for an equality, the absolute difference; for a strict inequality, how far the wrong side is
    reached, 0 meaning equality).
    """

    scenario: dict
    values: dict
    requirement: str
    violation: float

    def __str__(self):
        sc = ", ".join(f"{k}=({', '.join(f'{v:.6g}' for v in vals)})" for k, vals in self.scenario.items())
        vals = ", ".join(f"{k}={v:.10g}" for k, v in self.values.items())
        return f"{sc}: {vals}; required {self.requirement}"


@dataclass(frozen=True)
class Verdict:
    """The outcome of a property check, with its evidence.

    Either ``counterexample`` is set (``refuted`` is True: the property provably fails for this measure,
    with this smoothing) or it is None and the property was merely *not refuted* in ``n_scenarios``
    scenarios described by ``scenarios`` (evidence, not proof). There is deliberately no "satisfied" state.

    Attributes: ``measure``, ``property`` (names); ``n_scenarios``; ``n_violations`` (scenarios that
    violate the requirement; the reported counterexample is the one violating it most); ``scenarios``
    (description of the scenario set); ``tolerance`` (relative and absolute tolerance of the comparisons);
    ``details`` (property-specific extra evidence, e.g. the range of the perverse scores for MAX).
    """

    measure: str
    property: str
    counterexample: Counterexample | None
    n_scenarios: int
    n_violations: int
    scenarios: str
    tolerance: tuple
    details: dict = field(default_factory=dict)

    @property
    def refuted(self) -> bool:
        """True iff a counterexample was found (a proof that the property fails)."""
        return self.counterexample is not None

    @property
    def status(self) -> str:
        """"refuted by counterexample" or "not refuted in N scenarios" (never "satisfied")."""
        return "refuted by counterexample" if self.refuted else f"not refuted in {self.n_scenarios} scenarios"

    def __str__(self):
        head = f"{self.measure} / {self.property}: {self.status}"
        if self.refuted:
            return f"{head} ({self.n_violations} of {self.n_scenarios} scenarios violate it); e.g. {self.counterexample}"
        return f"{head} ({self.scenarios})"


def _tol(a, b, rtol, atol):
    return atol + rtol * np.maximum(np.abs(a), np.abs(b))


# ---- scenario generation: each generator returns a list of batches {key: (k, n) array}, one per n
def _bin(x):
    x = np.asarray(x, dtype=np.float64)
    return np.stack([x, 1.0 - x], axis=-1)


def _move(p, i, j, t):
    """Copy of p (k, n) with mass t (k,) moved from class i (k,) to class j (k,)."""
    out = p.copy()
    r = np.arange(len(p))
    out[r, i] -= t
    out[r, j] += t
    return np.clip(out, 0.0, None)


def _pairs(rng, k, n):
    i = rng.integers(0, n, k)
    j = (i + rng.integers(1, n, k)) % n
    return i, j


def _gen_binary(prop, g):
    """Scenarios on the grid {0, 1/g, ..., 1} of the binary simplex (exact multiples of 1/g)."""
    if g <= 0:
        return []
    idx = np.arange(g + 1)
    if prop in ("IoI", "NN"):
        a, b = np.meshgrid(idx, idx, indexing="ij")
        return [{"p": _bin(a.ravel() / g), "p_hat": _bin(b.ravel() / g)}]
    if prop == "MON":
        t = np.array([(i, j, k) for i in idx for j in idx for k in idx if (k < j <= i) or (i <= j < k)])
        return [{"p": _bin(t[:, 0] / g), "p_hat_1": _bin(t[:, 1] / g), "p_hat_2": _bin(t[:, 2] / g)}]
    if prop == "IMP":
        t = np.array([(i, a) for i in idx for a in range(1, g + 1) if i - a >= 0 and i + a <= g])
        return [{"p": _bin(t[:, 0] / g), "p_hat_1": _bin((t[:, 0] + t[:, 1]) / g),
                 "p_hat_2": _bin((t[:, 0] - t[:, 1]) / g)}]
    if prop in ("REL", "ABS"):
        t = np.array([(i1, i2, s * a) for i2 in idx if 2 * i2 < g for i1 in range(i2) for a in range(1, g + 1)
                      for s in (1, -1) if 0 <= i1 + s * a <= g and 0 <= i2 + s * a <= g])
        return [{"p_1": _bin(t[:, 0] / g), "p_hat_1": _bin((t[:, 0] + t[:, 2]) / g),
                 "p_2": _bin(t[:, 1] / g), "p_hat_2": _bin((t[:, 1] + t[:, 2]) / g)}]
    if prop == "MAX":
        return [{"p": _bin(idx / g)}]
    return []  # IND is vacuous on a binary codeframe


def _gen_random(prop, k, n, rng):
    """k random scenarios on an n-class codeframe (Dirichlet(1), i.e. uniform on the simplex)."""
    p = rng.dirichlet(np.ones(n), k)
    if prop in ("IoI", "NN"):
        i, j = _pairs(rng, k, n)
        moved = _move(p, i, j, rng.uniform(0, 1, k) * p[np.arange(k), i])
        other = rng.dirichlet(np.ones(n), k)
        half = rng.uniform(size=k) < 0.5
        p_hat = np.where(half[:, None], moved, other)
        same = rng.uniform(size=k) < 0.1  # some identical pairs, for the "D(p, p) = 0" half of IoI
        return {"p": p, "p_hat": np.where(same[:, None], p, p_hat)}
    if prop in ("MON", "IMP"):
        i, j = _pairs(rng, k, n)
        r = np.arange(k)
        if prop == "MON":
            t2 = rng.uniform(0, 1, k) * p[r, i]
            t1 = rng.uniform(0, 1, k) * t2
            return {"p": p, "p_hat_1": _move(p, i, j, t1), "p_hat_2": _move(p, i, j, t2)}
        a = rng.uniform(0, 1, k) * np.minimum(p[r, i], p[r, j])
        return {"p": p, "p_hat_1": _move(p, j, i, a), "p_hat_2": _move(p, i, j, a)}
    if prop in ("REL", "ABS"):
        i, j = _pairs(rng, k, n)
        r = np.arange(k)
        swap = p[r, i] > p[r, j]  # make i the rarer of the two classes in p_1
        i, j = np.where(swap, j, i), np.where(swap, i, j)
        s = p[r, i] + p[r, j]
        x2 = p[r, i] + rng.uniform(0, 1, k) * (s / 2 - p[r, i])  # p_1(i) < p_2(i) < p_2(j)
        p2 = p.copy()
        p2[r, i], p2[r, j] = x2, s - x2
        over = rng.uniform(size=k) < 0.5
        a = rng.uniform(0, 1, k) * np.where(over, p2[r, j], p[r, i])
        src, dst = np.where(over, j, i), np.where(over, i, j)
        return {"p_1": p, "p_hat_1": _move(p, src, dst, a), "p_2": p2, "p_hat_2": _move(p2, src, dst, a)}
    if prop == "IND":
        size_s = rng.integers(1, n - 1, k)  # |S| in 1..n-2, so |T| >= 2
        perm = np.argsort(rng.uniform(size=(k, n)), axis=1)
        in_s = np.zeros((k, n), bool)
        np.put_along_axis(in_s, perm, np.arange(n)[None, :] < size_s[:, None], axis=1)

        def redistribute(x, mask):
            """Replace x on `mask` by a random split of the same total mass."""
            w = rng.dirichlet(np.ones(n), k) * mask
            w = w / w.sum(axis=1, keepdims=True)
            return np.where(mask, w * (x * mask).sum(axis=1, keepdims=True), x)

        h1 = rng.dirichlet(np.ones(n), k)
        h2 = redistribute(h1, ~in_s)  # agrees with h1 on S, differs on T (same mass on T)
        q = redistribute(p, in_s)  # agrees with p on T
        g1 = redistribute(h1, in_s)  # agrees with h1 on T; on S a new shared split
        g2 = np.where(in_s, g1, h2)
        return {"p": p, "p_hat_1": h1, "p_hat_2": h2, "q": q, "q_hat_1": g1, "q_hat_2": g2}
    if prop == "MAX":
        return {"p": p}
    raise ValueError(prop)


def _explicit(prop, scenarios, atol=1e-9):
    """Validate explicit scenarios (list of dicts) against the property's premises; batch them by n."""
    keys = SCENARIO_KEYS[prop]
    batches: dict[int, dict[str, list]] = {}
    for s_i, sc in enumerate(scenarios):
        if not isinstance(sc, dict) or set(sc) != set(keys):
            raise ValueError(f"scenarios[{s_i}] for {prop} must be a dict with exactly the keys {keys}, got "
                             f"{sorted(sc) if isinstance(sc, dict) else type(sc).__name__}")
        v = {k: check_distribution(sc[k], f"scenarios[{s_i}][{k!r}]") for k in keys}
        shapes = {x.shape for x in v.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(f"scenarios[{s_i}]: every distribution must be 1-d over the same codeframe, got "
                             f"shapes { {k: x.shape for k, x in v.items()} }")
        why = _premise_fails(prop, v, atol)
        if why:
            raise ValueError(f"scenarios[{s_i}] does not satisfy the premises of {prop}: {why}")
        n = v[keys[0]].size
        b = batches.setdefault(n, {k: [] for k in keys})
        for k in keys:
            b[k].append(v[k])
    out = [{k: np.stack(x) for k, x in b.items()} for b in batches.values()]
    if prop == "MAX":  # the perverse scores of p_1 and p_2 are compared like any other pair of true distributions
        return [{"p": np.concatenate([b["p_1"], b["p_2"]])} for b in out]
    return out


def _support2(d, atol):
    nz = np.flatnonzero(np.abs(d) > atol)
    return nz if nz.size == 2 else None


def _premise_fails(prop, v, atol) -> str:
    if prop in ("IoI", "NN", "MAX"):
        return ""
    if prop == "IND":
        t = (np.abs(v["p_hat_1"] - v["p_hat_2"]) > atol) | (np.abs(v["q_hat_1"] - v["q_hat_2"]) > atol)
        if t.all():
            return "p_hat_1 and p_hat_2 (and q_hat_1, q_hat_2) must agree on at least one class"
        for a, b in (("p", "q"), ("p_hat_1", "q_hat_1"), ("p_hat_2", "q_hat_2")):
            if np.any(np.abs(v[a] - v[b])[t] > atol):
                return f"{a} and {b} must agree on the classes where the estimates differ"
        return ""
    if prop in ("MON", "IMP"):
        d1, d2 = v["p_hat_1"] - v["p"], v["p_hat_2"] - v["p"]
        sup = _support2(d2, atol)
        if sup is None:
            return "p_hat_2 must differ from p on exactly two classes (mass moved from one to the other)"
        if prop == "IMP":
            if np.any(np.abs(d1 + d2) > atol):
                return "p_hat_1 - p must equal p - p_hat_2 (same error a, opposite sign)"
            return ""
        lam = d1[sup] / d2[sup]
        if np.any(np.abs(d1) > atol) and (abs(lam[0] - lam[1]) > 1e-6 or not (-atol <= lam[0] < 1 - 1e-12)) \
                or np.any(np.abs(d1 - lam[0] * d2) > atol):
            return "p_hat_1 must lie on the segment from p to p_hat_2, strictly closer to p"
        return ""
    # REL / ABS
    d1, d2 = v["p_hat_1"] - v["p_1"], v["p_hat_2"] - v["p_2"]
    sup = _support2(d1, atol)
    if sup is None or np.any(np.abs(d1 - d2) > atol):
        return "p_hat_1 - p_1 and p_hat_2 - p_2 must be the same error a on the same two classes"
    rest = np.setdiff1d(np.arange(d1.size), sup)
    if np.any(np.abs(v["p_1"][rest] - v["p_2"][rest]) > atol):
        return "p_1 and p_2 must agree outside the two classes with the error"
    i, j = sup if v["p_2"][sup[0]] < v["p_2"][sup[1]] else sup[::-1]
    if not (v["p_1"][i] < v["p_2"][i] - atol and v["p_2"][i] < v["p_2"][j] - atol):
        return "need p_1(c1) < p_2(c1) < p_2(c2), with c1 the rarer of the two classes in p_2"
    return ""


def _scenario_batches(prop, grid, n_random, classes, seed, scenarios):
    if scenarios is not None:
        return _explicit(prop, scenarios), f"{len(scenarios)} explicit scenario(s)"
    for arg, val in (("grid", grid), ("n_random", n_random), ("seed", seed)):
        check_int(val, arg, min_value=0)
    classes = tuple(classes)
    for c in classes:
        check_int(c, "classes (codeframe sizes)", min_value=2)
    rng = np.random.default_rng(seed)
    batches = list(_gen_binary(prop, grid))
    sizes = [c for c in classes if not (prop == "IND" and c < 3)]
    if n_random and sizes:
        per = np.diff(np.linspace(0, n_random, len(sizes) + 1).round().astype(int))
        batches += [_gen_random(prop, int(k), int(c), rng) for k, c in zip(per, sizes) if k > 0]
    desc = []
    if grid and prop != "IND":
        desc.append(f"binary grid with step 1/{grid}")
    if n_random and sizes:
        desc.append(f"{n_random} random scenarios (seed {seed}) with |C| in {sizes}")
    return batches, "; ".join(desc) or "no scenarios"


def perverse(measure, p, candidates=None, sample_size=None, eps=None):
    """The perverse estimator of each true distribution and its score: ``argmax_{p_hat} D(p, p_hat)``.

    The maximum is searched over the vertices of the simplex (one class gets everything; where convex
    measures attain it) plus ``candidates`` (optional ``(m, n)`` array of further distributions). ``p``:
    ``(k, n)`` or ``(n,)``. Returns ``(p_hat, value)`` with shapes ``(k, n)`` and ``(k,)`` (float64).
    ``measure``, ``sample_size``, ``eps`` as for :func:`get_measure`; raises its errors and those of
    :func:`check_distribution`. Source: the MAX property (Sebastiani 2020, Sect. 3; Appendix 2.1 uses the
    vertex of the rarer class).
    """
    D = get_measure(measure, sample_size, eps)
    p = check_distribution(np.atleast_2d(p), "p")
    n = p.shape[-1]
    cand = np.eye(n) if candidates is None else np.concatenate([np.eye(n), check_distribution(candidates,
                                                                                               "candidates")])
    vals = np.asarray(D(p[:, None, :], cand[None, :, :]), dtype=np.float64)
    best = vals.argmax(axis=1)
    return cand[best], vals[np.arange(len(p)), best]


def _evaluate(prop, D, b, rtol, atol):
    """For one batch of k scenarios: ``(bad, amount, values)``, ``bad`` (k,) bool (requirement violated),
    ``amount`` (k,) how far it is violated (meaningful where ``bad``), ``values`` name -> (k,) scores."""
    if prop in ("IoI", "NN"):
        v = np.asarray(D(b["p"], b["p_hat"]), dtype=np.float64)
        if prop == "NN":
            bad = v < -atol
            amount = -v
        else:
            same = np.all(b["p"] == b["p_hat"], axis=-1)
            bad = np.where(same, np.abs(v) > atol, v <= atol)
            amount = np.where(same, np.abs(v), atol - v)
        return bad, amount, {"D(p, p_hat)": v}
    if prop == "IND":
        d1 = np.asarray(D(b["p"], b["p_hat_1"]) - D(b["p"], b["p_hat_2"]), dtype=np.float64)
        d2 = np.asarray(D(b["q"], b["q_hat_1"]) - D(b["q"], b["q_hat_2"]), dtype=np.float64)
        s1 = np.where(np.abs(d1) <= atol, 0, np.sign(d1))
        s2 = np.where(np.abs(d2) <= atol, 0, np.sign(d2))
        bad = s1 != s2
        amount = np.where((s1 != 0) & (s2 != 0), np.minimum(np.abs(d1), np.abs(d2)), np.maximum(np.abs(d1), np.abs(d2)))
        return bad, amount, {"D(p, p_hat_1) - D(p, p_hat_2)": d1, "D(q, q_hat_1) - D(q, q_hat_2)": d2}
    if prop in ("MON", "IMP", "REL", "ABS"):
        # two scores: of p_hat_1 and p_hat_2 against one true p (MON, IMP) or against p_1 and p_2 (REL, ABS)
        t1, t2 = ("p", "p") if prop in ("MON", "IMP") else ("p_1", "p_2")
        v1 = np.asarray(D(b[t1], b["p_hat_1"]), dtype=np.float64)
        v2 = np.asarray(D(b[t2], b["p_hat_2"]), dtype=np.float64)
        tol = _tol(v1, v2, rtol, atol)
        vals = {f"D({t1}, p_hat_1)": v1, f"D({t2}, p_hat_2)": v2}
        if prop in ("IMP", "ABS"):  # equality
            return np.abs(v1 - v2) > tol, np.abs(v1 - v2), vals
        lo, hi = (v1, v2) if prop == "MON" else (v2, v1)  # strict inequality lo < hi (REQUIREMENT)
        return hi - lo <= tol, lo - hi, vals
    raise ValueError(prop)


def check_property(measure, prop: str, *, grid: int = 100, n_random: int = 1000, classes=(3, 4, 5),
                   seed: int = 0, scenarios=None, sample_size=None, eps=None, rtol: float = 1e-9,
                   atol: float = 1e-12, n_probe: int = 200) -> Verdict:
    """Search for a counterexample to property ``prop`` of ``measure``; return a :class:`Verdict`.

    Parameters
    ----------
    measure : str or callable
        A name of :data:`MEASURES` or a vectorised ``D(p, p_hat)`` on ``(k, n)`` arrays (e.g. :func:`ae_accuracy`).
    prop : str
        One of :data:`PROPERTIES`. Binary versions (B-MON, B-IMP, B-REL, B-ABS) on the grid; on
        ``n``-class codeframes the same premises on two classes, the others fixed (mass moved between
        them), which is how the paper derives the full properties from the binary ones plus IND.
    grid : int
        Step ``1/grid`` of the binary-simplex grid (exact multiples; 0 = no grid). IND has no binary case.
        For MAX it is also the grid of binary candidate estimates searched for the perverse estimator,
        with explicit ``scenarios`` too.
    n_random : int
        Number of seeded random scenarios (uniform on the simplex), spread evenly over ``classes``.
    classes : sequence of int
        Codeframe sizes of the random scenarios (IND uses those >= 3).
    seed : int
        Seed of the random scenarios (``numpy.random.default_rng``).
    scenarios : list of dict, optional
        Explicit scenarios instead of the generated ones, keys :data:`SCENARIO_KEYS` ``[prop]`` (e.g. the
        paper's Appendix 2 rows); their premises are checked (ValueError if not met).
    sample_size, eps : smoothing of a named measure; at most one of them (if neither: the paper's Appendix 2
        assumption |sigma| = 10^6, footnote 19). Ignored for callables and unsmoothed measures.
    rtol, atol : float
        Two values count as equal when they differ by at most ``atol + rtol * max(|a|, |b|)``; a strict
        inequality must hold by more than that. ``D(p, p) = 0`` and ``D >= 0`` are judged with ``atol``.
    n_probe : int
        MAX only: random candidate estimates per codeframe size added to the simplex vertices (and the
        grid, for binary) when searching each perverse estimator.

    Returns
    -------
    Verdict
        ``refuted`` with the most violating scenario, or not refuted with the scenario set described.

    Raises ValueError for an unknown property or bad sizes; the errors of :func:`get_measure`.
    Source: Sebastiani (2020), Sect. 3 (definitions), Appendix 2 (the counterexample pattern).
    """
    if prop not in PROPERTIES:
        raise ValueError(f"prop must be one of {PROPERTIES}, got {prop!r}")
    if sample_size is None and eps is None:
        sample_size = 1_000_000
    D = get_measure(measure, sample_size, eps)
    name = _name(measure)
    batches, desc = _scenario_batches(prop, grid, n_random, classes, seed, scenarios)
    if prop == "MAX":
        return _check_max(D, name, batches, desc, rtol, atol, grid, n_probe, seed)
    best, n_bad, n_tot = None, 0, 0
    for b in batches:
        bad, amount, vals = _evaluate(prop, D, b, rtol, atol)
        n_tot += bad.size
        n_bad += int(bad.sum())
        if bad.any():
            k = int(np.flatnonzero(bad)[np.argmax(np.where(bad, amount, -np.inf)[bad])])
            if best is None or amount[k] > best[0]:
                best = (float(amount[k]), {key: tuple(float(x) for x in arr[k]) for key, arr in b.items()},
                        {key: float(arr[k]) for key, arr in vals.items()})
    cx = None if best is None else Counterexample(best[1], best[2], REQUIREMENT[prop], max(best[0], 0.0))
    return Verdict(name, prop, cx, n_tot, n_bad, desc, (rtol, atol))


def _check_max(D, name, batches, desc, rtol, atol, grid, n_probe, seed):
    rng = np.random.default_rng(seed + 1)
    by_n: dict[int, list] = {}
    for b in batches:
        p = b["p"]
        n = p.shape[-1]
        cand = [rng.dirichlet(np.ones(n), n_probe)] if n_probe else []
        if n == 2 and grid:
            cand.append(_bin(np.arange(grid + 1) / grid))
        cand = np.concatenate(cand) if cand else None
        ph, val = perverse(D, p, cand)
        by_n.setdefault(n, []).append((p, ph, val))
    best, n_tot, n_bad, details = None, 0, 0, {}
    for n, parts in by_n.items():
        p = np.concatenate([x[0] for x in parts])
        ph = np.concatenate([x[1] for x in parts])
        val = np.concatenate([x[2] for x in parts])
        n_tot += len(p)
        lo, hi = int(np.argmin(val)), int(np.argmax(val))
        details[n] = (float(val[lo]), float(val[hi]))
        spread = val[hi] - val[lo]
        bad = np.abs(val - val[lo]) > _tol(val, val[lo], rtol, atol)
        n_bad += int(bad.sum())
        if spread > _tol(val[hi], val[lo], rtol, atol) and (best is None or spread > best[0]):
            best = (float(spread), {"p_1": tuple(map(float, p[lo])), "perverse(p_1)": tuple(map(float, ph[lo])),
                                    "p_2": tuple(map(float, p[hi])), "perverse(p_2)": tuple(map(float, ph[hi]))},
                    {"D(p_1, perverse(p_1))": float(val[lo]), "D(p_2, perverse(p_2))": float(val[hi])})
    cx = None if best is None else Counterexample(best[1], best[2], REQUIREMENT["MAX"], best[0])
    return Verdict(name, "MAX", cx, n_tot, n_bad, desc + " (true distributions; perverse estimator searched "
                   "over the vertices, the grid and random candidates)", (rtol, atol),
                   {"perverse_range_by_n": details})


def _one(prop):
    def check(measure, **kwargs) -> Verdict:
        return check_property(measure, prop, **kwargs)

    check.__name__ = f"check_{prop.lower()}"
    check.__doc__ = (f"Check {prop} for ``measure``: ``check_property(measure, {prop!r}, **kwargs)``.\n\n"
                     f"Requirement in each scenario: {REQUIREMENT[prop]}. Explicit scenarios use the keys "
                     f"{SCENARIO_KEYS[prop]}. Returns a :class:`Verdict`; see :func:`check_property` for the "
                     "parameters, errors and source.")
    return check


check_ioi, check_nn, check_ind, check_mon = (_one(p) for p in ("IoI", "NN", "IND", "MON"))
check_imp, check_rel, check_abs, check_max = (_one(p) for p in ("IMP", "REL", "ABS", "MAX"))


def property_table(measures=tuple(MEASURES), props=PROPERTIES, **kwargs) -> pandas.DataFrame:
    """Run every checker on every measure: a DataFrame indexed by measure, one column per property, of
    :class:`Verdict` objects (use ``.map(lambda v: v.status)`` to display). ``kwargs`` go to
    :func:`check_property`; ``measures`` may mix names and callables (with a ``name`` attribute).
    Raises the errors of :func:`check_property`. Source: Sebastiani (2020), Sect. 3 (properties) and 4 (measures).
    """
    rows = {}
    for m in measures:
        rows[_name(m)] = {pr: check_property(m, pr, **kwargs) for pr in props}
    return pandas.DataFrame.from_dict(rows, orient="index")[list(props)]


# ------------------------------------------------------------------------------------- Appendix 2 data
@lru_cache(maxsize=None)
def _appendix2() -> pandas.DataFrame:
    path = importlib.resources.files("capshift") / "data" / "emq_appendix2.csv"
    with importlib.resources.as_file(path) as f:
        return pandas.read_csv(f, comment="#", dtype={"printed": str, "table": str})


def appendix2_printed() -> pandas.DataFrame:
    """The values printed in Appendix 2 of Sebastiani (2020), as shipped in ``capshift/data/emq_appendix2.csv``.

    Long format, one row per printed measure value: ``table`` (``2.1``-``2.4``), ``property`` (MAX, IMP,
    REL, ABS), ``row`` (``p'`` or ``p''``), ``p_c1, p_c2, phat_c1, phat_c2`` (floats), ``measure`` and
    ``printed`` (the value as printed, a string, 4 decimals) and ``value`` (its float).
    """
    df = _appendix2().copy()
    df["value"] = df["printed"].astype(float)
    return df


def appendix2_recomputed(sample_size: int = 1_000_000) -> pandas.DataFrame:
    """:func:`appendix2_printed` with ``computed`` (this module, smoothing |sigma| = ``sample_size``, footnote
    19), ``rounded`` (to 4 decimals, float) and ``match`` (rounded == printed, bool) columns added.

    Source: Sebastiani (2020), Appendix 2. Raises the errors of :func:`resolve_eps` for a bad ``sample_size``.
    """
    df = appendix2_printed()
    p = df[["p_c1", "p_c2"]].to_numpy()
    q = df[["phat_c1", "phat_c2"]].to_numpy()
    comp = np.empty(len(df))
    for m, idx in df.groupby("measure").indices.items():
        comp[idx] = get_measure(m, sample_size=sample_size)(p[idx], q[idx])
    df["computed"] = comp
    df["rounded"] = np.round(comp, 4)
    df["match"] = np.isclose(df["rounded"], df["value"], rtol=0, atol=1e-9)
    return df
