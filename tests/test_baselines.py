"""Naive baseline: V's table for every sample (IID assumption)."""
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from capshift.baselines import Naive
from capshift.tables import accuracy, contingency_table


def test_naive_predicts_validation_table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)); y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    h = LogisticRegression().fit(X[:200], y[:200])
    est = Naive(h).fit(X[200:], y[200:])
    C_V = contingency_table(y[200:], h.predict(X[200:]), 2)
    np.testing.assert_array_equal(est.predict_table(X[:10]), C_V)
    assert est.predict(X[:50]) == pytest.approx(accuracy(C_V))
    assert est.predict_table_batch([X[:5], X[5:9]]).shape == (2, 2, 2)
    assert est.tables_from_prevalences(np.full((3, 2), 0.5)).shape == (3, 2, 2)
    with pytest.raises(Exception, match="not fitted"):
        Naive(h).predict(X)
