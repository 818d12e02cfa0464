"""Conformal intervals around any CAP estimator, and the finite-evidence floor (what ``predict_interval`` computes).

Beyond the LEAP paper (Volpi, Moreo & Sebastiani, Machine Learning 2025, Sect. 5.10), which finds its bootstrap
intervals too narrow and leaves better ones to future work. This module holds

- :class:`ConformalInterval`: conformal calibration (Vovk et al. 2005; Lei et al. 2018) of any CAP
  estimator: the method is fitted on part of V and ``n_cal`` calibration samples are drawn from the other
  part with the test protocol (UPP, QuaPy's sampling, the test sample's size); the interval is
  ``predicted ± q``, q the ⌈(k+1)(1-α)⌉-th smallest absolute residual (:func:`conformal_quantile`). One split
  ("split") gives the textbook guarantee only if calibration and test samples are exchangeable, which the
  protocol breaks: all test samples come from one finite pool U, all calibration samples from one part of V,
  and the class-conditional rates of h differ between pools. Many random splits ("mc", Monte Carlo
  cross-conformal) sample that difference. Scores: absolute residuals, studentised ones (Lei et al. 2018,
  Sect. 5.2: divided by the sample's standard deviation under h's finite validation evidence), or the
  union of the two intervals; optionally floored by the evidence interval below;
- :func:`evidence_interval`: what h's finite validation evidence alone says about a sample's measure: the
  Jeffreys posterior of h's class-conditional rates (Dirichlet(counts + 1/2) per true class) and the
  sample's own multinomial noise (exact beta-binomial convolution for accuracy); never empty when h makes
  no error on V (where every conformal residual is 0), shrinking as V grows. :func:`acc_prevalence` gives
  it the sample's prevalence (adjusted classify and count, Forman 2008).

:meth:`capshift.base.CAPEstimator.predict_interval` uses, for the LEAP and CBPE families, the "rates" scheme (no
refit: in-sample residuals on V's own samples plus the rate discrepancy of halvings of V) with Mondrian bins by the
estimated prevalence and the evidence floor (:data:`RATES_INTERVALS`, chosen on the recorded comparison of the
uncertainty chapter, issue 31), and for the other methods Monte Carlo cross-conformal with the union score and the
floor (:data:`MC_INTERVALS`). This module sits below
:mod:`capshift.base` (which builds a :class:`ConformalInterval` around itself), so it knows the estimator only by
its methods; the interval study (the paper's bootstrap, the comparison of kinds, coverage) is
:mod:`capshift.uncertainty`. Intervals are clipped to [0, 1] (every measure of :mod:`capshift.tables` lies there).
"""
from __future__ import annotations

import copy
import math

import numpy as np
from scipy.optimize import lsq_linear
from scipy.signal import fftconvolve
from scipy.stats import betabinom
from sklearn.base import BaseEstimator
from sklearn.model_selection import StratifiedKFold, train_test_split

from .validation import (check_distribution, check_fitted, check_fraction, check_int, check_labels, check_seed,
                         check_X)
from .protocols import sample_at, upp_indices
from .quantifiers import Quantifier
from .tables import MEASURES, class_counts, contingency_table, get_measure

__all__ = ["ConformalInterval", "conformal_quantile", "evidence_interval", "acc_prevalence", "unfitted_copy",
           "posterior_pools", "propagated_discrepancy", "BIN_BY",
           "RATES_INTERVALS", "CBPE_INTERVALS", "MC_INTERVALS",
           "SCHEMES", "SCORES", "PRIORS", "FLOOR_DRAWS", "RATE_MODELS", "RATE_DRAWS"]

SCHEMES = ("split", "mc", "cv", "bootstrap", "rates")
SCORES = ("absolute", "studentised", "both")
#: Priors of h's class-conditional rates in :func:`evidence_interval`: the pseudo-count of every cell of a row of
#: n cells. "jeffreys": 1/2 (Jeffreys 1946), (n - 1)/2 pseudo-errors per class; "perks": 1/n (Perks 1947), a
#: whole pseudo-item per class whatever n. The two agree for two classes.
PRIORS = ("jeffreys", "perks")
BIN_BY = ("predicted", "prevalence")
#: How the "rates" scheme draws the discrepancy between V's and the test pool's class-conditional rates of h:
#: "halvings" (the two halves of random halvings of V, scaled), "posterior" (:data:`RATE_DRAWS` test pools drawn
#: from the posterior predictive of h's rates given V's counts) or "response" (the method's own response to the
#: halvings: fitted on one half against fitted on the other, on samples of the other), or "auto" (the response
#: for two classes, the halvings for more). See :class:`ConformalInterval` ``rate_model``.
RATE_MODELS = ("halvings", "posterior", "response", "auto")
#: Test pools drawn by ``rate_model="posterior"``
RATE_DRAWS = 200
#: ``predict_interval``'s construction for methods whose error on V's own samples is their error elsewhere, once
#: the pools' rate discrepancy is added (the LEAP family, the CBPE family): the "rates" scheme (no refit: the
#: method fitted on V, calibrated on UPP samples of V, plus the rate discrepancy of 10 halvings of V), Mondrian
#: bins (4) by the distance of the sample's ACC-estimated prevalence to V's, and the finite-evidence floor with
#: Perks' prior, which for two classes also contains the evidence interval (``floor="auto"``: the union). Chosen
#: on the recorded comparisons of the uncertainty chapter (issue 31): among the constructions that need no refit
#: of the method, the lowest mean Winkler rank on one split of 22 datasets (the bins and the floor), then over 6
#: splits of each (the union for two classes, Perks' prior and the reach for more).
RATES_INTERVALS = {"scheme": "rates", "n_splits": 10, "n_cal": 500, "score": "absolute", "floor": "auto", "bins": 4,
                   "bin_by": "prevalence", "prior": "perks"}
#: ``predict_interval``'s construction for the CBPE family: :data:`RATES_INTERVALS` with ``rate_model="auto"``, the
#: method's own response to the halvings as the rate term for two classes (its fits on halves are cheap) and the
#: halvings for more. Chosen by the target rule of the uncertainty chapter on fresh splits of the 16 binary
#: datasets, measured on SLD-CBPE (issue 31).
CBPE_INTERVALS = {**RATES_INTERVALS, "rate_model": "auto"}
#: ``predict_interval``'s construction for the other methods (fitted to V's samples, whose in-sample error is
#: optimistic: DoC, DS, NN, ATC, QuAcc, ...): Monte Carlo cross-conformal over 10 halvings of V, the union of the
#: absolute and studentised scores, and the floor (the default before issue 31).
MC_INTERVALS = {"scheme": "mc", "n_splits": 10, "n_cal": 500, "pool_correction": False, "score": "both",
                "floor": True}
#: Default cap on the calibration samples' size (:class:`ConformalInterval` ``max_cal_size``): above the sample
#: sizes of the papers' protocols (100 to 1,000) and of the uncertainty study, so their intervals are unchanged.
MAX_CAL_SIZE = 2000
FLOOR_DRAWS = 4000  # Monte Carlo draws of the floor's evidence interval (measures other than accuracy, which is exact)


def unfitted_copy(estimator, seed: int):
    """An unfitted copy with the same parameters and the *same* trained classifier (sklearn's ``clone`` would
    clone h too, unfitted; CAP methods never train h). A shared, fitted capshift ``Quantifier`` is replaced by
    an unfitted one of the same kind: it was fitted on all of V, and reusing it on a part of V would evaluate
    it on its own training items."""
    params = {**estimator.get_params(deep=False), "random_state": seed}
    q = params.get("quantifier")
    if isinstance(q, Quantifier):
        params["quantifier"] = q.unfitted()
    return type(estimator)(**params)


def conformal_quantile(residuals, alpha: float) -> float:
    """The split-conformal quantile: the ⌈(k+1)(1-α)⌉-th smallest of k residuals (inf if that exceeds k, i.e.
    too few calibration samples for this α: then no finite interval has the guarantee). Raises ValueError for
    an empty or non-finite ``residuals`` or ``alpha`` outside (0, 1)."""
    a = check_fraction(alpha, "alpha")
    r = np.sort(np.asarray(residuals, dtype=float).ravel())
    if r.size == 0 or not np.all(np.isfinite(r)):
        raise ValueError("residuals must be a non-empty array of finite numbers")
    rank = math.ceil((r.size + 1) * (1 - a))
    return float(r[rank - 1]) if rank <= r.size else float("inf")


class ConformalInterval(BaseEstimator):
    """Conformal intervals around any CAP estimator (beyond the LEAP paper, which calls for them).

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
    scheme : {"split", "mc", "cv", "bootstrap"}
        How the method is fitted and calibrated. "split": one split by ``cal_fraction`` (split conformal; exact
        marginal guarantee when the method is not refitted). "mc": Monte Carlo cross-conformal, ``n_splits``
        independent random stratified splits by ``cal_fraction``, the residuals of all pooled: every split brings
        a new pair of pools (fit part, calibration part), so the residuals see how much the class-conditional
        rates of two pools differ, which one split shows only once (the cause of split conformal's per-dataset
        under-coverage, see the uncertainty chapter). "cv": cross-conformal (CV+ style, Barber et al.
        2021): ``n_splits`` stratified folds, the method fitted on all folds but one and calibrated on samples
        of that fold, residuals pooled (guarantee 1-2α). "bootstrap": the method fitted ``n_splits`` times on
        stratified bootstrap resamples of V (same size and class counts as V) and calibrated on samples drawn
        from V itself, which plays the test pool; no finite-sample guarantee.
        "rates" (no refit): the method fitted on all of V is the point prediction and is calibrated on ``n_cal``
        UPP samples of V itself, whose in-sample residuals hold the method's own noise and the sample's sampling
        noise but not the discrepancy between V's and the test pool's class-conditional rates of h; that is
        added: each residual is paired with each of ``n_splits`` random stratified halvings (by
        ``cal_fraction``) of V, and the score is ``|scale * (m(p, R_a) - m(p, R_b)) + predicted - true|``, with
        ``m(p, R)`` the measure at the sample's prevalence p under rates R, ``R_a``, ``R_b`` the two halves'
        rates of h, and ``scale = sqrt((1/|V| + 1/pool_size) / (1/|a| + 1/|b|))`` (the variance of a rate
        difference between pools of sizes |V| and ``pool_size``, against two halves'). It costs no refit: the
        calibration is ``n_cal`` predictions of the fitted method. Chosen for the LEAP and CBPE families on the
        recorded comparison of the uncertainty chapter (:data:`RATES_INTERVALS`); methods fitted to V's samples
        (DoC, DS, NN) would have optimistic in-sample residuals and keep "mc".
        "mc", "cv" and "bootstrap" refit the method on all of V for the point prediction.
    n_splits : int
        Splits ("mc"), folds ("cv") or bootstrap refits ("bootstrap"); default 5.
    pool_correction : bool
        Rescale the pool part of each residual (prediction minus the calibration pool's expected value at the
        sample's prevalence) by ``sqrt((1/|V| + 1/pool_size) / (1/|fit part| + 1/|calibration part|))``, the
        ratio of the variances of the rate difference between the pools at test time and in calibration;
        the sample's own sampling noise is left as is (default False).
    pool_size : int or None
        Size of the test pool assumed by ``pool_correction`` and by the "rates" scheme (None: |V|, as the
        papers' protocol, whose U is about as large as V; a very large value for a test population).
    rate_model : {"halvings", "posterior", "response", "auto"}
        How the "rates" scheme draws the rate discrepancy (other schemes ignore it). "halvings" (default): the
        ``n_splits`` halvings' rate differences, scaled as above; on a small V they can show little of it (in a
        class where h makes no error on V, no halving shows any). "posterior": :data:`RATE_DRAWS` test pools of
        ``pool_size`` items split as V's classes, each true class's rates of h drawn from their posterior given
        V's counts (Dirichlet(counts + the ``prior``'s pseudo-count), :data:`PRIORS`) and the pool's items from
        those rates (multinomial); the discrepancy is the measure under V's rates minus under the pool's, with
        no scale (``scale_`` is 1). Its variance, about ``r(1 - r)(1/|V_i| + 1/pool_i)`` per class, is the
        halvings' in expectation, and the prior keeps it above 0 where V shows no error. Drawn once at
        :meth:`fit` with the ``prior`` set then (``with_options`` does not redraw). "response": the method's own
        response to the halvings' pool discrepancy instead of the measure's: for each halving (a, b) the method
        is fitted on a and on b (``2 * n_splits`` fits at :meth:`fit`), and the i-th calibration sample (of V,
        prevalence p_i) is paired with halving ``i mod n_splits`` only: a sample of b's items at p_i
        (:func:`capshift.protocols.sample_at`) is predicted by both, and the score is ``|scale * (method_a -
        method_b) + predicted - true|``, ``scale`` as for "halvings". The two fits predict the same items, so
        the difference holds what the method makes of the pools' rates (a quantifier fitted with a's rates
        reading b's items; calibrated posterior probabilities that follow the items), not the items' noise.
        ``n_cal`` scores per size and measure (not ``n_splits * n_cal``), at ``2 * n_cal`` more predictions.
        A method fitted on half of V can fail where the one fitted on V does not (SLD-CBPE's BCTS calibration
        overflows on a half that h separates): a sample on which either fit raises ValueError falls back to that
        halving's "halvings" term at its prevalence, counted in ``response_fallbacks_``. "auto": "response" for
        two classes, "halvings" for more (``rate_model_`` says which). Beyond the papers (issue 31).
    propagate : bool or "auto"
        How the "rates" scheme turns a rate discrepancy into an error of the measure (other schemes ignore it).
        False (default): ``m(p, R_a) - m(p, R_b)``, the measure at the sample's true prevalence p under the two
        pools' rates. True: ``m(p_hat, R_a) - m(p, R_b)`` with ``p_hat`` the prevalence that adjusted classify
        and count (Forman 2008) estimates from the fractions of h's predictions that pool b gives at p,
        ``p @ R_b``, knowing pool a's rates (``p_hat = p @ R_b @ pinv(R_a)``, clipped at 0 and renormalised,
        as QuaPy's ACC): the discrepancy propagated through the prevalence estimate that the method fits with
        V's rates, amplified by ``1 / (tpr - fpr)`` for two classes. A classifier close to constant on V (tpr
        near fpr) then gets the wide interval its quantification error needs, which the measure's difference
        alone does not show; a classifier that separates the classes well gets nearly the same one. ACC is a
        surrogate of the method's quantifier; with ``rate_model="response"``, which measures the method's own
        response, ``propagate`` must be False (ValueError). "auto": True for two classes, False for more (with
        many classes the inverse of a half's noisy rates amplifies its noise, and the interval over-covers).
        Beyond the papers (issue 31).
    bins : int
        1 (default): one quantile for all samples of a size. More: Mondrian conformal prediction, the
        calibration samples binned (equal counts) by the L1 distance between their fractions of h's
        predictions and those of the fit part (``bin_by="predicted"``) or between their prevalence estimated by
        adjusted classify and count and the fit part's prevalence (``bin_by="prevalence"``; at test: h's rates
        and prevalence on V), and each test sample given the quantile of its bin (of all the scores if its bin
        holds too few for α, which leaves the guarantee marginal for that bin).
    score : {"absolute", "studentised"}
        The conformity score. "absolute" (default): ``|predicted - true|``, one half-width for every sample
        of a size. "studentised" (locally weighted conformal, Lei et al. 2018, Sect. 5.2): the absolute
        residual divided by a per-sample scale s, the interval ``predicted ± q s``. s is the standard
        deviation of the sample's accuracy (whatever the measure: a smooth proxy of how noisy the sample is)
        under h's finite validation evidence (:func:`evidence_interval`),
        computed by one function for calibration and test samples, as exchangeability requires: the rates
        of h estimated on the fit part (calibration) or on V (test), at the fit part's number of items, the
        sample's prevalence estimated by adjusted classify and count (:func:`acc_prevalence`) from its
        fractions of h's predictions, and the sample's size. Samples whose measure is noisier (a
        prevalence rich in the class h errs on most, a class that is rare in V) get wider intervals; s is
        never below 1/size, the resolution of a measure on ``size`` items. "both": the union of the two
        intervals (half-width the larger of ``q`` and ``q' s``): it covers whenever either does, so it keeps
        the studentised interval's gain where the method's error grows with the evidence scale (DoC on
        ionosphere in the uncertainty chapter) and the absolute one's where it does not (DoC on wdbc).
    floor : bool, "union" or "auto"
        True: widen the interval, below and above separately, to at least the reach of the finite-evidence
        interval (:func:`evidence_interval` with h's rates on all of V, the sample's ACC prevalence and size, the
        same α) from its plug-in value (default False). The conformal residuals only see errors that h makes on
        V: a classifier errorless on V gives zero residuals and a zero-width interval, while 0 errors in ``n_i``
        items of class i leave error rates up to about 2.5/``n_i`` plausible; the floor keeps them. "union":
        the same, then extended to contain the evidence interval itself, so that the interval covers wherever
        either the conformal interval or the evidence interval does. The reach alone is placed around the
        method's prediction, which can sit off the evidence's centre (on a classifier errorless on V and U every
        sample's accuracy is exactly 1, while a LEAP estimate may be 0.998: the reach then adds nothing, and
        the interval misses 1 by a hair on every sample); the union reaches 1. "auto": the union for two
        classes, the reach (True) for more, as chosen on the recorded comparison over repeated splits of the
        uncertainty chapter (:data:`RATES_INTERVALS`): the reach alone under-covers the binary datasets, the
        union over-covers the multiclass ones.
    bin_by : {"predicted", "prevalence"}
        The shift proxy of the Mondrian ``bins`` (default "predicted").
    prior : {"jeffreys", "perks"}
        The prior of h's rates in the floor's evidence interval (:data:`PRIORS`; default "jeffreys"). With n
        classes, Jeffreys' 1/2 per cell puts (n - 1)/2 pseudo-errors in every class, which widens the floor of
        a classifier with many classes (4.5 pseudo-errors per class for 10 classes); Perks' 1/n puts (n - 1)/n.
    max_cal_size : int or None
        Largest calibration sample (default :data:`MAX_CAL_SIZE`, 2,000 items). A test sample of more items is
        given the conformal half-width of a sample of ``max_cal_size`` items (its calibration scores, bins and
        studentised scale), which is conservative: the sampling noise of the smaller sample is the larger. The
        floor is still computed at the sample's own size. This bounds the calibration's cost at ``n_cal``
        predictions of ``max_cal_size`` items whatever the batch size (a production batch of 50,000 items
        would otherwise cost ``n_cal`` predictions of 50,000 items); None: no cap.
    random_state : int
        Seed of the split, the calibration samples and the method.

    Calibration samples are drawn at the size of the test sample being predicted (at most ``max_cal_size``),
    UPP with QuaPy's sampling as the experiments' test samples, once per size and measure, and cached.

    Attributes: ``estimator_`` (fitted on the fit part, or on V if ``refit`` or another scheme), ``folds_`` (per split:
    the method fitted on the fit part and the calibration part), ``calibration_`` (dict ``(size, measure) ->``
    the calibration samples' predictions, true values, pool values and shift proxies), ``scale_`` (the pool
    correction factor, 1 without it), ``val_counts_`` (h's validation table on V in counts, (n, n)),
    ``fit_counts_`` (the same on each fold's fit part), ``n_fit_`` (mean number of items of the fit parts);
    for the "rates" scheme ``half_counts_`` (h's tables in counts on the two halves of each halving; with
    ``rate_model="posterior"``, V's table and each drawn pool's), with ``rate_model="response"``
    ``half_methods_`` (per halving: the method fitted on each half, and the second half's indices into V),
    ``response_fallbacks_`` (dict ``(size, measure) ->`` how many calibration samples fell back to the halvings'
    term), ``rate_model_`` (the rate model used: ``rate_model``, "auto" resolved by the number of classes) and
    ``val_data_`` (V's items, labels and h's predictions, from which the calibration samples are drawn).
    """

    def __init__(self, estimator, cal_fraction: float = 0.5, n_cal: int = 500, refit: bool = False,
                 scheme: str = "split", n_splits: int = 5, pool_correction: bool = False, pool_size=None,
                 bins: int = 1, score: str = "absolute", floor=False, bin_by: str = "predicted",
                 prior: str = "jeffreys", max_cal_size=MAX_CAL_SIZE, random_state: int = 0,
                 rate_model: str = "halvings", propagate: bool | str = False):
        self.estimator = estimator
        self.cal_fraction = cal_fraction
        self.n_cal = n_cal
        self.refit = refit
        self.scheme = scheme
        self.n_splits = n_splits
        self.pool_correction = pool_correction
        self.pool_size = pool_size
        self.bins = bins
        self.score = score
        self.floor = floor
        self.bin_by = bin_by
        self.prior = prior
        self.max_cal_size = max_cal_size
        self.random_state = random_state
        self.rate_model = rate_model
        self.propagate = propagate

    def fit(self, X_val, y_val, point_estimator=None):
        """Split V, fit the method on one part, keep the other for calibration. Returns self.

        ``point_estimator``: the method already fitted on all of V, used as ``estimator_`` instead of a refit
        (what :meth:`capshift.base.CAPEstimator.predict_interval` passes; schemes other than "split").

        Raises TypeError if ``estimator`` is not a CAPEstimator, ValueError for bad parameters or a
        calibration or fit part missing a class (use a larger V or a smaller ``cal_fraction``)."""
        # duck-typed: capshift.base (CAPEstimator) builds this class in predict_interval, so it cannot be imported here
        if not (isinstance(self.estimator, BaseEstimator) and hasattr(self.estimator, "classifier")
                and all(callable(getattr(self.estimator, m, None)) for m in ("fit", "predict_batch", "predict_measures"))):
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
        check_int(self.bins, "bins")
        if self.max_cal_size is not None:
            check_int(self.max_cal_size, "max_cal_size", min_value=2)
        self._check_score_options(self.score, self.floor)
        self._check_bin_by(self.bin_by)
        _check_prior(self.prior)
        if self.rate_model not in RATE_MODELS:
            raise ValueError(f"rate_model must be one of {RATE_MODELS}, got {self.rate_model!r}")
        self.rate_model_ = ("response" if n == 2 else "halvings") if self.rate_model == "auto" else self.rate_model
        self._check_response(self.rate_model_, _check_propagate(self.propagate))
        everything = np.arange(len(y_val))
        pred = np.asarray(self.estimator.classifier.predict(X_val))
        self.val_counts_ = _counts(y_val, pred, n)
        self.n_val_ = len(y_val)
        self.n_classes_ = n
        self.calibration_ = {}
        if self.scheme == "rates" and self.rate_model_ == "posterior":
            pool = self.n_val_ if self.pool_size is None else check_int(self.pool_size, "pool_size")
            self.half_counts_ = posterior_pools(self.val_counts_, pool, self.prior, RATE_DRAWS, seed)
            self.part_sizes_ = (self.n_val_, pool)  # scale_ = 1: the pools are drawn at their size
        elif self.scheme == "rates":
            halves = [tuple(train_test_split(everything, test_size=self.cal_fraction, stratify=y_val,
                                             random_state=(seed + 7919 * (j + 1)) % 2**32)) for j in range(k)]
            _check_parts(halves, y_val, n, ("first half", "second half"))
            self.half_counts_ = [(_counts(y_val[a], pred[a], n), _counts(y_val[b], pred[b], n)) for a, b in halves]
            self.part_sizes_ = (len(halves[0][0]), len(halves[0][1]))
            if self.rate_model_ == "response":
                self.half_methods_ = [(unfitted_copy(self.estimator, seed).fit(X_val[a], y_val[a]),
                                       unfitted_copy(self.estimator, seed).fit(X_val[b], y_val[b]), b)
                                      for a, b in halves]
                self.response_fallbacks_ = {}
        if self.scheme == "rates":
            self.folds_ = []
            self.fit_counts_ = [self.val_counts_]
            self.n_fit_ = float(self.n_val_)
            self.estimator_ = (point_estimator if point_estimator is not None
                               else unfitted_copy(self.estimator, seed).fit(X_val, y_val))
            self.calibrator_ = self.estimator_
            self.val_data_ = (X_val, y_val, pred)  # the calibration samples are drawn from V (per size)
            self.scale_ = self._pool_scale(*self.part_sizes_)
            return self
        if self.scheme == "split":
            fit_idx, cal_idx = train_test_split(everything, test_size=self.cal_fraction, stratify=y_val,
                                                random_state=seed)
            parts = [(fit_idx, cal_idx)]
            _check_parts(parts, y_val, n, ("fit part", "calibration part"))
        elif self.scheme == "mc":
            parts = [tuple(train_test_split(everything, test_size=self.cal_fraction, stratify=y_val,
                                            random_state=(seed + 7919 * (j + 1)) % 2**32)) for j in range(k)]
            _check_parts(parts, y_val, n, ("fit part", "calibration part"))
        elif self.scheme == "cv":
            if counts.min() < 2 * k:
                raise ValueError(f"n_splits={k} folds need at least {2 * k} items of every class in y_val, got "
                                 f"counts {counts.tolist()}; use fewer folds")
            parts = list(StratifiedKFold(k, shuffle=True, random_state=seed).split(X_val, y_val))
        else:
            rng = np.random.default_rng([seed, 1])
            parts = [(np.concatenate([rng.choice(np.flatnonzero(y_val == c), counts[c]) for c in range(n)]),
                      everything) for _ in range(k)]
        self.folds_ = [(unfitted_copy(self.estimator, seed).fit(X_val[f], y_val[f]), X_val[c], y_val[c], pred[c])
                       for f, c in parts]
        self.fit_counts_ = [_counts(y_val[f], pred[f], n) for f, _ in parts]
        self.n_fit_ = float(np.mean([len(f) for f, _ in parts]))
        self.calibrator_ = self.folds_[0][0]
        refit = self.refit or self.scheme != "split"
        self.part_sizes_ = (len(parts[0][0]), len(parts[0][1]))
        self.scale_ = self._pool_scale(*self.part_sizes_)
        if point_estimator is not None and refit:
            self.estimator_ = point_estimator
        else:
            self.estimator_ = unfitted_copy(self.estimator, seed).fit(X_val, y_val) if refit else self.calibrator_
        return self

    def _cal_size(self, size: int) -> int:
        """The calibration size of a test sample of ``size`` items: ``size``, at most ``max_cal_size``."""
        if self.max_cal_size is None:
            return size
        return min(size, check_int(self.max_cal_size, "max_cal_size", min_value=2))

    @staticmethod
    def _check_bin_by(bin_by):
        if bin_by not in BIN_BY:
            raise ValueError(f"bin_by must be one of {BIN_BY}, got {bin_by!r}")

    @staticmethod
    def _check_response(rate_model, propagate):
        if rate_model == "response" and propagate is not False:
            raise ValueError(f"propagate={propagate!r} propagates h's rates through ACC, a surrogate of the method's "
                             "response, which rate_model=\"response\" measures itself: use propagate=False")

    @staticmethod
    def _check_score_options(score, floor):
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        if not (isinstance(floor, (bool, np.bool_)) or (isinstance(floor, str) and floor in ("union", "auto"))):
            raise TypeError(f"floor must be True, False, \"union\" or \"auto\", got {floor!r}")

    def with_options(self, pool_correction: bool, bins: int = 1, score: str = "absolute",
                     floor=False, bin_by: str = "predicted", prior: str = "jeffreys",
                     propagate: bool | str = False) -> "ConformalInterval":
        """A copy sharing this fitted calibrator's fits and calibration samples, with ``pool_correction``,
        ``bins``, ``score``, ``floor``, ``bin_by``, ``prior`` and ``propagate`` set."""
        check_fitted(self, ["folds_"])
        self._check_score_options(score, floor)
        self._check_bin_by(bin_by)
        other = copy.copy(self)
        other.propagate = _check_propagate(propagate)
        self._check_response(self.rate_model_, other.propagate)
        other.bin_by, other.prior = bin_by, _check_prior(prior)
        other.pool_correction, other.bins = bool(pool_correction), check_int(bins, "bins")
        other.score, other.floor = score, floor if isinstance(floor, str) else bool(floor)
        other.scale_ = other._pool_scale(*self.part_sizes_)
        return other

    def _pool_scale(self, n_fit: int, n_cal: int) -> float:
        """Factor applied to the pool part of the calibration residuals (1 unless ``pool_correction``).

        A method fitted on ``n_fit`` items and calibrated on samples of a pool of ``n_cal`` items sees
        class-conditional rates that differ between the two by a variance proportional to
        ``1/n_fit + 1/n_cal``; at test time the method is fitted on all of V and the test pool has
        ``pool_size`` items (default |V|): ``1/|V| + 1/pool_size``. The factor is the square root of the ratio.
        """
        if self.scheme == "rates":
            pool = self.n_val_ if self.pool_size is None else check_int(self.pool_size, "pool_size")
            return math.sqrt((1 / self.n_val_ + 1 / pool) / (1 / n_fit + 1 / n_cal))
        if not self.pool_correction or self.scheme == "bootstrap":
            return 1.0
        pool = self.n_val_ if self.pool_size is None else check_int(self.pool_size, "pool_size")
        return math.sqrt((1 / self.n_val_ + 1 / pool) / (1 / n_fit + 1 / n_cal))

    def _calibration(self, size: int, measure) -> dict:
        """Calibration samples of ``size`` items for ``measure``, cached: per sample the fold's prediction
        ``pred``, the true value ``true``, the calibration pool's expected value ``expected`` at the sample's
        prevalence, the shift proxy ``dist`` (L1 distance between the sample's and the fit part's fractions
        of h's predictions), the split ``fold`` it comes from and its fractions of h's predictions ``gamma``;
        with ``score="studentised"``, ``scale`` is added on first use."""
        key = (size, _measure_key(measure))
        if key not in self.calibration_ and self.scheme == "rates":
            self.calibration_[key] = self._rates_calibration(size, measure)
        if key not in self.calibration_:
            f = get_measure(measure)
            seed = check_seed(self.random_state, "random_state")
            per_fold = max(2, math.ceil(self.n_cal / len(self.folds_)))
            n = self.n_classes_
            parts = []
            for j, (cal, X_c, y_c, p_c) in enumerate(self.folds_):
                idx = upp_indices(y_c, size, per_fold, seed=(seed + j) % 2**32, n_classes=n)
                tables = np.stack([contingency_table(y_c[i], p_c[i], n) for i in idx])
                pred = np.asarray(cal.predict_batch([X_c[i] for i in idx], measure, prevalences=tables.sum(axis=2)),
                                  dtype=float)
                # the pool's expected value at each sample's prevalence: the pool's class-conditional rates
                # (rows of its table) mixed by the sample's realised prevalence; true - expected is the sample's
                # own sampling noise, which does not depend on the sizes of V and of the pool
                expected = _measure_at(f, tables.sum(axis=2), _counts(y_c, p_c, n))
                gamma = tables.sum(axis=1)
                dist = np.abs(gamma - _fractions(cal.val_pred_, n)).sum(axis=1)
                fit = self.fit_counts_[j]
                ref = fit.sum(axis=1) / fit.sum()
                prev_dist = np.array([np.abs(acc_prevalence(fit, g) - ref).sum() for g in gamma])
                parts.append((pred, np.asarray(f(tables), dtype=float), expected, dist, prev_dist,
                              np.full(len(idx), j), gamma))
            names = ("pred", "true", "expected", "dist", "prev_dist", "fold", "gamma")
            self.calibration_[key] = {k: np.concatenate([p[i] for p in parts]) for i, k in enumerate(names)}
        return self.calibration_[key]

    def _rates_calibration(self, size: int, measure) -> dict:
        """The "rates" scheme's calibration samples: ``n_cal`` UPP samples of V at ``size`` items, each predicted
        by the method fitted on all of V (``pred``, ``true``: the in-sample error, the method's own noise and the
        sample's sampling noise), paired with every halving j of V: ``rate`` = the measure at the sample's
        prevalence under the first half's rates of h minus under the second half's (the discrepancy of h's
        class-conditional rates between two pools, which the test pool adds to the in-sample error). Arrays of
        length ``n_splits * n_cal``, halving-major; with ``rate_model="response"``, of length ``n_cal``, ``rate``
        the method's response (fitted on the first half minus on the second) on a sample of the second half of
        halving ``i mod n_splits`` at the i-th sample's prevalence."""
        f = get_measure(measure)
        seed = check_seed(self.random_state, "random_state")
        X, y, p_v = self.val_data_
        n = self.n_classes_
        idx = upp_indices(y, size, self.n_cal, seed=seed, n_classes=n)
        tables = np.stack([contingency_table(y[i], p_v[i], n) for i in idx])
        prev = tables.sum(axis=2)
        pred = np.asarray(self.estimator_.predict_batch([X[i] for i in idx], measure, prevalences=prev), dtype=float)
        true = np.asarray(f(tables), dtype=float)

        k = len(self.half_counts_)
        if self.rate_model_ == "response":
            rate, k = self._response(size, measure, prev, seed), 1
        else:
            rate = np.concatenate([_measure_at(f, prev, a) - _measure_at(f, prev, b) for a, b in self.half_counts_])
        gamma = tables.sum(axis=1)
        ref_pred = _fractions(p_v, n)
        ref_prev = self.val_counts_.sum(axis=1) / self.val_counts_.sum()
        dist = np.abs(gamma - ref_pred).sum(axis=1)
        prev_dist = np.array([np.abs(acc_prevalence(self.val_counts_, g) - ref_prev).sum() for g in gamma])
        return {"pred": np.tile(pred, k), "true": np.tile(true, k), "rate": rate, "dist": np.tile(dist, k),
                "prev_dist": np.tile(prev_dist, k), "fold": np.zeros(k * len(idx), dtype=int),
                "gamma": np.tile(gamma, (k, 1)), "prev": prev}

    def _response(self, size: int, measure, prevalences, seed: int) -> np.ndarray:
        """``rate_model="response"``: per calibration sample i (prevalence ``prevalences[i]``), halving j = i mod
        ``n_splits``, the method fitted on j's first half minus the one fitted on its second half, both
        predicting one sample of ``size`` items of the second half at that prevalence (drawn with the seed
        ``seed + 104729 (i + 1)``). Float (n_cal,).

        Fallback: where a method fitted on a half raises ValueError on a sample (SLD-CBPE's BCTS map overflows on
        a half that h separates), that sample's term is halving j's measure difference at its prevalence, the
        ``"halvings"`` term; ``response_fallbacks_[(size, measure)]`` counts those samples."""
        X, y = self.val_data_[:2]
        f = get_measure(measure)
        out = np.empty(len(prevalences))
        k = len(self.half_methods_)
        fallbacks = 0
        # with fewer calibration samples than halvings, the last halvings have none
        for j, (method_a, method_b, b) in enumerate(self.half_methods_[:len(prevalences)]):
            rows = np.arange(j, len(prevalences), k)
            X_b, y_b = X[b], y[b]
            samples = [X_b[sample_at(y_b, prevalences[i], size, (seed + 104729 * (i + 1)) % 2**32)] for i in rows]
            try:  # out is float: the methods' values are cast on assignment
                out[rows] = np.subtract(method_a.predict_batch(samples, measure),
                                        method_b.predict_batch(samples, measure))
            except ValueError:  # a method fitted on half of V can fail where the one fitted on V does not:
                counts_a, counts_b = self.half_counts_[j]  # sample by sample, the failing ones fall back
                halving = _measure_at(f, prevalences[rows], counts_a) - _measure_at(f, prevalences[rows], counts_b)
                for i, sample, term in zip(rows, samples, halving):
                    try:
                        out[i] = (method_a.predict_batch([sample], measure)[0]
                                  - method_b.predict_batch([sample], measure)[0])
                    except ValueError:
                        out[i] = term
                        fallbacks += 1
        self.response_fallbacks_[(size, _measure_key(measure))] = fallbacks
        return out

    def _residuals(self, size: int, measure, studentised: bool = False) -> np.ndarray:
        """Calibration scores: absolute residuals, pool part scaled by ``scale_`` (see :meth:`_pool_scale`),
        divided by each sample's evidence scale if ``studentised``."""
        c = self._calibration(size, measure)
        # "auto" propagates for two classes only (validated at fit and by with_options)
        propagate = self.n_classes_ == 2 if isinstance(self.propagate, str) else bool(self.propagate)
        if self.scheme == "rates" and propagate:
            if "rate_propagated" not in c:  # computed on first use, cached with the calibration samples
                f = get_measure(measure)
                c["rate_propagated"] = np.concatenate([propagated_discrepancy(a, b, c["prev"], f)
                                                       for a, b in self.half_counts_])
            r = np.abs(self.scale_ * c["rate_propagated"] + (c["pred"] - c["true"]))
        elif self.scheme == "rates":
            r = np.abs(self.scale_ * c["rate"] + (c["pred"] - c["true"]))
        else:
            r = np.abs(self.scale_ * (c["pred"] - c["expected"]) + (c["expected"] - c["true"]))
        if studentised:
            if "scale" not in c:
                c["scale"] = np.array([self._sd(self.fit_counts_[j], self.fit_counts_[j], g, size)
                                       for j, g in zip(c["fold"], c["gamma"])])
            r = r / c["scale"]
        return r

    @staticmethod
    def _sd(counts, acc_counts, gamma, size) -> float:
        """The studentised score's scale of one sample: the standard deviation of its *accuracy* (for every
        measure) under the evidence ``counts`` (h's table in counts), its prevalence estimated by ACC
        with ``acc_counts``, at least 1/size. Accuracy, exact and smooth in the prevalence, is the scale of
        every measure: F1 and the like jump where a class is (estimated) absent, which would give some
        samples a near-zero scale; conformal validity needs only that calibration and test samples share
        the scale function, not that it be the measure's own."""
        sd = _evidence(counts, acc_prevalence(acc_counts, gamma), size, 0.05, "accuracy")[3]
        return max(sd, 1.0 / size)

    def _test_scales(self, samples):
        """Per test sample: the studentised scale (rates of V at the fit parts' number of items) and the
        fractions of h's predictions."""
        gammas = [_fractions(np.asarray(self.estimator_.classifier.predict(X)), self.n_classes_) for X in samples]
        if self.score == "absolute":
            return np.ones(len(samples)), gammas
        counts = self.val_counts_ * (self.n_fit_ / self.n_val_)
        return np.array([self._sd(counts, self.val_counts_, g, self._cal_size(X.shape[0]))
                         for g, X in zip(gammas, samples)]), gammas

    def quantiles(self, samples, measure, alpha: float) -> np.ndarray:
        """Conformal half-widths (k,) of the 1-α intervals of validated samples (a list of (m_i, d) arrays):
        the conformal quantile of the scores of calibration samples of the same size (and with ``bins`` > 1
        of those in the same bin of the shift proxy: Mondrian conformal prediction, Vovk et al. 2005, Ch. 4),
        times the sample's scale if ``score`` is "studentised", the larger of the two if "both". Without the
        ``floor`` (see :meth:`bounds`)."""
        return self._half_widths(samples, measure, alpha)[0]

    def _half_widths(self, samples, measure, alpha):
        a = check_fraction(alpha, "alpha")
        bins = check_int(self.bins, "bins")
        self._check_score_options(self.score, self.floor)
        scales, gammas = self._test_scales(samples)
        ref = _fractions(self.estimator_.val_pred_, self.n_classes_)

        def half_widths(studentised):
            out = np.empty(len(samples))
            for i, X in enumerate(samples):
                size = self._cal_size(X.shape[0])
                r = self._residuals(size, measure, studentised)
                if bins == 1:
                    out[i] = conformal_quantile(r, a)
                    continue
                c = self._calibration(size, measure)
                dist = c["dist"] if self.bin_by == "predicted" else c["prev_dist"]
                edges = np.quantile(dist, np.linspace(0, 1, bins + 1)[1:-1])
                b = np.searchsorted(edges, self._test_dist(gammas[i], ref), side="right")
                members = r[np.searchsorted(edges, dist, side="right") == b]
                # a bin with too few calibration scores for this alpha (inf), or none (tied edges: a shift proxy
                # equal on most calibration samples), falls back to all of them
                q = conformal_quantile(members, a) if len(members) else np.inf
                out[i] = q if np.isfinite(q) else conformal_quantile(r, a)
            return out * scales if studentised else out

        if self.score == "absolute":
            return half_widths(False), gammas
        if self.score == "studentised":
            return half_widths(True), gammas
        return np.maximum(half_widths(False), half_widths(True)), gammas

    def _test_dist(self, gamma, ref) -> float:
        """A test sample's shift proxy: L1 distance of its fractions of h's predictions to V's (``bin_by``
        "predicted"), or of its ACC prevalence (h's rates on V) to V's prevalence ("prevalence")."""
        if self.bin_by == "predicted":
            return float(np.abs(gamma - ref).sum())
        prev = self.val_counts_.sum(axis=1) / self.val_counts_.sum()
        return float(np.abs(acc_prevalence(self.val_counts_, gamma) - prev).sum())

    def bounds(self, samples, point, measure, alpha: float) -> np.ndarray:
        """Intervals (k, 2), lower and upper, around the point predictions ``point`` (k,) of validated
        ``samples``: ``point ± q`` (:meth:`quantiles`), with ``floor`` each side widened to at least the
        reach of :func:`evidence_interval` (h's rates on V, ``prior``) from its plug-in value, and with
        ``floor="union"`` (or "auto" and two classes) to contain that interval itself; clipped to [0, 1]."""
        q, gammas = self._half_widths(samples, measure, alpha)
        point = np.asarray(point, dtype=float)
        below, above = q.copy(), q.copy()
        if self.floor:
            seed = check_seed(self.random_state, "random_state")
            union = self.floor == "union" or (self.floor == "auto" and self.n_classes_ == 2)
            for i, (g, X) in enumerate(zip(gammas, samples)):
                lo, hi, c = _evidence(self.val_counts_, acc_prevalence(self.val_counts_, g), X.shape[0], alpha,
                                      measure, FLOOR_DRAWS, seed, self.prior)[:3]
                below[i], above[i] = max(below[i], c - lo), max(above[i], hi - c)
                if union:  # contain the evidence interval too
                    below[i], above[i] = max(below[i], point[i] - lo), max(above[i], hi - point[i])
        return np.clip(np.stack([point - below, point + above], axis=1), 0.0, 1.0)

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
        check_fraction(alpha, "alpha")
        if not isinstance(samples, (list, tuple)) or len(samples) == 0:
            raise ValueError("samples must be a non-empty list of samples (one (m, d) array each)")
        measure = self.estimator_.measure if measure is None else measure
        samples = [check_X(X, f"samples[{i}]") for i, X in enumerate(samples)]
        point = np.asarray(self.estimator_.predict_batch(samples, measure), dtype=float)
        return self.bounds(samples, point, measure, alpha)


def _measure_key(measure):
    """The calibration cache's key of a measure: its name for a name or a measure of capshift.tables (the function
    ``accuracy`` and "accuracy" share one calibration), else the callable itself (two lambdas share a __name__,
    not a calibration)."""
    if isinstance(measure, str):
        return measure
    name = getattr(measure, "__name__", None)
    if isinstance(name, str) and name.lower() in MEASURES and get_measure(name) is measure:
        return name
    return measure


def _check_propagate(propagate):
    """``propagate`` as True, False or "auto"; TypeError otherwise."""
    if isinstance(propagate, (bool, np.bool_)):
        return bool(propagate)
    if isinstance(propagate, str) and propagate == "auto":
        return propagate
    raise TypeError(f"propagate must be True, False or \"auto\", got {propagate!r}")


def _check_parts(parts, y, n: int, names) -> None:
    """ValueError naming the split and the part of V (a pair of index arrays per split) that lacks a class: its
    calibration samples, or the method's fit, need every class."""
    for j, pair in enumerate(parts):
        for name, idx in zip(names, pair):
            missing = np.flatnonzero(np.bincount(y[idx], minlength=n) == 0)
            if len(missing):
                raise ValueError(f"the {name} of split {j} of V has no item of class(es) {missing.tolist()}: use a "
                                 "larger V or a smaller cal_fraction")


def _fractions(pred, n: int) -> np.ndarray:
    return np.bincount(np.asarray(pred, dtype=int), minlength=n) / len(pred)


def _measure_at(f, prevalences, counts) -> np.ndarray:
    """The measure ``f`` of tables whose rows are the class-conditional rates of ``counts`` (n, n) mixed by each
    of ``prevalences`` (m, n): the expected value at those prevalences of a pool with h's rates ``counts``.
    Float (m,)."""
    rates = counts / np.clip(counts.sum(axis=1, keepdims=True), 1, None)
    return np.asarray(f(prevalences[:, :, None] * rates[None]), dtype=float)


def _counts(y, pred, n: int) -> np.ndarray:
    """h's contingency table in counts (n, n), rows true classes."""
    return np.bincount(np.asarray(y, dtype=int) * n + np.asarray(pred, dtype=int), minlength=n * n).reshape(n, n).astype(float)


def posterior_pools(val_counts, pool_size: int, prior: str = "perks", draws: int = RATE_DRAWS, random_state: int = 0):
    """Test pools of h's class-conditional rates drawn from their posterior predictive given V: ``draws`` pairs
    ``(V, P)`` of (n, n) tables in counts, V the given ``val_counts`` (rows: true classes) and P a pool of
    ``pool_size`` items split as V's classes (:func:`capshift.tables.class_counts`), each row's rates drawn from
    Dirichlet(V's row + the ``prior``'s pseudo-count per cell, :data:`PRIORS`) and its items from them
    (multinomial). ``val_counts``: non-negative (n, n); ``pool_size``: int >= 1; ``random_state``: the seed.
    Raises ValueError naming the argument. What ``ConformalInterval(rate_model="posterior")`` calibrates on;
    beyond the papers (issue 31)."""
    V = _check_counts(val_counts)
    n = V.shape[0]
    pool_size = check_int(pool_size, "pool_size")
    draws = check_int(draws, "draws")
    a0 = 0.5 if _check_prior(prior) == "jeffreys" else 1.0 / n
    rows = V.sum(axis=1)
    if rows.sum() <= 0:
        raise ValueError("val_counts holds no item: h's table on V is needed in counts")
    sizes = class_counts(rows / rows.sum(), pool_size)
    rng = np.random.default_rng(check_seed(random_state, "random_state"))
    # per true class: (draws, n) rates, then (draws, n) counts of the pool's items of that class
    pools = np.stack([rng.multinomial(sizes[i], rng.dirichlet(V[i] + a0, draws)) for i in range(n)], axis=1)
    return [(V, p.astype(float)) for p in pools]


def propagated_discrepancy(counts_a, counts_b, prevalences, measure="accuracy") -> np.ndarray:
    """The error of a measure that a discrepancy of h's class-conditional rates between two pools causes once it
    is propagated through the prevalence estimate: for each prevalence p (a row of ``prevalences``, (m, n) on the
    simplex), ``m(p_hat, R_a) - m(p, R_b)``, with ``R_a``, ``R_b`` the rates (rows of ``counts_a``, ``counts_b``,
    (n, n) counts of h's tables, rows true classes, each row holding an item) and ``p_hat`` the adjusted classify
    and count estimate (Forman 2008) that the rates ``R_a`` give from the fractions ``p @ R_b`` of h's predictions
    (``p @ R_b @ pinv(R_a)``, clipped at 0 and renormalised as QuaPy's ACC; uniform where nothing is left).
    ``measure``: a name or a measure of :mod:`capshift.tables`. Returns float (m,); 0 where the pools' rates agree.
    Raises ValueError for bad tables, a row without items, or prevalences of the wrong shape or off the simplex
    (:func:`capshift.validation.check_distribution`; TypeError if not numeric). What
    ``ConformalInterval(propagate=True)`` calibrates on; beyond the papers (issue 31)."""
    A, B = _check_counts(counts_a), _check_counts(counts_b)
    if A.shape != B.shape:
        raise ValueError(f"counts_a and counts_b must have the same shape, got {A.shape} and {B.shape}")
    if np.any(A.sum(axis=1) <= 0) or np.any(B.sum(axis=1) <= 0):
        raise ValueError("every true class (row) of counts_a and counts_b needs an item: h's rates are undefined "
                         "for a class the pool lacks")
    n = A.shape[0]
    p = check_distribution(prevalences, "prevalences", n_classes=n)
    if p.ndim != 2:
        raise ValueError(f"prevalences must be an (m, {n}) array, one prevalence per row, got shape {p.shape}")
    f = get_measure(measure)
    Ra, Rb = A / A.sum(axis=1, keepdims=True), B / B.sum(axis=1, keepdims=True)
    p_hat = np.clip(p @ Rb @ np.linalg.pinv(Ra), 0.0, None)
    total = p_hat.sum(axis=1, keepdims=True)
    p_hat = np.divide(p_hat, total, out=np.full_like(p_hat, 1.0 / n), where=total > 0)
    return (np.asarray(f(p_hat[:, :, None] * Ra[None]), dtype=float)
            - np.asarray(f(p[:, :, None] * Rb[None]), dtype=float))


def _check_counts(val_counts) -> np.ndarray:
    V = np.asarray(val_counts, dtype=float)
    if V.ndim != 2 or V.shape[0] != V.shape[1] or V.shape[0] < 2 or not np.all(np.isfinite(V)) or np.any(V < 0):
        raise ValueError(f"val_counts must be an (n, n) table of non-negative counts, n >= 2, got shape {V.shape}")
    return V


def acc_prevalence(val_counts, pred_fractions) -> np.ndarray:
    """Adjusted classify and count (Forman 2008; LEAP 2025 Sect. 3): the class prevalence ``p`` on the simplex
    whose expected fractions of h's predictions, ``p @ R`` with ``R[i, j] = P(h = j | y = i)`` estimated on V,
    are closest (least squares, ``scipy.optimize.lsq_linear`` on [0, 1], renormalised) to the sample's observed
    fractions ``pred_fractions`` (n,). ``val_counts``: h's validation contingency table in counts (n, n), rows
    true classes; R is smoothed by the Jeffreys 1/2 so that an errorless h still gives a solvable system.
    Returns float (n,). Raises ValueError for a bad table or fractions."""
    V = _check_counts(val_counts)
    g = np.asarray(pred_fractions, dtype=float)
    if g.shape != (V.shape[0],) or not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"pred_fractions must be {V.shape[0]} non-negative fractions, got {pred_fractions!r}")
    R = (V + 0.5) / (V + 0.5).sum(axis=1, keepdims=True)  # Jeffreys-smoothed: never singular for an errorless h
    p = lsq_linear(R.T, g, bounds=(0.0, 1.0)).x
    return p / p.sum() if p.sum() > 0 else np.full(len(p), 1.0 / len(p))


def evidence_interval(val_counts, prevalence, size: int, alpha: float = 0.05, measure="accuracy",
                      n_draws: int = 4000, random_state: int = 0,
                      prior: str = "jeffreys") -> tuple[float, float, float]:
    """The finite-evidence interval of a measure on a sample: what h's validation errors alone say about the
    value of ``measure`` on a sample of ``size`` items with class prevalence ``prevalence``, under prior
    probability shift (h's class-conditional rates ``P(h = j | y = i)`` are the pool's on every sample).

    Each row i of h's rates gets the Jeffreys posterior Dirichlet(``val_counts[i]`` + 1/2) (Jeffreys 1946;
    for two classes the Beta posterior whose intervals Brown, Cai & DasGupta 2001 recommend over
    Clopper–Pearson's), or with ``prior="perks"`` Dirichlet(``val_counts[i]`` + 1/n) (Perks 1947: one
    pseudo-item per row whatever the number of classes n; Jeffreys' for two classes); the sample's ``N_i``
    items of class i (``size`` x ``prevalence``, rounded) are classified as Multinomial(``N_i``, row i). The
    interval holds the α/2 and 1-α/2 quantiles of the measure under this posterior predictive: it shrinks
    with |V| (the pool's rates are better known) and with ``size`` (less sampling noise), and is never empty
    when h makes no error on V (0 errors in ``n_i`` items leave an error rate of up to about 2.5/``n_i``
    plausible).

    For accuracy it is exact: the errors in class i are BetaBinomial(``N_i``, errors_i + (n-1) a,
    correct_i + a), a the prior's pseudo-count per cell (the Dirichlet's aggregation property), independent
    across classes, so their sum's distribution is the convolution of the classes' ``scipy.stats.betabinom``
    pmfs. Other measures use
    ``n_draws`` seeded Monte Carlo draws of the posterior predictive table.

    ``val_counts``: (n, n) counts of h's validation table (rows true class); ``prevalence``: (n,) on the simplex.
    Returns ``(lower, upper, plug_in)``: the interval and the measure of the plug-in table (prevalence x the
    rates' maximum-likelihood estimate), from which :class:`ConformalInterval` takes the interval's reach
    below and above the point prediction. Raises ValueError for bad shapes, negative counts, a prevalence off
    the simplex, alpha outside (0, 1), ``size`` < 1 or a prior not in :data:`PRIORS`.
    """
    return _evidence(val_counts, prevalence, size, alpha, measure, n_draws, random_state, prior)[:3]


#: Above this many products a convolution of probability mass functions is done by FFT (O(m log m) instead of
#: O(m^2): a batch of 50,000 items takes milliseconds, not a second); below, exactly as ``np.convolve``.
FFT_ABOVE = 10**6


def _convolve(a, b) -> np.ndarray:
    """The pmf of the sum of two independent counts with pmfs ``a`` and ``b``: ``np.convolve``, by FFT for long
    ones (round-off of order 1e-16 clipped at 0)."""
    if len(a) * len(b) <= FFT_ABOVE:
        return np.convolve(a, b)
    return np.clip(fftconvolve(a, b), 0.0, None)


def _check_prior(prior) -> str:
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    return prior


def _evidence(val_counts, prevalence, size, alpha, measure, n_draws=4000, random_state=0, prior="jeffreys"):
    """:func:`evidence_interval` plus the posterior predictive standard deviation of the measure (4-tuple)."""
    a = check_fraction(alpha, "alpha")
    V = _check_counts(val_counts)
    n = V.shape[0]
    a0 = 0.5 if _check_prior(prior) == "jeffreys" else 1.0 / n  # the prior's pseudo-count per cell
    p = np.asarray(prevalence, dtype=float)
    if p.shape != (n,) or not np.all(np.isfinite(p)) or np.any(p < -1e-12) or abs(p.sum() - 1) > 1e-6:
        raise ValueError(f"prevalence must be {n} non-negative fractions summing to 1, got {p!r}")
    size = check_int(size, "size")
    counts = class_counts(np.clip(p, 0, None) / np.clip(p, 0, None).sum(), size)
    rows = V.sum(axis=1, keepdims=True)
    # the rows' rates; a class absent from V (row sum 0) gets uniform rates: 1/n in each cell, divided by 1
    mle = (V + (rows == 0) / n) / np.maximum(rows, 1)
    f = get_measure(measure)
    plug_in = float(f(counts[:, None] / size * mle))
    if f is get_measure("accuracy"):
        pmf = np.ones(1)
        for i in range(n):
            wrong = V[i].sum() - V[i, i] + (n - 1) * a0
            pmf = _convolve(pmf, betabinom.pmf(np.arange(counts[i] + 1), counts[i], wrong, V[i, i] + a0))
        cdf = np.cumsum(pmf)
        e_lo = int(np.searchsorted(cdf, a / 2 - 1e-12))  # smallest e with P(E <= e) >= a/2
        e_hi = int(np.searchsorted(cdf, 1 - a / 2 - 1e-12))
        e = np.arange(len(pmf))
        sd = math.sqrt(max(float(pmf @ e**2) - float(pmf @ e) ** 2, 0.0)) / size
        return 1.0 - e_hi / size, 1.0 - e_lo / size, plug_in, sd
    rng = np.random.default_rng(check_seed(random_state, "random_state"))
    n_draws = check_int(n_draws, "n_draws", min_value=2)
    rates = np.stack([rng.dirichlet(V[i] + a0, n_draws) for i in range(n)], axis=1)  # (B, n, n)
    tables = np.stack([rng.multinomial(counts[i], rates[:, i]) for i in range(n)], axis=1) / size
    values = np.asarray(f(tables), dtype=float)
    lo, hi = np.quantile(values, [a / 2, 1 - a / 2])
    return float(lo), float(hi), plug_in, float(values.std())
