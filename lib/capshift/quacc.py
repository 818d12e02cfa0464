"""QuAcc: the cells of the contingency table as classes, estimated by a quantifier (Volpi, Moreo & Sebastiani 2025).

Holds the three QuAcc variants of the paper (Intelligenza Artificiale 2025, Sect. "QuAcc") as CAP estimators,
:class:`QuAcc1xN2` (one quantifier over the n² cells), :class:`QuAccNxN` (one quantifier per predicted
class, over the n true classes) and :class:`QuAcc1xNp1` (n "correct" cells plus one merged "error" cell);
the extra covariates of Sect. "Adding Covariates" (:func:`max_confidence`, :func:`negative_entropy`,
:func:`max_inverse_softmax`, :func:`augment_features`); the relabelling :func:`cell_labels`; the model
selection of Sect. "Configuring QuAcc" (:class:`QuAccGridSearch`, and :class:`QuAccSelected`, the
model-selected QuAcc of the paper's tables); and :func:`gaussian_split`, a synthetic PPS problem for the
chapter's configuration study (:func:`capshift.experiment.configuration_study`). The
runner names (``QuAcc<variant>_<quantifier>``,
``QuAcc(<quantifier>)``) are registered in :mod:`capshift.registry`.

Relabelling (the paper's codeframe 𝒞 = 𝒴 × 𝒴): an item of true class i that the classifier h predicts as j
gets the cell label ``i * n + j`` (row-major, so the estimated cell prevalences reshape directly into the
project's table convention ``C[i, j]`` = fraction true i predicted j). Proposition 1 of the paper shows
that PPS between V and a test sample in 𝒴 implies PPS in 𝒞, so any quantifier robust to PPS estimates
the cell prevalences; the merged error cell of 1×(n+1) breaks this (the paper's Fig. 2).

The quantifier sees ``x̂ = (x, Pr(y_1|x), ..., Pr(y_n|x)[, MC, NE, MIS])``: the original covariates,
h's posteriors and, optionally, the extra covariates. Sparse ``x`` (e.g. tf-idf) stays sparse (CSR).
Quantifiers come from QuaPy (Moreo et al. 2021): ``"cc"`` (classify and count), ``"sld"`` (SLD/EMQ,
Saerens et al. 2002, optionally with BCTS recalibration, Alexandari et al. 2020), ``"kdey"`` (KDEy-ML,
Moreo et al. 2025), each on a scikit-learn ``LogisticRegression`` (as in the paper), or any QuaPy
``AggregativeQuantifier`` instance.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from quapy.method.aggregative import CC, EMQ, AggregativeQuantifier, KDEyML
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid, StratifiedKFold, cross_val_predict, train_test_split

from .validation import InsufficientEvidenceWarning, check_fraction, check_int, check_seed, check_X
from .base import CAPEstimator, check_posteriors
from .datasets import Split
from .protocols import upp_indices  # sampling of the grid search's scoring samples (QuaPy's UPP)
from .baselines import max_confidence, negative_entropy  # shared with ATC
from .quantifiers import resolve_quantifier
from .tables import contingency_table, get_measure

__all__ = ["COVARIATES", "QUANTIFIERS", "max_confidence", "negative_entropy", "max_inverse_softmax",
           "augment_features", "cell_labels", "QuAcc1xN2", "QuAccNxN", "QuAcc1xNp1", "QuAccGridSearch",
           "QuAccSelected", "SMALL_GRID", "PAPER_GRID", "paper_grid", "VARIANTS", "gaussian_split"]

#: Names of the extra covariates (paper, Sect. "Adding Covariates").
COVARIATES = ("mc", "ne", "mis")
#: Quantifier names; any QuaPy AggregativeQuantifier instance is accepted as well.
QUANTIFIERS = ("cc", "sld", "kdey")
_EPS = 1e-12  # floor of the posteriors inside logarithms (MIS); documented in max_inverse_softmax


# ----------------------------------------------------------------------------------------------- covariates
def max_inverse_softmax(posteriors, eps: float = _EPS) -> np.ndarray:
    """Max inverse softmax MIS(p) = max_i (log p_i - mean_j log p_j) (QuAcc 2025, Sect. "Adding Covariates").

    The inverse softmax is centred by ``c = -(1/n) sum_j log p_j`` as in the paper. Posteriors are floored
    at ``eps`` (default 1e-12) inside the logarithm so that a zero posterior gives a large finite value,
    never inf or NaN. ``posteriors``: float (m, n). Returns float (m,) >= 0 (0 for the uniform row).
    Raises ValueError for invalid posteriors or an ``eps`` outside (0, 1).
    """
    eps = check_fraction(eps, "eps", 0.0, 1.0)
    P = check_posteriors(posteriors)
    logP = np.log(np.clip(P, eps, None))
    return (logP - logP.mean(axis=1, keepdims=True)).max(axis=1)


_COV_FUN = {"mc": max_confidence, "ne": negative_entropy, "mis": max_inverse_softmax}


def _check_covariates(covariates) -> tuple:
    if covariates is True:
        return COVARIATES
    if covariates is False or covariates is None:
        return ()
    if isinstance(covariates, str):
        covariates = (covariates,)
    try:
        cov = tuple(str(c).lower() for c in covariates)
    except TypeError:
        raise TypeError(f"covariates must be True/False or a sequence of names from {COVARIATES}, "
                        f"got {covariates!r}") from None
    bad = [c for c in cov if c not in COVARIATES]
    if bad:
        raise ValueError(f"unknown covariate(s) {bad}; choose among {COVARIATES} (or True for all, False for none)")
    return cov


def augment_features(X, posteriors, covariates=()):
    """The quantifier's input x̂ = (x, posteriors, extra covariates) (QuAcc 2025, Sects. "The 1×n² Method" and
    "Adding Covariates").

    Parameters
    ----------
    X : array-like or scipy sparse matrix, shape (m, d)
        Original covariates.
    posteriors : array-like, shape (m, n)
        The classifier's posteriors Pr(y_i | x), rows summing to 1.
    covariates : True, False or sequence of {"mc", "ne", "mis"}
        Extra covariates appended, in this order (True: all three).

    Returns
    -------
    ndarray of float, shape (m, d + n + k); or a CSR matrix of the same shape when ``X`` is sparse.

    Raises
    ------
    ValueError
        Row counts differ, posteriors are not distributions, unknown covariate names.
    """
    cov = _check_covariates(covariates)
    P = check_posteriors(posteriors)
    X = check_X(X, "X")
    if X.shape[0] != P.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but posteriors has {P.shape[0]}; pass the posteriors of X's items")
    extra = np.column_stack([P] + [_COV_FUN[c](P) for c in cov])
    if sp.issparse(X):
        return sp.hstack([X, sp.csr_matrix(extra)], format="csr")
    return np.hstack([np.asarray(X, dtype=float), extra])


def cell_labels(y_true, y_pred, n_classes: int, variant: str = "1xn2") -> np.ndarray:
    """Relabel items from 𝒴 to the cells of the contingency table (QuAcc 2025, Sect. "QuAcc").

    ``y_true``, ``y_pred``: int (m,) in 0..n-1. ``variant``: "1xn2" gives ``i * n + j`` for true i predicted
    j (row-major cells, 0..n²-1); "1xn+1" gives i for a correct item of class i and n for every error (the
    merged class C_≠); "nxn" gives the true class i (each predicted class j has its own quantifier).
    Returns int64 (m,). Raises ValueError on labels outside 0..n-1 or an unknown variant.
    """
    contingency_table(y_true, y_pred, n_classes)  # validates the labels and the lengths
    y_true, y_pred = np.asarray(y_true).astype(np.int64), np.asarray(y_pred).astype(np.int64)
    if variant == "1xn2":
        return y_true * n_classes + y_pred
    if variant == "1xn+1":
        return np.where(y_true == y_pred, y_true, n_classes)
    if variant == "nxn":
        return y_true.copy()
    raise ValueError(f"variant must be '1xn2', 'nxn' or '1xn+1', got {variant!r}")


# ----------------------------------------------------------------------------------------------- quantifiers
class _Constant:
    """Stand-in quantifier when V has a single class in a group: its prevalence is 1."""

    def __init__(self, label):
        self.classes_ = np.array([label])

    def classify(self, X):
        return np.zeros(X.shape[0])

    def aggregate(self, predictions):
        return np.ones(1)


@dataclass
class _Classified:
    """Per-item output of :meth:`_QuAcc.classify` for a pool of items (aggregated per sample)."""

    pred: np.ndarray  # h's predicted class, (m,)
    parts: list  # per quantifier: (rows of the pool it covers (m_k,), its per-item predictions)
    where: np.ndarray  # position of each pool item inside its part's predictions, (m,)


class _QuAcc(CAPEstimator):
    """Shared fit/predict of the QuAcc variants; subclasses set ``_variant`` and ``_table``."""

    _variant = None
    needs_proba = True
    #: Minimum validation evidence per cell: a cell with fewer items of V is not given to the quantifier (its
    #: classifier is cross-validated in 5 stratified folds, KDEy builds a density from the cell's items) and is
    #: estimated from V's rates instead (:class:`capshift.InsufficientEvidenceWarning`; see :class:`QuAcc1xN2`).
    min_per_cell: int = 5

    def __init__(self, classifier, quantifier="sld", measure="accuracy", C=1.0, class_weight=None,
                 recalib=None, bandwidth=0.1, covariates=False, min_separation=0.5, random_state=None):
        super().__init__(classifier, measure=measure, random_state=random_state)
        self.quantifier = quantifier
        self.C = C
        self.class_weight = class_weight
        self.recalib = recalib
        self.bandwidth = bandwidth
        self.covariates = covariates
        self.min_separation = min_separation

    # -- construction ---------------------------------------------------------------------------
    def _build_quantifier(self) -> AggregativeQuantifier:
        key = resolve_quantifier(self.quantifier, QUANTIFIERS)
        if not isinstance(key, str):
            return key
        lr = self._surrogate()
        if key == "cc":
            return CC(lr)
        if key == "sld":
            if self.recalib not in (None, "bcts", "ts", "vs", "nbvs"):
                raise ValueError(f"recalib must be None or a QuaPy EMQ calibration ('bcts', 'ts', 'vs', 'nbvs'), "
                                 f"got {self.recalib!r}")
            if self.recalib is None:
                return EMQ(lr, val_split=None)
            # QuaPy's EMQ.EMQ_BCTS recipe (Alexandari et al. 2020); a failing calibrator is skipped
            return EMQ(lr, val_split=5, exact_train_prev=False, calib=self.recalib, on_calib_error="backup")
        check_fraction(self.bandwidth, "bandwidth", 0.0, np.inf)  # KDEy kernel bandwidth > 0
        return KDEyML(lr, val_split=5, bandwidth=float(self.bandwidth), random_state=self.random_state)

    def _surrogate(self):
        """The quantifier's classifier (unfitted): the paper's logistic regression, or a QuaPy instance's own."""
        if isinstance(self.quantifier, AggregativeQuantifier):
            return clone(self.quantifier.classifier)
        return LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=1000,
                                  random_state=self.random_state)

    def _select_cells(self, Xh, labels, column):
        """Split a quantifier's labels into those it is trained on and those estimated from V's rates.

        ``labels`` (m,) are the quantifier's classes (cells, or true classes for n×n) and ``column`` maps a label
        to its predicted class (-1 for 1×(n+1)'s merged error cell, which spans every column). The largest cell
        of each column is always kept (the "absorber" of the column's items the quantifier is not trained on).
        Another cell is left to V's rates if it has fewer than :attr:`min_per_cell` items ("thin") or if the
        quantifier's classifier, cross-validated on V, cannot tell it from the rest of its column: its
        separation, the mean cross-validated posterior of the cell on its own items minus that on the column's
        other items (the tpr - fpr of (P)ACC, Forman 2008), is below ``min_separation``. (Then the cell's
        prevalence estimate has more than 1/min_separation times the sampling error of counting it, and for
        errors that look like correct items -- label noise, Bayes error -- it is not identifiable at all.)
        Returns ``(kept, thin, unseparated)``, sorted label arrays.
        """
        present, counts = np.unique(labels, return_counts=True)
        cols = np.array([column(c) for c in present])
        absorbers = {int(present[cols == j][np.argmax(counts[cols == j])]) for j in np.unique(cols) if j >= 0}
        thin = [int(c) for c, k in zip(present, counts) if k < self.min_per_cell and int(c) not in absorbers]
        kept = [int(c) for c in present if int(c) not in thin]
        unseparated = []
        if len(kept) >= 2 and self.min_separation > 0:
            rows = np.isin(labels, kept)
            folds = int(min(5, counts[np.isin(present, kept)].min()))
            if folds >= 2:
                clf = self._surrogate()
                how = "predict_proba" if hasattr(clf, "predict_proba") else "predict"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # convergence and fold-size notices of the surrogate
                    P = cross_val_predict(clf, Xh[rows], labels[rows], method=how,
                                          cv=StratifiedKFold(folds, shuffle=True, random_state=self.random_state
                                                             if self.random_state is not None else 0))
                lab = labels[rows]
                if how == "predict":
                    P = (P[:, None] == np.array(kept)[None, :]).astype(float)
                lab_col = np.array([column(c) for c in lab])
                for k, c in enumerate(kept):
                    j = column(c)
                    if c in absorbers:
                        continue
                    rest = (lab != c) if j < 0 else ((lab != c) & (lab_col == j))
                    if rest.any() and P[lab == c, k].mean() - P[rest, k].mean() < self.min_separation:
                        unseparated.append(c)
        kept = [c for c in kept if c not in unseparated]
        return np.array(kept, dtype=np.int64), np.array(thin, dtype=np.int64), np.array(unseparated, dtype=np.int64)

    def _fit_one(self, Xh, labels):
        present = np.unique(labels)
        if present.size == 1:
            return _Constant(present[0])
        q = self._build_quantifier()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            q.fit(Xh, labels)
        return q

    def _features(self, X, posteriors=None):
        if posteriors is None:  # fit() checked that h has predict_proba
            posteriors = self.classifier.predict_proba(X)
        posteriors = check_posteriors(posteriors, self.n_classes_, "posteriors")
        if posteriors.shape[0] != X.shape[0]:
            raise ValueError(f"posteriors must have shape ({X.shape[0]}, {self.n_classes_}), got {posteriors.shape}")
        return augment_features(X, posteriors, self.covariates), posteriors.argmax(axis=1)

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X_val, y_val):
        """Fit on V: ``X_val`` (m, d) dense or sparse, ``y_val`` (m,) int in 0..n-1. Returns self.

        Relabels V's items into cells (:func:`cell_labels`) and trains the quantifier(s) on x̂.
        Raises TypeError for a classifier without ``predict_proba``, ValueError for bad input.
        """
        _check_covariates(self.covariates)
        return super().fit(X_val, y_val)

    def _fit(self, X_val, y_val):
        n = self.n_classes_
        check_fraction(self.min_separation, "min_separation", 0.0, 1.0, closed="both")
        Xh, pred = self._features(X_val)
        y_val = np.asarray(y_val).astype(np.int64)
        rated = np.zeros((n, n), dtype=bool)  # cells estimated from V's rates, not by the quantifier
        thin_cells = []
        if self._variant == "nxn":
            self.quantifiers_ = []
            for j in range(n):
                mask = pred == j
                if not mask.any():
                    self.quantifiers_.append(None)
                    continue
                kept, thin, unsep = self._select_cells(Xh[mask], y_val[mask], lambda c: 0)
                rated[np.r_[thin, unsep], j] = True
                thin_cells += [(int(i), j) for i in thin]
                rows = np.isin(y_val[mask], kept)
                self.quantifiers_.append(self._fit_one(Xh[mask][rows], y_val[mask][rows]))
        else:
            labels = cell_labels(y_val, pred, n, self._variant)
            column = (lambda c: c % n) if self._variant == "1xn2" else (lambda c: c if c < n else -1)
            kept, thin, unsep = self._select_cells(Xh, labels, column)
            for c in np.r_[thin, unsep]:
                if self._variant == "1xn2":
                    rated[c // n, c % n] = True
                else:  # the merged error cell: every off-diagonal cell
                    rated |= ~np.eye(n, dtype=bool)
            thin_cells += ([(int(c // n), int(c % n)) for c in thin] if self._variant == "1xn2" else
                           [("errors", int(np.sum(labels == n)))] if thin.size else [])
            rows = np.isin(labels, kept)
            self.quantifiers_ = [self._fit_one(Xh[rows], labels[rows])]
        counts = np.zeros((n, n), dtype=np.int64)
        np.add.at(counts, (y_val, pred), 1)
        self.rate_cells_ = rated & (counts > 0)
        self._rates = self._rate_system(counts, self.rate_cells_)
        if thin_cells:
            where = ", ".join(f"{c[1]} merged error items" if c[0] == "errors" else
                              f"(true {c[0]}, predicted {c[1]}): {counts[c]}" for c in thin_cells)
            warnings.warn(f"{type(self).__name__}: validation cells with fewer than {self.min_per_cell} items ({where}); "
                          f"the quantifier needs at least {self.min_per_cell} validation items per cell to learn a "
                          "cell, so these are estimated from V's rates P(h=j|y=i) and the estimated prevalence of "
                          "their true class (prior probability shift) instead, and rates from so few items are "
                          "unreliable; collect more validation items", InsufficientEvidenceWarning, stacklevel=4)

    def _rate_system(self, counts, rated):
        """How the table is completed when some cells are rated (estimated from V's rates, not quantified).

        A rated cell c = (i, j) is estimated as ``w_c * x[r]``, with r its row's largest quantified cell
        (normally the diagonal) and ``w_c = C_V[c] / C_V[r]``: under prior probability shift the rates
        P(h = j | y = i) are those of V (LEAP 2025, Sect. 4.1), so the ratio of two cells of a row is V's. If the
        row has no quantified cell, r is the largest quantified cell of column j (then the cell keeps V's share of
        its column's absorber). The quantifier, not trained on rated cells, assigns their test items to their
        column's absorber a_j (its largest quantified cell), so the rated cells' mass is taken from a_j's, never
        more than a_j has (:meth:`_with_rates`): column sums are the quantifier's (n×n: the observed fractions).
        Returns ``(rated cells, their references, weights, absorbers)`` as flat indices, or None.
        """
        n = self.n_classes_
        if not rated.any():
            return None
        kept = (counts > 0) & ~rated
        out = []
        for i, j in zip(*np.nonzero(rated)):
            col = np.flatnonzero(kept[:, j])
            if not col.size:  # (1x(n+1) only: h is never right when it predicts j) no quantified cell: mass 0
                continue
            absorber = int(col[np.argmax(counts[col, j])]) * n + j
            row = np.flatnonzero(kept[i])
            r = int(i * n + row[np.argmax(counts[i, row])]) if row.size else absorber
            out.append((i * n + j, r, counts[i, j] / counts.flat[r], absorber))
        if not out:
            return None
        cells, refs, w, absorbers = (np.array(v) for v in zip(*out))
        return cells.astype(np.int64), refs.astype(np.int64), w.astype(float), absorbers.astype(np.int64)

    def _with_rates(self, Q) -> np.ndarray:
        """The table (n, n) from the quantifier's masses Q (n, n), rated cells filled in (:meth:`_rate_system`).

        Fixed point of: rated cell c gets ``w_c * x[r_c]``, scaled down if its absorber has less mass than its
        rated cells ask for, and its absorber keeps the rest (converges fast: the weights are V's error-to-correct
        ratios, well below 1 for any useful h; at most 200 rounds)."""
        if getattr(self, "_rates", None) is None:
            return Q
        cells, refs, w, absorbers = self._rates
        q = Q.ravel().astype(float)
        x = q.copy()
        for _ in range(200):
            demand = w * x[refs]
            asked = np.bincount(absorbers, demand, minlength=q.size)
            scale = np.minimum(1.0, np.divide(q, asked, out=np.ones_like(q), where=asked > 0))
            e = demand * scale[absorbers]
            new = q - np.bincount(absorbers, e, minlength=q.size)
            new[cells] = e
            new = np.clip(new, 0.0, None)
            done = np.abs(new - x).max() < 1e-14
            x = new
            if done:
                break
        return (x / x.sum()).reshape(Q.shape)

    # -- prediction -----------------------------------------------------------------------------
    def classify(self, X, posteriors=None) -> _Classified:
        """Per-item predictions of the quantifier(s) for a pool ``X`` (m, d); aggregate slices with :meth:`aggregate`.

        ``posteriors``: h's posteriors of X (m, n) if already computed. Classifying a pool once and
        aggregating many index sets is what the experiment runner does.
        """
        self._check_fitted()
        X = check_X(X, "X", n_features=self.n_features_in_)
        Xh, pred = self._features(X, posteriors)
        where = np.zeros(X.shape[0], dtype=np.int64)
        parts = []
        groups = [np.arange(X.shape[0])] if self._variant != "nxn" else [np.flatnonzero(pred == j)
                                                                      for j in range(self.n_classes_)]
        for q, rows in zip(self.quantifiers_, groups):
            where[rows] = np.arange(rows.size)
            parts.append((rows, None if q is None or rows.size == 0 else q.classify(Xh[rows])))
        return _Classified(pred, parts, where)

    def aggregate(self, classified: _Classified, index=None) -> np.ndarray:
        """Estimated table (n, n) of the sample made of ``index`` (int array into the pool; None = whole pool).

        The table has rows = true class, columns = predicted class, cells >= 0, summing to 1.
        """
        self._check_fitted()
        idx = np.arange(classified.pred.size) if index is None else np.asarray(index)
        if idx.size == 0:
            raise ValueError("index selects no item: a sample needs at least one item")
        n = self.n_classes_
        pred = classified.pred[idx]
        gamma = np.bincount(pred, minlength=n) / idx.size
        if self._variant == "nxn":
            T = np.zeros((n, n))
            for j in range(n):
                sel = idx[pred == j]
                if sel.size == 0:
                    continue
                q = self.quantifiers_[j]
                if q is None:  # no item of V was predicted j: no information, put the mass on the diagonal
                    T[j, j] = gamma[j]
                    continue
                T[:, j] = gamma[j] * self._prevalence(q, classified.parts[j][1], classified.where[sel], n)
            return self._with_rates(T)
        q = self.quantifiers_[0]
        size = n * n if self._variant == "1xn2" else n + 1
        prev = self._prevalence(q, classified.parts[0][1], classified.where[idx], size)
        if self._variant == "1xn2":
            return self._with_rates(prev.reshape(n, n))
        if getattr(self, "_rates", None) is not None:  # the error cell is rated: rows scaled by V's rates
            return self._with_rates(np.diag(prev[:n]))
        return self._place_errors(prev[:n], prev[n], gamma)

    @staticmethod
    def _prevalence(q, preds, rows, size) -> np.ndarray:
        """q's prevalence estimate on the given rows, scattered into a vector over all ``size`` labels."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            est = np.asarray(q.aggregate(preds[rows]), dtype=float)
        est = np.clip(np.nan_to_num(est, nan=0.0), 0.0, None)
        out = np.zeros(size)
        out[np.asarray(q.classes_, dtype=np.int64)] = est
        total = out.sum()
        if total <= 0:
            raise RuntimeError(f"the quantifier {type(q).__name__} returned no prevalence mass; check its input")
        return out / total

    def _place_errors(self, diag, err, gamma) -> np.ndarray:
        raise NotImplementedError  # only the 1x(n+1) variant

    def _predict_tables(self, samples, prevalences, posteriors=None):
        """Tables (k, n, n) of the samples: the samples are stacked into one pool, classified in one pass
        (``posteriors``: optional list of h's (m_k, n) posteriors) and aggregated sample by sample."""
        sizes = np.array([X.shape[0] for X in samples])
        pool = sp.vstack(samples, format="csr") if sp.issparse(samples[0]) else np.vstack(samples)
        post = None if posteriors is None else np.vstack([np.asarray(p, dtype=float) for p in posteriors])
        cl = self.classify(pool, post)
        ends = np.cumsum(sizes)
        return np.stack([self.aggregate(cl, np.arange(e - s, e)) for s, e in zip(sizes, ends)])


class QuAcc1xN2(_QuAcc):
    """QuAcc 1×n² (binary: 1×4; QuAcc 2025, Sect. "The 1×n² Method"): one quantifier over the n² cells.

    Every item of V is relabelled with its cell ``i * n + j`` (true i, predicted j); a multiclass quantifier
    trained on x̂ estimates the cell prevalences of a test sample, which, reshaped (n, n), are the table.
    Cells absent from V get 0.

    Cells the quantifier cannot learn (beyond the paper; shared by the three variants). A cell with fewer than
    :attr:`min_per_cell` (5) items of V, or one that the quantifier's classifier, cross-validated on V, cannot
    tell from the rest of its predicted column (separation below ``min_separation``; typically h's errors when
    they look like its correct items: label noise, Bayes error), is not quantified: it is a *rated* cell
    (``rate_cells_``), estimated from its row's largest quantified cell times V's ratio of the two, which
    prior probability shift leaves unchanged (LEAP 2025, Sect. 4.1), its mass taken from its column's largest
    quantified cell, which the quantifier gives the cell's items. Thin cells are reported with an
    :class:`capshift.InsufficientEvidenceWarning`. Without this, a quantifier asked to split indistinguishable
    cells returns arbitrary splits: KDEy-ML's mixture is then not identifiable and its maximum-likelihood
    weights sit on a vertex (QuAcc n×n with KDEy predicted 0.025 on its own validation set of accuracy 0.93,
    issue 23); SLD's and CC's splits are noisy or biased. h's decisions and posteriors are only part of x̂, so
    QuAcc still works with a degenerate h (one predicted class, one-hot posteriors).

    Parameters
    ----------
    classifier : fitted scikit-learn classifier with ``predict_proba`` over classes 0..n-1
        The classifier h (never refitted).
    quantifier : {"sld", "kdey", "cc"} or quapy AggregativeQuantifier
        SLD/EMQ, KDEy-ML or classify-and-count on a ``LogisticRegression(C, class_weight)``; an instance
        is deep-copied and fitted as is (``C``, ``class_weight``, ``recalib``, ``bandwidth`` then unused).
    measure : str
        Default measure of ``predict`` (:data:`capshift.tables.MEASURES`).
    C, class_weight : float, None or "balanced"
        Regularisation and class weighting of the quantifier's logistic regression (paper's grid:
        C in 10^-3..10^3, class_weight in {None, "balanced"}).
    recalib : None or "bcts" (or QuaPy's "ts", "vs", "nbvs")
        Recalibration of SLD's posteriors (5-fold, QuaPy's ``EMQ_BCTS`` recipe); SLD only.
    bandwidth : float
        KDEy kernel bandwidth (paper's grid 0.01..0.20); KDEy only.
    covariates : bool or sequence of {"mc", "ne", "mis"}
        Extra covariates appended to x̂ (True: all three).
    min_separation : float in [0, 1]
        Smallest separation (mean cross-validated posterior of a cell on its items minus on its column's other
        items, the tpr - fpr of PACC) of a quantified cell (default 0.5: the cell's estimate then has at most
        twice the sampling error of counting it); 0 quantifies every cell with enough items, as the paper does.
    random_state : int or None
        Seed of the logistic regression, of KDEy's folds and of the separation's folds (None: 0 for the latter).

    Attributes
    ----------
    n_classes_, val_table_, val_pred_ : as every CAP estimator; ``quantifiers_`` : list of fitted quantifiers;
    ``rate_cells_`` : bool (n, n), the cells estimated from V's rates.
    """

    _variant = "1xn2"


class QuAccNxN(_QuAcc):
    """QuAcc n×n (binary: 2×2; QuAcc 2025, Sect. "The n×n Method"): one quantifier per predicted class.

    The fraction γ_j of a test sample that h predicts as j is observed; quantifier j, trained on the items
    of V predicted as j, estimates how they split over the true classes, so column j of the table is
    ``γ_j * q̂_j``. Column sums therefore equal the observed γ exactly. If no item of V is predicted j,
    the test items predicted j are put on the diagonal cell (j, j) (no information on their true class);
    if they all have the same true class in V, that class gets all of column j. Parameters as
    :class:`QuAcc1xN2`.
    """

    _variant = "nxn"


class QuAcc1xNp1(_QuAcc):
    """QuAcc 1×(n+1) (binary: 1×3; QuAcc 2025, Sect. "The 1×(n+1) Method"): n correct cells plus one error cell.

    The quantifier estimates the diagonal d̂ (n) and the total error ê = P(C_≠). Only measures computable
    from these are supported: ``accuracy`` for every n and, for n = 2, the F1 measures (F1 = 2TP / (2TP +
    FP + FN) needs only FP + FN); asking for others (macro-F1 for n > 2, balanced accuracy) raises
    ValueError.

    To return a full (n, n) table summing to 1, the error mass ê is placed off the diagonal as follows:
    column j receives ``m_j ∝ max(γ_j - d̂_j, 0)`` (the observed predicted-class fraction left over by the
    correct cell; rescaled so that the m_j sum to ê), or, if every m_j is 0, proportionally to the
    off-diagonal column sums of V's table; inside column j, m_j is split over the rows i ≠ j in proportion
    to V's cells ``C_V[i, j]`` (uniformly if they are all 0). With exact d̂ and ê in the binary case this
    reproduces the true table. Parameters as :class:`QuAcc1xN2`.
    """

    _variant = "1xn+1"

    def supports(self, measure) -> bool:
        """True for accuracy, and for F1 / binary F1 / macro-F1 when n = 2; False otherwise (and for callables)."""
        if callable(measure) or not isinstance(measure, str):
            return False
        name = {"acc": "accuracy", "macro-f1": "macro_f1", "macrof1": "macro_f1"}.get(measure.lower(), measure.lower())
        if name == "accuracy":
            return True
        n = getattr(self, "n_classes_", None)
        if n is None:
            n = len(getattr(self.classifier, "classes_", []))
        return n == 2 and name in ("f1", "binary_f1", "macro_f1")

    def _check_measure(self, measure):
        get_measure(measure)
        if not self.supports(measure):
            raise ValueError(f"QuAcc1xNp1 merges all errors into one cell, so it only knows the diagonal and the "
                             f"total error: it can estimate 'accuracy' (and F1 when n = 2), not {measure!r}. "
                             "Use QuAcc1xN2 or QuAccNxN for measures that need the off-diagonal cells.")

    def _place_errors(self, diag, err, gamma) -> np.ndarray:
        n = self.n_classes_
        V = self.val_table_
        off = V * (1 - np.eye(n))
        m = np.clip(gamma - diag, 0.0, None)
        if m.sum() <= 0:
            m = off.sum(axis=0)
        if m.sum() <= 0:
            m = np.ones(n)
        m = err * m / m.sum()
        T = np.diag(diag)
        for j in range(n):
            w = off[:, j].copy()
            if w.sum() <= 0:
                w = 1.0 - np.eye(n)[j]
            T[:, j] += m[j] * w / w.sum()
        return T


#: The three variants by their short names (used in the registry names ``QuAcc<variant>_<quantifier>``).
VARIANTS = {"1xn2": QuAcc1xN2, "nxn": QuAccNxN, "1xn+1": QuAcc1xNp1}
_VARIANTS = VARIANTS


# ----------------------------------------------------------------------------------------------- model selection
#: A small grid (the default of :class:`QuAccGridSearch`): class weighting and the extra covariates.
SMALL_GRID = {"class_weight": [None, "balanced"], "covariates": [False, True]}
#: The paper's grid (Sect. "Results"): C in 10^-3..10^3, class weighting, covariates; plus per quantifier
#: recalib in {None, "bcts"} (SLD) or bandwidth 0.01..0.20 (KDEy). Use with :func:`paper_grid`.
PAPER_GRID = {"C": [10.0 ** i for i in range(-3, 4)], "class_weight": [None, "balanced"], "covariates": [False, True]}


def paper_grid(quantifier: str) -> dict:
    """The paper's full grid for ``quantifier`` (QuAcc 2025, Sect. "Results"; steps (a)-(e) of the model selection).

    ``quantifier``: "cc", "sld" or "kdey". Returns a dict of lists for scikit-learn's ``ParameterGrid``
    (the ``param_grid`` of :class:`QuAccGridSearch`): :data:`PAPER_GRID` plus ``recalib`` in {None, "bcts"}
    for SLD or ``bandwidth`` in 0.01, 0.02, ..., 0.20 for KDEy. Raises ValueError for another name.
    """
    g = dict(PAPER_GRID)
    if quantifier == "sld":
        g["recalib"] = [None, "bcts"]
    elif quantifier == "kdey":
        g["bandwidth"] = [round(0.01 * i, 2) for i in range(1, 21)]
    elif quantifier != "cc":
        raise ValueError(f"quantifier must be 'cc', 'sld' or 'kdey', got {quantifier!r}")
    return g


class QuAccGridSearch(CAPEstimator):
    """Model selection for QuAcc by accuracy-prediction error on held-out samples of V (QuAcc 2025, Sect. "Results").

    V is split (stratified, ``holdout`` of it held out); every candidate — each estimator of ``estimators``
    (e.g. the three variants, the paper's step (f)) with each parameter combination of ``param_grid``
    (scikit-learn ``ParameterGrid``; the paper's steps (a)-(e)) — is fitted on the rest and scored by the mean
    absolute error of its predicted ``measure`` on ``n_samples`` UPP samples of ``sample_size`` items drawn
    from the held-out part (QuaPy's UPP via :func:`capshift.protocols.upp_indices`). The best candidate is
    refitted on the whole V. Candidates that cannot estimate ``measure`` (1×(n+1) and macro-F1) are skipped.

    Parameters
    ----------
    classifier : fitted classifier h (also set on every candidate).
    estimators : QuAcc estimator or sequence of them (unfitted; cloned).
    param_grid : dict or list of dicts
        Grid over the estimators' constructor parameters (default :data:`SMALL_GRID`; :func:`paper_grid`
        for the paper's).
    measure : str
        Measure whose prediction error is minimised (also the default of ``predict``).
    holdout : float in (0, 1)
        Fraction of V held out for scoring (default 0.4).
    n_samples, sample_size : int
        Scoring samples drawn from the held-out part (defaults 100 and 100).
    random_state : int
        Seeds the split and the samples (must be an int: selection is deterministic).

    Attributes
    ----------
    best_estimator_, best_params_ (dict incl. "variant"), best_score_ (mean AE), cv_results_ (list of dicts).
    """

    needs_proba = True
    #: V is split stratified into a fitting and a scoring part: each needs an item of every class (ValueError below).
    min_per_class = 2
    min_per_class_is_hard = True
    evidence_reason = "it splits V, stratified by class, into a part the candidates are fitted on and a scoring part"

    def __init__(self, classifier, estimators=None, param_grid=None, measure="accuracy", holdout=0.4,
                 n_samples=100, sample_size=100, random_state=0):
        super().__init__(classifier, measure=measure, random_state=random_state)
        self.estimators = estimators
        self.param_grid = param_grid
        self.holdout = holdout
        self.n_samples = n_samples
        self.sample_size = sample_size

    def supports(self, measure) -> bool:
        est = getattr(self, "best_estimator_", None)
        if est is not None:
            return est.supports(measure)
        return any(e.supports(measure) for e in self._candidates_estimators())

    def _grid(self):
        return SMALL_GRID if self.param_grid is None else self.param_grid

    def _candidates_estimators(self):
        ests = self.estimators
        if ests is None:
            ests = [cls(self.classifier) for cls in _VARIANTS.values()]
        elif isinstance(ests, _QuAcc):
            ests = [ests]
        ests = list(ests) if isinstance(ests, (list, tuple)) else []  # anything else is refused below
        if not ests or not all(isinstance(e, _QuAcc) for e in ests):
            raise TypeError("estimators must be a QuAcc estimator or a non-empty sequence of them "
                            "(QuAcc1xN2, QuAccNxN, QuAcc1xNp1)")
        return ests

    def _fit(self, X_val, y_val):
        check_fraction(self.holdout, "holdout", 0.0, 1.0)
        check_seed(self.random_state, "random_state")  # an int: model selection draws random samples
        check_int(self.n_samples, "n_samples")
        check_int(self.sample_size, "sample_size", min_value=self.n_classes_)
        n = self.n_classes_
        grid = list(ParameterGrid(self._grid()))
        y_val = np.asarray(y_val)
        tr, va = train_test_split(np.arange(len(y_val)), test_size=self.holdout, stratify=y_val,
                                  random_state=int(self.random_state))
        X_tr, X_va = X_val[tr], X_val[va]
        y_va = y_val[va]
        samples = upp_indices(y_va, self.sample_size, self.n_samples, int(self.random_state), n_classes=n)
        post_va = self.classifier.predict_proba(X_va)
        pred_va = self.val_pred_[va]  # h's predictions on V, computed once by fit()
        true = get_measure(self.measure)(np.stack([contingency_table(y_va[s], pred_va[s], n) for s in samples]))
        self.cv_results_, best = [], None
        for est in self._candidates_estimators():
            if not est.supports(self.measure):
                continue
            for params in grid:
                cand = clone(est).set_params(classifier=self.classifier, random_state=self.random_state,
                                             measure=self.measure, **params)
                with warnings.catch_warnings():  # the refit of the best on the whole V reports what still applies
                    warnings.simplefilter("ignore", InsufficientEvidenceWarning)
                    cand.fit(X_tr, y_val[tr])
                cl = cand.classify(X_va, post_va)
                pred = get_measure(self.measure)(np.stack([cand.aggregate(cl, s) for s in samples]))
                score = float(np.mean(np.abs(pred - true)))
                rec = {"variant": type(cand).__name__, **params, "mae": score}
                self.cv_results_.append(rec)
                if best is None or score < best[0]:
                    best = (score, cand, rec)
        if best is None:
            raise ValueError(f"no candidate estimator supports measure {self.measure!r}")
        self.best_score_, cand, rec = best
        self.best_params_ = {k: v for k, v in rec.items() if k != "mae"}
        self.best_estimator_ = clone(cand).set_params(classifier=self.classifier).fit(X_val, y_val)

    def _predict_tables(self, samples, prevalences, posteriors=None):
        return self.best_estimator_._predict_tables(samples, prevalences, posteriors)


class QuAccSelected(QuAccGridSearch):
    """``QuAcc(<quantifier>)``: :class:`capshift.quacc.QuAccGridSearch` over the three QuAcc variants with
    ``quantifier`` and :data:`capshift.quacc.SMALL_GRID` (plus BCTS recalibration for SLD), selected on
    accuracy, as in the QuAcc paper's tables. ``estimators``/``param_grid`` None mean exactly that."""

    def __init__(self, classifier, quantifier="sld", estimators=None, param_grid=None, measure="accuracy",
                 holdout=0.4, n_samples=100, sample_size=100, random_state=0):
        super().__init__(classifier, estimators=estimators, param_grid=param_grid, measure=measure,
                         holdout=holdout, n_samples=n_samples, sample_size=sample_size, random_state=random_state)
        self.quantifier = quantifier

    def _candidates_estimators(self):
        if self.estimators is not None:
            return super()._candidates_estimators()
        return [cls(self.classifier, quantifier=self.quantifier) for cls in VARIANTS.values()]

    def _grid(self):
        if self.param_grid is not None:
            return self.param_grid
        grid = dict(SMALL_GRID)
        if self.quantifier == "sld":
            grid["recalib"] = [None, "bcts"]
        return grid


# ----------------------------------------------------------------------------------------------- a synthetic PPS problem
def gaussian_split(n_classes: int = 3, n_train: int = 2000, n_val: int = 2000, n_test: int = 6000, dim: int = 2,
                   separation: float = 1.2, seed: int = 0):
    """A synthetic PPS problem: ``n_classes`` Gaussian blobs, as a :class:`capshift.datasets.Split`.

    Class i has mean ``separation * e_i`` in ``dim`` dimensions (``e_i`` the i-th unit vector; when
    ``dim < n_classes`` the last classes sit at the origin, so they are harder than the others) and identity
    covariance; every part has uniform class prevalence (L: ``n_train`` items, V: ``n_val``, the test pool U:
    ``n_test``), drawn independently with ``seed``. So P(X|Y) is the same in L, V and U and any PPS comes from
    the protocol's samples (e.g. :func:`capshift.protocols.upp_indices`). Used by the chapter's study of
    QuAcc's configuration (book ``quacc.md``). Returns a Split with dense float64 X and int64 y.
    Raises ValueError for ``n_classes`` < 2, non-positive sizes or ``dim``, or a ``separation`` <= 0.
    """
    n = check_int(n_classes, "n_classes", min_value=2)
    sizes = [check_int(v, name) for v, name in ((n_train, "n_train"), (n_val, "n_val"), (n_test, "n_test"))]
    dim = check_int(dim, "dim")
    sep = check_fraction(separation, "separation", 0.0, np.inf)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    centres = sep * np.eye(n, dim)
    parts = []
    for m in sizes:
        y = rng.integers(0, n, m)
        parts += [centres[y] + rng.standard_normal((m, dim)), y.astype(np.int64)]
    return Split(f"gauss{n}", *parts, np.arange(n), n)
