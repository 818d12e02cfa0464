"""Significance marks of the papers' tables: the best method per group and paired Wilcoxon tests against it.

:func:`significance` is the test (scipy's ``wilcoxon`` on values paired by test sample); :func:`wilcoxon_marks`
formats a table with the dataset-shift paper's marks (González, Moreo & Sebastiani, DMKD 2024, Sect. 5.2: bold
best, ‡ p >= 0.05, † 0.001 < p < 0.05). The LEAP paper's Tables 1-13 (bold best, † for p >= 0.01, its Sect. 5.3)
use :func:`significance` through :mod:`capshift.reference`. Works on any tidy frame (method, group, pair, value
columns); imports nothing of capshift.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu, norm, wilcoxon

__all__ = ["significance", "wilcoxon_marks", "min_wilcoxon_p", "against_reference", "compare_groups", "power",
           "samples_needed", "verdict", "RANK_ARE", "MIN_POWER"]

#: Asymptotic relative efficiency of the rank tests (Wilcoxon signed-rank, Mann-Whitney U) to the t test on
#: normal data, 3/π (Hodges & Lehmann 1956): a rank test on n samples has about the power of a t test on
#: ``RANK_ARE * n``.
RANK_ARE = 3 / np.pi
#: A test with less power than this to see the paper's effect cannot support "not reproduced".
MIN_POWER = 0.8


def significance(results: pd.DataFrame, by="dataset", pair=("sample",), method: str = "method",
                 value: str = "ae") -> pd.DataFrame:
    """The best method per group and a paired Wilcoxon signed-rank test of every other method against it.

    In each group of ``by`` (e.g. a dataset of one table) the methods with the lowest mean of ``value`` are
    the best (several when their means tie, to 1e-12); every other method is compared with the first best
    by ``scipy.stats.wilcoxon`` on the values paired by ``pair`` (the same test samples), p = 1 when the
    paired differences are all zero (to ``numpy.allclose``). A method with no rows in a group is absent from that group (a missing
    table cell); a method with some but not all of the group's keys raises, since the values would not be
    paired. Used by :func:`wilcoxon_marks` (the dataset-shift paper's bands) and by the experiments chapter
    (the LEAP paper's Tables 1-13: bold best, dagger for p >= 0.01, its Sect. 5.3).

    Parameters
    ----------
    results : DataFrame with the columns ``by``, ``pair``, ``method`` and ``value``.
    by : str or list of str, or None for one group of all rows.
    pair : tuple of str
        Columns identifying a paired observation within a group (e.g. ``("sample",)``).

    Returns
    -------
    DataFrame with one row per (group, method present): the ``by`` columns, ``method``, ``mean`` (float),
    ``n`` (int), ``best`` (bool), ``pvalue`` (float; NaN for the best). Groups and methods in order of
    appearance.

    Raises
    ------
    ValueError
        A missing column, or a method whose values in a group are not paired with the best's.
    """
    by = [] if by is None else [by] if isinstance(by, str) else list(by)
    pair = [pair] if isinstance(pair, str) else list(pair)
    need = set(by) | set(pair) | {method, value}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        have = set(results.columns) if isinstance(results, pd.DataFrame) else set()
        raise ValueError(f"results lack the columns {sorted(need - have)}: pass a tidy frame with columns "
                         f"{sorted(need)}")
    if results.duplicated(by + pair + [method]).any():
        raise ValueError(f"results have several {value!r} values for one ({', '.join(by + pair + [method])}) key; "
                         "select one measure/classifier before testing")
    methods = list(dict.fromkeys(results[method]))
    groups = results.groupby(by, sort=False) if by else [((), results)]
    rows = []
    for key, block in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = block.pivot(index=pair, columns=method, values=value)
        present = [m for m in methods if m in wide.columns]
        partial = [m for m in present if wide[m].isna().any()]
        if partial:
            raise ValueError(f"group {dict(zip(by, key))}: method(s) {partial} lack values for some of the "
                             f"{len(wide)} ({', '.join(pair)}) keys the other methods have: the values are not paired")
        means = wide[present].mean()
        best = [m for m in present if means[m] - means.min() <= 1e-12]  # ties up to round-off of the sums
        for m in present:
            if m in best:
                p = float("nan")
            else:
                d = wide[m] - wide[best[0]]
                p = 1.0 if np.allclose(d, 0) else float(wilcoxon(wide[m], wide[best[0]]).pvalue)
            rows.append((*key, m, float(means[m]), int(len(wide)), m in best, p))
    return pd.DataFrame(rows, columns=by + [method, "mean", "n", "best", "pvalue"])


def wilcoxon_marks(results: pd.DataFrame, by="degree", method: str = "method", value: str = "ae",
                   pair=("trial", "sample_id"), decimals: int = 3) -> pd.DataFrame:
    """Mean of ``value`` per group and method with the dataset-shift paper's significance marks (Sect. 5.2).

    In each group of ``by`` the method with the lowest mean is the best (bold, ``**.014**``); every other
    method is compared with it by a Wilcoxon signed-rank test on values paired by the columns ``by`` +
    ``pair`` (:func:`significance`), and marked ``‡`` when p >= 0.05, ``†`` when 0.001 < p < 0.05, and
    left unmarked when p <= 0.001. Returns a DataFrame of strings (rows: groups, columns: methods in
    order of appearance; empty where a method has no values in a group). Raises ValueError for missing
    columns or unpaired values.
    """
    by = [by] if isinstance(by, str) else list(by)
    sig = significance(results, by, pair, method, value)
    out = {}
    for key, block in sig.groupby(by, sort=False):
        row = {}
        for m, mean, best, p in zip(block[method], block["mean"], block["best"], block["pvalue"]):
            txt = f"{mean:.{decimals}f}".lstrip("0") if mean < 1 else f"{mean:.{decimals}f}"
            row[m] = f"**{txt}**" if best else ("‡" if p >= 0.05 else "†" if p > 0.001 else "") + txt
        out[key if len(by) > 1 else key[0] if isinstance(key, tuple) else key] = row
    table = pd.DataFrame.from_dict(out, orient="index").reindex(columns=list(dict.fromkeys(results[method])))
    if all(isinstance(k, (int, float, np.number)) for k in table.index):  # degrees: -1, ..., 0, ..., 1
        table = table.sort_index()
    table.index.name = by[0] if len(by) == 1 else None
    return table.fillna("")


def min_wilcoxon_p(n: int) -> float:
    """The smallest two-sided p-value a Wilcoxon signed-rank test can give on ``n`` pairs (exact null
    distribution, no ties or zero differences): ``2 / 2**n``, reached when every difference has the same sign.

    With ``n = 5`` pairs it is 0.0625, so no difference can be significant at 0.05 however large it is: a
    table of such groups marks every method "not distinguishable from the best". Beyond about 1,075 pairs the
    value is below the smallest float and 0.0 is returned (``2.0 ** (1 - n)``, which underflows where ``2 / 2**n``
    would overflow). Raises ValueError for n < 1.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive number of pairs, got {n!r}")
    return min(1.0, 2.0 ** (1 - int(n)))


def against_reference(results: pd.DataFrame, reference: str, by="shift", pair=("trial", "sample_id"),
                      method: str = "method", value: str = "ae", alpha: float = 0.05) -> pd.DataFrame:
    """Every method against one reference method (e.g. Naive), per group: paired Wilcoxon signed-rank test.

    Returns one row per (group, method other than ``reference``): the ``by`` columns, ``method``, ``mean``,
    ``reference_mean``, ``difference`` (mean minus the reference's: negative is better), ``n`` (pairs),
    ``pvalue`` (two-sided; 1 when all paired differences are zero), ``min_p`` (:func:`min_wilcoxon_p`: the
    test's floor with ``n`` pairs) and ``verdict``: ``"better"`` (a mean below the reference's) / ``"worse"`` (not
    below) when p < ``alpha``, else ``"not distinguishable"``. Paired differences all within ``numpy.allclose`` of 0
    give p = 1 without a test. Groups in order of appearance. Raises ValueError for a missing column, an
    unknown reference, or values that are not paired.
    """
    by = [by] if isinstance(by, str) else list(by)
    pair = [pair] if isinstance(pair, str) else list(pair)
    need = set(by) | set(pair) | {method, value}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        have = set(results.columns) if isinstance(results, pd.DataFrame) else set()
        raise ValueError(f"results lack the columns {sorted(need - have)}")
    if reference not in set(results[method]):
        raise ValueError(f"reference method {reference!r} not in the results; methods: "
                         f"{sorted(set(results[method]))}")
    rows = []
    for key, block in results.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        wide = block.pivot(index=pair, columns=method, values=value)
        if wide.isna().any().any():
            raise ValueError(f"group {dict(zip(by, key))}: the methods' values are not paired")
        ref = wide[reference]
        for m in (c for c in dict.fromkeys(block[method]) if c != reference):
            d = wide[m] - ref
            p = 1.0 if np.allclose(d, 0) else float(wilcoxon(wide[m], ref).pvalue)
            diff = float(wide[m].mean() - ref.mean())
            verdict = "not distinguishable" if p >= alpha else ("better" if diff < 0 else "worse")
            rows.append((*key, m, float(wide[m].mean()), float(ref.mean()), diff, len(wide), p,
                         min_wilcoxon_p(len(wide)), verdict))
    return pd.DataFrame(rows, columns=by + [method, "mean", "reference_mean", "difference", "n", "pvalue",
                                            "min_p", "verdict"])


def compare_groups(results: pd.DataFrame, split: str, low, high, by=("method",), value: str = "ae",
                   alpha: float = 0.05) -> pd.DataFrame:
    """``value`` on the rows where ``split`` equals ``low`` against those where it equals ``high``, per ``by``
    group: the samples are different ones (not paired), so the test is a two-sided Mann-Whitney U test.

    Used for "does the error grow with the shift / fall with the sample size". Returns one row per group: the
    ``by`` columns, ``mean_low``, ``mean_high``, ``n_low``, ``n_high``, ``pvalue`` and ``change``:
    ``"rises"`` (``mean_high`` above ``mean_low``) / ``"falls"`` (not above) when p < ``alpha``, else
    ``"no significant change"``. Raises ValueError for a
    missing column or a group without rows at ``low`` or ``high``.
    """
    by = [by] if isinstance(by, str) else list(by)
    need = set(by) | {split, value}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        have = set(results.columns) if isinstance(results, pd.DataFrame) else set()
        raise ValueError(f"results lack the columns {sorted(need - have)}")
    rows = []
    for key, block in results.groupby(by, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        a = block.loc[block[split] == low, value].to_numpy(float)
        b = block.loc[block[split] == high, value].to_numpy(float)
        if len(a) == 0 or len(b) == 0:
            raise ValueError(f"group {dict(zip(by, key))} has no rows with {split} = {low!r} or {high!r}")
        p = float(mannwhitneyu(a, b).pvalue) if np.ptp(np.r_[a, b]) > 0 else 1.0
        change = "no significant change" if p >= alpha else ("rises" if b.mean() > a.mean() else "falls")
        rows.append((*key, float(a.mean()), float(b.mean()), len(a), len(b), p, change))
    return pd.DataFrame(rows, columns=by + ["mean_low", "mean_high", "n_low", "n_high", "pvalue", "change"])


def _power_args(effect, sd, alpha):
    effect, sd, alpha = float(effect), float(sd), float(alpha)
    if not np.isfinite(effect):
        raise ValueError(f"effect must be a finite difference of means, got {effect!r}")
    if not np.isfinite(sd) or sd < 0:
        raise ValueError(f"sd must be a finite standard deviation >= 0, got {sd!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return abs(effect), sd, alpha


def power(effect: float, sd: float, n: int, alpha: float = 0.05, n_other: int | None = None) -> float:
    """Power of a two-sided rank test at level ``alpha`` to see a true mean difference ``effect``.

    Paired (``n_other`` None): the Wilcoxon signed-rank test on ``n`` pairs whose differences have standard
    deviation ``sd``. Unpaired (``n_other`` given): the Mann-Whitney U test of ``n`` against ``n_other``
    samples, each of standard deviation ``sd``. Normal approximation of the t test's power on the
    effective sample size (``RANK_ARE`` times the samples): with ``z = |effect| / se``,
    ``power = Φ(z − z_{1−α/2}) + Φ(−z − z_{1−α/2})``, ``se = sd / √(ARE·n)`` (paired) or
    ``sd · √((1/n + 1/n_other) / ARE)``. ``sd = 0`` gives power 1 for a non-zero effect.

    Use it with the *paper's* effect and *our* spread: it says whether our samples could have seen what the
    paper reports. Returns a float in [alpha, 1]. Raises ValueError for n < 2, sd < 0, alpha outside (0, 1).
    """
    effect, sd, alpha = _power_args(effect, sd, alpha)
    if int(n) != n or n < 2 or (n_other is not None and (int(n_other) != n_other or n_other < 2)):
        raise ValueError(f"n and n_other must be integers >= 2, got {n!r} and {n_other!r}")
    if effect == 0:
        return alpha
    if sd == 0:
        return 1.0
    se = sd / np.sqrt(RANK_ARE * n) if n_other is None else sd * np.sqrt((1 / n + 1 / n_other) / RANK_ARE)
    z, crit = effect / se, norm.ppf(1 - alpha / 2)
    return float(norm.cdf(z - crit) + norm.cdf(-z - crit))


def samples_needed(effect: float, sd: float, alpha: float = 0.05, target: float = MIN_POWER,
                   paired: bool = True) -> int:
    """The smallest n (pairs, or samples per group when ``paired`` is False) at which :func:`power` reaches
    ``target``. Returns an int >= 2; raises ValueError for a zero effect (no n suffices) or bad arguments."""
    effect, sd, alpha = _power_args(effect, sd, alpha)
    if not 0 < target < 1:
        raise ValueError(f"target must be a power in (0, 1), got {target!r}")
    if effect == 0:
        raise ValueError("effect is 0: no number of samples can detect it")
    z = norm.ppf(1 - alpha / 2) + norm.ppf(target)
    n = int(np.ceil((z * sd / effect) ** 2 / RANK_ARE * (1 if paired else 2)))
    n = max(n, 2)
    while power(effect, sd, n, alpha, None if paired else n) < target:  # the two-sided term's rounding
        n += 1
    return n


def verdict(pvalue: float, agrees: bool, power_: float, alpha: float = 0.05, min_power: float = MIN_POWER) -> str:
    """The word for a paper's finding tested on our samples, with its rule and its power.

    - ``"reproduced"``: the test rejects (``pvalue < alpha``) and our effect has the paper's sign (``agrees``);
    - ``"contradicted"``: the test rejects with the opposite sign;
    - ``"not reproduced"``: no rejection although the test had the power (``power_ >= min_power``) to see the
      paper's effect;
    - ``"not enough evidence"``: no rejection, and the test could not have seen the paper's effect.

    Raises ValueError for a p-value or power outside [0, 1].
    """
    for name, v in (("pvalue", pvalue), ("power_", power_)):
        if not 0 <= float(v) <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    if pvalue < alpha:
        return "reproduced" if agrees else "contradicted"
    return "not reproduced" if power_ >= min_power else "not enough evidence"
