"""The CAP baselines the LEAP family is compared against: Naive, ATC, DoC, DS, NN, CBPE, COT/Q-COT, RCA/RCA*.

Every class follows the :class:`capshift.base.CAPEstimator` API (constructor stores parameters,
``fit(X_val, y_val)``, ``predict``/``predict_batch``) and is registered by the LEAP paper's name in
:data:`capshift.registry.METHODS`, which the experiment runner reads:

- ``Naive``: V's table for every sample (IID assumption; LEAP 2025, Sect. 5.5).
- ``ATC``, ``ATC-NE``: average thresholded confidence, max-confidence and negative-entropy scores
  (Garg et al., ICLR 2022). Accuracy only.
- ``DoC``: difference of confidences, a regressor on validation samples (Guillory et al., ICCV 2021).
- ``DS``: dispersion score (Xie et al., NeurIPS 2023) and ``NN``: normalised nuclear norm of the
  posterior matrix (Deng et al., ICML 2023), each with a regressor from the score to the measure
  trained on validation samples (LEAP 2025, Sect. 5.5).
- ``CBPE``: confidence-based performance estimation (Kivimäki et al. 2025) on h's posteriors;
  ``SLD-CBPE``: the same after a PPS calibration, BCTS temperature scaling followed by the SLD/EMQ
  posterior adjustment (Alexandari et al. 2020; Saerens et al. 2002); ``L-CBPE``: the LEAP paper's, after the
  LasCal label-shift calibration (Popordanoska et al., NeurIPS 2024), see :class:`CBPE` for every variant (the
  calibrations themselves are in :mod:`capshift.calibration`).
- ``COT``: confidence optimal transport (Lu et al., NeurIPS 2023), and ``Q-COT``, the LEAP paper's
  PPS adaptation with a KDEy estimate of the test prevalence (LEAP 2025, Sect. 5.5). Accuracy only.
- ``RCA``, ``RCA*``: reverse classification accuracy and its regressor variant (Elsahar & Gallé,
  EMNLP 2019).

Conventions. h's decision on an item is the arg-max of its posteriors when the caller passes
posteriors (the runner does, so that h is applied once per test pool); for the scikit-learn
classifiers of :data:`capshift.experiment.CLASSIFIERS` other than the SVM this equals
``h.predict``. Posterior matrices are float arrays (m, n) whose rows sum to 1 (within 1e-6). Every
random choice (splits of V, validation samples) is seeded by ``random_state``.

Degenerate classifiers and minimum evidence (declared per class: ``needs_from_h``, ``min_per_class``; checked
by :meth:`capshift.base.CAPEstimator.fit`). If h predicts a single class on V, the methods that read h's
decisions (RCA, RCA*, DS on features) get a :class:`capshift.DegenerateClassifierWarning`; if h's posteriors on V
are one-hot everywhere (or the same for every item), so do the methods that read h's confidence (ATC, ATC-NE,
DoC, NN, CBPE, SLD-CBPE, L-CBPE, COT, Q-COT): their estimates then carry no information about the sample (ATC, CBPE
return 1.0 for a one-hot h). ``Naive`` reads neither and still works (right when there is no shift). DoC and
RCA* split V in two (stratified) and refuse a V with fewer than 2 items of a class; Q-COT's KDEy quantifier
needs 5 (warned below).
"""
from __future__ import annotations

import warnings

import numpy as np
import ot
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split
from . import protocols
from .validation import (CalibrationWarning, InsufficientEvidenceWarning, check_finite_array, check_int, check_labels,
                         check_posteriors, check_seed)
from .base import CAPEstimator
from .conformal import CBPE_INTERVALS
from .calibration import (BCTS, LASCAL_TEMPERATURES, RLLS, LasCalLoss, classwise_calibration_error,
                          lascal_calibration_error, lascal_temperature, mean_posterior, rlls_weights, sld_adjust,
                          temperature_scale)
from .quantifiers import Quantifier, check_prevalence, fitted_quantifier
from .tables import contingency_table, get_measure, true_prevalence

__all__ = ["Naive", "ATC", "DoC", "DS", "NN", "CBPE", "COT", "RCA", "RCAStar",
           "check_posteriors", "max_confidence", "negative_entropy", "atc_threshold", "dispersion_score",
           "nuclear_norm_score", "cbpe_table", "column_normalised", "cot_accuracy", "temperature_scale",
           "classwise_calibration_error", "lascal_calibration_error", "lascal_temperature", "rlls_weights",
           "LASCAL_TEMPERATURES"]
# check_posteriors (capshift.validation) and the calibration functions (capshift.calibration, where they live since
# issue 29) are re-exported here under their old address.

_ACC = ("accuracy",)


# ---------------------------------------------------------------------------------------------
# score functions
# ---------------------------------------------------------------------------------------------
def max_confidence(P) -> np.ndarray:
    """Max-confidence score of each item, ``max_k P[i, k]``: float (m,) in [1/n, 1].

    ``P``: posteriors (m, n), validated by :func:`check_posteriors`. ATC-MC's score (Garg et al. 2022,
    Sect. 3) and QuAcc's MC covariate (Volpi et al. 2025, "Adding Covariates").
    """
    return check_posteriors(P).max(axis=1)


def negative_entropy(P) -> np.ndarray:
    """Negative Shannon entropy (nats) of each row, ``sum_k P log P`` (0 log 0 = 0): float (m,) in [-log n, 0].

    ``P``: posteriors (m, n), validated by :func:`check_posteriors`. ATC-NE's score (Garg et al. 2022,
    Sect. 3) and QuAcc's NE covariate.
    """
    P = check_posteriors(P)
    return np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(axis=1)


def atc_threshold(scores, correct) -> float:
    """ATC threshold t: the fraction of items with ``score >= t`` equals the fraction of ``correct`` items.

    ``scores`` float (m,), ``correct`` bool (m,). With k correct items out of m, t is the (m-k+1)-th
    smallest score, so exactly k scores are >= t when the scores are distinct (ties at t can only
    add items); t = +inf when k = 0. Garg et al., ICLR 2022, Eq. 1 (the authors' code picks the
    same point by minimising |false positives - false negatives| along the sorted scores).
    """
    s = np.sort(check_finite_array(scores, "scores", ndim=1))
    correct = np.asarray(correct)
    if s.size == 0:
        raise ValueError("scores is empty: the threshold needs at least one validation item")
    if correct.shape != s.shape:
        raise ValueError(f"correct must have one entry per score: expected shape {s.shape}, got {correct.shape}")
    if correct.dtype.kind not in "biu":
        raise TypeError(f"correct must be booleans (h(x) == y per item), got dtype {correct.dtype}")
    k = int(np.count_nonzero(correct))
    if k == 0:
        return float("inf")
    return float(s[len(s) - k])


def dispersion_score(Z, y_pred, n_classes: int, floor: float = 1e-12) -> float:
    """Dispersion score of a sample (Xie et al., NeurIPS 2023, Eq. 3).

    ``S = log( sum_k m_k ||mu_k - mu||^2 / (n - 1) )`` with ``mu`` the mean of the feature rows ``Z``
    (m, d), ``mu_k`` the mean of the rows pseudo-labelled k by ``y_pred`` (m,) int in 0..n-1 and
    ``m_k`` their number (classes nobody is assigned to contribute 0). The sum is floored at
    ``floor`` before the log so that a sample assigned to one class only gets a finite score.
    ``Z`` may be sparse (densified). Returns a float (log of squared feature units). Raises ValueError
    if ``Z`` is not a finite 2-d array, ``y_pred`` not (m,) codes in 0..n-1 or ``n_classes`` < 2.
    """
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    Z = check_finite_array(Z.toarray() if hasattr(Z, "toarray") else Z, "Z", ndim=2)
    if Z.shape[0] < 1:
        raise ValueError("Z is empty: the dispersion score needs at least one item")
    y_pred = check_labels(y_pred, n_classes, "y_pred", n_items=Z.shape[0])
    mu = Z.mean(axis=0)
    counts = np.bincount(y_pred, minlength=n_classes)
    sums = np.zeros((n_classes, Z.shape[1]))
    np.add.at(sums, y_pred, Z)
    present = counts > 0
    mu_k = sums[present] / counts[present, None]
    between = float((counts[present] * ((mu_k - mu) ** 2).sum(axis=1)).sum())
    return float(np.log(max(between / (n_classes - 1), floor)))


def nuclear_norm_score(P) -> float:
    """Normalised nuclear norm of a posterior matrix P (m, n): ``||P||_* / sqrt(m * min(m, n))``, in (0, 1].

    Deng et al., ICML 2023, Eq. 4 (the normaliser is the largest nuclear norm a matrix with
    rows on the simplex can have: ``||P||_* <= sqrt(rank) ||P||_F <= sqrt(min(m, n) m)``, reached by
    one-hot rows spread evenly over the classes). Returns a float. Raises ValueError if ``P`` is not a
    posterior matrix (:func:`check_posteriors`).
    """
    P = check_posteriors(P, name="P")
    m, n = P.shape
    return float(np.linalg.svd(P, compute_uv=False).sum() / np.sqrt(m * min(m, n)))


def cbpe_table(P, y_pred, n_classes: int) -> np.ndarray:
    """CBPE contingency table (Kivimäki et al. 2025, Sect. 3): ``C[i, j] = (1/m) sum_{x: h(x)=j} P[x, i]``.

    Column j is the mean calibrated posterior of the items predicted as j, times the fraction
    ``m_j / m`` of the sample predicted as j, so the table sums to 1 and its column sums are h's
    predicted prevalence. ``P`` float (m, n) rows summing to 1, ``y_pred`` int (m,). Returns float
    (n, n), rows true, columns predicted (the LEAP authors' code normalises each column to 1
    instead, which turns the trace into the mean precision; not done here). Raises ValueError for a ``P``
    that is not a posterior matrix with ``n_classes`` columns or ``y_pred`` not (m,) codes.
    """
    P = check_posteriors(P, n_classes, "P")
    onehot = np.eye(n_classes)[check_labels(y_pred, n_classes, "y_pred", n_items=P.shape[0])]
    return P.T @ onehot / P.shape[0]


def column_normalised(C) -> np.ndarray:
    """The LEAP authors' CBPE table: each column of ``C`` scaled to sum to 1, then the whole to sum to 1.

    ``C`` float (..., n, n), rows true, columns predicted; returns float (..., n, n). A column j becomes the mean
    posterior of the items predicted as j (an estimate of the precision profile of class j), whatever the fraction
    of the sample predicted as j; empty columns stay 0; the result is divided by the number of non-empty columns so that it sums to 1 and
    :func:`capshift.tables.accuracy` reads it. Its trace is then the mean over the predicted classes of the
    estimated precision, not the accuracy (it equals the accuracy only when every class is predicted equally often).
    The authors' code does this (github.com/lorenzovolpi/LEAP, ``leap/models/cont_table.py``: column j is QuaPy's
    PCC of the items predicted as j) and reports measures from it; it reproduces the paper's L-CBPE columns (LEAP
    2025 Table 4, cmc.2 F1, 1000 samples: paper .372, this .373, the joint table .121;
    book/measured/leap_study_full_scale*.csv). Registered as ``L-CBPE-authors``; not an estimate of h's contingency
    table.
    """
    C = np.asarray(C, dtype=float)
    cols = C.sum(axis=-2, keepdims=True)
    Cn = np.divide(C, cols, out=np.zeros_like(C), where=cols > 0)
    used = (cols > 0).sum(axis=-1, keepdims=True)
    return Cn / np.maximum(used, 1)


def cot_accuracy(P, label_prev) -> float:
    """COT accuracy estimate (Lu et al., NeurIPS 2023, Sect. 3): one minus the optimal transport cost.

    Earth mover's distance between the empirical distribution of the posterior rows of ``P``
    (m, n; mass 1/m each) and the label distribution ``sum_k label_prev[k] * e_k`` (one-hot
    vectors), with cost ``||p - e_k||_inf = 1 - p_k`` (for p on the simplex, = ``||p - e_k||_1 / 2``);
    solved exactly with POT's ``ot.emd2``. ``label_prev`` (n,) sums to 1. Returns a float in [0, 1].
    Raises ValueError for a ``P`` that is not a posterior matrix or a ``label_prev`` that is not a
    distribution over its n columns (it is not renormalised).
    """
    P = check_posteriors(P, name="P")
    b = check_prevalence(label_prev, P.shape[1], "label_prev")
    if b.ndim != 1:
        raise ValueError(f"label_prev must be one distribution (n,), got shape {b.shape}")
    a = np.full(P.shape[0], 1.0 / P.shape[0])
    cost = float(ot.emd2(a, b, 1.0 - P))
    return float(np.clip(1.0 - cost, 0.0, 1.0))


# ---------------------------------------------------------------------------------------------
# shared machinery
# ---------------------------------------------------------------------------------------------
class _PosteriorBaseline(CAPEstimator):
    """Base of the baselines that work from h's posteriors; subclasses implement ``_values`` (a measure per
    sample, ``estimates_tables = False``) or ``_tables`` (a table per sample)."""

    needs_proba = True
    #: True for methods whose accuracy estimate is right only for calibrated posteriors (CBPE, COT): fit then
    #: checks the estimate on V itself and warns (CalibrationWarning) if it misses h's accuracy on V by more
    #: than twice the binomial standard deviation of an accuracy measured on |V| items.
    assumes_calibration = False

    def _fit(self, X_val, y_val):
        self.val_post_ = check_posteriors(self.classifier.predict_proba(X_val), self.n_classes_,
                                          "classifier.predict_proba(X_val)")
        self._fit_posteriors(X_val, np.asarray(y_val), self.val_post_)
        if self.assumes_calibration and getattr(self, "quantifier", None) != "oracle":  # oracle: needs test prevalences
            self._check_calibration(X_val)

    def _check_calibration(self, X_val):
        acc = float(np.trace(self.val_table_))
        if self.estimates_tables:
            est = float(np.trace(self._tables([X_val], [self.val_post_], None)[0]))
        else:
            est = float(self._values([X_val], [self.val_post_], "accuracy", None)[0])
        sd = np.sqrt(max(acc * (1 - acc), 1.0 / len(self.val_pred_)) / len(self.val_pred_))
        if abs(est - acc) > 2 * sd:
            warnings.warn(f"{type(self).__name__} assumes h's posteriors are calibrated, but on V itself it estimates "
                          f"h's accuracy at {est:.3f} where it is {acc:.3f} (more than 2 binomial sd = {2 * sd:.3f} "
                          "apart), so its estimates are biased; it needs posteriors calibrated on V's distribution "
                          "(recalibrate h, e.g. sklearn's CalibratedClassifierCV, or use a LEAP method)",
                          CalibrationWarning, stacklevel=4)

    def _fit_posteriors(self, X_val, y_val, P_val):
        pass

    def _sample_posteriors(self, samples, posteriors):
        """h's posteriors of each (validated) sample: the caller's (already validated) or computed here."""
        n = self.n_classes_
        for i, X in enumerate(samples):
            if X.shape[0] < n:
                raise ValueError(f"samples[{i}] has {X.shape[0]} items, fewer than the {n} classes: "
                                 f"{type(self).__name__} needs test samples of at least n_classes items "
                                 "(use larger samples)")
        if posteriors is not None:
            return posteriors
        return [check_posteriors(self.classifier.predict_proba(X), n, f"predict_proba(samples[{i}])")
                for i, X in enumerate(samples)]

    def _predict_tables(self, samples, prevalences, posteriors):
        return self._tables(samples, self._sample_posteriors(samples, posteriors), prevalences)

    def _predict_values(self, samples, measure, prevalences, posteriors):
        return self._values(samples, self._sample_posteriors(samples, posteriors), measure, prevalences)


class _RegressionBaseline(_PosteriorBaseline):
    """Regressor from a sample score to the measure, trained on UPP samples drawn from V (DoC, DS, NN, RCA*).

    Subclasses implement ``_score(X, P)`` (a float, or any array the ``_features`` hook turns into
    the regressor's feature) and may override ``_features``/``_target``/``_from_prediction``, each
    given the measure function f. With ``_split_v``, V is split in half (stratified, seeded): the
    reference half V1 (``ref_idx_``, h's table on it ``ref_table_``) and the pool the validation
    samples are drawn from (``pool_idx_``); otherwise both are the whole of V.

    Scores grow or shrink with the sample size, so the validation samples have the size of the test
    samples: with ``val_sample_size=None`` (default) they are drawn (with
    :func:`capshift.protocols.upp_indices`, seeded) the first time a test sample of a given size is seen,
    and their scores, tables and the regressor of each measure are cached per size (``val_scores_``,
    ``val_tables_``: dicts keyed by size; ``regressors_`` keyed by (size, measure)). An int
    ``val_sample_size`` fixes the size (drawn at fit); test samples of another size are then refused.

    ``regress``: "measure" (default) trains the regressor on the measure asked for; "accuracy" trains it on accuracy
    and returns that estimate whatever the measure, as the LEAP authors' code does for its table-free baselines
    (github.com/lorenzovolpi/LEAP, ``leap/models/direct.py``: the regressor is fitted on accuracy and its output
    reported under every measure). That is how the paper's F1 columns of DS and NN were computed (LEAP 2025 Tables
    4-5: DS on cmc.2, F1, 1000 samples: paper .316; ``"measure"`` gives .060, ``"accuracy"`` .316;
    book/measured/leap_study_full_scale*.csv). Registered as ``DS-authors`` and ``NN-authors``; not an estimate of
    F1.
    """

    estimates_tables = False
    _split_v = False  # True: keep half of V (stratified) as the reference set, draw samples from the rest

    def evidence(self) -> tuple[int, str]:
        if self._split_v:  # the stratified halving of V needs an item of every class in each half
            return 2, "it splits V in two halves stratified by class, each needing every class"
        return super().evidence()

    #: The accepted values of ``regress``.
    REGRESS = ("measure", "accuracy")

    def __init__(self, classifier, measure="accuracy", n_val_samples=100, val_sample_size=None, regressor=None,
                 clip=True, random_state=None, regress="measure"):
        super().__init__(classifier, measure, random_state)
        self.n_val_samples = n_val_samples
        self.val_sample_size = val_sample_size
        self.regressor = regressor
        self.clip = clip
        self.regress = regress

    def _fit_posteriors(self, X_val, y_val, P_val):
        if self.regress not in self.REGRESS:
            raise ValueError(f"regress must be one of {list(self.REGRESS)}, got {self.regress!r}")
        n = self.n_classes_
        check_int(self.n_val_samples, "n_val_samples", min_value=2)
        if self.val_sample_size is not None:
            check_int(self.val_sample_size, "val_sample_size", min_value=max(2, n))
        seed = check_seed(self.random_state, "random_state", allow_none=True)
        self.seed_ = int(np.random.randint(0, 2**31 - 1)) if seed is None else seed
        idx = np.arange(len(y_val))
        if self._split_v:  # at least 2 items of every class: checked by fit (evidence, min_per_class_is_hard)
            ref, pool = train_test_split(idx, test_size=0.5, stratify=y_val, random_state=self.seed_)
        else:
            ref, pool = idx, idx
        self.ref_idx_, self.pool_idx_ = ref, pool
        if self._split_v:
            self.ref_table_ = contingency_table(y_val[ref], P_val[ref].argmax(axis=1), n)
        self._fit_reference(X_val, y_val, P_val, ref)
        self.X_val_, self.y_val_ = X_val, y_val
        self.val_scores_, self.val_tables_, self.regressors_ = {}, {}, {}
        if self.val_sample_size is not None:
            self._validation_samples(int(self.val_sample_size))

    def _fit_reference(self, X_val, y_val, P_val, ref):
        pass

    def _validation_samples(self, size: int):
        """Scores and tables of the ``n_val_samples`` validation samples of ``size`` items (cached)."""
        if size not in self.val_scores_:
            n, pool = self.n_classes_, self.pool_idx_
            X, y, P = self.X_val_, self.y_val_, self.val_post_
            samples = protocols.upp_indices(y[pool], size, int(self.n_val_samples), self.seed_, n_classes=n)
            scores, tables = [], []
            for s in samples:
                rows = pool[s]
                scores.append(self._score(X[rows], P[rows]))
                tables.append(contingency_table(y[rows], P[rows].argmax(axis=1), n))
            self.val_scores_[size] = np.asarray(scores, dtype=float)
            self.val_tables_[size] = np.stack(tables)
        return self.val_scores_[size], self.val_tables_[size]

    def _regressor_for(self, size, f):
        if (size, f) not in self.regressors_:
            scores, tables = self._validation_samples(size)
            reg = clone(self.regressor) if self.regressor is not None else LinearRegression()
            self.regressors_[(size, f)] = reg.fit(self._features(scores, f), self._target(f(tables), f))
        return self.regressors_[(size, f)]

    def _features(self, scores, f):
        return np.asarray(scores, dtype=float).reshape(-1, 1)

    def _target(self, values, f):
        return values

    def _from_prediction(self, pred, f):
        return pred

    def _values(self, samples, post, measure, prevalences):
        f = get_measure("accuracy" if self.regress == "accuracy" else measure)
        sizes = np.array([X.shape[0] for X in samples])
        if self.val_sample_size is not None and np.any(sizes != self.val_sample_size):
            i = int(np.flatnonzero(sizes != self.val_sample_size)[0])
            raise ValueError(f"samples[{i}] has {sizes[i]} items but val_sample_size={self.val_sample_size}: the "
                             f"score of {type(self).__name__} depends on the sample size, so the regressor only "
                             "applies to samples of that size; leave val_sample_size=None to fit one per size")
        out = np.empty(len(samples))
        for size in np.unique(sizes):
            rows = np.flatnonzero(sizes == size)
            scores = np.array([self._score(samples[i], post[i]) for i in rows])
            out[rows] = self._from_prediction(self._regressor_for(int(size), f).predict(self._features(scores, f)), f)
        return np.clip(out, 0.0, 1.0) if self.clip else out


# ---------------------------------------------------------------------------------------------
# the baselines
# ---------------------------------------------------------------------------------------------
class Naive(CAPEstimator):
    """Predict V's contingency table for every test sample (IID assumption; LEAP 2025, Sect. 5.5).

    Parameters
    ----------
    classifier : fitted scikit-learn classifier over classes 0..n-1
    measure : str, default measure of ``predict``
    random_state : unused (kept for a uniform constructor)
    """

    shared_prevalence_path = True

    def _predict_tables(self, samples, prevalences, posteriors=None):
        return np.repeat(self.val_table_[None], len(samples), axis=0)

    def tables_from_prevalences(self, pred_prev, est_prev=None) -> np.ndarray:
        """V's table repeated for each of the k samples of ``pred_prev`` (k, n); shape (k, n, n)."""
        self._check_fitted()
        pred_prev = np.atleast_2d(check_prevalence(pred_prev, self.n_classes_, "pred_prev"))
        return np.repeat(self.val_table_[None], len(pred_prev), axis=0)


class ATC(_PosteriorBaseline):
    """Average Thresholded Confidence (Garg et al., ICLR 2022, Sect. 3, Eq. 1). Accuracy only.

    On V, learns the threshold t (:func:`atc_threshold`) such that the fraction of V whose score
    is >= t equals h's accuracy on V; the accuracy of h on a test sample is then the fraction of
    its items scoring >= t.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier with ``predict_proba`` (TypeError otherwise)
    score : {"maxconf", "neg_entropy"}
        :func:`max_confidence` (ATC-MC, the LEAP paper's choice) or :func:`negative_entropy` (ATC-NE).
    measure : must be "accuracy" (ValueError otherwise)
    random_state : unused (ATC is deterministic)

    Attributes: ``threshold_`` (float), ``val_post_`` (m, n).
    """

    supported_measures = _ACC
    estimates_tables = False
    needs_from_h = ("confidence",)
    _SCORES = {"maxconf": max_confidence, "neg_entropy": negative_entropy}

    def __init__(self, classifier, score="maxconf", measure="accuracy", random_state=None):
        super().__init__(classifier, measure, random_state)
        self.score = score

    def _score_fn(self):
        if self.score not in self._SCORES:
            raise ValueError(f"score must be one of {sorted(self._SCORES)}, got {self.score!r}")
        return self._SCORES[self.score]

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.threshold_ = atc_threshold(self._score_fn()(P_val), self.val_pred_ == y_val)

    def _values(self, samples, post, measure, prevalences):
        f = self._score_fn()
        return [float(np.mean(f(P) >= self.threshold_)) for P in post]


class DoC(_RegressionBaseline):
    """Difference of Confidences (Guillory et al., ICCV 2021, Sect. 3) with a regressor, as in the LEAP paper.

    V is split in half (stratified, seeded): the reference half V1 gives the average max-confidence
    ``C(V1)`` and the measure ``A(V1)``; ``n_val_samples`` UPP samples V_i of ``val_sample_size`` items
    are drawn from the other half. A regressor (default ``LinearRegression``, as in the LEAP/QuAcc
    authors' code) learns ``A(V1) - A(V_i)`` from ``C(V1) - C(V_i)``; a test sample U gets
    ``A(V1) - reg(C(V1) - C(U))``, clipped to [0, 1] (``clip``). Any measure computable from a
    contingency table can be asked for (one regressor per measure).

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    measure : default measure
    n_val_samples : int >= 2
        Number of validation samples (default 100, as the LEAP paper's code).
    val_sample_size : None or int
        Size of the validation samples: None (default) draws them at the size of each test sample seen
        (cached per size); an int fixes it and refuses test samples of another size.
    regressor : scikit-learn regressor or None (LinearRegression), cloned per measure
    clip : bool, clip predictions to [0, 1]
    random_state : int, seeds the split of V and the UPP samples
    """

    _split_v = True
    min_per_class_is_hard = True
    needs_from_h = ("confidence",)

    def _fit_reference(self, X_val, y_val, P_val, ref):
        self.ref_score_ = self._score(X_val[ref], P_val[ref])

    def _score(self, X, P):
        return float(max_confidence(P).mean())

    def _features(self, scores, f):
        return (self.ref_score_ - np.asarray(scores, dtype=float)).reshape(-1, 1)

    def _target(self, values, f):
        return float(f(self.ref_table_)) - values

    def _from_prediction(self, pred, f):
        return float(f(self.ref_table_)) - pred


class DS(_RegressionBaseline):
    """Dispersion Score (Xie et al., NeurIPS 2023) with a regressor trained on validation samples.

    The score of a sample is :func:`dispersion_score` of its items, pseudo-labelled by h. Xie et al.
    compute it on a network's penultimate features; a scikit-learn classifier has none, so
    ``space="features"`` (default) uses the input features X, the representation a linear
    classifier's decision is taken on, and ``space="posteriors"`` uses h's posterior vectors. A
    regressor (default LinearRegression; LEAP 2025, Sect. 5.5) maps the score of
    ``n_val_samples`` UPP samples of V (``val_sample_size`` items each) to the measure; the score
    grows with the sample size (it sums over items), so ``val_sample_size`` should equal the test
    sample size. Parameters as :class:`DoC` (including ``regress``), plus ``space``.
    """

    def __init__(self, classifier, measure="accuracy", space="features", n_val_samples=100, val_sample_size=None,
                 regressor=None, clip=True, random_state=None, regress="measure"):
        super().__init__(classifier, measure, n_val_samples, val_sample_size, regressor, clip, random_state, regress)
        self.space = space

    def reads_from_h(self) -> tuple:
        # the dispersion of the items h assigns to each class: h's decisions (and posteriors in that space)
        return ("decisions",) if self.space == "features" else ("decisions", "confidence")

    def _fit_posteriors(self, X_val, y_val, P_val):
        if self.space not in ("features", "posteriors"):
            raise ValueError(f"space must be 'features' or 'posteriors', got {self.space!r}")
        super()._fit_posteriors(X_val, y_val, P_val)

    def _score(self, X, P):
        return dispersion_score(X if self.space == "features" else P, P.argmax(axis=1), self.n_classes_)


class NN(_RegressionBaseline):
    """Nuclear Norm (Deng et al., ICML 2023) with a regressor trained on validation samples (LEAP 2025, Sect. 5.5).

    The score is :func:`nuclear_norm_score` of the sample's posterior matrix (normalised by
    ``sqrt(m min(m, n))`` as in Deng et al.); a regressor (default LinearRegression, the linear fit
    Deng et al. report) maps it to the measure. Parameters as :class:`DoC`.
    """

    needs_from_h = ("confidence",)

    def _score(self, X, P):
        return nuclear_norm_score(P)


class CBPE(_PosteriorBaseline):
    """Confidence-Based Performance Estimation (Kivimäki et al. 2025), optionally after a PPS calibration.

    The test table is :func:`cbpe_table` of the (calibrated) posteriors, grouped by h's decision
    (arg-max of h's raw posteriors); any measure is computed from it.

    ``calibration`` (each variant reads V's posteriors and labels at fit, and a test sample's posteriors only):

    ===============  ============  ==================================================================================
    calibration      registered    calibration of a test sample's posteriors
    ===============  ============  ==================================================================================
    ``None``         ``CBPE``      none: h's posteriors as they are (CBPE assumes them calibrated for the test data)
    ``"bcts"``       ``BCTS-CBPE``  BCTS fitted on V only (no adaptation to the sample's prior)
    ``"sld"``        ``SLD-CBPE-raw`` SLD/EM on h's raw posteriors, from their mean on V (no BCTS)
    ``"sld-bcts"``   ``SLD-CBPE``  BCTS fitted on V, then SLD/EM from the mean calibrated posterior on V (default)
    ``"lascal"``     ``L-CBPE``    LasCal: temperature fitted per sample on V and the sample (the LEAP paper's)
    ===============  ============  ==================================================================================

    - BCTS: Bias-Corrected Temperature Scaling fitted on V's posteriors and labels (Alexandari et al., ICML 2020;
      :class:`capshift.calibration.BCTS`, the ``abstention`` package's fit as QuaPy's ``EMQ(calib="bcts")`` calls
      it). SLD: the expectation-maximisation adjustment of the posteriors to the test sample's unknown prior
      (Saerens et al. 2002, Eqs. 2.9-2.10; :func:`capshift.calibration.sld_adjust`, QuaPy's ``EMQ.EM``), started
      from the mean (calibrated) posterior on V (Alexandari et al.'s setting, QuaPy's ``EMQ_BCTS``; QuaPy's ``EMQ``
      without calibration for ``"sld"``).
    - LasCal (Popordanoska et al., "LaSCal: Label-shift calibration without target labels", NeurIPS 2024), as
      the LEAP paper's L-CBPE (Volpi et al. 2025, Sect. 5.5) applies it: h's log-posteriors are the logits, and for
      each test sample U a temperature T is chosen that minimises a label-free, importance-weighted estimate of
      U's classwise calibration error; U's posteriors are then ``softmax(log P / T)`` (:func:`temperature_scale`;
      h's decisions unchanged). Under label shift (``p_U(x|y) = p_V(x|y)``), with ``w_k = p_U(k) / p_V(k)``,
      ``E_U[1[Y=k] | P_k(X) in b] = w_k p_V(Y=k, P_k(X) in b) / p_U(P_k(X) in b)``: V's labels, reweighted, give
      the numerator, U's posteriors the denominator (:func:`lascal_calibration_error`; consistent for the labelled
      target CE, :func:`classwise_calibration_error`). The weights are estimated by RLLS on h's hard decisions
      (:func:`rlls_weights`, the authors' default ``"rlls-hard"``); T by :func:`lascal_temperature`.
      Sources: the paper's abstract and method description (its equation numbers could not be checked here: the
      paper's body was not in the material available); the authors' code, github.com/tpopordanoska/
      label-shift-calibration at 2360080 (``Calibrator.lascal``, ``EceLabelShift``, ``get_importance_weights``),
      and the LEAP authors' call of it (github.com/lorenzovolpi/LEAP, ``leap/calibration/lascal.py``: defaults,
      log-posteriors as logits). Read, not copied: this is a numpy/scipy/cvxpy reimplementation with the same
      estimator and defaults (p = 2, 15 equal-mass bins per class, temperatures in [0.1, 20]); it differs in the
      temperature search (a log grid refined by Brent's method, where the authors take the best of 100 linearly
      spaced values, step 0.2) and in computing the RLLS weights once per sample (the authors recompute them for
      every temperature, from hard decisions that temperature scaling does not change: the same weights).
      Checked (issue 24): the estimate equals a line-by-line numpy transcription of the authors' loop (kept out
      of this repository) to 7e-15 on 200 random cases with ties and zeros; the weights equal abstention's
      ``RLLSImbalanceAdapter`` (the authors' "rlls-hard") to 1e-15 (a test); on synthetic data the temperature
      reaches a loss at or below the authors' grid's best, differing from theirs by about their grid step.

    Degenerate cases. For ``"lascal"``: a one-hot h (no temperature changes its posteriors) gets T = 1 and plain
    CBPE's table; a class absent from V is refused at fit (as for every method); a class absent from the sample
    or never predicted is handled by the estimator (RLLS weights >= 0, bins with fewer than 2 items add 0); if
    RLLS's solver fails, w = 1 (no shift) with a :class:`capshift.CalibrationWarning`. LasCal's estimate is the
    authors', not a guarantee: with 100-item samples its 15 bins hold about 7 target items each, and T is noisy
    and leans to sharpening (on IID samples of a calibrated LR, 3 Gaussian classes: quartiles of T 0.71, 0.87,
    1.06 at 100 items, 0.92, 0.97, 1.00 at 400), which biases L-CBPE's F1 upwards on small samples.

    Exact zeros (BCTS variants). BCTS rescales log-posteriors, and ``log 0`` is ``-inf``: before BCTS (on V and on
    every test sample), exact zeros are raised to ``floor_``, half the smallest positive posterior h gave on V times
    1, 1e-3, ..., 1e-12, whichever gives BCTS the smallest negative log-likelihood on V (see
    :class:`capshift.calibration.BCTS`); positive posteriors are not changed, so neither are the results on
    posteriors without zeros. Fallback: if BCTS cannot be fitted with any floor (abstention's L-BFGS-B stops
    abnormally, e.g. when h separates V and the temperature runs to 0, where ``exp`` overflows), ``bcts_`` is
    False and SLD adjusts h's own posteriors, started from their mean on V (QuaPy's ``on_calib_error="backup"``,
    made visible); ``"bcts"`` then returns h's posteriors. LasCal needs no floor: its temperature scaling keeps
    zeros at 0.

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    calibration : None, "bcts", "sld", "sld-bcts" or "lascal" (ValueError at fit otherwise)
    table : "joint" (default, :func:`cbpe_table`: sums to 1, trace = the estimated accuracy) or
        "column-normalised" (:func:`column_normalised`: the LEAP authors' table, ``L-CBPE-authors``; ValueError
        at fit otherwise)
    measure, random_state : as in :class:`capshift.base.CAPEstimator` (the method is deterministic)

    Attributes (BCTS variants and ``"sld"``): ``calibrator_`` (the fitted :class:`capshift.calibration.BCTS` of
    the BCTS variants, None otherwise), ``bcts_`` (bool, whether BCTS was fitted), ``floor_`` (float, the value of
    exact zeros before BCTS; None without BCTS), ``train_prevalence_`` (float (n,), SLD's starting prior: the mean
    calibrated posterior on V, :func:`capshift.calibration.mean_posterior`; QuaPy's ``EMQ.train_prevalence``; None
    for None and ``"lascal"``). ``"lascal"``: ``lascal_val_`` (V's posteriors and labels), ``lascal_checks_`` (the
    self-check per sample size, see below); :meth:`lascal` gives a sample's temperature and weights.

    LasCal's self-check (``"lascal"``): the temperature is fitted on each test sample, so the check at fit (on
    the whole of V) cannot see how reliable it is on small samples. The first time a sample size m <= |V|/2 is
    predicted, L-CBPE is run on 16 IID subsamples of m items of V (V's labels only; seeded) and a
    :class:`capshift.CalibrationWarning` says so if its mean AE on their accuracy exceeds twice the binomial sd.
    """

    needs_from_h = ("confidence",)
    assumes_calibration = True
    #: The accepted values of ``calibration`` (see the class docstring's table).
    CALIBRATIONS = (None, "bcts", "sld", "sld-bcts", "lascal")

    #: The accepted values of ``table``.
    TABLES = ("joint", "column-normalised")

    #: ``predict_interval``'s construction: the "rates" scheme with the method's own response as the rate term for
    #: two classes (see :data:`capshift.conformal.CBPE_INTERVALS`)
    interval_params = dict(CBPE_INTERVALS)

    def __init__(self, classifier, calibration="sld-bcts", measure="accuracy", random_state=None, table="joint"):
        super().__init__(classifier, measure, random_state)
        self.calibration = calibration
        self.table = table

    def _fit_posteriors(self, X_val, y_val, P_val):
        if self.table not in self.TABLES:
            raise ValueError(f"table must be one of {list(self.TABLES)}, got {self.table!r}")
        if not (self.calibration is None or (isinstance(self.calibration, str) and self.calibration in self.CALIBRATIONS)):
            raise ValueError(f"calibration must be one of {list(self.CALIBRATIONS)}, got {self.calibration!r}")
        self.calibrator_, self.train_prevalence_, self.bcts_, self.floor_ = None, None, False, None
        self.lascal_val_, self._rlls, self._lascal_loss = None, None, None
        if self.calibration in ("sld-bcts", "bcts"):
            self.calibrator_ = BCTS().fit(P_val, y_val)
            self.bcts_, self.floor_ = self.calibrator_.bcts_, self.calibrator_.floor_
            self.train_prevalence_ = self.calibrator_.prior_
        elif self.calibration == "sld":
            self.train_prevalence_ = mean_posterior(P_val)
        elif self.calibration == "lascal":
            self.lascal_val_, self.lascal_checks_ = (P_val, y_val), {}
            self._rlls = RLLS(P_val, y_val, self.n_classes_)

    def lascal(self, P) -> tuple[float, np.ndarray]:
        """LasCal's ``(T, w)`` for one test sample's posteriors ``P`` (m, n): the temperature (float > 0) and the
        RLLS importance weights (float (n,), >= 0) it used (``calibration="lascal"`` only; see the class docstring).

        Reads V's posteriors and labels and ``P``, nothing else. Raises NotFittedError before ``fit``, ValueError
        for another calibration or a ``P`` that is not a posterior matrix with ``n_classes_`` columns.
        """
        self._check_fitted()
        if self.calibration != "lascal":
            raise ValueError(f"lascal() needs calibration='lascal', this CBPE has calibration={self.calibration!r}")
        T, W = self._lascal_many([check_posteriors(P, self.n_classes_, "P")])
        return float(T[0]), W[0]

    def _lascal_many(self, post) -> tuple[np.ndarray, list]:
        """LasCal's temperatures (float (k,)) and RLLS weights (k arrays (n,)) of k validated posterior matrices;
        the samples of one size are searched together (:meth:`capshift.calibration.LasCalLoss.temperatures`)."""
        if getattr(self, "_rlls", None) is None:  # unpickled, or fitted before the attribute existed
            self._rlls = RLLS(*self.lascal_val_, self.n_classes_)
        W = []
        for P in post:
            w, solved = self._rlls.weights(P)
            if not solved:
                warnings.warn("L-CBPE: RLLS could not solve for the label-shift weights of this sample; LasCal uses "
                              "w = 1 (no shift)", CalibrationWarning, stacklevel=3)
            W.append(w)
        if getattr(self, "_lascal_loss", None) is None:  # V's side of the loss, shared by the samples
            self._lascal_loss = LasCalLoss(*self.lascal_val_, 15, 2, LASCAL_TEMPERATURES)
        T = np.empty(len(post))
        sizes = np.array([P.shape[0] for P in post])
        for m in np.unique(sizes):
            same = np.flatnonzero(sizes == m)
            stack = np.stack([post[i] for i in same])
            T[same] = self._lascal_loss.temperatures(stack, np.stack([W[i] for i in same]))[0]
        return T, W

    def calibrate(self, P) -> np.ndarray:
        """PPS-calibrated posteriors, float (m, n) with rows summing to 1, of one test sample's posteriors ``P`` (m, n).

        By ``calibration``: ``P`` itself (validated) for None; BCTS (exact zeros of ``P`` raised to ``floor_``
        first) for ``"bcts"``; SLD/EMQ (Saerens et al. 2002, Eqs. 2.9-2.10) for ``"sld"``; BCTS then SLD/EMQ for
        ``"sld-bcts"``; ``temperature_scale(P, T)`` with LasCal's T for ``"lascal"``. Raises
        NotFittedError before ``fit``, ValueError for ``P`` that is not a posterior matrix with
        ``n_classes_`` columns (:func:`check_posteriors`) or whose BCTS map is not finite (exp overflow).
        """
        self._check_fitted()
        P = check_posteriors(P, self.n_classes_, "P")
        if self.calibration == "lascal":
            return temperature_scale(P, self.lascal(P)[0])
        if self.calibration is None:
            return P
        if self.calibrator_ is not None:  # BCTS (h's posteriors as they are if it could not be fitted)
            try:
                P = self.calibrator_.calibrate(P)
            except ValueError as e:  # P is valid: the BCTS map overflowed
                raise ValueError(f"{e}; use calibration=None for this classifier") from None
        if self.calibration == "bcts":
            return P / P.sum(axis=1, keepdims=True)
        return sld_adjust(P, self.train_prevalence_)

    def _tables(self, samples, post, prevalences):
        if self.calibration == "lascal":
            for m in sorted({P.shape[0] for P in post}):
                self._lascal_self_check(m)
            post = [check_posteriors(P, self.n_classes_, "P") for P in post]
            T, _ = self._lascal_many(post)
            calibrated = [temperature_scale(P, t) for P, t in zip(post, T)]
        else:
            calibrated = [self.calibrate(P) for P in post]
        tables = np.stack([cbpe_table(Q, P.argmax(axis=1), self.n_classes_) for Q, P in zip(calibrated, post)])
        return tables if self.table == "joint" else column_normalised(tables)

    #: LasCal's self-check: number of IID subsamples of V per sample size.
    _LASCAL_CHECKS = 16

    def _lascal_self_check(self, m):
        """Warn (CalibrationWarning) if LasCal, fitted on m items, misses h's accuracy on IID samples of V.

        LasCal fits its temperature on the test sample itself, so its reliability depends on the sample size m
        (the check at fit, on the whole of V, cannot see it). The first time a size m <= |V|/2 is seen, L-CBPE
        estimates h's accuracy on 16 IID subsamples of m items of V (seeded; V's labels only), as it would on a
        test sample; if its mean absolute error exceeds twice the binomial sd of an accuracy on m items, the
        estimates on samples of that size are noise (e.g. an overconfident Gaussian naive Bayes at m = 100).
        Results are cached in ``lascal_checks_`` ({m: mean AE on V's subsamples}).
        """
        checks = self.__dict__.setdefault("lascal_checks_", {})
        P_val, y_val = self.lascal_val_
        if m in checks or m > len(y_val) // 2:
            return
        seed = check_seed(self.random_state, "random_state", allow_none=True)
        rng = np.random.default_rng([0 if seed is None else seed, m])
        pred, acc = P_val.argmax(axis=1), np.mean(P_val.argmax(axis=1) == y_val)
        draws = [rng.choice(len(y_val), m, replace=False) for _ in range(self._LASCAL_CHECKS)]
        T, _ = self._lascal_many([P_val[idx] for idx in draws])
        errors = [abs(np.trace(cbpe_table(temperature_scale(P_val[idx], t), pred[idx], self.n_classes_))
                      - np.mean(pred[idx] == y_val[idx])) for idx, t in zip(draws, T)]
        checks[m] = float(np.mean(errors))
        sd = np.sqrt(max(acc * (1 - acc), 1.0 / m) / m)
        if checks[m] > 2 * sd:
            warnings.warn(f"L-CBPE: LasCal fits its temperature on each test sample, and with samples of {m} items it "
                          f"is unreliable for this classifier: on {self._LASCAL_CHECKS} IID samples of {m} items from V "
                          f"its accuracy estimates miss by {checks[m]:.3f} on average (more than 2 binomial sd = "
                          f"{2 * sd:.3f}); it needs larger samples (at least the size where this check passes) or "
                          "posteriors closer to calibrated (recalibrate h, or use SLD-CBPE or a LEAP method)",
                          CalibrationWarning, stacklevel=5)


class COT(_PosteriorBaseline):
    """Confidence Optimal Transport (Lu et al., NeurIPS 2023) and the LEAP paper's Q-COT. Accuracy only.

    The accuracy of h on a sample is :func:`cot_accuracy` of its posteriors against a label
    distribution: V's class prevalence for ``quantifier=None`` (COT, which assumes the test labels
    distributed as the source's), a quantifier's estimate of the test prevalence otherwise
    (Q-COT, LEAP 2025, Sect. 5.5: ``"kdey"``, KDEy-ML on a surrogate MLP, see
    :class:`capshift.quantifiers.Quantifier`; ``"oracle"`` uses the true prevalences passed to
    ``predict_batch``, for tests and upper bounds; ValueError without them). The LEAP authors build the target by resampling
    labels with the estimated prevalence; transporting to the weighted one-hot distribution
    directly is the noise-free limit of that resampling. The samples of a batch are quantified together
    (:meth:`capshift.quantifiers.Quantifier.quantify_batch`); the experiment runner passes the estimates of the
    quantifier it shares instead (:meth:`measures_from_prevalences`).

    Parameters
    ----------
    classifier : fitted classifier with ``predict_proba``
    quantifier : None, "kdey", "oracle" or any name/instance :class:`capshift.quantifiers.Quantifier` accepts, or a
        Quantifier (a fitted one is used as it is, e.g. shared by the methods of a run)
    measure : must be "accuracy"
    random_state : seeds the quantifier
    """

    supported_measures = _ACC
    estimates_tables = False
    needs_from_h = ("confidence",)
    assumes_calibration = True
    shared_prevalence_estimates = True

    def __init__(self, classifier, quantifier="kdey", measure="accuracy", random_state=None):
        super().__init__(classifier, measure, random_state)
        self.quantifier = quantifier

    def evidence(self) -> tuple[int, str]:
        q = self.quantifier
        if q is not None and not isinstance(q, Quantifier):
            q = Quantifier(q)
        need = 1 if q is None or q.is_fitted else q.min_per_class
        if need <= 1:
            return super().evidence()
        return need, f"its quantifier's posteriors on V are cross-validated in {need} stratified folds"

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.val_prev_ = true_prevalence(self.val_table_)
        self.quantifier_ = None
        if self.quantifier is not None:  # fit() warned under the method's name
            self.quantifier_ = fitted_quantifier(self.quantifier, self.classifier, self.random_state, X_val, y_val,
                                                 self.n_classes_)

    def _values(self, samples, post, measure, prevalences):
        if self.quantifier_ is None:
            return [cot_accuracy(P, self.val_prev_) for P in post]
        return [cot_accuracy(P, q) for P, q in zip(post, self.quantifier_.quantify_batch(samples, prevalences))]

    def measures_from_prevalences(self, posteriors, est_prev, measures=None) -> dict:
        """Estimates from precomputed prevalence estimates: ``{measure: float array (k,)}``, as
        :meth:`predict_measures` with this method's quantifier returning ``est_prev``.

        ``posteriors``: h's posteriors on k samples, a list of (m_i, n) arrays, m_i >= n; ``est_prev`` float (k, n):
        a quantifier's prevalence estimate of each sample (the experiment runner's shared quantifier, fitted as this
        method's own would be, so that its estimates are computed once per run). ``measures``: one measure or a
        list (default the constructor's); unsupported ones are left out. Raises NotFittedError before ``fit``,
        ValueError without a quantifier (``quantifier=None``), for posteriors or estimates of the wrong shape, not
        distributions, or samples smaller than n.
        """
        self._check_fitted()
        if self.quantifier_ is None:
            raise ValueError("COT with quantifier=None transports to V's prevalence and reads no prevalence estimates; "
                             "use predict_measures")
        measures = self._supported(self.measure if measures is None else measures)
        n = self.n_classes_
        post = [check_posteriors(P, n, f"posteriors[{i}]") for i, P in enumerate(posteriors)]
        est_prev = check_prevalence(est_prev, n, "est_prev")
        if est_prev.shape != (len(post), n):
            raise ValueError(f"est_prev must have shape {(len(post), n)} (one estimate per sample), got "
                             f"{est_prev.shape}")
        post = self._sample_posteriors(post, post)  # refuses samples smaller than n
        values = np.array([cot_accuracy(P, q) for P, q in zip(post, est_prev)], dtype=float)
        return {m: values.copy() for m in measures}


def _reverse_table(h, X, y_pseudo, X_eval, y_eval, n_classes):
    """Table (n, n) on (X_eval, y_eval) of a clone h' of h trained on (X, y_pseudo) (RCA's reverse testing).

    h' is the constant classifier of the majority pseudo-label if y_pseudo holds one class only or
    the learner cannot be trained on it (e.g. kNN with more neighbours than items).
    """
    counts = np.bincount(y_pseudo, minlength=n_classes)
    pred = None
    if np.count_nonzero(counts) > 1:
        try:
            pred = np.asarray(clone(h).fit(X, y_pseudo).predict(X_eval))  # fitted on class codes: predicts codes
        except ValueError:
            pass
    if pred is None:
        pred = np.full(len(y_eval), counts.argmax())
    return contingency_table(y_eval, pred, n_classes)


class RCA(_PosteriorBaseline):
    """Reverse Classification Accuracy (Elsahar & Gallé, EMNLP 2019, Sect. 3): the reverse-testing table.

    For a test sample U, a clone h' of h (same hyper-parameters) is trained on U with h's
    decisions as (pseudo-)labels and applied to V; the contingency table of h' on V stands for the
    table of h on U (any measure can be read off it). h' is retrained for every test sample, so RCA
    is far slower than the other baselines. If h assigns the whole sample to one class, h' is
    the constant classifier of that class. The regressor variant is :class:`RCAStar`.

    Parameters: ``classifier`` (fitted, with ``predict_proba``), ``measure``, ``random_state`` (unused:
    h' is cloned with h's own parameters, including its seed).
    """

    needs_from_h = ("decisions",)

    def _fit_posteriors(self, X_val, y_val, P_val):
        self.X_val_, self.y_val_ = X_val, y_val

    def _tables(self, samples, post, prevalences):
        return np.stack([_reverse_table(self.classifier, X, P.argmax(axis=1), self.X_val_, self.y_val_,
                                        self.n_classes_) for X, P in zip(samples, post)])


class RCAStar(_RegressionBaseline):
    """RCA* (Elsahar & Gallé, EMNLP 2019, Sect. 3; QuAcc 2025, Related Work): the RCA score through a regressor.

    V is split in half (stratified, seeded) into an evaluation half V1 and a pool V2 of UPP
    validation samples V_i. The RCA score of a sample S is the drop ``A(h, V1) - A(h'_S, V1)`` of the
    measure when h is replaced by the clone h'_S trained on S with h's pseudo-labels (the part of
    the drop due to the back-and-forth training alone, common to all samples, is absorbed by the
    regressor's intercept); a regressor (default LinearRegression) learns ``A(h, V_i)`` from the
    RCA score of V_i and is applied to the score of U. Parameters as :class:`DoC`. Every sample
    (validation and test) trains one h'.
    """

    _split_v = True
    min_per_class_is_hard = True
    needs_from_h = ("decisions",)

    def _fit_reference(self, X_val, y_val, P_val, ref):
        self.X_ref_, self.y_ref_ = X_val[ref], y_val[ref]

    def _score(self, X, P):
        # the score is a table (h' on V1, so val_scores_ is (k, n, n)); the feature is read off it per measure
        return _reverse_table(self.classifier, X, P.argmax(axis=1), self.X_ref_, self.y_ref_, self.n_classes_)

    def _features(self, scores, f):
        return (float(f(self.ref_table_)) - f(np.asarray(scores, dtype=float))).reshape(-1, 1)
