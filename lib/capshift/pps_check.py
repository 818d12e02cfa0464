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
one-sided Mann-Whitney U test gives an exact p-value (AUC = U / (n_batch * n_ref)). Two refinements, each
measured in the your_data chapter to bring the false-alarm rate to its nominal level: only distinct items are
compared (a repeated item with a copy on each side of the halving is recognised, not detected), and, given h's
posteriors, the rank test is stratified by them (the density ratio of a PPS batch to V depends on x only through
P_V(y|x), so an error of q-hat does not leak into the test). A small p-value says the
batch is not a reweighting of V: P(x|y) changed (covariate or concept shift that moves P(x)), and the batch's
CAP estimate is unreliable.

What it cannot see: a shift that leaves P(x) a reweighting of V's classes, such as concept shift with P(x)
unchanged (Gonzalez et al. 2024, Sect. 4.3): no test on unlabelled data can. The book's your_data chapter
measures its size (false-alarm rate on PPS samples) and power under the dataset-shift protocols.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import mannwhitneyu
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .validation import check_distribution, check_every_class, check_fraction, check_int, check_labels, check_seed, check_X
from .tables import class_counts

__all__ = ["PPSTest", "pps_test", "reference_sample", "stratified_rank_test", "detectable_auc", "DEFAULT_LEVEL",
           "DEFAULT_MIN_ITEMS", "DEFAULT_MAX_ITEMS"]

#: Nominal false-alarm rate of the diagnostic (a batch is "PPS doubtful" when its p-value is below it).
DEFAULT_LEVEL = 0.05
#: Fewest items of the batch and of the reference for a test (each half then holds at least 10 of each).
DEFAULT_MIN_ITEMS = 20
#: Most items of the batch a test reads (a seeded random subsample of a larger batch): the cost of a test stays
#: bounded (one logistic regression on at most this many items a side) whatever the batch's size; its power at
#: this size is :func:`detectable_auc` (an AUC of about 0.514 is detected with probability 0.8 at level 0.05).
DEFAULT_MAX_ITEMS = 10_000


def detectable_auc(n_items: int, level: float = DEFAULT_LEVEL, power: float = 0.8) -> float:
    """The held-out AUC that :func:`pps_test` detects with probability ``power`` when it reads ``n_items`` items a
    side (half of each fits the domain classifier, half is ranked): ``0.5 + (z_(1-level) + z_power) * se``, with
    ``se = sqrt((n1 + n0 + 1) / (12 n1 n0))`` the standard error of the Mann-Whitney AUC under the null (Hanley &
    McNeil 1982, Eq. 2 at AUC 0.5), ``n1 = n0 = n_items - n_items // 2``. A normal approximation, for stating the
    test's power at a batch size; raises ValueError for fewer than 2 items or a level / power outside (0, 1)."""
    from scipy.stats import norm
    n_items = check_int(n_items, "n_items", min_value=2)
    level, power = check_fraction(level, "level"), check_fraction(power, "power")
    k = n_items - n_items // 2
    se = np.sqrt((2 * k + 1) / (12.0 * k * k))
    return float(0.5 + (norm.ppf(1 - level) + norm.ppf(power)) * se)


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
    ``size`` items: ``s`` items, with ``s <= size`` the largest size V can supply without repeating an item (a
    repeated item would let a domain classifier memorise it), ``floor(q_i * s)`` of class i and one more for the
    classes of largest remainder (largest remainders: rounding each class could give s + 1). Returns int64 (s,),
    shuffled. Raises ValueError for a bad prevalence, labels or size."""
    y = np.asarray(y_val)
    n = len(np.atleast_1d(prevalence))
    y = check_labels(y, n, "y_val")
    q = check_distribution(prevalence, "prevalence", n_classes=n)
    size = check_int(size, "size")
    counts = np.bincount(y, minlength=n)
    with np.errstate(divide="ignore"):
        cap = np.where(q > 0, np.floor(counts / np.where(q > 0, q, 1.0)), np.inf)
    s = int(min(size, cap.min()))
    want = np.minimum(class_counts(q, s), counts)
    rng = np.random.default_rng(check_seed(seed, "seed"))
    idx = np.concatenate([rng.choice(np.flatnonzero(y == i), want[i], replace=False) for i in range(n)])
    return rng.permutation(idx.astype(np.int64))


def _distinct(X) -> np.ndarray:
    """Sorted indices of the first occurrence of each distinct row of X (dense or sparse). Linear: rows are hashed
    (pandas' ``hash_pandas_object``) and rows whose hash repeats are compared with the first row of that hash; a
    hash collision between different rows (never seen; p ~ m^2 / 2^65) falls back to ``np.unique(axis=0)``."""
    A = X.toarray() if sp.issparse(X) else np.asarray(X)
    codes, firsts = pd.factorize(pd.util.hash_pandas_object(pd.DataFrame(A), index=False).to_numpy())
    first = np.unique(codes, return_index=True)[1]  # codes number the hashes in order of first appearance
    repeat = np.flatnonzero(first[codes] != np.arange(len(codes)))
    if repeat.size and not np.array_equal(A[repeat], A[first[codes[repeat]]]):
        return np.sort(np.unique(A, axis=0, return_index=True)[1])
    return np.sort(first)


def stratified_rank_test(scores, is_batch, strata) -> tuple[float, float]:
    """One-sided van Elteren test (a Mann-Whitney test stratified by ``strata``, each stratum's rank sum weighted by
    1/(N_k + 1); van Elteren, Bull. Int. Stat. Inst. 37, 1960) that batch items score higher than reference items.
    Returns ``(auc, pvalue)``: the pooled within-stratum AUC and the normal-approximation p-value (tie-corrected
    variances). Strata with one side empty carry no information and are skipped."""
    from scipy.stats import norm, rankdata
    num = var = 0.0
    u_sum = pairs = 0.0
    for k in np.unique(strata):
        m = strata == k
        s, b = scores[m], is_batch[m]
        n1, n0 = int(b.sum()), int((~b).sum())
        if n1 == 0 or n0 == 0:
            continue
        r = rankdata(s)
        N = n1 + n0
        u = r[b].sum() - n1 * (n1 + 1) / 2
        _, t = np.unique(s, return_counts=True)
        v = n1 * n0 / 12 * ((N + 1) - (t ** 3 - t).sum() / (N * (N - 1)))
        w = 1.0 / (N + 1)
        num += w * (u - n1 * n0 / 2)
        var += w * w * v
        u_sum, pairs = u_sum + u, pairs + n1 * n0
    if pairs == 0 or var <= 0:
        return 0.5, 1.0
    return float(u_sum / pairs), float(norm.sf(num / np.sqrt(var)))


def pps_test(X_batch, X_val, y_val, prevalence, level: float = DEFAULT_LEVEL, classifier=None,
             posteriors_batch=None, posteriors_val=None, n_bins: int = 4,
             min_items: int = DEFAULT_MIN_ITEMS, max_items=DEFAULT_MAX_ITEMS, random_state: int = 0) -> PPSTest:
    """Classifier two-sample test of "the batch is V reweighted to ``prevalence``" (PPS), see the module doc.

    Parameters
    ----------
    X_batch : array (m, d), numeric, finite (the batch, in the feature space the CAP methods read).
    X_val, y_val : V's items (m_V, d) and class codes (m_V,) in 0..n-1, every class present.
    prevalence : array (n,), the batch's estimated prevalence q-hat (e.g. the CAP method's quantifier's).
    level : float in (0, 1), the test's nominal false-alarm rate.
    classifier : unfitted scikit-learn classifier with ``predict_proba`` (default: standardised logistic
        regression), the domain classifier.
    posteriors_batch, posteriors_val : arrays (m, n) and (m_V, n) or None: posterior probabilities P_V(y|x) of the
        items (h's ``predict_proba``). Given, the rank test is stratified (:func:`stratified_rank_test`) by the
        class of the largest posterior and ``n_bins`` quantile bins of that posterior. Why: under PPS the density
        ratio of batch to V depends on x only through P_V(y|x), so within a stratum of equal posteriors batch and
        reference have the same distribution *whatever the prevalence*: an error of q-hat then does not raise the
        false-alarm rate (with the unstratified test it does, measured in the your_data chapter).
    min_items : int >= 4: below this many items on either side the test is not run (NaN p-value, a note).
    max_items : int >= min_items or None: a larger batch is tested on a seeded random subsample of this many of its
        items (default :data:`DEFAULT_MAX_ITEMS`; None: the whole batch), so that the cost per batch is bounded;
        the power at that size is :func:`detectable_auc`.
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
    if max_items is not None:
        max_items = check_int(max_items, "max_items", min_value=min_items)
    Pb_all = Pv_all = None
    if posteriors_batch is not None and posteriors_val is not None:
        Pb_all = check_distribution(posteriors_batch, "posteriors_batch", n_classes=q.shape[-1])
        Pv_all = check_distribution(posteriors_val, "posteriors_val", n_classes=q.shape[-1])
        if Pb_all.shape[0] != Xb.shape[0] or Pv_all.shape[0] != Xv.shape[0]:
            raise ValueError(f"posteriors_batch / posteriors_val must have one row per item: got {Pb_all.shape[0]} "
                             f"and {Pv_all.shape[0]} rows for {Xb.shape[0]} and {Xv.shape[0]} items")
    elif posteriors_batch is not None or posteriors_val is not None:
        raise ValueError("posteriors_batch and posteriors_val go together: pass both or neither")
    # a repeated item (sampling with replacement, or discrete features) with one copy on each side of the halving
    # is recognised by the domain classifier: the test reads distinct items only
    m_batch = Xb.shape[0]
    capped = max_items is not None and m_batch > max_items
    if capped:
        cut = np.sort(np.random.default_rng([seed, 2]).choice(m_batch, max_items, replace=False))
        Xb = Xb[cut]
        Pb_all = None if Pb_all is None else Pb_all[cut]
    n_read = Xb.shape[0]
    keep_b = _distinct(Xb)
    n_distinct = len(keep_b)
    keep_v = _distinct(Xv)
    Xb, Xv, yv = Xb[keep_b], Xv[keep_v], yv[keep_v]
    if Pb_all is not None:
        Pb_all, Pv_all = Pb_all[keep_b], Pv_all[keep_v]
    check_every_class(yv, q.shape[-1], "y_val")
    ref = reference_sample(yv, q, Xb.shape[0], seed)
    s = min(len(ref), Xb.shape[0])
    if s < min_items:
        return PPSTest(float("nan"), float("nan"), m_batch, len(ref), level, False,
                       f"not tested: {s} items on the smaller side, fewer than min_items={min_items}")
    rng = np.random.default_rng([seed, 1])
    b_idx = rng.permutation(Xb.shape[0])[:s]
    ref = ref[:s]
    half = s // 2
    A = sp.vstack([Xb[b_idx], Xv[ref]]) if sp.issparse(Xb) else np.vstack([Xb[b_idx], Xv[ref]])
    d = np.r_[np.ones(s, dtype=int), np.zeros(s, dtype=int)]
    fit_rows = np.r_[np.arange(half), s + np.arange(half)]
    test_rows = np.r_[np.arange(half, s), s + np.arange(half, s)]
    clf = clone(classifier) if classifier is not None else make_pipeline(
        StandardScaler(with_mean=not sp.issparse(A)), LogisticRegression(max_iter=1000))
    clf.fit(A[fit_rows], d[fit_rows])
    score = clf.predict_proba(A[test_rows])[:, 1]
    dt = d[test_rows]
    if Pb_all is None:
        res = mannwhitneyu(score[dt == 1], score[dt == 0], alternative="greater")
        n1, n0 = int((dt == 1).sum()), int((dt == 0).sum())
        auc, p = float(res.statistic) / (n1 * n0), float(res.pvalue)
    else:
        n_bins = check_int(n_bins, "n_bins")
        P = np.vstack([Pb_all[b_idx], Pv_all[ref]])[test_rows]
        top, conf = P.argmax(axis=1), P.max(axis=1)
        strata = np.zeros(len(P), dtype=int)
        for c in np.unique(top):
            m = top == c
            edges = np.quantile(conf[m], np.linspace(0, 1, n_bins + 1)[1:-1])
            strata[m] = c * n_bins + np.searchsorted(edges, conf[m], side="right")
        auc, p = stratified_rank_test(score, dt == 1, strata)
    why = [reason for reason, applies in ((f"a random {max_items}", capped), ("distinct ones", n_distinct < n_read),
                                          (f"V supplies {len(ref)} at q-hat", len(ref) < n_distinct)) if applies]
    note = "" if s == m_batch else f"tested on {s} of the batch's {m_batch} items ({', '.join(why)})"
    return PPSTest(auc, p, m_batch, s, level, bool(p < level), note)
