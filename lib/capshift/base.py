"""The estimator interface every CAP method in capshift follows (scikit-learn style).

A CAP method is built around an already-trained classifier h (never refitted), is fitted on a
labelled validation set V drawn from the training distribution, and predicts the contingency
table (``(n, n)``, rows true, columns predicted, sums to 1; see :mod:`capshift.tables`) or a
measure of h on an unlabelled test sample U::

    est = LEAP(h, quantifier="kdey", measure="accuracy", random_state=0).fit(X_val, y_val)
    est.predict_table(X_test)          # (n, n)
    est.predict(X_test)                # float, the chosen measure
    est.predict_table_batch([X1, X2])  # (2, n, n)

Labels are class indices ``0..n-1``; ``n`` is ``len(classifier.classes_)``, which must be
``0..n-1`` too (encode labels before training h).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .tables import contingency_table, get_measure

__all__ = ["CAPEstimator", "check_classifier", "check_sample"]


def check_classifier(classifier, need_proba: bool = False) -> int:
    """Check h is a fitted classifier over classes 0..n-1; return n. Raises TypeError/ValueError."""
    if not hasattr(classifier, "predict"):
        raise TypeError(f"classifier must be a fitted scikit-learn classifier with predict(), "
                        f"got {type(classifier).__name__}")
    try:
        check_is_fitted(classifier)
    except NotFittedError as e:
        raise ValueError("classifier must already be trained (CAP methods never fit it): call "
                         "classifier.fit(X_L, y_L) first") from e
    classes = np.asarray(getattr(classifier, "classes_", []))
    n = classes.size
    if n < 2 or not np.array_equal(classes, np.arange(n)):
        raise ValueError(f"classifier.classes_ must be 0..n-1 with n >= 2, got {classes.tolist()}; "
                         "encode the labels (e.g. with capshift.datasets.load) before training")
    if need_proba and not hasattr(classifier, "predict_proba"):
        raise TypeError(f"this method needs posterior probabilities, but {type(classifier).__name__} has no "
                        "predict_proba (for SVC pass probability=True)")
    return n


def check_sample(X, name: str = "X"):
    """Check a sample has at least one item; return it unchanged (dense or sparse)."""
    if X is None or not hasattr(X, "shape") or len(X.shape) != 2:
        raise ValueError(f"{name} must be a 2-d array (items x features), got {type(X).__name__}")
    if X.shape[0] < 1:
        raise ValueError(f"{name} is empty: a test sample needs at least one item")
    return X


class CAPEstimator(BaseEstimator):
    """Base class: fit on V, predict the test table; subclasses implement ``_fit`` and ``_predict_tables``.

    Parameters
    ----------
    classifier : fitted scikit-learn classifier
        The classifier h whose accuracy is predicted.
    measure : str or callable
        Default measure of :meth:`predict` (see :data:`capshift.tables.MEASURES`).
    random_state : int or None
        Seed for every random choice the method makes.
    """

    #: Measures the method can estimate; None means "any measure computable from the table".
    supported_measures: tuple | None = None

    def __init__(self, classifier, measure="accuracy", random_state=None):
        self.classifier = classifier
        self.measure = measure
        self.random_state = random_state

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X_val, y_val):
        """Fit on the validation set: ``X_val`` (m, d), ``y_val`` (m,) int in 0..n-1. Returns self."""
        self.n_classes_ = check_classifier(self.classifier)
        X_val = check_sample(X_val, "X_val")
        y_val = np.asarray(y_val)
        if y_val.shape != (X_val.shape[0],):
            raise ValueError(f"y_val must have shape ({X_val.shape[0]},), got {y_val.shape}")
        self.val_pred_ = np.asarray(self.classifier.predict(X_val))
        self.val_table_ = contingency_table(y_val, self.val_pred_, self.n_classes_)
        self._check_measure(self.measure)
        self._fit(X_val, y_val)
        return self

    def _fit(self, X_val, y_val):
        pass

    # -- prediction -----------------------------------------------------------------------------
    def predict_table_batch(self, samples, prevalences=None) -> np.ndarray:
        """Estimated tables for a list of samples, shape (k, n, n).

        ``prevalences`` (k, n): true prevalences, needed only by oracle-quantifier methods.
        """
        self._check_fitted()
        samples = [check_sample(X, f"samples[{i}]") for i, X in enumerate(samples)]
        if prevalences is not None:
            prevalences = np.asarray(prevalences, dtype=float).reshape(len(samples), self.n_classes_)
        return self._predict_tables(samples, prevalences)

    def predict_table(self, X, prevalence=None) -> np.ndarray:
        """Estimated (n, n) table of h on the sample ``X`` (rows true, columns predicted, sums to 1)."""
        prev = None if prevalence is None else np.asarray(prevalence, dtype=float)[None]
        return self.predict_table_batch([X], prev)[0]

    def predict(self, X, measure=None, prevalence=None) -> float:
        """Estimated value of ``measure`` (default: the constructor's) of h on ``X``, a float."""
        measure = self.measure if measure is None else measure
        self._check_measure(measure)
        return float(get_measure(measure)(self.predict_table(X, prevalence)))

    def predict_batch(self, samples, measure=None, prevalences=None, posteriors=None) -> np.ndarray:
        """Estimated ``measure`` for each of k samples, shape (k,).

        ``posteriors``: optional list of h's posterior matrices, one (m_k, n) array per sample,
        precomputed by the caller (the experiment runner computes them once for the whole test
        pool); methods that work from posteriors use them instead of calling h again. The default
        applies the measure to :meth:`predict_table_batch`; measure-only methods override it.
        """
        measure = self.measure if measure is None else measure
        self._check_measure(measure)
        return np.asarray(get_measure(measure)(self.predict_table_batch(samples, prevalences)), dtype=float)

    def predict_measures(self, samples, measures, prevalences=None, posteriors=None) -> dict:
        """Estimated values of several measures at once: ``{measure: float array (k,)}``.

        Measures the method does not support are left out (no entry), so a results table leaves
        those cells empty. Methods that estimate a table compute it once per sample for all the
        measures; the default calls :meth:`predict_batch` per measure. Arguments as there.
        """
        return {m: self.predict_batch(samples, m, prevalences, posteriors) for m in measures if self.supports(m)}

    def supports(self, measure) -> bool:
        """Whether the method can estimate ``measure`` (False for measure-only methods asked for others).

        Names and aliases are resolved (``"acc"`` is ``"accuracy"``); raises ValueError for an unknown name.
        """
        if self.supported_measures is None:
            get_measure(measure)
            return True
        f = get_measure(measure)
        return any(f is get_measure(m) for m in self.supported_measures)

    def _predict_tables(self, samples, prevalences):
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------------
    def _check_measure(self, measure):
        get_measure(measure)
        if not self.supports(measure):
            raise ValueError(f"{type(self).__name__} only estimates {list(self.supported_measures)}, "
                             f"not {measure!r}")

    def _check_fitted(self):
        if not hasattr(self, "val_table_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(X_val, y_val) first")

    def _pred_prev(self, X) -> np.ndarray:
        """Fraction of ``X`` that h assigns to each class (gamma, LEAP Eq. 10), shape (n,)."""
        return np.bincount(np.asarray(self.classifier.predict(X)), minlength=self.n_classes_) / X.shape[0]
