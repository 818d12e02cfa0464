"""Quantifiers by name, through QuaPy, behind one small interface the CAP methods share.

A :class:`Quantifier` estimates the true class prevalence q of a sample (a vector on the
probability simplex, shape ``(n,)``). It splits the work as QuaPy's aggregative quantifiers do:
``classify(X)`` maps items to per-item predictions once, ``aggregate(P)`` turns the predictions of
one sample into a prevalence vector; the experiment runner classifies the whole test pool once and
aggregates per sample (KDEy-ML costs milliseconds per sample this way).

Names (LEAP 2025, Sects. 4.3-4.4; DS 2024, Sect. 5):

- ``"acc"``: adjusted classify and count (Forman 2008) on the *target* classifier's own
  validation predictions (LEAP_ACC), QuaPy's ``ACC`` with Bunse's (2022) constrained solver. QuaPy's ``ACC``
  is always what is fitted (its misclassification matrix on V); its per-sample inference runs either through
  QuaPy (``kdey_backend="quapy"``: SLSQP on finite differences at ``ftol=1e-6``, 0.15-0.7 s per sample at 26
  classes) or, by default, through :class:`capshift._acc.ACCEvaluator` (``kdey_backend="capshift"``: the same
  least-squares objective on the simplex minimised exactly by an active-set QP solve, :mod:`capshift._qp`).
  The two agree to SLSQP's tolerance. A singular matrix (a class h never predicts on V) has no unique
  minimiser: QuaPy's path is kept for it.
- ``"kdey"``: KDEy-ML (Moreo et al. 2025) on a surrogate scikit-learn ``MLPClassifier`` trained on
  V with 5-fold cross-validated posteriors, bandwidth 0.1 (as in the LEAP authors' code). QuaPy's
  ``KDEyML`` is always what is fitted; its per-sample inference runs either through QuaPy
  (``kdey_backend="quapy"``: scikit-learn ``KernelDensity.score_samples`` and SLSQP at ``ftol=1e-6``)
  or, by default, through :class:`capshift._kdey.KDEyEvaluator` (``kdey_backend="capshift"``: the same
  fitted densities evaluated by matrix products, the same objective minimised exactly by Newton's
  method; 10-100 times faster, see the efficiency chapter). The two agree to QuaPy's SLSQP tolerance,
  and the capshift path to 1e-6 with an exact solve of QuaPy's objective.
- ``"kdey-h"``: KDEy-ML on the *target* classifier's own posteriors on V (no surrogate, no
  cross-validation: h was trained on L, so its posteriors on V are already held out). The variant the
  LEAP authors' public code also offers; the paper's footnote 4 describes the surrogate (``"kdey"``).
  Same inference backends as ``"kdey"``.
- ``"cc"``: classify and count with the target classifier.
- ``"sld"``: SLD/EMQ (Saerens et al. 2002) on the target classifier's posteriors.
- ``"oracle"``: the true prevalence, which the caller passes in (upper-bound studies).
- any QuaPy ``AggregativeQuantifier`` instance (an unfitted one is fitted on V).
"""
from __future__ import annotations

import copy
import hashlib
import warnings

import numpy as np
import scipy.sparse as sp
from quapy.method.aggregative import ACC, CC, EMQ, AggregativeQuantifier, KDEyML
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from ._acc import ACCEvaluator, acc_supported
from ._kdey import KDEY_BACKENDS, KDEyEvaluator, check_kdey_backend
from .validation import (ATOL, InsufficientEvidenceWarning, check_class_evidence, check_classifier, check_distribution,
                          check_every_class, check_fitted, check_fraction, check_int, check_labels, check_seed, check_X)

__all__ = ["KDEY_BACKENDS", "QUANTIFIERS", "COVARIATE_QUANTIFIERS", "MAX_FIT_ITEMS", "MIN_FIT_PER_CLASS", "Quantifier",
           "SharedQuantifier", "digest", "make_quantifier", "fitted_quantifier", "check_prevalence",
           "resolve_quantifier"]

QUANTIFIERS = ("acc", "kdey", "kdey-h", "cc", "sld", "oracle")
#: The named quantifiers that read nothing of the classifier h: KDEy-ML on its surrogate MLP (trained on the
#: covariates) and the oracle. Fitted on the same V with the same seed, they give the same estimates whatever h is.
COVARIATE_QUANTIFIERS = ("kdey", "oracle")
#: Default :class:`Quantifier` ``max_fit_items``: the KDEy quantifiers' subsample of a large V.
MAX_FIT_ITEMS = 2000
#: Items per class a KDEy subsample keeps at least (it grows to ``MIN_FIT_PER_CLASS * n_classes`` when that is larger
#: than ``max_fit_items``): at 2,000 items letter's 26 classes keep 77 each, and the five-classifier study's AE of
#: the KDEy methods on letter rose by 0.01-0.02 for kNN, MLP, RF and SVM (LR, which the subsample's measurement
#: used, did not move); hand-digits at 200 per class rose by up to 0.004, satellite at 333 per class did not.
MIN_FIT_PER_CLASS = 400


def resolve_quantifier(quantifier, choices):
    """A quantifier given by name or instance: the lower-case name if it is one of ``choices``, or a
    deep copy of a QuaPy ``AggregativeQuantifier`` instance (so fitting never touches the caller's).

    Raises TypeError for other types and ValueError for unknown names, listing ``choices``.
    """
    if isinstance(quantifier, AggregativeQuantifier):
        return copy.deepcopy(quantifier)
    if not isinstance(quantifier, str):
        raise TypeError(f"quantifier must be one of {tuple(choices)} or a quapy AggregativeQuantifier instance, "
                        f"got {type(quantifier).__name__}")
    key = quantifier.lower()
    if key not in choices:
        raise ValueError(f"unknown quantifier {quantifier!r}; choose one of {tuple(choices)} or pass a quapy "
                         "AggregativeQuantifier instance")
    return key


def check_prevalence(prev, n_classes: int, name: str = "prevalence", atol: float = ATOL) -> np.ndarray:
    """Validate prevalence vector(s) of shape ``(..., n_classes)``: finite, >= 0, summing to 1.

    The one probability-vector check (:func:`capshift.validation.check_distribution`); returns float64,
    round-off below 0 clipped. TypeError for non-numeric input, ValueError naming ``name`` otherwise.
    """
    return check_distribution(prev, name, n_classes=n_classes, atol=atol)


class Quantifier:
    """A prevalence estimator fitted on the validation set V.

    Parameters
    ----------
    method : str or quapy AggregativeQuantifier
        One of :data:`QUANTIFIERS` or a QuaPy aggregative quantifier instance.
    classifier : fitted scikit-learn classifier
        The target classifier h (used by ``"acc"``, ``"cc"``, ``"sld"``; never refitted).
    random_state : int or None
        Seed of the surrogate MLP of ``"kdey"`` and of its cross-validation folds.
    bandwidth : float
        KDEy-ML kernel bandwidth (default 0.1).
    kdey_backend : {"capshift", "quapy"}
        The inference backend (named for KDEy, its first user) of a KDEy-ML quantifier (``"kdey"``, ``"kdey-h"``
        or a QuaPy ``KDEyML`` instance) and of an ACC quantifier (``"acc"`` or a QuaPy ``ACC`` instance with
        ``solver="minimize"``): ``"capshift"`` (default; for KDEy vectorised densities and an exact solve,
        :mod:`capshift._kdey`; for ACC an exact solve of QuaPy's constrained least squares, :mod:`capshift._acc`)
        or ``"quapy"`` (QuaPy's own ``aggregate``). Fitting is QuaPy's in both cases. Ignored by other methods.
    max_fit_items : int or None
        ``"kdey"`` and ``"kdey-h"`` are fitted on a stratified random subsample of at most this many items of V
        (default :data:`MAX_FIT_ITEMS`; None: all of V). Their cost grows with the items they fit: the
        surrogate MLP is trained 6 times (5 folds and a refit), and every prediction evaluates a kernel at each
        fitted item. The subsample holds at least :data:`MIN_FIT_PER_CLASS` items per class of V (it grows to
        ``MIN_FIT_PER_CLASS * n_classes`` items when that is larger); each class keeps its share of it, and at
        least ``min(count, 10)`` items. Chosen by
        measurement (benchmarks/quantifier_subsample.py): the AE of the LEAP methods with the subsample against all of
        V on the offline datasets larger than it. Other quantifiers read h's predictions on all of V (linear
        and cheap) and ignore it.
    """

    def __init__(self, method="kdey", classifier=None, random_state=None, bandwidth: float = 0.1,
                 kdey_backend: str = "capshift", max_fit_items=MAX_FIT_ITEMS):
        self.method = method
        self.classifier = classifier
        self.random_state = random_state
        self.bandwidth = bandwidth
        self.kdey_backend = kdey_backend
        self.max_fit_items = max_fit_items

    @property
    def name(self) -> str:
        return self.method if isinstance(self.method, str) else type(self.method).__name__

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_classes_")

    @property
    def min_per_class(self) -> int:
        """Validation items of every class this quantifier needs: the folds of its cross-validation (5 for
        ``"kdey"``, whose surrogate's posteriors are 5-fold stratified; a QuaPy instance's integer ``val_split``),
        else 1. Below it the stratified folds cannot all hold every class, and the class-conditional densities
        are built from posteriors of classifiers that never saw the class. The CAP methods check it in ``fit``
        (:class:`capshift.InsufficientEvidenceWarning`)."""
        if isinstance(self.method, str):
            return 5 if self.method.lower() == "kdey" else 1
        k = getattr(self.method, "val_split", None)
        return int(k) if isinstance(k, int) and not isinstance(k, bool) and getattr(self.method, "fit_classifier",
                                                                                   True) else 1

    @property
    def is_oracle(self) -> bool:
        return isinstance(self.method, str) and self.method.lower() == "oracle"

    def _build(self) -> AggregativeQuantifier | None:
        key = resolve_quantifier(self.method, QUANTIFIERS)
        check_seed(self.random_state, "random_state", allow_none=True)
        if not isinstance(key, str):
            return key
        m = self.method
        if key == "oracle":
            return None
        if key == "kdey":
            check_fraction(self.bandwidth, "bandwidth", 0.0, np.inf)
            mlp = MLPClassifier(random_state=self.random_state)
            return KDEyML(mlp, val_split=5, bandwidth=self.bandwidth, random_state=self.random_state)
        h = self.classifier
        if h is None:
            raise ValueError(f"quantifier {m!r} reuses the target classifier: pass classifier=")
        check_classifier(h)
        if key in ("sld", "kdey-h") and not hasattr(h, "predict_proba"):
            raise TypeError(f"quantifier {key!r} needs posterior probabilities, but {type(h).__name__} has no "
                            "predict_proba; use 'acc' or 'kdey', or a probabilistic classifier")
        if key == "cc":
            return CC(h, fit_classifier=False)
        if key == "kdey-h":
            check_fraction(self.bandwidth, "bandwidth", 0.0, np.inf)
            return KDEyML(h, fit_classifier=False, val_split=None, bandwidth=self.bandwidth,
                          random_state=self.random_state)
        return {"acc": ACC, "sld": EMQ}[key](h, fit_classifier=False, val_split=None)

    def fit(self, X_val, y_val, n_classes: int):
        """Fit on V: ``X_val`` (m, d), ``y_val`` (m,) int in 0..n_classes-1, every class present. Returns self.

        Raises ValueError/TypeError for invalid input (:mod:`capshift.validation`), an unknown method, a class
        absent from V, or a class with 1 item for a cross-validated quantifier ("kdey"); warns
        (:class:`capshift.InsufficientEvidenceWarning`) below :attr:`min_per_class`.
        """
        n_classes = check_int(n_classes, "n_classes", min_value=2)
        X_val = check_X(X_val, "X_val")
        y_val = check_labels(y_val, n_classes, "y_val", n_items=X_val.shape[0])
        check_every_class(y_val, n_classes, "y_val")
        self.__dict__.pop("n_classes_", None)  # refitting: unfitted until this fit succeeds
        backend = check_kdey_backend(self.kdey_backend)
        q_ = self._build()
        sub = self.fit_subsample(y_val)
        if sub is not None:
            X_val, y_val = X_val[sub], y_val[sub]
        if q_ is not None:
            need, who = self.min_per_class, f"quantifier {self.name!r}"
            if need > 1:  # with 1 item the class is missing from a training fold: no posterior for it at all
                check_class_evidence(y_val, n_classes, 2, who, "every training fold of its cross-validation needs "
                                     "every class", hard=True)
            check_class_evidence(y_val, n_classes, need, who,
                                 f"its classifier's posteriors on V are cross-validated in {need} stratified folds")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                # scikit-learn's "The least populated class in y has only k members" (stratified folds)
                # and "Number of classes in training fold ... does not match": both reported above
                warnings.filterwarnings("ignore", message=".*least populated class")
                warnings.filterwarnings("ignore", message=".*Number of classes in training fold")
                q_.fit(X_val, y_val)
            classes = np.asarray(q_.classes_)
            if classes.shape != (n_classes,) or np.any(classes != np.arange(n_classes)):
                raise ValueError(f"the quantifier's classes {classes.tolist()} are not 0..{n_classes - 1}: "
                                 "every class must occur in V and labels must be encoded 0..n-1")
        self.q_, self.n_features_in_, self.n_classes_ = q_, X_val.shape[1], n_classes
        return self.set_kdey_backend(backend)  # per fit: capshift caches KDEy centres, ACC factorisation

    def unfitted(self) -> "Quantifier":
        """An unfitted quantifier of the same kind and parameters (what a method refitted on part of V needs:
        a quantifier fitted on all of V would be evaluated on its own training items). Subclasses that share
        work between copies (:class:`SharedQuantifier`) return their own kind."""
        return Quantifier(self.method, classifier=self.classifier, random_state=self.random_state,
                          bandwidth=self.bandwidth, kdey_backend=self.kdey_backend, max_fit_items=self.max_fit_items)

    def fit_subsample(self, y_val) -> np.ndarray | None:
        """Indices (sorted) of the stratified subsample of V that a KDEy quantifier is fitted on, or None when it
        reads all of V (another quantifier, ``max_fit_items`` None, or V no larger than ``M = max(max_fit_items,
        MIN_FIT_PER_CLASS * n)`` for V's n classes). Per class ``max(min(n_c, 10), round(M * n_c / |V|))`` items
        drawn without replacement, seeded by ``random_state``."""
        y = np.asarray(y_val)
        if self.max_fit_items is None or not isinstance(self.method, str):
            return None
        m = check_int(self.max_fit_items, "max_fit_items", min_value=2)
        if self.method.lower() not in ("kdey", "kdey-h"):
            return None
        classes, counts = np.unique(y, return_counts=True)
        m = max(m, MIN_FIT_PER_CLASS * len(classes))
        if len(y) <= m:
            return None
        rng = np.random.default_rng([check_seed(self.random_state, "random_state", allow_none=True) or 0, 17])
        keep = [rng.choice(np.flatnonzero(y == c), max(min(k, 10), min(k, round(m * k / len(y)))), replace=False)
                for c, k in zip(classes, counts)]
        return np.sort(np.concatenate(keep))

    def set_kdey_backend(self, backend: str):
        """Switch a fitted KDEy-ML or ACC quantifier's inference to ``backend`` ("capshift" or "quapy") without
        refitting (the fitted QuaPy model is shared). Returns self. ValueError/TypeError for another name.

        ``fast_`` is then the capshift evaluator (:class:`capshift._kdey.KDEyEvaluator` for a Gaussian-kernel
        ``KDEyML``, :class:`capshift._acc.ACCEvaluator` for an ``ACC`` it supports,
        :func:`capshift._acc.acc_supported`), or None: QuaPy's ``aggregate`` (backend "quapy", other quantifiers,
        and the cases the evaluators do not reproduce exactly).
        """
        backend = check_kdey_backend(backend)
        self._check_fitted()
        self.kdey_backend = backend
        self.fast_ = None
        if backend == "capshift" and isinstance(self.q_, KDEyML) and self.q_.kernel == "gaussian":
            self.fast_ = KDEyEvaluator(self.q_)
        elif backend == "capshift" and acc_supported(self.q_):
            self.fast_ = ACCEvaluator(self.q_)
        return self

    def classify(self, X):
        """Per-item predictions the aggregation needs (QuaPy's ``classify``); None for the oracle."""
        self._check_fitted()
        if self.q_ is None:
            return None
        return self.q_.classify(check_X(X, "X", n_features=self.n_features_in_))

    def aggregate(self, predictions, prevalence=None) -> np.ndarray:
        """Prevalence estimate (n,) from one sample's predictions (or the oracle's ``prevalence``)."""
        self._check_fitted()
        if self.q_ is None:
            if prevalence is None:
                raise ValueError("the oracle quantifier needs the true prevalence: pass prevalence=")
            return check_prevalence(prevalence, self.n_classes_, "prevalence")
        if getattr(self, "fast_", None) is not None:
            return self._checked(self.fast_.aggregate(predictions))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._checked(self.q_.aggregate(predictions))

    def _checked(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if not (np.all(np.isfinite(q)) and q.sum() > 0):
            raise RuntimeError(f"the quantifier {self.name!r} returned an invalid prevalence {q}; check its input")
        return np.clip(q, 0.0, None) / np.clip(q, 0.0, None).sum()

    def quantify(self, X, prevalence=None) -> np.ndarray:
        """Prevalence estimate (n,) of the sample ``X`` (m, d)."""
        return self.aggregate(self.classify(X), prevalence)

    def quantify_batch(self, samples, prevalences=None) -> np.ndarray:
        """Prevalence estimates (k, n) of k samples (a list of (m_i, d) arrays), as :meth:`quantify` per sample.

        The surrogate classifier runs once on all the samples' items and, with the capshift KDEy backend,
        the densities of all items are evaluated in one vectorised pass (with the capshift ACC backend, the
        constrained least-squares problems of all samples are solved as one batch). ``prevalences`` (k, n): the
        true prevalences, for the oracle only.
        """
        self._check_fitted()
        if self.q_ is None:
            if prevalences is None:
                raise ValueError("the oracle quantifier needs the true prevalences: pass prevalences=")
            return np.stack([self.aggregate(None, p) for p in prevalences]) if len(prevalences) else \
                np.empty((0, self.n_classes_))
        if len(samples) == 0:
            return np.empty((0, self.n_classes_))
        X = [check_X(Xi, "X", n_features=self.n_features_in_) for Xi in samples]
        dense = not any(sp.issparse(Xi) for Xi in X)
        if dense:  # one classifier call for the whole batch
            P = self.q_.classify(np.concatenate(X))
            bounds = np.cumsum([0] + [len(Xi) for Xi in X])
            P = [P[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        else:
            P = [self.q_.classify(Xi) for Xi in X]
        if getattr(self, "fast_", None) is not None:
            return np.stack([self._checked(q) for q in self.fast_.aggregate_batch(P)])
        return np.stack([self.aggregate(Pi) for Pi in P])

    def _check_fitted(self):
        check_fitted(self, "n_classes_")


def make_quantifier(quantifier, classifier, random_state=None) -> Quantifier:
    """A :class:`Quantifier` from a name, a QuaPy instance, or an existing Quantifier (returned as is)."""
    if isinstance(quantifier, Quantifier):
        return quantifier
    return Quantifier(quantifier, classifier=classifier, random_state=random_state)


def fitted_quantifier(quantifier, classifier, random_state, X_val, y_val, n_classes: int) -> Quantifier:
    """The quantifier of a CAP method, fitted on V: :func:`make_quantifier` of ``quantifier`` (a name of
    :data:`QUANTIFIERS`, a QuaPy instance or a :class:`Quantifier`), fitted on ``X_val`` (m, d), ``y_val`` (m,) with
    ``n_classes`` classes, unless it is an already fitted Quantifier: one shared by the methods of a run (fitted once
    on the same V, :func:`capshift.evaluation.share_quantifiers`), returned as it is. The fit's
    :class:`capshift.InsufficientEvidenceWarning` is silenced (the method warns under its own name). Raises
    ValueError if a fitted quantifier has another number of classes, and as :meth:`Quantifier.fit`."""
    quant = make_quantifier(quantifier, classifier, random_state)
    if not quant.is_fitted:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsufficientEvidenceWarning)
            quant.fit(X_val, y_val, n_classes)
    elif quant.n_classes_ != n_classes:
        raise ValueError(f"the shared quantifier was fitted on {quant.n_classes_} classes, the classifier has "
                         f"{n_classes}")
    return quant


def digest(*parts) -> str:
    """A blake2b digest (hex) of arrays (dtype, shape and bytes), scipy sparse matrices (their canonical CSR form:
    shape, data, and indices and row pointers as int64, so that two matrices with equal entries have one digest
    whatever their index type) and other values (their repr)."""
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        if p is None:
            h.update(b"<none>")
        elif sp.issparse(p):
            m = sp.csr_array(p, copy=True)
            m.sum_duplicates()
            m.eliminate_zeros()
            m.sort_indices()
            h.update(f"<sparse {m.shape}>".encode())
            for a in (m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64)):
                h.update(str((a.dtype, a.shape)).encode())
                h.update(np.ascontiguousarray(a).tobytes())
        elif isinstance(p, np.ndarray):
            h.update(str((p.dtype, p.shape)).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()


class SharedQuantifier(Quantifier):
    """A :class:`capshift.quantifiers.Quantifier` (same parameters) whose fits and batch estimates are shared
    through ``cache`` (a dict) by every copy made with :meth:`unfitted`.

    ``fit`` on the same validation items (same bytes, labels, method, seed, bandwidth) reuses the fitted model;
    ``quantify_batch`` on the same samples returns the stored estimate. A quantifier that reads only the covariates
    (``"kdey"``; ``"oracle"``) gives the same numbers for every candidate, so the selector fits it once per
    validation set, and the conformal calibration of the candidates' intervals, which refits each candidate's
    method on the same random halves of V, fits it once per half. Results equal an unshared Quantifier's to the
    last bit. Dense samples only are memoised (sparse ones are quantified every time).
    """

    def __init__(self, method="kdey", classifier=None, random_state=None, bandwidth: float = 0.1,
                 kdey_backend: str = "capshift", max_fit_items=MAX_FIT_ITEMS, cache: dict | None = None):
        super().__init__(method, classifier=classifier, random_state=random_state, bandwidth=bandwidth,
                         kdey_backend=kdey_backend, max_fit_items=max_fit_items)
        self.cache = {} if cache is None else cache

    def unfitted(self) -> "SharedQuantifier":
        return SharedQuantifier(self.method, classifier=self.classifier, random_state=self.random_state,
                                bandwidth=self.bandwidth, kdey_backend=self.kdey_backend,
                                max_fit_items=self.max_fit_items, cache=self.cache)

    def _spec(self):
        return (self.name, self.random_state, self.bandwidth, self.kdey_backend, self.max_fit_items)

    def fit(self, X_val, y_val, n_classes: int):
        """As :meth:`capshift.quantifiers.Quantifier.fit`, fitted once per distinct (X_val, y_val, n_classes)."""
        X = check_X(X_val, "X_val")
        key = ("fit", self._spec(), digest(X, np.asarray(y_val), n_classes))
        if key not in self.cache:
            q = Quantifier(self.method, classifier=self.classifier, random_state=self.random_state,
                           bandwidth=self.bandwidth, kdey_backend=self.kdey_backend, max_fit_items=self.max_fit_items)
            self.cache[key] = q.fit(X_val, y_val, n_classes)
        fitted = self.cache[key]
        self.q_, self.n_features_in_, self.n_classes_ = fitted.q_, fitted.n_features_in_, fitted.n_classes_
        self.fast_ = getattr(fitted, "fast_", None)
        self._fit_key = key
        return self

    def quantify_batch(self, samples, prevalences=None) -> np.ndarray:
        """As :meth:`capshift.quantifiers.Quantifier.quantify_batch`, computed once per distinct batch."""
        self._check_fitted()
        if self.q_ is None or len(samples) == 0 or any(sp.issparse(X) for X in samples):
            return super().quantify_batch(samples, prevalences)
        X = [check_X(Xi, "X", n_features=self.n_features_in_) for Xi in samples]
        sizes = np.array([len(Xi) for Xi in X])
        key = ("q", self._fit_key, digest(sizes, np.concatenate(X)))
        if key not in self.cache:
            self.cache[key] = super().quantify_batch(X, prevalences)
        return self.cache[key].copy()
