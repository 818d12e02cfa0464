"""Small synthetic problems shared by the contract test and the bad-input probe (fast: a few ms to fit)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from sklearn.linear_model import LogisticRegression

from capshift.datasets import Split


def gaussians(m, n_classes=2, seed=0, prev=None, d=3):
    """``m`` items of ``n_classes`` Gaussian blobs in ``d`` dimensions: X float (m, d), y int (m,)."""
    rng = np.random.default_rng(seed)
    prev = np.full(n_classes, 1 / n_classes) if prev is None else np.asarray(prev, float)
    y = rng.choice(n_classes, size=m, p=prev)
    centres = 1.2 * np.eye(n_classes, d)
    return centres[y] + rng.normal(size=(m, d)), y


@lru_cache(maxsize=None)
def problem(n_classes=2):
    """(h, X_V, y_V, X_U, y_U): h a LogisticRegression trained on 300 items; V 400 items, U 300 items."""
    X_L, y_L = gaussians(300, n_classes, seed=1)
    X_V, y_V = gaussians(400, n_classes, seed=2)
    X_U, y_U = gaussians(300, n_classes, seed=3)
    h = LogisticRegression().fit(X_L, y_L)
    return h, X_V, y_V, X_U, y_U


@lru_cache(maxsize=None)
def split(n_classes=2):
    """A :class:`capshift.datasets.Split` of the synthetic problem (for the experiment runner)."""
    X_L, y_L = gaussians(300, n_classes, seed=1)
    X_V, y_V = gaussians(400, n_classes, seed=2)
    X_U, y_U = gaussians(600, n_classes, seed=3)
    return Split("synthetic", X_L, y_L, X_V, y_V, X_U, y_U, np.arange(n_classes), n_classes)


def table(n=2, seed=0):
    """A random (n, n) contingency table with every row non-empty, summing to 1."""
    rng = np.random.default_rng(seed)
    T = rng.random((n, n)) + 0.05
    return T / T.sum()
