"""Confidence intervals around a CAP method's prediction: the paper's bootstrap and split-conformal calibration.

Source: LEAP (Volpi, Moreo & Sebastiani, Machine Learning 2025), Sect. 5.10 and Table 3: CAP methods treated as
black-box point estimators, their uncertainty estimated by bootstrapping the test sample; the intervals are
narrow but cover the true accuracy far less often than their nominal level, and the paper leaves better
intervals to future work. This module holds

- :func:`bootstrap_interval`: the paper's procedure: resample the test sample's items with replacement
  ``n_boot`` times, predict each resample, and take the percentile interval;
- :class:`ConformalInterval`: split-conformal calibration (Vovk et al. 2005; Lei et al. 2018) of any CAP
  estimator: the validation set V is split into a part that fits the method and a calibration part from
  which ``n_cal`` shifted calibration samples are drawn with the same protocol as the test samples (UPP:
  prevalence uniform on the simplex, QuaPy's sampling); the absolute residuals |predicted - true measure|
  on them give the interval ``predicted ± q``, q their ⌈(k+1)(1-α)⌉-th smallest value. Calibration and
  test samples are then exchangeable whenever the test samples are UPP samples of the same distribution,
  which gives marginal coverage >= 1 - α over such samples (not conditional on one sample);
- :func:`interval_scores`: amplitude A, coverage C and AE of intervals, the quantities of Table 3.

Intervals are clipped to [0, 1] (every measure of :mod:`capshift.tables` lies there).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.model_selection import train_test_split

from ._validation import check_fitted, check_fraction, check_int, check_labels, check_seed, check_X
from .base import CAPEstimator
from .protocols import upp_indices
from .tables import contingency_table, get_measure

SCHEMES = ("split", "mc", "cv", "bootstrap")

__all__ = ["bootstrap_interval", "bootstrap_prevalences", "propagated_interval", "ConformalInterval", "interval_scores", "conformal_quantile", "interval_experiment"]


def _fresh(estimator: CAPEstimator, seed: int) -> CAPEstimator:
    """An unfitted copy with the same parameters and the *same* trained classifier (sklearn's ``clone`` would
    clone h too, unfitted; CAP methods never train h). A shared, fitted capshift ``Quantifier`` is replaced by
    an unfitted one of the same kind: it was fitted on all of V, and reusing it on a part of V would evaluate
    it on its own training items."""
    from .quantifiers import Quantifier
    params = {**estimator.get_params(deep=False), "random_state": seed}
    q = params.get("quantifier")
    if isinstance(q, Quantifier):
        params["quantifier"] = Quantifier(q.method, classifier=q.classifier, random_state=q.random_state,
                                          bandwidth=q.bandwidth)
    return type(estimator)(**params)


def _alpha(alpha) -> float:
    return check_fraction(alpha, "alpha")


def conformal_quantile(residuals, alpha: float) -> float:
    """The split-conformal quantile: the ⌈(k+1)(1-α)⌉-th smallest of k residuals (inf if that exceeds k, i.e.
    too few calibration samples for this α: then no finite interval has the guarantee). Raises ValueError for
    an empty or non-finite ``residuals`` or ``alpha`` outside (0, 1)."""
    a = _alpha(alpha)
    r = np.sort(np.asarray(residuals, dtype=float).ravel())
    if r.size == 0 or not np.all(np.isfinite(r)):
        raise ValueError("residuals must be a non-empty array of finite numbers")
    rank = math.ceil((r.size + 1) * (1 - a))
    return float(r[rank - 1]) if rank <= r.size else float("inf")


def bootstrap_interval(estimator: CAPEstimator, X, alpha: float = 0.05, n_boot: int = 500, measure=None,
                       random_state: int = 0) -> tuple[float, float]:
    """The LEAP paper's bootstrap interval (Sect. 5.10): the α/2 and 1-α/2 percentiles of the estimator's
    prediction of ``measure`` on ``n_boot`` resamples (with replacement, same size) of the items of ``X``.

    ``estimator``: a fitted CAP estimator; ``X``: the unlabelled test sample (m, d). Returns ``(lower, upper)``
    floats in [0, 1]. Raises ValueError for alpha outside (0, 1), n_boot < 2, an empty sample, and the
    estimator's errors (e.g. NotFittedError).
    """
    a, n_boot = _alpha(alpha), check_int(n_boot, "n_boot", min_value=2)
    check_fitted(estimator, ["val_table_"])
    X = check_X(X, "X")
    rng = np.random.default_rng(check_seed(random_state, "random_state"))
    m = X.shape[0]
    resamples = [X[rng.integers(0, m, m)] for _ in range(n_boot)]
    values = np.asarray(estimator.predict_batch(resamples, measure), dtype=float)
    lo, hi = np.quantile(values, [a / 2, 1 - a / 2])
    return float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))


def bootstrap_prevalences(estimator: CAPEstimator, X, n_boot: int = 500, random_state: int = 0) -> np.ndarray:
    """The quantifier's bootstrap prevalence estimates on the sample ``X``: QuaPy's ``AggregativeBootstrap``
    (population-based: ``n_boot`` resamples of the sample's classifier outputs, the quantifier fitted on V
    kept; Moreo & Salvati, LQ 2025) around the fitted quantifier of a LEAP-family ``estimator``.

    Returns float (n_boot, n), rows on the simplex. Runs QuaPy's resampling in this process (joblib's
    sequential backend), so the result is determined by ``random_state``. Raises TypeError if ``estimator``
    has no QuaPy quantifier (``quantifier_``; the oracle has none), ValueError for ``n_boot`` < 2 or a bad sample.
    """
    from joblib import parallel_config
    from quapy.method.confidence import AggregativeBootstrap
    n_boot = check_int(n_boot, "n_boot", min_value=2)
    seed = check_seed(random_state, "random_state")
    check_fitted(estimator, ["val_table_"])
    quant = getattr(estimator, "quantifier_", None)
    if quant is None or getattr(quant, "q_", None) is None:
        raise TypeError(f"{type(estimator).__name__} has no QuaPy quantifier to bootstrap: pass a LEAP-family "
                        "method with a quantifier other than 'oracle'")
    X = estimator._check_samples(X, single=True)[0]
    boot = AggregativeBootstrap(quant.q_, n_train_samples=1, n_test_samples=n_boot, random_state=seed)
    boot.quantifiers = [quant.q_]  # what AggregativeBootstrap.aggregation_fit keeps when n_train_samples == 1
    with parallel_config(backend="sequential"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, region = boot.aggregate_conf(quant.classify(X))
    q = np.clip(np.asarray(region.samples, dtype=float), 0.0, None)
    return q / q.sum(axis=1, keepdims=True)


def propagated_interval(estimator: CAPEstimator, X, alpha: float = 0.05, n_boot: int = 500, measure=None,
                        random_state: int = 0) -> tuple[float, float]:
    """An interval that propagates the quantifier's uncertainty and the sample's own sampling error through a
    LEAP-family method (an alternative to :class:`ConformalInterval`, compared in the uncertainty chapter).

    1. q*: ``n_boot`` bootstrap prevalence estimates of the quantifier (:func:`bootstrap_prevalences`);
    2. the method's table for each (gamma, q*), gamma the observed fractions of h's predictions (known exactly);
    3. the sample's realised table: the true labels of the ``m_j`` items h predicts as class j drawn as
       Multinomial(m_j, column j of that table, normalised), the sampling error of the sample given h's
       predictions;
    4. the α/2 and 1-α/2 percentiles of the measure over the ``n_boot`` realised tables.

    What it leaves out: the difference between V's class-conditional rates and the test pool's, and the
    quantifier's bias (a bootstrap sees only its variance). Returns ``(lower, upper)`` in [0, 1]; errors as
    :func:`bootstrap_prevalences`, plus ValueError for alpha outside (0, 1).
    """
    a = _alpha(alpha)
    q = bootstrap_prevalences(estimator, X, n_boot, random_state)
    if not hasattr(estimator, "tables_from_prevalences"):
        raise TypeError(f"{type(estimator).__name__} does not build tables from prevalences: use a LEAP-family method")
    measure = estimator.measure if measure is None else measure
    estimator._check_measure(measure)
    X = estimator._check_samples(X, single=True)[0]
    n = estimator.n_classes_
    counts = np.bincount(estimator.classifier.predict(X).astype(int), minlength=n)
    g = counts / counts.sum()
    tables = estimator.tables_from_prevalences(np.repeat(g[None], len(q), axis=0), q)  # (B, n, n)
    col = tables / np.clip(tables.sum(axis=1, keepdims=True), 1e-300, None)  # P(true i | predicted j)
    col[:, :, counts == 0] = 1.0 / n
    rng = np.random.default_rng([check_seed(random_state, "random_state"), 2])
    draws = np.stack([rng.multinomial(counts[j], col[:, :, j]) for j in range(n)], axis=2)  # (B, n_true, n_pred)
    values = np.asarray(get_measure(measure)(draws / counts.sum()), dtype=float)
    lo, hi = np.quantile(values, [a / 2, 1 - a / 2])
    return float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))


class ConformalInterval(BaseEstimator):
    """Split-conformal intervals around any CAP estimator (beyond the LEAP paper, which calls for them).

    Parameters
    ----------
    estimator : CAPEstimator (unfitted)
        The method, e.g. ``capshift.experiment.make_method("O-LEAP_KDEy", h)``; cloned, never modified.
    cal_fraction : float in (0, 1)
        Fraction of V (stratified) held out for calibration; the rest fits the method (default 0.5).
    n_cal : int
        Calibration samples per test-sample size (default 500; α = 0.05 needs at least 19).
    refit : bool
        After calibration, refit the method on the whole of V for the point prediction (default False: the
        split version, whose coverage guarantee is exact; True gives a better point estimate and, in
        practice, near-nominal coverage).
    scheme : {"split", "cv", "bootstrap"}
        How the method is fitted and calibrated. "split": one split by ``cal_fraction`` (split conformal; exact
        marginal guarantee when the method is not refitted). "cv": cross-conformal (CV+ style, Barber et al.
        2021): ``n_splits`` stratified folds, the method fitted on all folds but one and calibrated on samples
        of that fold, residuals pooled (guarantee 1-2α). "bootstrap": the method fitted ``n_splits`` times on
        stratified bootstrap resamples of V (same size and class counts as V) and calibrated on samples drawn
        from V itself, which plays the test pool: this mimics the test situation (a method fitted on |V| items,
        a test sample drawn from a larger pool) where the other schemes calibrate methods fitted on a part of V
        against samples of an even smaller part, and so overestimate the residuals; no finite-sample guarantee.
        "cv" and "bootstrap" refit the method on all of V for the point prediction.
    n_splits : int
        Folds ("cv") or bootstrap refits ("bootstrap"); default 5.
    random_state : int
        Seed of the split, the calibration samples and the method.

    Calibration samples are drawn at the size of the test sample being predicted (UPP with QuaPy's sampling,
    as the experiments' test samples), once per size and measure, and cached.

    Attributes: ``estimator_`` (fitted on the fit part, or on V if ``refit`` or another scheme), ``folds_`` (per split:
    the method fitted on the fit part and the calibration part), ``residuals_`` (dict ``(size, measure) ->``
    pooled absolute residuals).
    """

    def __init__(self, estimator, cal_fraction: float = 0.5, n_cal: int = 500, refit: bool = False,
                 scheme: str = "split", n_splits: int = 5, pool_correction: bool = False, pool_size=None,
                 random_state: int = 0):
        self.estimator = estimator
        self.cal_fraction = cal_fraction
        self.n_cal = n_cal
        self.refit = refit
        self.scheme = scheme
        self.n_splits = n_splits
        self.pool_correction = pool_correction
        self.pool_size = pool_size
        self.random_state = random_state

    def fit(self, X_val, y_val, point_estimator=None):
        """Split V, fit the method on one part, keep the other for calibration. Returns self.

        ``point_estimator``: the method already fitted on all of V, used as ``estimator_`` instead of a refit
        (what :meth:`capshift.base.CAPEstimator.predict_interval` passes; schemes other than "split").

        Raises TypeError if ``estimator`` is not a CAPEstimator, ValueError for bad parameters or a
        calibration or fit part missing a class (use a larger V or a smaller ``cal_fraction``)."""
        if not isinstance(self.estimator, CAPEstimator):
            raise TypeError(f"estimator must be a capshift CAPEstimator (e.g. experiment.make_method(name, h)), "
                            f"got {type(self.estimator).__name__}")
        check_fraction(self.cal_fraction, "cal_fraction")
        check_int(self.n_cal, "n_cal", min_value=2)
        if not isinstance(self.refit, bool):
            raise TypeError(f"refit must be True or False, got {self.refit!r}")
        seed = check_seed(self.random_state, "random_state")
        X_val = check_X(X_val, "X_val")
        n = len(self.estimator.classifier.classes_)
        y_val = check_labels(y_val, n, "y_val", n_items=X_val.shape[0])
        counts = np.bincount(y_val, minlength=n)
        if counts.min() < 4:
            raise ValueError(f"y_val needs at least 4 items of every class to split V into a fit part and a "
                             f"calibration part, got counts {counts.tolist()}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}")
        k = check_int(self.n_splits, "n_splits", min_value=2)
        everything = np.arange(len(y_val))
        if self.scheme == "split":
            fit_idx, cal_idx = train_test_split(everything, test_size=self.cal_fraction, stratify=y_val,
                                                random_state=seed)
            parts = [(fit_idx, cal_idx)]
        elif self.scheme == "mc":
            parts = [tuple(train_test_split(everything, test_size=self.cal_fraction, stratify=y_val,
                                            random_state=(seed + 7919 * (j + 1)) % 2**32)) for j in range(k)]
        elif self.scheme == "cv":
            from sklearn.model_selection import StratifiedKFold
            if counts.min() < 2 * k:
                raise ValueError(f"n_splits={k} folds need at least {2 * k} items of every class in y_val, got "
                                 f"counts {counts.tolist()}; use fewer folds")
            parts = list(StratifiedKFold(k, shuffle=True, random_state=seed).split(X_val, y_val))
        else:
            rng = np.random.default_rng([seed, 1])
            parts = [(np.concatenate([rng.choice(np.flatnonzero(y_val == c), counts[c]) for c in range(n)]),
                      everything) for _ in range(k)]
        pred = np.asarray(self.estimator.classifier.predict(X_val))
        self.folds_ = [(_fresh(self.estimator, seed).fit(X_val[f], y_val[f]), X_val[c], y_val[c], pred[c])
                       for f, c in parts]
        self.calibrator_ = self.folds_[0][0]
        refit = self.refit or self.scheme != "split"
        self.n_val_ = len(y_val)
        self.scale_ = self._pool_scale(len(parts[0][0]), len(parts[0][1]))
        if point_estimator is not None and refit:
            self.estimator_ = point_estimator
        else:
            self.estimator_ = _fresh(self.estimator, seed).fit(X_val, y_val) if refit else self.calibrator_
        self.n_classes_ = n
        self.residuals_ = {}
        return self

    def _pool_scale(self, n_fit: int, n_cal: int) -> float:
        """Factor applied to the pool part of the calibration residuals (1 unless ``pool_correction``).

        A method fitted on ``n_fit`` items and calibrated on samples of a pool of ``n_cal`` items sees
        class-conditional rates that differ between the two by a variance proportional to
        ``1/n_fit + 1/n_cal``; at test time the method is fitted on all of V and the test pool has
        ``pool_size`` items (default |V|): ``1/|V| + 1/pool_size``. The factor is the square root of the ratio.
        """
        if not self.pool_correction or self.scheme == "bootstrap":
            return 1.0
        pool = self.n_val_ if self.pool_size is None else check_int(self.pool_size, "pool_size")
        return math.sqrt((1 / self.n_val_ + 1 / pool) / (1 / n_fit + 1 / n_cal))

    def _residuals(self, size: int, measure) -> np.ndarray:
        key = (size, measure if isinstance(measure, str) else getattr(measure, "__name__", repr(measure)))
        if key not in self.residuals_:
            f = get_measure(measure)
            seed = check_seed(self.random_state, "random_state")
            per_fold = max(2, math.ceil(self.n_cal / len(self.folds_)))
            res = []
            n = self.n_classes_
            for j, (cal, X_c, y_c, p_c) in enumerate(self.folds_):
                idx = upp_indices(y_c, size, per_fold, seed=(seed + j) % 2**32, n_classes=n)
                tables = np.stack([contingency_table(y_c[i], p_c[i], n) for i in idx])
                true = np.asarray(f(tables), dtype=float)
                pred = np.asarray(cal.predict_batch([X_c[i] for i in idx], measure, prevalences=tables.sum(axis=2)),
                                  dtype=float)
                if self.scale_ == 1.0:
                    res.append(np.abs(pred - true))
                    continue
                # the pool's expected value at each sample's prevalence: the pool's class-conditional rates
                # (rows of its table) mixed by the sample's realised prevalence; true - pool is the sample's
                # own sampling noise, which does not depend on the sizes of V and of the pool
                pool = contingency_table(y_c, p_c, n)
                rates = pool / pool.sum(axis=1, keepdims=True)
                expected = np.asarray(f(tables.sum(axis=2)[:, :, None] * rates[None]), dtype=float)
                res.append(np.abs(self.scale_ * (pred - expected) + (expected - true)))
            self.residuals_[key] = np.concatenate(res)
        return self.residuals_[key]

    def predict(self, X, measure=None) -> float:
        """The point prediction of the wrapped method (fitted as ``refit`` says)."""
        check_fitted(self, ["estimator_"])
        return float(self.estimator_.predict(X, measure))

    def predict_interval(self, X, alpha: float = 0.05, measure=None) -> tuple[float, float]:
        """``(lower, upper)`` of the 1-α interval for ``measure`` (default the method's) on the sample ``X``."""
        return tuple(self.predict_interval_batch([X], alpha, measure)[0])

    def predict_interval_batch(self, samples, alpha: float = 0.05, measure=None) -> np.ndarray:
        """Intervals for k samples: float (k, 2), columns lower and upper, clipped to [0, 1]. Raises ValueError
        for alpha outside (0, 1), an empty list of samples, and the method's errors on a bad sample."""
        check_fitted(self, ["estimator_"])
        a = _alpha(alpha)
        if not isinstance(samples, (list, tuple)) or len(samples) == 0:
            raise ValueError("samples must be a non-empty list of samples (one (m, d) array each)")
        measure = self.estimator_.measure if measure is None else measure
        point = np.asarray(self.estimator_.predict_batch(list(samples), measure), dtype=float)
        q = np.array([conformal_quantile(self._residuals(int(check_X(X, f"samples[{i}]").shape[0]), measure), a)
                      for i, X in enumerate(samples)])
        return np.clip(np.stack([point - q, point + q], axis=1), 0.0, 1.0)


def interval_scores(lower, upper, true) -> dict:
    """Table 3's quantities for k intervals: mean amplitude ``A`` (upper - lower) and coverage ``C`` (the
    fraction with lower <= true <= upper). Arrays of shape (k,); ValueError if shapes differ or lower > upper."""
    lo, hi, t = (np.asarray(v, dtype=float) for v in (lower, upper, true))
    if not lo.shape == hi.shape == t.shape or lo.ndim != 1 or lo.size == 0:
        raise ValueError(f"lower, upper and true must be 1-d arrays of one shape, got {lo.shape}, {hi.shape}, {t.shape}")
    if np.any(lo > hi + 1e-12):
        raise ValueError("lower must not exceed upper")
    return {"A": float(np.mean(hi - lo)), "C": float(np.mean((lo <= t + 1e-12) & (t <= hi + 1e-12)))}


def interval_experiment(split, methods=("DoC", "O-LEAP_KDEy"), kinds=("bootstrap", "conformal", "residual-bootstrap"),
                        classifier: str = "lr", n_samples: int = 100, sample_size: int = 500, alpha: float = 0.05,
                        n_boot: int = 100, n_boot_samples: int = 20, n_cal: int = 500, measure: str = "accuracy",
                        n_splits: int = 10, seed: int = 0):
    """Table 3's protocol on one dataset: h trained on L, each method fitted on V, ``n_samples`` UPP test samples
    of ``sample_size`` from U; for each interval kind the interval of every test sample (the bootstrap, being
    ``n_boot`` predictions per sample, on the first ``n_boot_samples`` samples only).

    ``split``: a :class:`capshift.datasets.Split`. ``kinds``: "bootstrap" (the paper's), "conformal"
    (:class:`ConformalInterval`, split), "conformal-refit" (the same with ``refit=True``), "conformal-cv"
    (5-fold cross-conformal) and "residual-bootstrap" (``scheme="bootstrap"``). Returns a tidy
    DataFrame: ``dataset, method, kind, sample, true, predicted, lower, upper, ae``, where ``predicted`` is the
    point prediction the interval is built around.
    """
    import pandas as pd
    from .experiment import make_classifier, make_method
    schemes = {"conformal": "split", "conformal-refit": "split", "conformal-cv": "cv", "residual-bootstrap": "bootstrap",
               "conformal-mc": "mc", "conformal-mc-pool": "mc"}
    bad = set(kinds) - {"bootstrap", *schemes}
    if bad:
        raise ValueError(f"kinds must be among {['bootstrap', *schemes]}, got {sorted(bad)}")
    n_samples, sample_size = check_int(n_samples, "n_samples"), check_int(sample_size, "sample_size")
    n_boot_samples = min(check_int(n_boot_samples, "n_boot_samples"), n_samples)
    h = make_classifier(classifier, seed).fit(split.X_L, split.y_L)
    n = split.n_classes
    idx = upp_indices(split.y_U, sample_size, n_samples, seed=seed, n_classes=n)
    samples = [split.X_U[i] for i in idx]
    f = get_measure(measure)
    pred_U = h.predict(split.X_U)
    true = np.array([float(f(contingency_table(split.y_U[i], pred_U[i], n))) for i in idx])
    rows = []
    for name in methods:
        base = make_method(name, h, random_state=seed)
        for kind in kinds:
            if kind == "bootstrap":
                est = _fresh(base, seed).fit(split.X_V, split.y_V)
                point = np.asarray(est.predict_batch(samples[:n_boot_samples], measure), dtype=float)
                bounds = np.array([bootstrap_interval(est, X, alpha, n_boot, measure, random_state=seed + k)
                                   for k, X in enumerate(samples[:n_boot_samples])])
                ks = range(n_boot_samples)
            else:
                ci = ConformalInterval(base, n_cal=n_cal, refit=kind == "conformal-refit", scheme=schemes[kind],
                                       n_splits=n_splits if kind.startswith("conformal-mc") else 5,
                                       pool_correction=kind == "conformal-mc-pool", random_state=seed)
                ci.fit(split.X_V, split.y_V)
                point = np.asarray(ci.estimator_.predict_batch(samples, measure), dtype=float)
                bounds = ci.predict_interval_batch(samples, alpha, measure)
                ks = range(n_samples)
            for k in ks:
                rows.append({"dataset": split.name, "method": name, "kind": kind, "sample": k, "true": true[k],
                             "predicted": point[k], "lower": bounds[k, 0], "upper": bounds[k, 1],
                             "ae": abs(point[k] - true[k])})
    return pd.DataFrame(rows)
