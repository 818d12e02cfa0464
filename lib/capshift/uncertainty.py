"""Intervals around a CAP method's prediction: the paper's bootstrap, quantifier propagation, and their study.

Source: LEAP (Volpi, Moreo & Sebastiani, Machine Learning 2025), Sect. 5.10 and Table 3: CAP methods treated as
black-box point estimators, their uncertainty estimated by bootstrapping the test sample; the intervals are
narrow but cover the true accuracy far less often than their nominal level, and the paper leaves better
intervals to future work. This module holds

- :func:`bootstrap_interval`: the paper's procedure: resample the test sample's items with replacement
  ``n_boot`` times, predict each resample, and take the percentile interval;
- :func:`propagated_interval`: the quantifier's bootstrap (QuaPy's ``AggregativeBootstrap``,
  :func:`bootstrap_prevalences`) propagated through a LEAP-family method, plus the multinomial sampling
  error of the sample's true labels given h's predictions;
- :func:`interval_scores`, :func:`interval_experiment`, :func:`summarise_intervals`: Table 3's protocol and
  quantities (amplitude A, coverage C, AE) for every interval kind (:data:`KINDS`), and the oracle amplitude
  (the narrowest interval around the point prediction that covers 1-α of the test samples);
  :func:`error_structure` (the error each dataset's test samples share) and :func:`coverage_by_scale` (mean and
  minimum coverage of uniformly rescaled intervals), which show why a mean coverage near 1-α and a high minimum
  over datasets pull apart.

The conformal intervals and the finite-evidence floor that every estimator's ``predict_interval`` computes are in
:mod:`capshift.conformal` (:class:`ConformalInterval`, :func:`evidence_interval`, :func:`acc_prevalence`,
:func:`conformal_quantile`; importable from here too). Book chapter ``uncertainty``.

Intervals are clipped to [0, 1] (every measure of :mod:`capshift.tables` lies there).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from joblib import parallel_config
from quapy.method.confidence import AggregativeBootstrap

from . import evaluation, registry
from .validation import check_fitted, check_fraction, check_int, check_seed, check_X
from .base import CAPEstimator
from .conformal import (FLOOR_DRAWS, SCHEMES, SCORES, ConformalInterval, acc_prevalence, conformal_quantile,
                        evidence_interval, unfitted_copy)
from .tables import get_measure

__all__ = ["bootstrap_interval", "bootstrap_prevalences", "propagated_interval", "ConformalInterval", "interval_scores",
           "conformal_quantile", "evidence_interval", "acc_prevalence", "interval_experiment", "summarise_intervals",
           "error_structure", "coverage_by_scale", "winkler_score", "dataset_scores", "split_scores", "coverage_floor",
           "compare_constructions", "paired_winkler", "KINDS", "SCHEMES", "SCORES",
           "FLOOR_DRAWS"]


def bootstrap_interval(estimator: CAPEstimator, X, alpha: float = 0.05, n_boot: int = 500, measure=None,
                       random_state: int = 0) -> tuple[float, float]:
    """The LEAP paper's bootstrap interval (Sect. 5.10): the α/2 and 1-α/2 percentiles of the estimator's
    prediction of ``measure`` on ``n_boot`` resamples (with replacement, same size) of the items of ``X``.

    ``estimator``: a fitted CAP estimator; ``X``: the unlabelled test sample (m, d). Returns ``(lower, upper)``
    floats in [0, 1]. Raises ValueError for alpha outside (0, 1), n_boot < 2, an empty sample, and the
    estimator's errors (e.g. NotFittedError).
    """
    a, n_boot = check_fraction(alpha, "alpha"), check_int(n_boot, "n_boot", min_value=2)
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
    a = check_fraction(alpha, "alpha")
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


def interval_scores(lower, upper, true) -> dict:
    """Table 3's quantities for k intervals: mean amplitude ``A`` (upper - lower) and coverage ``C`` (the
    fraction with lower <= true <= upper). Arrays of shape (k,); ValueError if shapes differ or lower > upper."""
    lo, hi, t = (np.asarray(v, dtype=float) for v in (lower, upper, true))
    if not lo.shape == hi.shape == t.shape or lo.ndim != 1 or lo.size == 0:
        raise ValueError(f"lower, upper and true must be 1-d arrays of one shape, got {lo.shape}, {hi.shape}, {t.shape}")
    if np.any(lo > hi + 1e-12):
        raise ValueError("lower must not exceed upper")
    return {"A": float(np.mean(hi - lo)), "C": float(np.mean(_inside(lo, hi, t)))}


def winkler_score(lower, upper, true, alpha: float = 0.05) -> np.ndarray:
    """The Winkler (interval) score of 1-α intervals (Winkler 1972; Gneiting & Raftery 2007, Sect. 6.2, their
    eq. 43; the score cap-ml ranks intervals with): per interval ``(upper - lower) + (2/α)(lower - true)`` if the
    true value lies below it, ``+ (2/α)(true - upper)`` if above, the width alone if it covers. Lower is better:
    it charges the width, and a miss by its distance, weighted so that the expected score is minimised by the
    α/2 and 1-α/2 quantiles of the true value's distribution (a proper score). Units: those of the measure.

    ``lower``, ``upper``, ``true``: arrays of one shape (k,). Returns float (k,). Raises ValueError for unequal
    shapes, lower > upper, non-finite values or alpha outside (0, 1)."""
    a = check_fraction(alpha, "alpha")
    lo, hi, t = (np.asarray(v, dtype=float) for v in (lower, upper, true))
    if not lo.shape == hi.shape == t.shape or lo.ndim != 1 or lo.size == 0:
        raise ValueError(f"lower, upper and true must be 1-d arrays of one shape, got {lo.shape}, {hi.shape}, {t.shape}")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(np.isfinite(t))):
        raise ValueError("lower, upper and true must be finite (an unbounded side: clip it to the measure's range)")
    if np.any(lo > hi + 1e-12):
        raise ValueError("lower must not exceed upper")
    return (hi - lo) + (2 / a) * (np.clip(lo - t, 0, None) + np.clip(t - hi, 0, None))


def dataset_scores(results, alpha: float = 0.05, by=("task", "method", "size", "measure")):
    """Per dataset, ``construction`` and group of ``by``: ``C`` (coverage), ``A`` (mean width), ``W`` (mean
    :func:`winkler_score`), ``oracle`` (twice the 1-α quantile of the point prediction's absolute errors on the
    dataset's samples, as :func:`summarise_intervals`), ``AE`` (mean absolute error) and ``n`` (samples).

    ``results``: one row per sample with ``dataset, construction, true, predicted, lower, upper`` and the ``by``
    columns (the tidy rows of ``benchmarks/interval_study.py``). The oracle is per (dataset, group, construction):
    a construction around another point prediction (NannyML's) gets its own. Returns a DataFrame; raises
    ValueError for missing columns or alpha outside (0, 1)."""
    a = check_fraction(alpha, "alpha")
    by = list(by)
    need = {"dataset", "construction", "true", "predicted", "lower", "upper", *by}
    if not hasattr(results, "columns") or not need <= set(results.columns):
        raise ValueError(f"results must have the columns {sorted(need)}")
    r = results.assign(inside=_inside(results["lower"], results["upper"], results["true"]),
                       width=results["upper"] - results["lower"], err=(results["predicted"] - results["true"]).abs(),
                       W=winkler_score(results["lower"], results["upper"], results["true"], a))
    keys = list(dict.fromkeys(by + ["construction", "dataset"]))
    return r.groupby(keys, sort=False).agg(
        C=("inside", "mean"), A=("width", "mean"), W=("W", "mean"), AE=("err", "mean"), n=("inside", "size"),
        oracle=("err", lambda e: 2 * float(np.quantile(e, 1 - a)))).reset_index()


def split_scores(results, alpha: float = 0.05, by=("task", "method", "size", "measure")):
    """:func:`dataset_scores` over repeated splits of each dataset into L, V and U: per dataset, ``construction``
    and group of ``by``, the samples of every split pooled.

    One split's samples share its V and its U, and so the discrepancy between h's class-conditional rates on the
    two: a bias common to the split's samples, which an interval built from V alone cannot see and must cover
    in both directions. The oracle of :func:`dataset_scores` (per split) knows that bias; the one here does not:
    ``oracle`` is twice the 1-α quantile of the absolute errors of all the dataset's samples over its splits,
    the narrowest interval around the point predictions that covers 1-α of them when the split is not known,
    the width a construction that sees only V can reach. Also ``oracle_split`` (the mean over splits of each
    split's own oracle, :func:`dataset_scores`' oracle), ``worst_split_C`` (the lowest coverage of one split),
    ``bias_share`` (the share of the mean squared error that is each split's mean error: sum of the splits'
    squared mean errors, each weighted by its samples, over the sum of squared errors; 0 when there is no error),
    ``C_se`` (the standard error of ``C`` with the splits as clusters: the standard deviation of the splits'
    coverages over the square root of their number; NaN for one split) and ``splits``; ``C``, ``A``, ``W``,
    ``AE``, ``n`` as :func:`dataset_scores`, over all the splits' samples.

    ``results``: :func:`dataset_scores`' rows with a ``split`` column (the seed of the split). Returns a DataFrame
    that :func:`compare_constructions` accepts (its ``ratio`` is then the width over this oracle); raises
    ValueError for missing columns or alpha outside (0, 1)."""
    a = check_fraction(alpha, "alpha")
    by = list(by)
    if not hasattr(results, "columns") or "split" not in results.columns:
        raise ValueError("results must have a 'split' column (the seed of each sample's L/V/U split)")
    per_split = dataset_scores(results, a, by + ["split"])
    err = results["predicted"] - results["true"]
    keys = list(dict.fromkeys(by + ["construction", "dataset"]))
    r = results.assign(err=err, sq=err ** 2)
    split_mean = r.groupby(keys + ["split"], sort=False)["err"].transform("mean")
    r = r.assign(bias_sq=split_mean ** 2)
    pooled = dataset_scores(results, a, by).set_index(keys)
    g = r.groupby(keys, sort=False)
    sq, bias_sq = g["sq"].sum(), g["bias_sq"].sum()
    pooled["bias_share"] = (bias_sq / sq.where(sq > 0, 1.0)).where(sq > 0, 0.0)
    s = per_split.groupby(keys, sort=False)
    weights = per_split.assign(wo=per_split["oracle"] * per_split["n"]).groupby(keys, sort=False)
    pooled["oracle_split"] = weights["wo"].sum() / weights["n"].sum()
    pooled["worst_split_C"] = s["C"].min()
    pooled["splits"] = s["C"].size()
    pooled["C_se"] = s["C"].std(ddof=1) / np.sqrt(pooled["splits"])
    return pooled.reset_index()[keys + ["C", "C_se", "A", "W", "AE", "n", "oracle", "oracle_split",
                                       "worst_split_C", "bias_share", "splits"]]


def coverage_floor(scores, floor: float = 0.85, z: float = 2.0, by=("task", "method", "size", "measure")):
    """Whether every dataset's coverage reaches ``floor``, per group of ``by`` and ``construction``, from
    :func:`split_scores`' rows (a dataset's ``C`` over its splits and its standard error ``C_se``), with the
    power of the record: ``verdict`` is "met" when no dataset is below ``floor``, "missed" when one is below it
    by more than ``z`` standard errors, else "not enough evidence" (a dataset below ``floor`` whose splits'
    coverages vary too much to place it there). Also ``below`` and ``clearly_below`` (the datasets below, and
    below by more than ``z`` standard errors, comma-separated, in the order of ``scores``) and ``lowest`` (the
    lowest coverage). A NaN standard error (one split) counts as 0. ``floor`` in (0, 1); ``z`` a number of
    standard errors, 0 to 10. Returns a DataFrame; raises ValueError for missing columns or a bad ``floor`` / ``z``
    (TypeError for a ``z`` that is not a number). Beyond the papers: issue 31's target, "no dataset below 0.85",
    judged as the pooled coverage band is (the clusters' standard error, here the splits)."""
    f = check_fraction(floor, "floor")
    z = check_fraction(z, "z", 0.0, 10.0, closed="both")
    by = list(by)
    need = {"dataset", "construction", "C", "C_se", *by}
    if not hasattr(scores, "columns") or not need <= set(scores.columns):
        raise ValueError(f"scores must be split_scores' rows, with the columns {sorted(need)}")
    rows = []
    for key, g in scores.groupby(by + ["construction"], sort=False):
        low = g[g["C"] < f]
        clear = low[low["C"] + z * low["C_se"].fillna(0.0) < f]
        verdict = "met" if low.empty else "missed" if len(clear) else "not enough evidence"
        rows.append((*key, verdict, ", ".join(low["dataset"]), ", ".join(clear["dataset"]), g["C"].min()))
    return pd.DataFrame(rows, columns=by + ["construction", "verdict", "below", "clearly_below", "lowest"])


def compare_constructions(scores, by=("task", "method", "size", "measure")):
    """The figures of merit of interval constructions pooled over datasets, per group of ``by`` and
    ``construction``, from :func:`dataset_scores`' rows: ``C`` (coverage of all samples pooled), ``C_se`` (its
    standard error with the datasets as clusters: the samples of one dataset share its pools, so they are not
    independent), ``worst_C`` and ``worst`` (the lowest coverage of one dataset, and that dataset), ``A`` (mean
    width), ``oracle`` (mean oracle width), ``ratio`` = ``A`` / ``oracle`` (both averaged over the same samples),
    ``W`` (mean Winkler score), ``datasets`` and ``n`` (samples). Returns a DataFrame; raises ValueError for
    missing columns."""
    by = list(by)
    need = {"dataset", "construction", "C", "A", "W", "oracle", "n", *by}
    if not hasattr(scores, "columns") or not need <= set(scores.columns):
        raise ValueError(f"scores must be dataset_scores' rows, with the columns {sorted(need)}")
    per = scores.reset_index(drop=True)
    per = per.assign(**{f"w{c}": per[c] * per["n"] for c in ("A", "C", "W", "oracle")})
    g = per.groupby(by + ["construction"], sort=False)
    out = g[["wA", "wC", "wW", "woracle", "n"]].sum()
    out = pd.DataFrame({"C": out["wC"] / out["n"], "A": out["wA"] / out["n"], "oracle": out["woracle"] / out["n"],
                        "W": out["wW"] / out["n"], "n": out["n"]})
    k = g["C"].size()
    out["C_se"] = g["C"].std(ddof=1).fillna(0.0) / np.sqrt(k)
    out["datasets"] = k
    worst = per.loc[g["C"].idxmin().reindex(out.index)]  # the groups in out's order
    out["worst_C"], out["worst"] = worst["C"].to_numpy(), worst["dataset"].to_numpy()
    out["ratio"] = out["A"] / out["oracle"]
    return out.reset_index()[by + ["construction", "C", "C_se", "worst_C", "worst", "A", "oracle", "ratio", "W",
                                   "datasets", "n"]]


def paired_winkler(scores, construction: str, reference: str, z: float = 2.0,
                   by=("task", "method", "size", "measure")):
    """Whether ``construction``'s mean Winkler score is lower than ``reference``'s, per group of ``by``, on the same
    samples, with the datasets as clusters: per dataset the difference of the two constructions' ``W``
    (:func:`dataset_scores` or :func:`split_scores` rows), then ``diff`` (their mean over the datasets), ``se`` (their
    standard deviation over the square root of their number; NaN for one dataset), ``ratio`` (the two mean scores'
    ratio) and ``verdict``: "lower" when ``diff`` is below 0 by more than ``z`` standard errors, "higher" when above
    by more, else "not enough evidence" (a NaN standard error: always). ``datasets``: the datasets scored by both.
    Returns a DataFrame; raises ValueError for missing columns, a construction absent from ``scores`` or a bad ``z``
    (TypeError for a ``z`` that is not a number). Beyond the papers: issue 31's choice of a construction, with the
    power of the record (the datasets differ more than the samples of one)."""
    z = check_fraction(z, "z", 0.0, 10.0, closed="both")
    by = list(by)
    need = {"dataset", "construction", "W", *by}
    if not hasattr(scores, "columns") or not need <= set(scores.columns):
        raise ValueError(f"scores must be dataset_scores' or split_scores' rows, with the columns {sorted(need)}")
    for name, c in (("construction", construction), ("reference", reference)):
        if c not in set(scores["construction"]):
            raise ValueError(f"{name} {c!r} is not in scores (constructions: {sorted(set(scores['construction']))})")
    w = scores[scores["construction"].isin([construction, reference])].pivot_table(
        index=by + ["dataset"], columns="construction", values="W").dropna()
    g = (w[construction] - w[reference]).groupby(level=list(range(len(by))), sort=False)
    out = pd.DataFrame({"diff": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.size()), "datasets": g.size()})
    means = w.groupby(level=list(range(len(by))), sort=False).mean()
    out["ratio"] = means[construction] / means[reference]
    out["verdict"] = np.where(out["diff"] + z * out["se"] < 0, "lower",
                              np.where(out["diff"] - z * out["se"] > 0, "higher", "not enough evidence"))
    return out.reset_index()[by + ["diff", "se", "ratio", "datasets", "verdict"]]


def _inside(lower, upper, true):
    """Whether ``lower <= true <= upper``, elementwise, with round-off slack 1e-12 (bounds are clipped sums)."""
    return (lower <= true + 1e-12) & (true <= upper + 1e-12)


#: Interval kinds of :func:`interval_experiment`: the paper's bootstrap, the propagation of the quantifier's
#: bootstrap and the sample's sampling error (LEAP family only), and conformal calibrations (split, K-fold
#: cross-conformal, residual bootstrap, Monte Carlo cross-conformal with and without the pool correction).
KINDS = ("bootstrap", "propagated", "conformal", "conformal-refit", "conformal-cv", "residual-bootstrap",
         "conformal-mc", "conformal-mc-pool", "conformal-mc-bins", "conformal-mc-floor", "conformal-mc-stud",
         "conformal-mc-both", "conformal-rates")
MC_BINS = 4  # bins of the shift proxy of the "conformal-mc-bins" kind
#: kinds whose point prediction is the method fitted on all of V on every test sample (the oracle's reference):
#: not the split kind (fitted on half of V) nor the bootstrap ones (run on the first samples only)
_ON_V_KINDS = [k for k in KINDS if k not in ("bootstrap", "propagated", "conformal")]
_SCHEMES = {"conformal": "split", "conformal-refit": "split", "conformal-cv": "cv", "residual-bootstrap": "bootstrap",
            "conformal-mc": "mc", "conformal-mc-pool": "mc", "conformal-mc-bins": "mc", "conformal-mc-floor": "mc",
            "conformal-mc-stud": "mc", "conformal-mc-both": "mc", "conformal-rates": "rates"}
#: options (pool_correction, bins, score, floor) of the Monte Carlo kinds, which share one set of fits
_MC_OPTIONS = {"conformal-mc": (False, 1, "absolute", False), "conformal-mc-pool": (True, 1, "absolute", False),
               "conformal-mc-bins": (False, MC_BINS, "absolute", False),
               "conformal-mc-floor": (False, 1, "absolute", True),
               "conformal-mc-stud": (False, 1, "studentised", True),
               "conformal-mc-both": (False, 1, "both", True), "conformal-rates": (False, 4, "absolute", True)}
_BIN_BY = {"conformal-rates": "prevalence"}  # the shift proxy of the kinds with bins (others: "predicted")


def interval_experiment(split, methods=("DoC", "O-LEAP_KDEy"), kinds=("bootstrap", "conformal", "conformal-mc"),
                        classifier: str = "lr", n_samples: int = 100, sample_size: int = 500, alpha: float = 0.05,
                        n_boot: int = 100, n_boot_samples: int = 20, n_cal: int = 500, n_splits: int = 10,
                        measure: str = "accuracy", seed: int = 0):
    """Table 3's protocol on one dataset (LEAP 2025, Sect. 5.10): h trained on L, each method fitted on V,
    ``n_samples`` UPP test samples of ``sample_size`` items from U, and for each interval kind the 1-α interval
    of every test sample.

    ``split``: a :class:`capshift.datasets.Split` or a dataset name (loaded with ``seed``). ``kinds``: names of
    :data:`KINDS`: "bootstrap" (the paper's, :func:`bootstrap_interval`, ``n_boot`` resamples) and
    "propagated" (:func:`propagated_interval`, LEAP-family methods with a QuaPy quantifier only;
    other methods, Naive and the oracle variants get no rows) cost
    ``n_boot`` predictions per sample and run on the first ``n_boot_samples`` samples only; the conformal kinds
    (:class:`ConformalInterval`, ``n_cal`` calibration samples; "conformal" = split, "conformal-refit" = split
    with the point estimate refitted on V, "conformal-cv" = 5-fold cross-conformal, "residual-bootstrap",
    "conformal-mc" = ``n_splits`` random halvings of V, "conformal-mc-pool" = the same with the pool
    correction, "conformal-mc-bins" = with Mondrian bins, "conformal-mc-floor" = with the finite-evidence
    floor, "conformal-mc-stud" = studentised scores and the floor, "conformal-mc-both" = the union of the
    absolute and studentised intervals and the floor; the "mc" kinds share their fits; "conformal-rates" = the
    "rates" scheme, no refit, with Mondrian bins by the estimated prevalence and the floor) run on every sample. "conformal-rates" is what
    :meth:`capshift.base.CAPEstimator.predict_interval` computes for the LEAP family
    (:data:`capshift.conformal.RATES_INTERVALS`) and for the CBPE family with more than two classes (for two,
    :data:`capshift.conformal.CBPE_INTERVALS`), "conformal-mc-both" for the other methods.

    Returns a tidy DataFrame: ``dataset, method, kind, sample, true, predicted, lower, upper, ae`` (``predicted``
    is the point prediction the interval is built around: the method fitted on V, or on half of V for the
    split kind). Raises ValueError for unknown kinds and bad sizes.
    """
    bad = set(kinds) - set(KINDS)
    if bad:
        raise ValueError(f"kinds must be among {list(KINDS)}, got {sorted(bad)}")
    n_samples, sample_size = check_int(n_samples, "n_samples"), check_int(sample_size, "sample_size")
    n_boot_samples = min(check_int(n_boot_samples, "n_boot_samples"), n_samples)
    ctx = evaluation.prepare(split, classifier, [], "upp", n_samples, sample_size, seed)
    split, h, samples = ctx.split, ctx.h, ctx.samples()
    f = get_measure(measure)
    true = np.array([float(f(table)) for table in ctx.true_tables])
    rows = []
    for name in methods:
        base = registry.make_method(name, h, random_state=seed)
        full, mc = None, None
        for kind in kinds:
            if kind in ("bootstrap", "propagated"):
                if full is None:
                    full = unfitted_copy(base, seed).fit(split.X_V, split.y_V)
                # propagated_interval needs tables from prevalences and a QuaPy quantifier to bootstrap (Naive and
                # the oracle variants have the former only)
                quapy_q = getattr(getattr(full, "quantifier_", None), "q_", None)
                if kind == "propagated" and (not hasattr(full, "tables_from_prevalences") or quapy_q is None):
                    continue
                interval = bootstrap_interval if kind == "bootstrap" else propagated_interval
                point = np.asarray(full.predict_batch(samples[:n_boot_samples], measure), dtype=float)
                bounds = np.array([interval(full, X, alpha, n_boot, measure, random_state=seed + k)
                                   for k, X in enumerate(samples[:n_boot_samples])])
            else:
                pool, bins, score, floor = _MC_OPTIONS.get(kind, (False, 1, "absolute", False))
                if kind.startswith("conformal-mc") and mc is not None:
                    ci = mc.with_options(pool, bins, score, floor, _BIN_BY.get(kind, "predicted"))
                else:
                    ci = ConformalInterval(base, n_cal=n_cal, refit=kind == "conformal-refit", scheme=_SCHEMES[kind],
                                           n_splits=n_splits if kind.startswith(("conformal-mc", "conformal-rates"))
                                           else 5,
                                           pool_correction=pool, bins=bins, score=score, floor=floor,
                                           bin_by=_BIN_BY.get(kind, "predicted"), random_state=seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ci.fit(split.X_V, split.y_V, point_estimator=full)
                    if kind.startswith("conformal-mc"):
                        mc = ci
                full = ci.estimator_ if kind != "conformal" and full is None else full
                point = np.asarray(ci.estimator_.predict_batch(samples, measure), dtype=float)
                bounds = ci.predict_interval_batch(samples, alpha, measure)
            for k in range(len(bounds)):
                rows.append({"dataset": split.name, "method": name, "kind": kind, "sample": k, "true": true[k],
                             "predicted": point[k], "lower": bounds[k, 0], "upper": bounds[k, 1],
                             "ae": abs(point[k] - true[k])})
    return pd.DataFrame(rows)


def summarise_intervals(results, alpha: float = 0.05):
    """Table 3's quantities per (dataset, method, kind) from :func:`interval_experiment`'s rows: ``AE`` (mean
    absolute error of the point prediction), ``A`` (mean amplitude), ``C`` (coverage), ``n`` (samples), plus
    one row per (dataset, method) of kind ``"oracle"``: the narrowest interval centred on the point prediction
    of the method fitted on V that covers a 1-α fraction of the test samples, i.e. ±(the 1-α quantile of the
    test samples' own absolute errors), a lower bound on the amplitude of any such interval with coverage 1-α
    (it uses the test labels: a reference, not a method). Returns a DataFrame with columns
    ``dataset, method, kind, AE, A, C, n``."""
    a = check_fraction(alpha, "alpha")
    _check_results(results, "ae")
    inside = _inside(results["lower"], results["upper"], results["true"])
    g = results.assign(width=results["upper"] - results["lower"], inside=inside).groupby(
        ["dataset", "method", "kind"], sort=False)
    out = g.agg(AE=("ae", "mean"), A=("width", "mean"), C=("inside", "mean"), n=("ae", "size")).reset_index()
    ref = results[results["kind"].isin(_ON_V_KINDS)].drop_duplicates(["dataset", "method", "sample"])
    oracle = ref.groupby(["dataset", "method"], sort=False)["ae"].agg(
        AE="mean", A=lambda e: 2 * float(np.quantile(e, 1 - a)), n="size").reset_index()
    oracle["kind"], oracle["C"] = "oracle", 1 - a
    return pd.concat([out, oracle[out.columns]], ignore_index=True)


_RESULT_COLUMNS = {"dataset", "method", "kind", "true", "predicted", "lower", "upper"}


def _check_results(results, *extra):
    """``results`` if it is a DataFrame with :func:`interval_experiment`'s columns (and ``extra``); ValueError."""
    need = _RESULT_COLUMNS | set(extra)
    if not hasattr(results, "columns") or not need <= set(results.columns):
        raise ValueError(f"results must be interval_experiment's DataFrame with columns {sorted(need)}")
    return results


def error_structure(results):
    """How one dataset's errors are shared by its test samples: per (dataset, method, kind) of
    :func:`interval_experiment`'s rows, ``bias`` (mean of predicted - true), ``spread`` (their standard
    deviation, ddof 1), ``ratio`` = |bias| / spread (inf when the spread is 0), and coverage ``C``.

    All test samples of a dataset come from one pool U and every method is fitted once on V, so part of the
    error is common to the samples. Where |bias| is comparable to the spread or larger, a dataset's coverage
    is close to 0 or 1 for any interval width that does not know the bias. Returns a DataFrame with columns
    ``dataset, method, kind, bias, spread, ratio, C``; ValueError for a frame without the result columns."""
    r = _check_results(results)
    e = r["predicted"] - r["true"]
    g = r.assign(error=e, inside=_inside(r["lower"], r["upper"], r["true"])).groupby(["dataset", "method", "kind"], sort=False)
    out = g.agg(bias=("error", "mean"), spread=("error", "std"), C=("inside", "mean")).reset_index()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(out["spread"] > 0, out["bias"].abs() / out["spread"], np.inf)
    return out[["dataset", "method", "kind", "bias", "spread", "ratio", "C"]]


def coverage_by_scale(results, scales):
    """Mean and minimum coverage over datasets when every interval is scaled about its point prediction by a
    common factor c: ``[p - c (p - lower), p + c (upper - p)]`` (p = ``predicted``), for each c in ``scales``.

    A check of what a uniformly narrower or wider version of the same intervals would achieve on the two
    coverage targets together (a mean near 1-α and no dataset far below). A bound at an end of the measure's
    range [0, 1] (where :class:`ConformalInterval` clips) stays there: the interval reached at least that far,
    and nothing lies beyond it (a classifier perfect on a dataset has accuracy exactly 1 on every sample), so
    for c < 1 this is the most favourable reading of a clipped bound. ``results``: rows of
    :func:`interval_experiment`; ``scales``: positive factors (1 reproduces the intervals' own coverage).
    Returns a DataFrame ``method, kind, scale, mean_C, min_C, worst`` (the dataset of the minimum). Raises
    ValueError for a frame without the result columns or a non-positive / non-finite scale."""
    r = _check_results(results)
    c = np.atleast_1d(np.asarray(scales, dtype=float))
    if c.ndim != 1 or len(c) == 0 or not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ValueError(f"scales must be a non-empty list of positive finite factors, got {scales!r}")
    rows = []
    for (method, kind), g in r.groupby(["method", "kind"], sort=False):
        p, t = g["predicted"].to_numpy(), g["true"].to_numpy()
        lower, upper = g["lower"].to_numpy(), g["upper"].to_numpy()
        at_0, at_1 = lower <= 1e-12, upper >= 1.0 - 1e-12
        for s in c:
            lo = np.where(at_0, lower, p - s * (p - lower))
            hi = np.where(at_1, upper, p + s * (upper - p))
            cov = pd.Series(_inside(lo, hi, t), index=g.index).groupby(g["dataset"], sort=False).mean()
            rows.append({"method": method, "kind": kind, "scale": float(s), "mean_C": float(cov.mean()),
                         "min_C": float(cov.min()), "worst": cov.idxmin()})
    return pd.DataFrame(rows)
