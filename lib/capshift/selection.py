"""Transductive model selection (TMS): per unlabelled test sample, the candidate classifier a CAP method predicts
to be the most accurate there.

Source: Volpi, Moreo & Sebastiani, "Transductive Model Selection under Prior Probability Shift" (arXiv 2507.22647,
2025; the protocol and candidate grid as in the authors' public code, lorenzovolpi/Transductive_Model_Selection,
``src/config.py`` and ``src/results.py``, read, not copied). Under prior probability shift, the classifier (family
and hyperparameters) that is best on the labelled validation set V need not be best on the unlabelled sample U it
will be applied to. TMS fits a CAP method (O-LEAP_KDEy in the paper) for every candidate on V and selects, for each
test sample, the candidate with the highest *predicted* measure; inductive model selection (IMS) selects by the
measure on V, the same candidate for every sample.

This module holds

- :class:`TransductiveSelector`: the estimator (scikit-learn style). Fitted candidates in; ``fit(X_val, y_val)``
  with a registered CAP method (:mod:`capshift.registry`) and a measure; ``predict`` / ``predict_batch`` give the
  selected candidate's index, ``predict_measures`` / ``predict_measures_batch`` every candidate's predicted
  measure, ``predict_interval`` / ``predict_interval_batch`` their intervals (the estimators' own
  ``predict_interval``), :meth:`TransductiveSelector.select` all at once. ``criterion="lower"`` selects by the
  lower end of the intervals (a cautious selector, beyond the paper).
- :class:`SharedQuantifier`: a :class:`capshift.quantifiers.Quantifier` whose fits and estimates are shared by
  every candidate (the quantifier of O-LEAP_KDEy reads the covariates x, not the candidate): one KDEy fit per
  validation set, one estimate per batch of samples, also inside the conformal calibration of the intervals.
- :func:`candidate_grid`: the paper's candidates (LR, kNN, RBF SVM, MLP; about 110 for a binary problem).
- :func:`candidate_table`, :func:`selections`, :func:`selection_summary`, :func:`regret_table`,
  :func:`shift_bins`, :func:`verdicts`, :func:`shift_selection`: the study of the chapter ``model_selection``
  (one dataset x one family per resumable cell: :func:`capshift.grid.run_selection_study`).

The transductive SVM of the paper (SVMlight, an external binary) is not among the candidates.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from . import datasets, evaluation, protocols, registry
from .validation import (check_classifier, check_fitted, check_fraction, check_int, check_labels, check_seed,
                          check_samples, check_X, predict_codes)
from .quantifiers import SharedQuantifier
from .significance import compare_groups, significance
from .tables import contingency_table, get_measure

__all__ = ["FAMILIES", "CRITERIA", "GRID_SIZES", "Candidate", "class_weightings", "candidate_grid", "SharedQuantifier",
           "Selection", "TransductiveSelector", "check_families", "STUDY_METHODS", "STUDY_INTERVALS", "candidate_table", "SELECTORS", "selections", "selection_summary",
           "regret_table", "shift_bins", "verdicts", "shift_selection", "study_cell"]

#: Candidate families of the paper, in its order.
FAMILIES = ("lr", "knn", "svm", "mlp")
#: Selection criteria of :class:`TransductiveSelector`: the point prediction, or the interval's lower end.
CRITERIA = ("point", "lower")
#: Quantifiers that read only the covariates x: one fit serves every candidate.
_X_ONLY = ("kdey", "oracle")


# --------------------------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    """One candidate: ``family`` (a name of :data:`FAMILIES`), ``name`` (family and hyperparameters, unique in a
    grid), ``params`` (the hyperparameters set on the family's base estimator), ``default`` (True for the
    family's scikit-learn defaults) and ``estimator`` (unfitted)."""

    family: str
    name: str
    params: dict = field(hash=False)
    default: bool
    estimator: object = field(hash=False, repr=False)


def class_weightings(n_classes: int) -> list:
    """The class weightings of the paper's grid: binary ``{0: p, 1: 1-p}`` for p in .2, .4, .6, .8; multiclass one
    class boosted to weight 2/n, the others sharing the rest; then None and "balanced" (``n + 2`` for n > 2).
    Raises ValueError for n_classes < 2."""
    n = check_int(n_classes, "n_classes", min_value=2)
    if n == 2:
        out = [{0: p, 1: round(1 - p, 2)} for p in (0.2, 0.4, 0.6, 0.8)]
    else:
        x = 2.0 / n
        y = (1.0 - x) / (n - 1)
        out = [{c: round(x if c == b else y, 4) for c in range(n)} for b in range(n)]
    return out + [None, "balanced"]


def _svm(seed, **params):
    # Platt posteriors as capshift.classifiers' "svm" (scikit-learn's replacement for SVC(probability=True))
    return CalibratedClassifierCV(SVC(kernel="rbf", random_state=seed, **params), ensemble=False)


#: Sizes of :func:`candidate_grid`: the paper's grid, or a thinned one for quick runs (the book's default build).
GRID_SIZES = ("paper", "small")


def _grids(n_classes, seed, mlp_hidden, mlp_max_iter, size="paper"):
    cw = class_weightings(n_classes)
    C = [0.01, 0.1, 1.0, 10.0, 100.0]
    k, gamma = [5, 7, 9, 11, 13], ["scale", "auto"]
    alpha, rate = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1], ["constant", "adaptive"]
    if size == "small":  # every value kept is one of the paper's, the defaults included
        cw = [cw[0], cw[-3]] + cw[-2:]
        C, k, gamma, alpha = [0.01, 1.0, 100.0], [5, 9, 13], ["scale"], [1e-4, 1e-2]
    return {
        "lr": (lambda **p: LogisticRegression(random_state=seed, max_iter=1000, **p),
               {"C": C, "class_weight": cw}, {"C": 1.0, "class_weight": None}),
        "knn": (lambda **p: KNeighborsClassifier(**p), {"n_neighbors": k, "weights": ["uniform", "distance"]},
                {"n_neighbors": 5, "weights": "uniform"}),
        "svm": (lambda **p: _svm(seed, **p), {"C": C, "gamma": gamma, "class_weight": cw},
                {"C": 1.0, "gamma": "scale", "class_weight": None}),
        "mlp": (lambda **p: MLPClassifier(hidden_layer_sizes=tuple(mlp_hidden), max_iter=mlp_max_iter,
                                          random_state=seed, **p),
                {"alpha": alpha, "learning_rate": rate}, {"alpha": 1e-4, "learning_rate": "constant"}),
    }


def _fmt(v):
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{w:g}" for k, w in v.items()) + "}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def candidate_grid(n_classes: int, families=FAMILIES, seed: int = 0, mlp_hidden=(100,),
                   mlp_max_iter: int = 200, size: str = "paper") -> list[Candidate]:
    """The paper's candidates (authors' ``gen_classifiers``): LR C in {.01, .1, 1, 10, 100} x class weightings
    (:func:`class_weightings`); kNN k in {5, 7, 9, 11, 13} x {uniform, distance}; RBF SVM C x gamma in {scale,
    auto} x class weightings (Platt posteriors); MLP alpha in logspace(-5, -1, 5) x learning rate in {constant,
    adaptive}. 30 + 10 + 60 + 10 = 110 candidates for n = 2. Every estimator is seeded with ``seed``;
    ``mlp_hidden`` (the paper: scikit-learn's default (100,)) and ``mlp_max_iter`` size the MLPs. ``size="small"``
    thins the grid for quick runs, keeping only values of the paper's and every family's defaults: C in {.01, 1,
    100}, k in {5, 9, 13}, gamma "scale", alpha in {1e-4, 1e-2}, 4 class weightings (the first and the last
    boosted, None, "balanced"): 12 + 6 + 12 + 4 = 34 candidates.

    Returns a list of unfitted :class:`Candidate` in family order. Raises ValueError for an unknown family or
    n_classes < 2.
    """
    check_seed(seed, "seed")
    fams = check_families(families)
    mlp_max_iter = check_int(mlp_max_iter, "mlp_max_iter")
    hidden = tuple(check_int(h, "mlp_hidden") for h in (mlp_hidden if hasattr(mlp_hidden, "__iter__")
                                                          else [mlp_hidden]))
    if size not in GRID_SIZES:
        raise ValueError(f"size must be one of {GRID_SIZES}, got {size!r}")
    grids = _grids(n_classes, seed, hidden, mlp_max_iter, size)
    out = []
    for fam in fams:
        make, grid, default = grids[fam]
        for combo in itertools.product(*grid.values()):
            params = dict(zip(grid, combo))
            name = f"{fam}[" + ";".join(f"{k}={_fmt(v)}" for k, v in params.items()) + "]"
            out.append(Candidate(fam, name, params, params == default, make(**params)))
    return out


def check_families(families) -> list:
    """``families`` (a name or a list of names of :data:`FAMILIES`) as a list without repeats; ValueError for an
    empty list or an unknown name."""
    if isinstance(families, str):
        families = [families]
    fams = list(dict.fromkeys(families))
    if not fams:
        raise ValueError(f"families is empty: name at least one of {FAMILIES}")
    bad = [f for f in fams if f not in FAMILIES]
    if bad:
        raise ValueError(f"unknown candidate families {bad}; choose from {FAMILIES}")
    return fams


# ------------------------------------------------------------------------------------------------ selector
@dataclass
class Selection:
    """What :meth:`TransductiveSelector.select` returns for k samples and c candidates: ``index`` int (k,) (the
    selected candidate per sample), ``measures`` float (k, c) (every candidate's predicted measure),
    ``intervals`` float (k, c, 2) (lower, upper) or None."""

    index: np.ndarray
    measures: np.ndarray
    intervals: np.ndarray | None = None


def _unique_rows(X: np.ndarray):
    """``(unique, inverse)`` rows of a dense 2-d array: a sample drawn from a pool repeats the pool's items, so
    the candidates classify each distinct item once (UPP samples of 100 from a pool of 1,000 repeat every item
    about 100 times over 1,000 samples)."""
    X = np.ascontiguousarray(X)
    view = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
    return X[first], inverse.ravel()


class TransductiveSelector(BaseEstimator):
    """Transductive model selection (Volpi, Moreo & Sebastiani, arXiv 2507.22647, 2025, Sect. 3): among fitted
    candidate classifiers, select per unlabelled test sample the one whose measure a CAP method predicts highest.

    Parameters
    ----------
    candidates : list of fitted scikit-learn classifiers
        At least one; every candidate over the same classes ``0..n-1`` and the same number of features (never
        refitted; :func:`candidate_grid` builds the paper's grid, to be fitted on L).
    method : str
        A registered CAP method (:func:`capshift.registry.names`); the paper's is ``"O-LEAP_KDEy"``. A quantifier
        that reads only x (``kdey``, ``oracle``) is a :class:`SharedQuantifier` fitted once for all candidates.
    measure : str
        What is predicted and maximised: ``"accuracy"`` (the paper's), ``"f1"``, ``"macro_f1"``... (a name of
        :data:`capshift.tables.MEASURES` the method supports).
    criterion : {"point", "lower"}
        Select by the predicted measure (the paper) or by the lower end of the ``1 - alpha`` interval of each
        candidate's ``predict_interval`` (a cautious selector; ties broken by the point prediction).
    alpha : float in (0, 1)
        Level of the intervals (``criterion="lower"``, :meth:`predict_interval`).
    interval_params : dict or None
        Overrides of the estimators' ``interval_params`` (e.g. ``{"n_splits": 4, "n_cal": 200}`` for cheaper
        calibration); None keeps :attr:`capshift.base.CAPEstimator.interval_params`.
    random_state : int
        Seed of every CAP estimator (and of the shared quantifier).

    Attributes
    ----------
    estimators_ : list of fitted CAP estimators, one per candidate; ``quantifier_`` : the fitted
    :class:`SharedQuantifier` or None; ``n_classes_``, ``n_features_in_``, ``n_candidates_``;
    ``val_measures_`` float (c,): every candidate's measure on V (inductive selection picks its argmax).

    Ties in the selection go to the first candidate (the order of ``candidates``), as pandas' ``idxmax`` in the
    authors' code. Errors: TypeError/ValueError naming the argument for an empty or non-list ``candidates``, an
    unfitted candidate, candidates disagreeing on classes or features, an unknown method, measure or criterion,
    a sample with the wrong number of features; NotFittedError before ``fit``.
    """

    def __init__(self, candidates, method: str = "O-LEAP_KDEy", measure: str = "accuracy",
                 criterion: str = "point", alpha: float = 0.05, interval_params: dict | None = None,
                 random_state: int = 0):
        self.candidates = candidates
        self.method = method
        self.measure = measure
        self.criterion = criterion
        self.alpha = alpha
        self.interval_params = interval_params
        self.random_state = random_state

    # -- checks ----------------------------------------------------------------------------------
    def _check_candidates(self) -> tuple[int, int | None]:
        c = self.candidates
        if isinstance(c, (str, bytes, np.ndarray)) or not isinstance(c, (list, tuple)):
            raise TypeError(f"candidates must be a list of fitted classifiers, got {type(c).__name__}; for one "
                            "classifier pass [classifier]")
        if len(c) == 0:
            raise ValueError("candidates is empty: pass at least one fitted classifier")
        n, d = None, None
        for i, h in enumerate(c):
            try:
                n_i = check_classifier(h)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"candidates[{i}]: {exc}") from None
            d_i = getattr(h, "n_features_in_", None)
            if n is None:
                n, d = n_i, d_i
            elif n_i != n:
                raise ValueError(f"candidates disagree on the classes: candidates[0] has {n}, candidates[{i}] "
                                 f"has {n_i}; train every candidate on the same labels")
            elif d is not None and d_i is not None and d_i != d:
                raise ValueError(f"candidates disagree on the features: candidates[0] was trained on {d}, "
                                 f"candidates[{i}] on {d_i}; train every candidate on the same data")
        return n, d

    def _check_fitted(self):
        check_fitted(self, "estimators_")

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X_val, y_val):
        """Fit the CAP method for every candidate on V: ``X_val`` (m, d), ``y_val`` (m,) int in 0..n-1, every
        class present. Returns self. Errors as the class docstring, and the CAP method's own."""
        self.__dict__.pop("estimators_", None)
        n, d = self._check_candidates()
        spec = registry.get(self.method)
        get_measure(self.measure)
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, got {self.criterion!r}")
        check_fraction(self.alpha, "alpha")
        seed = check_seed(self.random_state, "random_state")
        if self.interval_params is not None and not isinstance(self.interval_params, dict):
            raise TypeError(f"interval_params must be a dict or None, got {type(self.interval_params).__name__}")
        X_val = check_X(X_val, "X_val", n_features=d)
        y_val = check_labels(y_val, n, "y_val", n_items=X_val.shape[0])
        probe = spec.make(self.candidates[0], random_state=seed)
        if not probe.supports(self.measure):
            raise ValueError(f"method {spec.name!r} does not estimate measure={self.measure!r}; it estimates "
                             f"{list(probe.supported_measures)}")
        qname = spec.params.get("quantifier")
        # The rule of capshift.evaluation.shared_quantifier (the (gamma, q-hat) path, a named quantifier), narrowed
        # to the quantifiers that read only x: here the candidates differ in h, so one fit serves them all only
        # when the quantifier does not read h (shared_quantifier shares across methods with the same h).
        shared = spec.cls.shared_prevalence_path and isinstance(qname, str) and qname.lower() in _X_ONLY
        self.quantifier_ = None
        if shared:
            self.quantifier_ = SharedQuantifier(qname.lower(), random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                self.quantifier_.fit(X_val, y_val, n)
        estimators = []
        for h in self.candidates:
            est = spec.make(h, random_state=seed, **({"quantifier": self.quantifier_} if shared else {}))
            if self.interval_params is not None:
                est.interval_params = {**est.interval_params, **self.interval_params}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                estimators.append(est.fit(X_val, y_val))
        f = get_measure(self.measure)
        self.val_measures_ = np.array([float(f(e.val_table_)) for e in estimators])
        self.shared_path_ = bool(spec.cls.shared_prevalence_path)
        self.n_classes_, self.n_features_in_, self.n_candidates_ = n, X_val.shape[1], len(estimators)
        self.estimators_ = estimators
        return self

    # -- prediction ------------------------------------------------------------------------------
    def _samples(self, samples, single=False):
        self._check_fitted()
        return check_samples(samples, self.n_features_in_, single)

    def _prevalences(self, prevalences, k, single=False):
        if prevalences is None:
            return None
        p = np.asarray(prevalences, dtype=float)
        p = p.reshape(1, -1) if single else p
        if p.shape != (k, self.n_classes_):
            name = "prevalence" if single else "prevalences"
            raise ValueError(f"{name} must have shape {(self.n_classes_,) if single else (k, self.n_classes_)} "
                             f"(the true prevalence of each sample, for oracle quantifiers), got {np.shape(prevalences)}")
        return p

    def _measures(self, samples, prevalences) -> np.ndarray:
        """(k, c) predicted measures. Dense samples: every candidate classifies each distinct item once, and the
        shared quantifier estimates the batch once; each candidate then solves its own tables for all samples
        at once (``tables_from_prevalences``)."""
        k, n, f = len(samples), self.n_classes_, get_measure(self.measure)
        out = np.empty((k, self.n_candidates_))
        dense = not any(sp.issparse(X) for X in samples)
        if not dense:
            for j, est in enumerate(self.estimators_):
                out[:, j] = est.predict_measures(samples, [self.measure], prevalences)[self.measure]
            return out
        sizes = np.array([len(X) for X in samples])
        uniq, inverse = _unique_rows(np.concatenate(samples))
        which = np.repeat(np.arange(k), sizes)
        bounds = np.cumsum(np.r_[0, sizes])
        q = None
        if self.shared_path_ and self.quantifier_ is not None:
            q = self.quantifier_.quantify_batch(samples, prevalences)
        for j, est in enumerate(self.estimators_):
            h = est.classifier
            if self.shared_path_:
                codes = predict_codes(h, uniq)[inverse]
                g = np.bincount(which * n + codes, minlength=k * n).reshape(k, n) / sizes[:, None]
                if q is not None:
                    qj = q
                else:  # Naive is on the shared path without a quantifier: its tables do not read q-hat
                    own = getattr(est, "quantifier_", None)
                    qj = None if own is None else own.quantify_batch(samples, prevalences)
                out[:, j] = f(est.tables_from_prevalences(g, qj))
            else:
                post = None
                if est.needs_proba:
                    P = h.predict_proba(uniq)[inverse]
                    post = [P[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
                out[:, j] = est.predict_measures(samples, [self.measure], prevalences, post)[self.measure]
        return out

    def _intervals(self, samples, alpha, prevalences) -> np.ndarray:
        alpha = check_fraction(self.alpha if alpha is None else alpha, "alpha")
        out = np.empty((len(samples), self.n_candidates_, 2))
        for j, est in enumerate(self.estimators_):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                out[:, j] = est.predict_interval_measures(samples, [self.measure], alpha, prevalences)[self.measure]
        return out

    def _choose(self, measures, intervals) -> np.ndarray:
        if self.criterion == "point":
            return np.argmax(measures, axis=1)
        lower = intervals[..., 0]
        top = lower >= lower.max(axis=1, keepdims=True) - 1e-12
        return np.argmax(np.where(top, measures, -np.inf), axis=1)

    def select(self, samples, intervals: bool = False, prevalences=None) -> Selection:
        """Select for k samples (a list of (m_i, d) arrays): a :class:`Selection` with the index (k,), every
        candidate's predicted measure (k, c) and, if ``intervals`` (or ``criterion="lower"``), the intervals
        (k, c, 2). ``prevalences`` (k, n): true prevalences, for oracle quantifiers only."""
        samples = self._samples(samples)
        prev = self._prevalences(prevalences, len(samples))
        m = self._measures(samples, prev)
        iv = self._intervals(samples, None, prev) if intervals or self.criterion == "lower" else None
        return Selection(self._choose(m, iv), m, iv if intervals else None)

    def predict(self, X, prevalence=None) -> int:
        """Index of the candidate selected for the sample ``X`` (m, d)."""
        return int(self.predict_batch([self._samples(X, single=True)[0]],
                                      None if prevalence is None else [prevalence])[0])

    def predict_batch(self, samples, prevalences=None) -> np.ndarray:
        """Indices (k,) int of the candidates selected for k samples."""
        return self.select(samples, prevalences=prevalences).index

    def predict_measures(self, X, prevalence=None) -> np.ndarray:
        """Every candidate's predicted measure on the sample ``X``: float (c,)."""
        samples = self._samples(X, single=True)
        return self._measures(samples, self._prevalences(prevalence, 1, single=True))[0]

    def predict_measures_batch(self, samples, prevalences=None) -> np.ndarray:
        """Every candidate's predicted measure on k samples: float (k, c)."""
        samples = self._samples(samples)
        return self._measures(samples, self._prevalences(prevalences, len(samples)))

    def predict_interval(self, X, alpha: float | None = None, prevalence=None) -> np.ndarray:
        """Every candidate's ``1 - alpha`` interval on the sample ``X`` (its estimator's ``predict_interval``):
        float (c, 2), columns lower and upper. ``alpha`` None: the constructor's."""
        samples = self._samples(X, single=True)
        return self._intervals(samples, alpha, self._prevalences(prevalence, 1, single=True))[0]

    def predict_interval_batch(self, samples, alpha: float | None = None, prevalences=None) -> np.ndarray:
        """Every candidate's intervals on k samples: float (k, c, 2)."""
        samples = self._samples(samples)
        return self._intervals(samples, alpha, self._prevalences(prevalences, len(samples)))


# ------------------------------------------------------------------------------------------------ the study
#: Default CAP methods of the study: O-LEAP_KDEy (the paper's TMS), SLD-CBPE and DoC (beyond the paper).
STUDY_METHODS = ("O-LEAP_KDEy", "SLD-CBPE", "DoC")
#: Cheaper conformal calibration for the study's cautious selector (predict_interval's default: 10 splits, 500
#: calibration samples, the union of absolute and studentised scores and the evidence floor, which cost about
#: 10 ms per candidate and test sample): 2 splits (each refits KDEy's surrogate once), 200 samples, absolute
#: residuals, no floor. The lower end is then the point prediction minus a per-candidate margin.
STUDY_INTERVALS = {"n_splits": 2, "n_cal": 200, "score": "absolute", "floor": False}


def _tables_by_sample(pred_pool, idx, labels, n) -> np.ndarray:
    """Contingency tables (k, n, n) of one classifier's predictions on a pool, for k samples given by their
    indices into the pool ``idx`` and their true labels ``labels``."""
    k = len(idx)
    which = np.concatenate([np.full(len(i), s) for s, i in enumerate(idx)])
    flat = np.concatenate(idx)
    y = np.concatenate(labels)
    counts = np.bincount((which * n + y) * n + pred_pool[flat], minlength=k * n * n).reshape(k, n, n)
    return counts / counts.sum(axis=(1, 2), keepdims=True)


def candidate_table(X_L, y_L, X_V, y_V, X_pool, idx, labels, candidates, methods=STUDY_METHODS,
                    cautious: str | None = None, measure: str = "accuracy", interval_params=STUDY_INTERVALS,
                    alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Every candidate's true, validation and predicted measure on every test sample (the study's raw data).

    The candidates (:func:`candidate_grid`, unfitted) are cloned and trained on (X_L, y_L); for each CAP method of
    ``methods`` a :class:`TransductiveSelector` is fitted on (X_V, y_V) and predicts every candidate's measure on
    the k test samples ``X_pool[idx[s]]``, whose true labels are ``labels[s]`` (a list of k int arrays; under
    concept shift they differ from the pool's); ``cautious`` (one of ``methods``) adds the lower ends of its
    1-alpha intervals (``predict_interval``, with ``interval_params``).

    Returns a DataFrame, one row per (candidate,
    sample): ``family, candidate, default, order`` (position in the grid), ``sample, true, val`` (the measure on
    V), ``pred:<method>`` per method and ``lower:<cautious>``. Raises ValueError for an unknown method or measure,
    or ``cautious`` not among ``methods``.
    """
    methods = [registry.get(m).name for m in ([methods] if isinstance(methods, str) else methods)]
    if cautious is not None and cautious not in methods:
        raise ValueError(f"cautious={cautious!r} must be one of methods {methods}")
    f = get_measure(measure)
    n = int(max(np.max(y_L), np.max(y_V))) + 1
    fitted = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for c in candidates:
            fitted.append(clone(c.estimator).fit(X_L, y_L))
    k, cn = len(idx), len(fitted)
    samples = [X_pool[i] for i in idx]
    true = np.empty((k, cn))
    val = np.empty(cn)
    for j, h in enumerate(fitted):
        true[:, j] = f(_tables_by_sample(predict_codes(h, X_pool), idx, labels, n))
        val[j] = float(f(contingency_table(y_V, predict_codes(h, X_V), n)))
    cols = {}
    for m in methods:
        sel = TransductiveSelector(fitted, m, measure, interval_params=interval_params, alpha=alpha,
                                   random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel.fit(X_V, y_V)
            cols[f"pred:{m}"] = sel.predict_measures_batch(samples)
            if m == cautious:
                cols[f"lower:{m}"] = sel.predict_interval_batch(samples)[..., 0]
    frame = pd.DataFrame({
        "family": np.repeat([c.family for c in candidates], k),
        "candidate": np.repeat([c.name for c in candidates], k),
        "default": np.repeat([c.default for c in candidates], k),
        "order": np.repeat(np.arange(cn), k),
        "sample": np.tile(np.arange(k), cn),
        "true": true.T.ravel(),
        "val": np.repeat(val, k),
    })
    for name, v in cols.items():
        frame[name] = v.T.ravel()
    return frame


def study_cell(dataset: str, families=FAMILIES, n_samples: int = 1000, sample_size: int = 100, seed: int = 0,
               methods=STUDY_METHODS, cautious: str | None = "O-LEAP_KDEy", measure: str = "accuracy",
               mlp_hidden=(100,), mlp_max_iter: int = 200, interval_params=STUDY_INTERVALS,
               alpha: float = 0.05, grid: str = "paper") -> pd.DataFrame:
    """One cell of the study: the candidates of ``families`` on one offline ``dataset`` under the LEAP protocol
    (L / V / U split of :func:`capshift.datasets.load` with ``seed``; ``n_samples`` UPP samples of
    ``sample_size`` items drawn from U, :func:`capshift.protocols.upp_indices`).

    Returns :func:`candidate_table`'s frame with ``dataset`` and ``shift`` (L1 distance between the sample's
    prevalence and L's, as the authors' code) columns. What :func:`capshift.grid.run_selection_study` stores per
    cell: one dataset with every family, so that the KDEy quantifier (the costliest fit) is fitted once."""
    split = datasets.load(dataset, seed=seed)
    n = split.n_classes
    idx = protocols.make_protocol("upp").indices(split.y_U, sample_size, n_samples, seed, n_classes=n)
    cands = candidate_grid(n, families, seed, mlp_hidden, mlp_max_iter, grid)
    labels = [split.y_U[i] for i in idx]
    frame = candidate_table(split.X_L, split.y_L, split.X_V, split.y_V, split.X_U, idx, labels, cands, methods,
                            cautious, measure, interval_params, alpha, seed)
    prev_L = np.bincount(split.y_L, minlength=n) / len(split.y_L)
    shift = np.array([np.abs(np.bincount(y, minlength=n) / len(y) - prev_L).sum() for y in labels])
    frame.insert(0, "dataset", dataset)
    frame["shift"] = shift[frame["sample"].to_numpy()]
    return frame


def _selector_columns(table: pd.DataFrame) -> dict:
    """Selector name -> (score column, family or None, kind)."""
    out = {}
    for col in table.columns:
        if col.startswith("pred:"):
            out[f"TMS-{col[5:]}"] = (col, None)
    for col in table.columns:
        if col.startswith("lower:"):
            out[f"TMS-{col[6:]}-lower"] = (col, None)
    out["IMS-All"] = ("val", None)
    fams = [f for f in FAMILIES if f in set(table["family"])]
    for fam in fams:
        out[f"IMS-{fam}"] = ("val", fam)
    for fam in fams:
        out[f"default-{fam}"] = ("default", fam)
    out["Oracle"] = ("true", None)
    return out


#: The selectors :func:`selections` forms, by kind (TMS-<method> per ``pred:`` column of the table).
SELECTORS = ("TMS-<method>", "TMS-<method>-lower", "IMS-All", "IMS-<family>", "default-<family>", "Oracle")


def selections(table: pd.DataFrame, keys=("dataset", "sample")) -> pd.DataFrame:
    """Apply every selector to a candidate table (:func:`candidate_table` / cells of the study).

    Selectors: ``TMS-<method>`` (highest predicted measure over all candidates; the paper's TMS-All is
    ``TMS-O-LEAP_KDEy``), ``TMS-<method>-lower`` (highest lower interval end), ``IMS-All`` (highest measure on V
    over all candidates) and ``IMS-<family>`` (within a family), ``default-<family>`` (scikit-learn's defaults),
    ``Oracle`` (highest true measure). Ties go to the first candidate in grid order (``order``).

    Returns one row per (``keys``, selector): the key columns, ``selector``, ``candidate``, ``family``, ``true``
    (the selected candidate's true measure on the sample), ``oracle`` (the best true measure), ``regret``
    (oracle - true) and ``shift`` if the table has it. Raises ValueError for missing columns.
    """
    keys = list(keys)
    need = set(keys) | {"family", "candidate", "default", "order", "true", "val"}
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        have = set(table.columns) if isinstance(table, pd.DataFrame) else set()
        raise ValueError(f"table lacks the columns {sorted(need - have)}: pass candidate_table's frame")
    t = table.sort_values(keys + ["order"], kind="stable").reset_index(drop=True)
    oracle = t.groupby(keys, sort=False)["true"].max().rename("oracle")
    extra = ["shift"] if "shift" in t.columns else []
    frames = []
    for name, (col, fam) in _selector_columns(t).items():
        sub = t if fam is None else t[t["family"] == fam]
        score = sub[col].astype(float)
        best = score.groupby([sub[k] for k in keys], sort=False).idxmax()
        rows = t.loc[best.to_numpy(), keys + ["candidate", "family", "true"] + extra].copy()
        rows.insert(len(keys), "selector", name)
        frames.append(rows)
    out = pd.concat(frames, ignore_index=True).merge(oracle.reset_index(), on=keys)
    out["regret"] = out["oracle"] - out["true"]
    return out


def selection_summary(sel: pd.DataFrame, selectors=None, alpha: float = 0.01, by="dataset",
                      pair=("sample",)) -> pd.DataFrame:
    """Per ``by`` group and selector: ``mean`` and ``std`` of the selected models' true measure, ``regret``
    (mean), and the experiments chapter's marks: ``best`` (lowest mean regret among the non-oracle selectors)
    and ``dagger`` (a paired Wilcoxon signed-rank test over ``pair`` cannot tell it from the best at level
    ``alpha``; :func:`capshift.significance.significance`). ``selectors``: which to keep (default all).
    Returns a long DataFrame: ``by``, ``selector``, ``mean``, ``std``, ``regret``, ``best``, ``dagger``, ``pvalue``.
    """
    by = [by] if isinstance(by, str) else list(by)
    s = sel if selectors is None else sel[sel["selector"].isin(list(selectors))]
    stats = (s.groupby(by + ["selector"], sort=False)
             .agg(mean=("true", "mean"), std=("true", "std"), regret=("regret", "mean")).reset_index())
    tested = s[s["selector"] != "Oracle"]
    sig = significance(tested, by, list(pair), "selector", "regret")[by + ["selector", "best", "pvalue"]]
    out = stats.merge(sig, on=by + ["selector"], how="left")
    out["best"] = out["best"].eq(True)
    out["dagger"] = ~out["best"] & (out["pvalue"] >= alpha)
    return out


def regret_table(sel: pd.DataFrame, by="dataset") -> pd.DataFrame:
    """Mean regret (oracle's true measure minus the selected model's) per selector and ``by`` group, plus the mean
    over groups (row ``"Mean"``): rows groups, columns selectors (in order of appearance)."""
    t = sel.pivot_table(index=by, columns="selector", values="regret", aggfunc="mean", sort=False)
    t.loc["Mean"] = t.mean(axis=0)
    return t


def shift_bins(sel: pd.DataFrame, n_bins: int = 5) -> pd.DataFrame:
    """Mean true measure of each selector per bin of the prior shift (``shift``: equal-width bins between the
    smallest and largest shift of the frame; the authors' plots use 20). Returns ``bin`` (its centre),
    ``selector``, ``mean``, ``sem``, ``n``."""
    n_bins = check_int(n_bins, "n_bins")
    edges = np.linspace(sel["shift"].min(), sel["shift"].max(), n_bins + 1)
    b = np.clip(np.digitize(sel["shift"], edges[1:-1]), 0, n_bins - 1)
    centres = (edges[:-1] + edges[1:]) / 2
    g = sel.assign(bin=centres[b]).groupby(["bin", "selector"], sort=True)["true"]
    return g.agg(mean="mean", sem="sem", n="size").reset_index()


def verdicts(sel: pd.DataFrame, tms: str = "TMS-O-LEAP_KDEy", alpha: float = 0.01, ims: str = "IMS-All",
             by="dataset", pair=("sample",), baselines=None) -> dict:
    """The paper's headline claims, computed (arXiv 2507.22647, Sect. 5): (1) TMS is the best selector on most
    datasets; (2) where it is not, a paired Wilcoxon test cannot tell it from the best (level ``alpha``); (3) its
    advantage over inductive selection grows with the amount of shift (the gap ``tms - ims`` in true measure on
    the samples of the upper third of shift against the lower third, Mann-Whitney at 0.05,
    :func:`capshift.significance.compare_groups`).

    ``baselines``: the selectors TMS is compared with (default: every selector except ``Oracle`` and the other
    TMS variants, i.e. the paper's table). Returns a dict: ``n_datasets``, ``n_best``, ``best_on_most`` (bool),
    ``n_not_best``, ``n_not_worse`` (of those, indistinguishable from the best), ``not_worse`` (bool),
    ``gap_low``, ``gap_high``, ``gap_p``, ``grows`` (bool), and ``claim1``-``claim3``: "reproduced" / "not
    reproduced" / "not testable here" (claim 2 when TMS is best everywhere)."""
    by = [by] if isinstance(by, str) else list(by)
    names = list(dict.fromkeys(sel["selector"]))
    if tms not in names or ims not in names:
        raise ValueError(f"sel lacks the selector {tms!r} or {ims!r}; it has {names}")
    if baselines is None:
        baselines = [s for s in names if s != "Oracle" and not s.startswith("TMS-")]
    s = sel[sel["selector"].isin([tms] + list(baselines))]
    sig = significance(s, by, list(pair), "selector", "regret")
    mine = sig[sig["selector"] == tms]
    n_ds = len(mine)
    n_best = int(mine["best"].sum())
    not_best = mine[~mine["best"]]
    n_not_worse = int((not_best["pvalue"] >= alpha).sum())
    wide = sel[sel["selector"].isin([tms, ims])].pivot_table(index=by + list(pair), columns="selector",
                                                             values=["true", "shift"], aggfunc="first")
    gap = pd.DataFrame({"gap": wide["true"][tms] - wide["true"][ims], "shift": wide["shift"][tms]})
    lo, hi = gap["shift"].quantile([1 / 3, 2 / 3])
    gap["third"] = np.where(gap["shift"] <= lo, "low", np.where(gap["shift"] > hi, "high", "mid"))
    cmp = compare_groups(gap.assign(all="all"), "third", "low", "high", by="all", value="gap", alpha=0.05).iloc[0]
    out = {"n_datasets": n_ds, "n_best": n_best, "best_on_most": n_best > n_ds / 2, "n_not_best": len(not_best),
           "n_not_worse": n_not_worse, "not_worse": n_not_worse == len(not_best), "gap_low": float(cmp["mean_low"]),
           "gap_high": float(cmp["mean_high"]), "gap_p": float(cmp["pvalue"]), "grows": cmp["change"] == "rises"}
    word = {True: "reproduced", False: "not reproduced"}
    out["claim1"] = word[out["best_on_most"]]
    out["claim2"] = "not testable here" if len(not_best) == 0 else word[out["not_worse"]]
    out["claim3"] = word[out["grows"]]
    return out


def shift_selection(protocol, families=FAMILIES, methods=("O-LEAP_KDEy",), measure: str = "accuracy",
                    val_prop: float = 0.5, mlp_hidden=(100,), mlp_max_iter: int = 200,
                    grid: str = "paper") -> pd.DataFrame:
    """Model selection under a dataset-shift protocol of :mod:`capshift.shift` (e.g. local covariate shift, which
    is not PPS: the paper's stated limitation, measured). Per trial, the training sample is split, stratified,
    into L (trains the candidates) and V (``val_prop``, fits the CAP methods); the test samples are the
    protocol's. Binary protocols only (the candidates' grid and class weightings are built for 2 classes).

    Returns :func:`candidate_table`'s frame with ``trial``, ``sample`` (the sample's position in the trial),
    ``dataset`` (the protocol's class name), ``degree`` and ``shift`` (|p_U - p_L| of the positive class, the
    prior shift the sample also has) columns; :func:`selections` with ``keys=("dataset", "trial", "sample")``
    applies the selectors."""
    check_fraction(val_prop, "val_prop")
    fams = check_families(families)
    seed = protocol.random_state
    frames = []
    for t in range(protocol.n_trials):
        trial = protocol.trial(t)
        split, idx, labels = evaluation.trial_split(trial, val_prop, seed, type(protocol).__name__)
        cands = candidate_grid(2, fams, seed, mlp_hidden, mlp_max_iter, grid)
        frame = candidate_table(split.X_L, split.y_L, split.X_V, split.y_V, split.X_U, idx, labels, cands, methods,
                                None, measure, seed=seed)
        params = trial.test.parameters
        p_L = split.y_L.mean()
        frame.insert(0, "trial", t)
        frame.insert(0, "dataset", type(protocol).__name__)
        frame["degree"] = params["degree"].to_numpy()[frame["sample"].to_numpy()]
        prev = np.array([lab.mean() for lab in labels])
        frame["shift"] = 2 * np.abs(prev - p_L)[frame["sample"].to_numpy()]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
