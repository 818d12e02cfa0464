"""The estimator interface every CAP method in capshift follows (scikit-learn style).

A CAP method is built around an already-trained classifier h (never refitted), is fitted on a
labelled validation set V drawn from the training distribution, and predicts the contingency
table (``(n, n)``, rows true, columns predicted, sums to 1; see :mod:`capshift.tables`) or a
measure of h on an unlabelled test sample U::

    est = LEAP(h, quantifier="kdey", measure="accuracy", random_state=0).fit(X_val, y_val)
    est.predict_table(X_test)          # (n, n)
    est.predict(X_test)                # float, the chosen measure
    est.predict_table_batch([X1, X2])  # (2, n, n)
    est.predict_estimate(X_test)       # SampleEstimate: value, lower, upper, table, each computed once

Labels are class indices ``0..n-1``; ``n`` is ``len(classifier.classes_)``, which must be
``0..n-1`` too (encode labels before training h).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from .validation import (DegenerateClassifierWarning, check_class_evidence, check_classifier, check_distribution,
                          check_every_class, check_fitted, check_fraction, check_labels, check_posteriors, check_samples,
                          check_seed, check_X, predict_codes)
from .conformal import MC_INTERVALS, ConformalInterval
from .tables import contingency_table, get_measure

__all__ = ["CAPEstimator", "SampleEstimate", "check_classifier", "check_sample", "check_posteriors"]


@dataclass(frozen=True)
class SampleEstimate:
    """What :meth:`CAPEstimator.predict_estimate` returns for one sample: ``value`` (the estimated measure, a
    float in [0, 1]), ``lower`` and ``upper`` (its prediction interval), ``table`` (the estimated (n, n)
    contingency table, rows true, columns predicted, sums to 1; None for methods that estimate measures
    directly)."""

    value: float
    lower: float
    upper: float
    table: np.ndarray | None = None


def check_sample(X, name: str = "X", n_features: int | None = None):
    """A sample of items (m, d), m >= 1, finite (:func:`capshift.validation.check_X`); DataFrames by position."""
    return check_X(X, name, n_features=n_features)


class CAPEstimator(BaseEstimator):
    """Base class: fit on V, predict the test table or measures.

    Subclasses implement ``_fit(X_val, y_val)`` and either ``_predict_tables(samples, prevalences,
    posteriors)`` (table methods) or, with ``estimates_tables = False``, ``_predict_values(samples, measure,
    prevalences, posteriors)`` (measure-only methods). Every public method validates its input here, the same
    way for every method: samples through :func:`capshift.validation.check_X` (finite, 2-d, DataFrames read by
    position, the feature count seen at fit), labels against ``classifier.classes_``, prevalences and
    posteriors through the one probability check, ``random_state`` through
    :func:`capshift.validation.check_seed`. A validation set missing a class is refused by every method.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier
        The classifier h whose accuracy is predicted (classes ``0..n-1``; never refitted).
    measure : str or callable
        Default measure of :meth:`predict` (see :data:`capshift.tables.MEASURES`).
    random_state : int in 0..2**32-1 or None
        Seed for every random choice the method makes.
    """

    #: Measures the method can estimate; None means "any measure computable from the table".
    supported_measures: tuple | None = None
    #: False for methods that estimate measures directly (no contingency table): ``predict_table`` raises.
    estimates_tables: bool = True
    #: True for methods that need h's ``predict_proba``.
    needs_proba: bool = False
    #: True for methods whose tables are a function of (gamma, q-hat) only: the experiment runner then calls
    #: ``tables_from_prevalences`` with the predicted fractions and quantifier estimates it computed once.
    shared_prevalence_path: bool = False
    #: True for methods whose estimate of a sample is a function of h's posteriors on it and a quantifier's estimate
    #: of its prevalence (Q-COT): the experiment runner then calls ``measures_from_prevalences`` with the posteriors
    #: and the estimates of the quantifier it shares (fitted and applied once per run), instead of ``predict_measures``.
    shared_prevalence_estimates: bool = False
    #: How :meth:`predict_interval` calibrates (keyword arguments of
    #: :class:`capshift.conformal.ConformalInterval`). Here :data:`capshift.conformal.MC_INTERVALS`: Monte Carlo
    #: cross-conformal over 10 random halvings of V, 500 calibration samples, the union of absolute and
    #: studentised scores and the finite-evidence floor; the LEAP family overrides it with
    #: :data:`capshift.conformal.RATES_INTERVALS` (no refit; chosen in the uncertainty chapter), the CBPE family
    #: with :data:`capshift.conformal.CBPE_INTERVALS` (the same, with the method's own response as the rate term
    #: for two classes: 20 cheap refits on halves of V). Override per
    #: instance (``est.interval_params = {...}`` before the first ``predict_interval``).
    interval_params: dict = dict(MC_INTERVALS)
    #: Minimum validation evidence: the items of every class of V the method needs (declared per method; read
    #: through :meth:`evidence`, which methods whose need depends on a parameter override). Below it, ``fit``
    #: warns with :class:`capshift.InsufficientEvidenceWarning`, or raises ValueError when
    #: ``min_per_class_is_hard`` (the method cannot run at all).
    min_per_class: int = 1
    min_per_class_is_hard: bool = False
    #: Why the method needs ``min_per_class`` items of every class (quoted by the warning or error).
    evidence_reason: str = "every class must occur in V"
    #: What the method reads from h on V (checked by ``fit``; :class:`capshift.DegenerateClassifierWarning` when
    #: h is degenerate there): ``"decisions"`` (h must predict at least 2 classes on V) and/or ``"confidence"``
    #: (h's posteriors on V must not be one-hot everywhere, nor the same for every item). Read through
    #: :meth:`reads_from_h`. Methods that read neither (Naive, LEAP with a KDEy surrogate or the oracle, QuAcc,
    #: whose quantifier reads x) still work with a degenerate h.
    needs_from_h: tuple = ()

    def __init__(self, classifier, measure="accuracy", random_state=None):
        self.classifier = classifier
        self.measure = measure
        self.random_state = random_state

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X_val, y_val):
        """Fit on the validation set: ``X_val`` (m, d), ``y_val`` (m,) int in 0..n-1 with every class present.

        Returns self. Raises TypeError/ValueError for an invalid classifier, sample, labels, measure or
        ``random_state``, and for a validation set missing a class of h.
        """
        for attr in ("val_table_", "n_classes_", "interval_", "_val_data"):  # refitting: forget the previous fit
            self.__dict__.pop(attr, None)
        n = check_classifier(self.classifier, need_proba=self.needs_proba)
        check_seed(self.random_state, "random_state", allow_none=True)
        X_val = check_X(X_val, "X_val")
        y_val = check_labels(y_val, n, "y_val", n_items=X_val.shape[0])
        check_every_class(y_val, n, "y_val")
        self.n_features_in_ = X_val.shape[1]
        self.n_classes_ = n
        self._check_measure(self.measure)
        self.val_pred_ = predict_codes(self.classifier, X_val)
        self.val_table_ = contingency_table(y_val, self.val_pred_, n)
        minimum, why = self.evidence()
        check_class_evidence(y_val, n, minimum, type(self).__name__, why, hard=self.min_per_class_is_hard)
        self._check_degenerate(X_val)
        try:
            self._fit(X_val, y_val)
        except BaseException:
            self.__dict__.pop("val_table_", None)  # a failed fit leaves the estimator unfitted
            raise
        self._val_data = (X_val, y_val)  # kept for predict_interval's calibration (made on first use)
        return self

    def _fit(self, X_val, y_val):
        pass

    # -- declared needs -------------------------------------------------------------------------
    def evidence(self) -> tuple[int, str]:
        """``(minimum, reason)``: the validation items of every class the method needs, and why
        (:attr:`min_per_class`, :attr:`evidence_reason`; overridden where the need depends on a parameter)."""
        return int(self.min_per_class), self.evidence_reason

    def reads_from_h(self) -> tuple:
        """What the method reads from h on V: a subset of ("decisions", "confidence") (:attr:`needs_from_h`)."""
        return tuple(self.needs_from_h)

    def _check_degenerate(self, X_val):
        """Warn (DegenerateClassifierWarning) if h is degenerate on V in a way this method cannot work with."""
        needs, name = self.reads_from_h(), type(self).__name__
        works = ("Naive (the validation table: right without shift), LEAP/S-LEAP/O-LEAP with quantifier 'kdey' "
                 "or 'oracle', and QuAcc (their quantifiers read the covariates x) still work")
        if "decisions" in needs and np.unique(self.val_pred_).size < 2:
            warnings.warn(f"h predicts only class {int(self.val_pred_[0])} on V: {name} reads h's decisions, which "
                          f"then carry no information about the class, so its estimate cannot be trusted. It needs "
                          f"h to predict at least 2 classes on V; {works}", DegenerateClassifierWarning, stacklevel=3)
        if "confidence" in needs and hasattr(self.classifier, "predict_proba"):
            P = np.asarray(self.classifier.predict_proba(X_val), dtype=float)
            one_hot = bool(np.all(P.max(axis=1) >= 1 - 1e-9))
            if one_hot or bool(np.all(np.abs(P - P[0]).max(axis=0) <= 1e-9)):
                what = "one-hot on every item" if one_hot else "the same for every item"
                warnings.warn(f"h's posteriors on V are {what}: {name} reads h's confidence, which then carries no "
                              f"information beyond h's decision, so its estimate cannot be trusted. It needs "
                              f"posteriors that vary with the item and are not all one-hot (e.g. a calibrated "
                              f"probabilistic classifier); {works}", DegenerateClassifierWarning, stacklevel=3)

    # -- input checks ---------------------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, "val_table_")

    def _check_samples(self, samples, single=False):
        """Validated list of samples (each (m_i, d)); ``single``: one sample named ``X``."""
        self._check_fitted()
        return check_samples(samples, self.n_features_in_, single)

    def _check_prevalences(self, prevalences, k, single=False):
        if prevalences is None:
            return None
        name = "prevalence" if single else "prevalences"
        p = check_distribution(prevalences, name, n_classes=self.n_classes_)
        want = (self.n_classes_,) if single else (k, self.n_classes_)
        if p.shape != want:
            raise ValueError(f"{name} must have shape {want} (the true prevalence of each sample), got {p.shape}")
        return p.reshape(k, self.n_classes_)

    def _check_posteriors(self, posteriors, samples):
        if posteriors is None:
            return None
        posteriors = list(posteriors)
        if len(posteriors) != len(samples):
            raise ValueError(f"posteriors must hold one matrix per sample: got {len(posteriors)} for "
                             f"{len(samples)} samples")
        out = []
        for i, (X, P) in enumerate(zip(samples, posteriors)):
            P = check_posteriors(P, self.n_classes_, f"posteriors[{i}]")
            if P.shape[0] != X.shape[0]:
                raise ValueError(f"posteriors[{i}] has {P.shape[0]} rows but samples[{i}] has {X.shape[0]} items")
            out.append(P)
        return out

    def _check_measure(self, measure):
        get_measure(measure)
        if not self.supports(measure):
            if self.supported_measures is None:  # an estimator that decides by itself (e.g. a search's candidates)
                raise ValueError(f"{type(self).__name__} cannot estimate measure={measure!r} (its supports() says "
                                 "so): choose a measure it supports")
            raise ValueError(f"{type(self).__name__} only estimates {list(self.supported_measures)}, "
                             f"not measure={measure!r}")

    # -- prediction -----------------------------------------------------------------------------
    def predict(self, X, measure=None, prevalence=None) -> float:
        """Estimated value of ``measure`` (default: the constructor's) of h on the sample ``X`` (m, d), a float.

        ``prevalence`` (n,): the true prevalence, used by oracle variants only. Raises NotFittedError before
        ``fit``; ValueError/TypeError for an invalid sample, measure or prevalence.
        """
        measure = self.measure if measure is None else measure
        self._check_fitted()
        self._check_measure(measure)
        samples = self._check_samples(X, single=True)
        prev = self._check_prevalences(prevalence, 1, single=True)
        return float(self._measures(samples, [measure], prev, None)[measure][0])

    def predict_batch(self, samples, measure=None, prevalences=None, posteriors=None) -> np.ndarray:
        """Estimated ``measure`` for each of k samples, float (k,).

        ``prevalences`` (k, n): true prevalences, used by oracle variants only. ``posteriors``: optional list
        of h's posterior matrices, one (m_k, n) array per sample, precomputed by the caller (the experiment
        runner computes them once for the whole test pool); methods that work from posteriors use them
        instead of calling h again. Errors as :meth:`predict`.
        """
        measure = self.measure if measure is None else measure
        self._check_fitted()
        self._check_measure(measure)
        return self.predict_measures(samples, [measure], prevalences, posteriors)[measure]

    def predict_measures(self, samples, measures, prevalences=None, posteriors=None) -> dict:
        """Estimated values of several measures at once: ``{measure: float array (k,)}``.

        Measures the method does not support are left out (no entry), so a results table leaves those
        cells empty. Table methods estimate each sample's table once for all the measures. Arguments and
        errors as :meth:`predict_batch`.
        """
        self._check_fitted()
        measures = self._supported(measures)
        samples = self._check_samples(samples)
        prevalences = self._check_prevalences(prevalences, len(samples))
        posteriors = self._check_posteriors(posteriors, samples)
        if not measures:
            return {}
        return self._measures(samples, measures, prevalences, posteriors)

    def predict_table_batch(self, samples, prevalences=None) -> np.ndarray:
        """Estimated tables for a list of samples, shape (k, n, n) (rows true, columns predicted, each sums to 1).

        ``prevalences`` (k, n): true prevalences, needed only by oracle-quantifier methods. TypeError for
        methods that estimate measures directly (``estimates_tables = False``).
        """
        self._check_fitted()
        self._check_tables()
        samples = self._check_samples(samples)
        return self._predict_tables(samples, self._check_prevalences(prevalences, len(samples)), None)

    def predict_table(self, X, prevalence=None) -> np.ndarray:
        """Estimated (n, n) table of h on the sample ``X`` (rows true, columns predicted, sums to 1)."""
        self._check_fitted()
        self._check_tables()
        samples = self._check_samples(X, single=True)
        return self._predict_tables(samples, self._check_prevalences(prevalence, 1, single=True), None)[0]

    # -- prediction intervals -------------------------------------------------------------------
    def predict_interval(self, X, alpha: float = 0.05, measure=None, prevalence=None) -> tuple[float, float]:
        """A 1-α prediction interval ``(lower, upper)`` for the value of ``measure`` (default: the constructor's)
        of h on the sample ``X`` (m, d): :meth:`predict` ± a conformal quantile of the method's error.

        The interval comes from :class:`capshift.conformal.ConformalInterval` with :attr:`interval_params`:
        for the LEAP and CBPE families :data:`capshift.conformal.RATES_INTERVALS` (no refit: the method's
        errors on UPP samples of V of the size of ``X``, each plus the discrepancy of h's class-conditional
        rates between random halves of V at the sample's prevalence, scaled to V against a test pool as large;
        for the CBPE family and two classes, :data:`capshift.conformal.CBPE_INTERVALS`, the discrepancy of the
        method's own estimates, fitted on either half, instead of the measure's);
        for the other methods :data:`capshift.conformal.MC_INTERVALS` (the method refitted on random halves of
        V and evaluated on UPP samples of the other halves; the larger of the half-widths from absolute and from
        studentised residuals). Each side reaches at least as far as :func:`capshift.conformal.evidence_interval`,
        so that a classifier errorless on V still gets an interval; for the LEAP and CBPE families with Perks'
        prior, and for two classes so far as to contain that evidence interval. Calibrated on first use per
        sample size and measure and seeded by ``random_state`` (None: 0); clipped to [0, 1]. Beyond the LEAP paper, whose
        Sect. 5.10 bootstrap intervals under-cover (see the uncertainty chapter, which compares the
        constructions over 23 datasets with the Winkler score).

        Raises ValueError for ``alpha`` outside (0, 1), an unsupported measure or a bad sample;
        NotFittedError before ``fit``.
        """
        measure = self.measure if measure is None else measure
        self._check_fitted()
        samples = self._check_samples(X, single=True)
        prev = None if prevalence is None else [self._check_prevalences(prevalence, 1, single=True)[0]]
        return tuple(float(v) for v in self._intervals(samples, [measure], alpha, prev)[measure][0])

    def predict_estimate(self, X, alpha: float = 0.05, measure=None, posteriors=None) -> SampleEstimate:
        """The estimate of ``measure`` (default: the constructor's) of h on the sample ``X`` (m, d), its 1-α
        prediction interval and, for table methods, the estimated table, as one :class:`SampleEstimate`.

        Equal to :meth:`predict`, :meth:`predict_interval` and :meth:`predict_table` called in turn, but the
        sample's table (or value) is estimated once, not three times; what ``capshift estimate`` calls per
        batch. ``posteriors`` (m, n): h's posterior probabilities on ``X``, precomputed by the caller (methods
        that work from posteriors then do not call h again). Errors as :meth:`predict_interval`; ValueError for
        posteriors of the wrong shape.
        """
        measure = self.measure if measure is None else measure
        self._check_fitted()
        self._check_measure(measure)
        alpha = check_fraction(alpha, "alpha")
        samples = self._check_samples(X, single=True)
        post = self._check_posteriors(None if posteriors is None else [posteriors], samples)
        table = None
        if self.estimates_tables:
            tables = self._predict_tables(samples, None, post)
            table, point = tables[0], np.asarray(get_measure(measure)(tables), dtype=float)
        else:
            point = np.asarray(self._predict_values(samples, measure, None, post), dtype=float)
        lower, upper = self._bounds(samples, measure, alpha, point)[0]
        return SampleEstimate(float(point[0]), float(lower), float(upper), table)

    def predict_interval_batch(self, samples, alpha: float = 0.05, measure=None, prevalences=None) -> np.ndarray:
        """Intervals of :meth:`predict_interval` for k samples: float (k, 2), columns lower and upper.

        Raises ValueError for an empty list of samples and as :meth:`predict_interval`."""
        measure = self.measure if measure is None else measure
        return self.predict_interval_measures(samples, [measure], alpha, prevalences)[measure]

    def predict_interval_measures(self, samples, measures, alpha: float = 0.05, prevalences=None) -> dict:
        """Intervals for several measures at once: ``{measure: float array (k, 2)}`` (lower, upper), the same
        measures as :meth:`predict_measures` (unsupported ones left out). Errors as :meth:`predict_interval`."""
        self._check_fitted()
        measures = self._supported(measures)
        samples = self._check_samples(samples)
        prev = self._check_prevalences(prevalences, len(samples))
        return self._intervals(samples, measures, alpha, prev) if measures else {}

    def _intervals(self, samples, measures, alpha, prevalences) -> dict:
        alpha = check_fraction(alpha, "alpha")
        for m in measures:
            self._check_measure(m)
        point = self._measures(samples, measures, prevalences, None)
        return {m: self._bounds(samples, m, alpha, point[m]) for m in measures}

    def _bounds(self, samples, measure, alpha, point) -> np.ndarray:
        """Intervals (k, 2) around the point estimates ``point`` (k,) of validated samples; the conformal
        calibration is fitted on first use."""
        if getattr(self, "interval_", None) is None:
            seed = 0 if self.random_state is None else self.random_state
            self.interval_ = ConformalInterval(self, random_state=seed, **self.interval_params)
            self.interval_.fit(*self._val_data, point_estimator=self)
        return self.interval_.bounds(samples, point, measure, alpha)

    def _supported(self, measures) -> list:
        """``measures`` (one measure or a list) as a list, without those the method does not support."""
        if isinstance(measures, str) or callable(measures):
            measures = [measures]
        return [m for m in measures if self.supports(m)]

    def supports(self, measure) -> bool:
        """Whether the method can estimate ``measure`` (False for measure-only methods asked for others).

        Names and aliases are resolved (``"acc"`` is ``"accuracy"``); raises ValueError for an unknown name.
        """
        if self.supported_measures is None:
            get_measure(measure)
            return True
        f = get_measure(measure)
        return any(f is get_measure(m) for m in self.supported_measures)

    # -- hooks ----------------------------------------------------------------------------------
    def _measures(self, samples, measures, prevalences, posteriors) -> dict:
        if self.estimates_tables:
            tables = self._predict_tables(samples, prevalences, posteriors)
            return {m: np.asarray(get_measure(m)(tables), dtype=float) for m in measures}
        return {m: np.asarray(self._predict_values(samples, m, prevalences, posteriors), dtype=float)
                for m in measures}

    def _check_tables(self):
        if not self.estimates_tables:
            raise TypeError(f"{type(self).__name__} estimates measures directly, not contingency tables: use "
                            "predict or predict_batch")

    def _predict_tables(self, samples, prevalences, posteriors):
        raise NotImplementedError

    def _predict_values(self, samples, measure, prevalences, posteriors):
        raise NotImplementedError

    def _pred_prev(self, X) -> np.ndarray:
        """Fraction of ``X`` that h assigns to each class (gamma, LEAP Eq. 10), shape (n,)."""
        return np.bincount(predict_codes(self.classifier, X), minlength=self.n_classes_) / X.shape[0]

    def _pred_prevs(self, samples) -> np.ndarray:
        """:meth:`_pred_prev` of k samples, (k, n): one call of h on all their items (dense samples)."""
        if len(samples) < 2 or any(sp.issparse(X) for X in samples):
            return np.stack([self._pred_prev(X) for X in samples])
        sizes = np.array([X.shape[0] for X in samples])
        codes = predict_codes(self.classifier, np.concatenate(samples))
        which = np.repeat(np.arange(len(samples)), sizes)
        counts = np.bincount(which * self.n_classes_ + codes, minlength=len(samples) * self.n_classes_)
        return counts.reshape(len(samples), self.n_classes_) / sizes[:, None]
