"""Figures of the book, drawn from the experiment runner's tidy results (matplotlib + seaborn).

- :func:`diagonal_plot`: predicted vs true measure per method (LEAP 2025, Fig. 1a).
- :func:`error_by_shift`: mean AE as a function of the amount of PPS, binned L1 distance between
  V's and the sample's prevalence (LEAP 2025, Fig. 6).
- :func:`shift_boxplots`: AE by degree of shift per method, for the dataset-shift protocols (González
  et al., DMKD 2024, Figs. 6-12).
- :func:`estimate_band`: per-batch estimates with their interval band, the true value where labels exist, the
  alert threshold, alerted and PPS-doubtful batches (the table of :func:`capshift.estimate.estimate`).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

__all__ = ["diagonal_plot", "error_by_shift", "shift_boxplots", "estimate_band"]


def _check(results: pd.DataFrame, measure: str) -> pd.DataFrame:
    need = {"method", "measure", "true", "predicted", "ae", "shift"}
    if not need <= set(results.columns):
        raise ValueError(f"results must be a DataFrame from capshift.experiment.run_experiment with columns "
                         f"{sorted(need)}; missing {sorted(need - set(results.columns))}")
    sub = results[results["measure"] == measure]
    if sub.empty:
        raise ValueError(f"results hold no rows for measure {measure!r}; measures present: "
                         f"{sorted(results['measure'].unique())}")
    return sub


def diagonal_plot(results: pd.DataFrame, measure: str = "accuracy", methods=None, col_wrap: int = 3,
                  height: float = 2.6, max_points: int = 3000, seed: int = 0, limits="unit"):
    """One panel per method: predicted (y) against true (x) measure, with the diagonal y = x.

    ``max_points`` caps the points drawn per panel (a seeded random subset) to keep pages light.
    ``limits``: "unit" (both axes [0, 1]), "data" (the range of the values shown, plus a margin of
    0.02) or a ``(low, high)`` pair. Returns the seaborn ``FacetGrid``.
    """
    sub = _check(results, measure)
    methods = list(dict.fromkeys(sub["method"])) if methods is None else list(methods)
    sub = sub[sub["method"].isin(methods)]
    sub = sub.sample(frac=1.0, random_state=seed).groupby("method", sort=False).head(max_points)
    g = sns.relplot(data=sub, x="true", y="predicted", col="method", col_order=methods, col_wrap=col_wrap,
                    height=height, s=6, alpha=0.35, edgecolor=None, color="C0")
    if limits == "unit":
        lo, hi = 0.0, 1.0
    elif limits == "data":
        lo = float(min(sub["true"].min(), sub["predicted"].min())) - 0.02
        hi = float(max(sub["true"].max(), sub["predicted"].max())) + 0.02
    else:
        lo, hi = map(float, limits)
    for ax in g.axes.flat:
        ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--")
        ax.set(xlim=(lo, hi), ylim=(lo, hi), aspect="equal")
    g.set_axis_labels(f"true {measure}", f"predicted {measure}")
    g.set_titles("{col_name}")
    return g


def error_by_shift(results: pd.DataFrame, measure: str = "accuracy", methods=None, bins: int = 10,
                   ax=None):
    """Mean AE against the amount of PPS (L1 distance of prevalences, binned into ``bins`` equal bins on [0, 2]).

    Returns the matplotlib Axes. Bins with no samples are left out.
    """
    sub = _check(results, measure)
    methods = list(dict.fromkeys(sub["method"])) if methods is None else list(methods)
    edges = np.linspace(0, 2, bins + 1)
    mid = (edges[:-1] + edges[1:]) / 2
    sub = sub.assign(bin=pd.cut(sub["shift"], edges, labels=mid, include_lowest=True).astype(float))
    curve = sub[sub["method"].isin(methods)].groupby(["method", "bin"])["ae"].mean().reset_index()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    sns.lineplot(data=curve, x="bin", y="ae", hue="method", hue_order=methods, marker="o", ax=ax)
    ax.set(xlabel="amount of PPS (L1 distance between V's and the sample's prevalence)", ylabel=f"mean AE ({measure})")
    return ax


def shift_boxplots(results: pd.DataFrame, x: str = "degree", methods=None, hue: str | None = None,
                   hue_order=None, col_wrap: int = 3, height: float = 2.4, aspect: float = 1.5, ylabel: str = "AE"):
    """The dataset-shift paper's box plots (its Figures 6-12): one panel per method, the AE of every test
    sample by degree of shift (``x``), outliers as dots; ``hue`` splits the boxes (e.g. Figure 11's local
    covariate shift against its PPS control, ``hue="change_conditionals"``; ``hue_order`` orders them).

    ``results``: a tidy table from :func:`capshift.experiment.run_shift_quantifiers` or
    :func:`~capshift.experiment.run_shift_cap` (columns ``method``, ``ae`` and ``x``). Returns the seaborn
    ``FacetGrid``. Raises ValueError for missing columns.
    """
    need = {"method", "ae", x} | ({hue} if hue else set())
    if not need <= set(results.columns):
        raise ValueError(f"results lack the columns {sorted(need - set(results.columns))}")
    methods = list(dict.fromkeys(results["method"])) if methods is None else list(methods)
    order = sorted(results[x].unique())
    labels = [f"{v:g}" for v in order]
    g = sns.catplot(data=results[results["method"].isin(methods)], x=x, y="ae", hue=hue, hue_order=hue_order,
                    col="method",
                    col_order=methods, col_wrap=col_wrap, kind="box", order=order, height=height, aspect=aspect,
                    fliersize=1.2, linewidth=0.6, color=None if hue else "C0", sharey=True, legend=bool(hue))
    for ax in g.axes.flat:
        ticks = range(0, len(order), -(-len(order) // 6))  # at most 6 labels: no overlap
        ax.set_xticks(list(ticks), [labels[i] for i in ticks])
    g.set_titles("{col_name}")
    g.set_axis_labels(f"degree of shift ({x})" if x != "degree" else "degree of shift", ylabel)
    return g


def estimate_band(table: pd.DataFrame, measure: str = "accuracy", threshold: float | None = None, ax=None):
    """Estimated ``measure`` per batch (one line and interval band per method), the true value where the table
    has a ``true`` column, the alert ``threshold`` (dashed), alerted batches (red dots) and batches flagged
    "PPS doubtful" (grey background). ``table``: :attr:`capshift.estimate.Estimation.table`. Returns the figure.
    ValueError for a table without the columns batch, method, estimate, lower, upper, pps, alert."""
    need = {"batch", "method", "estimate", "lower", "upper", "pps", "alert"}
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        raise ValueError(f"table must be the table of capshift.estimate.estimate, with columns {sorted(need)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.6))
    batches = list(dict.fromkeys(table["batch"]))
    pos = {b: i for i, b in enumerate(batches)}
    doubtful = table.loc[table["pps"].str.startswith("PPS doubtful"), "batch"].unique()
    for k, b in enumerate(doubtful):
        ax.axvspan(pos[b] - 0.5, pos[b] + 0.5, color="0.88", zorder=0, label="PPS doubtful" if k == 0 else None)
    for i, (m, g) in enumerate(table.groupby("method", sort=False)):
        x = g["batch"].map(pos).to_numpy()
        c = f"C{i}"
        ax.fill_between(x, g["lower"], g["upper"], color=c, alpha=0.18, lw=0)
        ax.plot(x, g["estimate"], "-o", color=c, ms=3, label=f"{m} (interval band)")
        al = g[g["alert"]]
        ax.plot(al["batch"].map(pos), al["estimate"], "o", color="red", ms=6, mfc="none",
                label="alert" if i == 0 else None)
    if "true" in table.columns:
        t = table.drop_duplicates("batch").dropna(subset=["true"])
        ax.plot(t["batch"].map(pos), t["true"], "k--", lw=1.2, marker="x", ms=4, label=f"true {measure}")
    if threshold is not None:
        ax.axhline(threshold, color="red", ls=":", lw=1, label="threshold")
    step = max(1, len(batches) // 10)
    ax.set_xticks(range(0, len(batches), step), [batches[i] for i in range(0, len(batches), step)], rotation=30,
                  ha="right", fontsize=8)
    ax.set_ylabel(measure)
    ax.legend(fontsize=7, ncol=3, loc="best")
    ax.figure.tight_layout()
    return ax.figure
