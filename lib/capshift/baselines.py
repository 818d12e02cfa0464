"""CAP baselines the LEAP family is compared against.

So far: :class:`Naive`, the IID assumption (LEAP 2025, Sect. 5.5): the classifier's table on the
validation set V is taken as its table on any test sample, so every measure is V's measure.
"""
from __future__ import annotations

import numpy as np

from .base import CAPEstimator

__all__ = ["Naive"]


class Naive(CAPEstimator):
    """Predict V's contingency table for every test sample (IID assumption; LEAP 2025, Sect. 5.5).

    Parameters
    ----------
    classifier : fitted scikit-learn classifier over classes 0..n-1
    measure : str, default measure of ``predict``
    random_state : unused (kept for a uniform constructor)
    """

    def _predict_tables(self, samples, prevalences):
        return np.repeat(self.val_table_[None], len(samples), axis=0)

    def tables_from_prevalences(self, pred_prev, est_prev=None) -> np.ndarray:
        """V's table repeated for each of the k samples of ``pred_prev`` (k, n); shape (k, n, n)."""
        self._check_fitted()
        return np.repeat(self.val_table_[None], len(np.atleast_2d(pred_prev)), axis=0)
