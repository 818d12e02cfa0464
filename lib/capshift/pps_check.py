"""Is prior probability shift plausible for a batch? A classifier two-sample test against V reweighted to the
batch's estimated prevalence.

Every CAP method of capshift assumes prior probability shift (PPS): the class-conditional distributions P(x|y)
of the batch are those of the validation set V, only the prevalence q changes. Under PPS the batch is then a
sample from the mixture ``sum_i q_i P(x|y=i)``, which V *reweighted to q* represents. :func:`pps_test` draws
from V a reference sample at the batch's estimated prevalence q-hat (stratified, without replacement) and asks a
domain classifier to tell the batch from the reference: the *classifier two-sample test* (C2ST) of Lopez-Paz &
Oquab, "Revisiting classifier two-sample tests", ICLR 2017 (Sect. 2: fit on one half, test on the other; the
domain-classifier shift detector of Rabanser, Günnemann & Lipton, "Failing loudly", NeurIPS 2019, Sect. 3).
The statistic is the held-out AUC of the domain classifier; under the null (batch and reference from the same
distribution, the two halves balanced) its held-out scores are independent of the domain labels, so the
one-sided Mann-Whitney U test gives an exact p-value (AUC = U / (n_batch * n_ref)). A small p-value says the
batch is not a reweighting of V: P(x|y) changed (covariate or concept shift that moves P(x)), and the batch's
CAP estimate is unreliable.

What it cannot see: a shift that leaves P(x) a reweighting of V's classes, such as concept shift with P(x)
unchanged (Gonzalez et al. 2024, Sect. 4.3): no test on unlabelled data can. The book's your_data chapter
measures its size (false-alarm rate on PPS samples) and power under the dataset-shift protocols.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.stats import mannwhitneyu
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ._validation import check_distribution, check_every_class, check_fraction, check_int, check_labels, check_seed, check_X

__all__ = ["PPSTest", "pps_test", "reference_sample", "DEFAULT_LEVEL", "DEFAULT_MIN_ITEMS"]

#: Nominal false-alarm rate of the diagnostic (a batch is "PPS doubtful" when its p-value is below it).
DEFAULT_LEVEL = 0.05
#: Fewest items of the batch and of the reference for a test (each half then holds at least 10 of each).
DEFAULT_MIN_ITEMS = 20


@dataclass(frozen=True)
class PPSTest:
    """The result of :func:`pps_test`: ``auc`` (held-out AUC of the domain classifier, 0.5 = indistinguishable),
    ``pvalue`` (one-sided Mann-Whitney), ``n_batch`` / ``n_reference`` (items used from each side), ``doubtful``
    (``pvalue < level``) and ``level``. ``pvalue`` is NaN and ``doubtful`` False only when the batch or the
    reference has fewer than ``min_items`` items (``note`` says so)."""

    auc: float
    pvalue: float
    n_batch: int
    n_reference: int
    level: float
    doubtful: bool
    note: str = ""


def reference_sample(y_val, prevalence, size: int, seed: int) -> np.ndarray:
    """Indices into ``y_val`` of a stratified sample *without replacement* at ``prevalence`` (n,), of at most
    ``size`` items: ``round(q_i * s)`` items of class i, with ``s <= size`` the largest size V can supply without
    repeating an item (a repeated item would let a domain classifier memorise it). Returns int64 (s,), shuffled.
    Raises ValueError for a bad prevalence, labels or size."""
    y = np.asarray(y_val)
    n = len(np.atleast_1d(prevalence))
    y = check_labels(y, n, "y_val")
    q = check_distribution(prevalence, "prevalence", n_classes=n)
    size = check_int(size, "size")
    counts = np.bincount(y, minlength=n)
    with np.errstate(divide="ignore"):
        cap = np.where(q > 0, np.floor(counts / np.where(q > 0, q, 1.0)), np.inf)
    s = int(min(size, cap.min()))
    want = np.round(q * s).astype(int)
    want = np.minimum(want, counts)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    idx = np.concatenate([rng.choice(np.flatnonzero(y == i), want[i], replace=False) for i in range(n)])
    return rng.permutation(idx.astype(np.int64))


def _rows(X, idx):
    return X[idx] if not sp.issparse(X) else X[idx]


def pps_test(X_batch, X_val, y_val, prevalence, level: float = DEFAULT_LEVEL, classifier=None,
             min_items: int = DEFAULT_MIN_ITEMS, random_state: int = 0) -> PPSTest:
    """Classifier two-sample test of "the batch is V reweighted to ``prevalence``" (PPS), see the module doc.

    Parameters
    ----------
    X_batch : array (m, d), numeric, finite (the batch, in the feature space the CAP methods read).
    X_val, y_val : V's items (m_V, d) and class codes (m_V,) in 0..n-1, every class present.
    prevalence : array (n,), the batch's estimated prevalence q-hat (e.g. the CAP method's quantifier's).
    level : float in (0, 1), the test's nominal false-alarm rate.
    classifier : unfitted scikit-learn classifier with ``predict_proba`` (default: standardised logistic
        regression), the domain classifier.
    min_items : int >= 4: below this many items on either side the test is not run (NaN p-value, a note).
    random_state : int, seed of the reference draw and the halving.

    Both sides are cut to the same size s (the reference at most what V supplies without replacement, the batch
    subsampled if larger), each split in halves; the domain classifier is fitted on one half of each side and
    scores the other halves. Returns a :class:`PPSTest`. Raises ValueError/TypeError naming the argument.
    """
    Xb = check_X(X_batch, "X_batch")
    Xv = check_X(X_val, "X_val", n_features=Xb.shape[1])
    q = check_distribution(prevalence, "prevalence")
    yv = check_labels(y_val, q.shape[-1], "y_val", n_items=Xv.shape[0])
    check_every_class(yv, q.shape[-1], "y_val")
    level = check_fraction(level, "level")
    min_items = check_int(min_items, "min_items", min_value=4)
    seed = check_seed(random_state, "random_state")
    ref = reference_sample(yv, q, Xb.shape[0], seed)
    s = min(len(ref), Xb.shape[0])
    if s < min_items:
        return PPSTest(float("nan"), float("nan"), Xb.shape[0], len(ref), level, False,
                       f"not tested: {s} items on the smaller side, fewer than min_items={min_items}")
    rng = np.random.default_rng([seed, 1])
    b_idx = rng.permutation(Xb.shape[0])[:s]
    ref = ref[:s]
    half = s // 2
    A = sp.vstack([_rows(Xb, b_idx), _rows(Xv, ref)]) if sp.issparse(Xb) else np.vstack([Xb[b_idx], Xv[ref]])
    d = np.r_[np.ones(s, dtype=int), np.zeros(s, dtype=int)]
    fit_rows = np.r_[np.arange(half), s + np.arange(half)]
    test_rows = np.r_[np.arange(half, s), s + np.arange(half, s)]
    clf = clone(classifier) if classifier is not None else make_pipeline(
        StandardScaler(with_mean=not sp.issparse(A)), LogisticRegression(max_iter=1000))
    clf.fit(A[fit_rows], d[fit_rows])
    score = clf.predict_proba(A[test_rows])[:, 1]
    dt = d[test_rows]
    res = mannwhitneyu(score[dt == 1], score[dt == 0], alternative="greater")
    n1, n0 = int((dt == 1).sum()), int((dt == 0).sum())
    auc = float(res.statistic) / (n1 * n0)
    p = float(res.pvalue)
    note = "" if s == Xb.shape[0] else f"tested on {s} of the batch's {Xb.shape[0]} items (V supplies {s} at q-hat)"
    return PPSTest(auc, p, Xb.shape[0], s, level, bool(p < level), note)
