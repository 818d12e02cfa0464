"""Published result tables of the LEAP (Machine Learning 2025), LEAP (Discovery Science 2024) and QuAcc
(Intelligenza Artificiale 2025) papers, shipped as package data in ``capshift/data/paper/``.

Holds :data:`TABLES` (table id -> CSV file), :func:`paper_table` (one table as a long DataFrame) and
:func:`paper_values` (mean/std of the AE indexed by (dataset, method) for one paper, measure,
classifier and task). The numbers are transcribed from the papers' text; see
``capshift/data/paper/README.md`` for sources and column meanings.
"""
from __future__ import annotations

import importlib.resources
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.stats import spearmanr, wilcoxon

from .validation import check_fraction
from .datasets import REGISTRY
from .significance import MIN_POWER, power, samples_needed, significance, verdict as power_verdict

__all__ = ["TABLES", "PAPERS", "paper_table", "paper_values", "compare", "side_by_side", "marked_table",
           "marked_comparison",
           "dataset_shift_tables", "interval_table", "compare_record", "recorded_pvalue", "group_verdict",
           "leap_kdey_verdict", "results_group_verdict", "paper_group_effect", "LEAP_KDEY", "BASELINES",
           "PAPER_BASELINES", "DEFAULT_EFFECT", "authors_runs", "fidelity"]

TABLES = {
    "leap2025_table1": "leap2025_table1_LR_binary_acc.csv",
    "leap2025_table2": "leap2025_table2_LR_multiclass_acc.csv",
    "leap2025_table4": "leap2025_table4_LR_binary_f1.csv",
    "leap2025_table5": "leap2025_table5_LR_multiclass_f1.csv",
    "leap2025_table9": "leap2025_table9_SVM_multiclass_acc.csv",  # Appendix A: the only appendix table the text keeps
    "ds2024_table1": "ds2024_table1_allclassifiers_binary_acc.csv",
    "quacc2025_table3": "quacc2025_table3_LR_binary_acc_f1.csv",
    "quacc2025_table4": "quacc2025_table4_LR_multiclass_acc_f1.csv",
}
# The LEAP authors' repository output (github.com/lorenzovolpi/LEAP at commit cdd358c, an earlier run than the
# printed tables): accuracy tables for LR, kNN, SVM and MLP, 7 methods, the stand-in for the appendix Tables 6-8
# and 10-11 that the paper's text does not keep. Not the printed appendix: label it "authors' repository output".
TABLES.update({f"leap2025repo_{task}_{clf}": f"leap_repo_{task}_{clf}_acc.csv"
               for task in ("binary", "multiclass") for clf in ("lr", "knn", "svm", "mlp")})
#: short paper name -> value of the CSVs' ``paper`` column
PAPERS = {"leap2025": "Volpi2025_LEAP_MLJ", "ds2024": "Volpi2024_LEAP_DS", "quacc2025": "Volpi2025_QuAcc_IA",
          "leap2025repo": "Volpi2025_LEAP_repo"}


@lru_cache(maxsize=None)
def _read(table_id: str) -> pd.DataFrame:
    path = importlib.resources.files("capshift") / "data" / "paper" / TABLES[table_id]
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, dtype={"std": float, "best": object})


def paper_table(table_id: str) -> pd.DataFrame:
    """One published table, long format (one row per cell), as in its CSV.

    ``table_id``: a key of :data:`TABLES`, e.g. "leap2025_table1". Returns a new DataFrame with columns
    ``paper, table, classifier, measure, setting, dataset, method, mean, std, best, dagger`` (mean/std
    float, NaN where the paper prints no value). Raises ValueError for an unknown id.
    Source: the tables named in ``capshift/data/paper/README.md``.
    """
    if table_id not in TABLES:
        raise ValueError(f"table_id must be one of {sorted(TABLES)}, got {table_id!r}")
    return _read(table_id).copy()


def paper_values(paper: str = "leap2025", measure: str = "acc", classifier: str = "LR",
                 task: str = "binary") -> pd.DataFrame:
    """Published AE values for one (paper, measure, classifier, task), e.g. LEAP 2025 Table 1 by default.

    ``paper``: "leap2025", "ds2024", "quacc2025" or "leap2025repo" (the authors' repository output, accuracy
    only, for "LR", "kNN", "SVM", "MLP" and 7 methods: not the printed appendix); ``measure``: "acc" or "f1";
    ``classifier``: "LR" (plus "kNN", "SVM", "MLP" for ds2024 and leap2025repo, and "SVM" for leap2025
    multiclass accuracy, its Table 9);
    ``task``: "binary" or "multiclass". Returns a DataFrame
    indexed by (dataset, method), columns ``mean``, ``std`` (float; std NaN where not printed) and
    ``dagger``, in the paper's row order; includes the paper's ``Average`` rows where it has them.
    Raises ValueError naming the argument when no shipped table has that combination.
    """
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {paper!r}")
    df = pd.concat([_read(t) for t in TABLES if t.startswith(paper + "_")], ignore_index=True)
    for arg, col, val in (("measure", "measure", measure), ("classifier", "classifier", classifier),
                          ("task", "setting", task)):
        if val not in set(df[col]):
            raise ValueError(f"{arg}={val!r} is not available for paper={paper!r}; choose from {sorted(set(df[col]))}")
        df = df[df[col] == val]
    if df.empty:
        raise ValueError(f"paper={paper!r} has no table for measure={measure!r}, classifier={classifier!r}, "
                         f"task={task!r}; see capshift.reference.TABLES")
    return df.set_index(["dataset", "method"])[["mean", "std", "dagger"]]


_PAPER_MEASURE = {"accuracy": "acc", "f1": "f1"}  # capshift measure name -> the tables' measure name
_CLASSIFIER = {"lr": "LR", "knn": "kNN", "svm": "SVM", "mlp": "MLP"}  # capshift name -> the tables' name


def compare(results: pd.DataFrame, paper: str = "leap2025", aliases: dict | None = None) -> pd.DataFrame:
    """Our AE next to the published AE, per (task, measure, dataset, method), with Average rows.

    Parameters
    ----------
    results : DataFrame
        Tidy results of :func:`capshift.experiment.run_experiment` (columns dataset, classifier,
        method, measure, ae, ...), one classifier.
    paper : str
        Which paper's tables to compare with (see :data:`PAPERS`).
    aliases : dict, optional
        Our method name -> the paper's, for methods the paper names differently (e.g.
        ``{"O-LEAP_KDEy-h": "O-LEAP_KDEy"}``: compared, not identical).

    Returns
    -------
    DataFrame with columns ``task, measure, dataset, method, mean, std, paper_mean, paper_std, paper_best,
    paper_dagger`` (NaN where the paper has no value; ``paper_best``: the paper's value is the lowest of its
    row over all the paper's methods (its bold; over the methods run for the "datasets run" average);
    ``paper_dagger``: the paper marks it † (not significantly different from its best)). After the per-dataset rows of each (task, measure) come two
    Average rows: ``"Average (datasets run)"`` (mean of the per-dataset means; std of all samples
    pooled, and for the paper's values the same pooling from its per-dataset mean and std, which
    reproduces its printed Average std) and ``"Average (paper, all datasets)"`` (the paper's own row).
    AE values are absolute errors in [0, 1]; std is the population std (ddof=0). The published values are
    those of :func:`paper_values` (e.g. LEAP 2025 Tables 1, 2, 4, 5 for ``paper="leap2025"``).

    Raises
    ------
    ValueError
        ``results`` lacks a required column or holds several classifiers; ``paper`` is unknown.
    KeyError
        A dataset of ``results`` is not a key of :data:`capshift.datasets.REGISTRY`.
    """
    if paper not in PAPERS:  # checked here: the ValueError of paper_values below means "no such table"
        raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {paper!r}")
    need = {"dataset", "classifier", "method", "measure", "ae"}
    if not need <= set(results.columns):
        raise ValueError(f"results must have columns {sorted(need)}: pass run_experiment's output")
    if results["classifier"].nunique() != 1:
        raise ValueError("results must hold a single classifier; compare each classifier separately")
    aliases = aliases or {}
    clf = _CLASSIFIER.get(results["classifier"].iloc[0], results["classifier"].iloc[0])
    results = results.assign(task=[REGISTRY[d].task for d in results["dataset"]],
                             paper_dataset=[REGISTRY[d].name for d in results["dataset"]])
    out = []
    for (task, measure), d in results.groupby(["task", "measure"], sort=False):
        g = d.groupby(["paper_dataset", "method"], sort=False)["ae"]
        ours = pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=0)}).reset_index()
        try:
            pub = paper_values(paper, _PAPER_MEASURE.get(measure, measure), clf, task)
        except ValueError:  # no published table for this combination
            pub = pd.DataFrame(columns=["mean", "std", "dagger"],
                               index=pd.MultiIndex.from_tuples([], names=["dataset", "method"]))
        keys = list(zip(ours["paper_dataset"], ours["method"].map(lambda m: aliases.get(m, m))))
        ours["paper_mean"] = [pub["mean"].get(k, float("nan")) for k in keys]
        ours["paper_std"] = [pub["std"].get(k, float("nan")) for k in keys]
        if len(pub):  # the paper's best of its row (over all its methods) and its dagger
            row_min = pub["mean"].groupby(level="dataset").transform("min")
            pub_best = (pub["mean"] == row_min)
        else:
            pub_best = pub["mean"]
        ours["paper_best"] = [bool(pub_best.get(k, False)) for k in keys]
        ours["paper_dagger"] = [bool(pub["dagger"].get(k, 0) == 1) for k in keys]
        ours = ours.rename(columns={"paper_dataset": "dataset"})
        avg = ours.groupby("method", sort=False).agg(mean=("mean", "mean"), paper_mean=("paper_mean", "mean"))
        avg["std"] = d.groupby("method")["ae"].std(ddof=0)
        avg["paper_std"] = ours.groupby("method", sort=False).apply(
            lambda x: (x["paper_std"] ** 2).mean() + x["paper_mean"].var(ddof=0), include_groups=False) ** 0.5
        avg["paper_best"] = avg["paper_mean"] == avg["paper_mean"].min()
        avg["paper_dagger"] = False
        paper_avg = [(m, pub["mean"].get(("Average", aliases.get(m, m)), float("nan")),
                      pub["std"].get(("Average", aliases.get(m, m)), float("nan")),
                      bool(pub_best.get(("Average", aliases.get(m, m)), False)),
                      bool(pub["dagger"].get(("Average", aliases.get(m, m)), 0) == 1)) for m in avg.index]
        out += [ours, avg.reset_index().assign(dataset="Average (datasets run)"),
                pd.DataFrame(paper_avg, columns=["method", "paper_mean", "paper_std", "paper_best", "paper_dagger"])
                  .assign(dataset="Average (paper, all datasets)")]
        for frame in out[-3:]:
            frame["task"], frame["measure"] = task, measure
    cols = ["task", "measure", "dataset", "method", "mean", "std", "paper_mean", "paper_std", "paper_best",
            "paper_dagger"]
    return pd.concat(out, ignore_index=True)[cols]


def side_by_side(comparison: pd.DataFrame, task: str, measure: str, methods=None) -> pd.DataFrame:
    """One (task, measure) of :func:`compare` as a display table: rows datasets (in ``comparison``'s order,
    Average rows included), columns the MultiIndex (method, "ours" | "paper") for ``methods`` (default: all,
    in order of appearance), cells str ``"mean ± std"`` with 3 decimals (``"mean"`` where std is NaN, empty
    where there is no value). Raises ValueError if ``comparison`` has no row for (task, measure)."""
    d = comparison[(comparison["task"] == task) & (comparison["measure"] == measure)]
    if d.empty:
        raise ValueError(f"comparison has no rows for task={task!r}, measure={measure!r}")
    methods = list(dict.fromkeys(d["method"])) if methods is None else list(methods)

    def cell(mean, std):
        return "" if pd.isna(mean) else (f"{mean:.3f}" if pd.isna(std) else f"{mean:.3f} ± {std:.3f}")

    d = d.assign(ours=[cell(m, s) for m, s in zip(d["mean"], d["std"])],
                 paper=[cell(m, s) for m, s in zip(d["paper_mean"], d["paper_std"])])
    wide = d.pivot(index="dataset", columns="method", values=["ours", "paper"]).swaplevel(axis=1)
    return wide.reindex(index=list(dict.fromkeys(d["dataset"])),
                        columns=pd.MultiIndex.from_product([methods, ["ours", "paper"]])).fillna("")


def _short(x: float, decimals: int) -> str:
    txt = f"{x:.{decimals}f}"
    return txt[1:] if txt.startswith("0.") else txt


def marked_table(comparison: pd.DataFrame, marks: pd.DataFrame, task: str, measure: str, methods=None,
                 alpha: float = 0.01, decimals: int = 3) -> pd.DataFrame:
    """One (task, measure) of :func:`compare` as a compact table of ``ours / paper`` cells with both marks.

    A cell reads ``**.028**† / .031`` (the spaces around the slash are no-break spaces): our mean AE, bold if it is the lowest of its row (``marks["best"]``),
    † if it is not significantly different from the best (``marks["pvalue"] >= alpha``, the LEAP paper's
    Wilcoxon test at 0.01, Sect. 5.3); then the paper's value with the paper's own bold and † (empty where
    the paper has none). Means only: the standard deviations are in :func:`side_by_side`.

    Parameters
    ----------
    comparison : DataFrame from :func:`compare`.
    marks : DataFrame from :func:`capshift.significance.significance` with columns ``dataset`` (the names of
        ``comparison``, Average rows included), ``method``, ``best``, ``pvalue``.
    methods : list of str or None (all, in order of appearance).
    alpha : float in (0, 1); decimals : int.

    Returns a DataFrame of str (rows: datasets in ``comparison``'s order; columns: ``methods``).
    Raises ValueError if ``comparison`` has no row for (task, measure) or ``marks`` lacks a column.
    """
    d = comparison[(comparison["task"] == task) & (comparison["measure"] == measure)]
    if d.empty:
        raise ValueError(f"comparison has no rows for task={task!r}, measure={measure!r}")
    need = {"dataset", "method", "best", "pvalue"}
    if not need <= set(marks.columns):
        raise ValueError(f"marks lack the columns {sorted(need - set(marks.columns))}: pass "
                         "capshift.significance.significance's output")
    alpha = check_fraction(alpha, "alpha")
    methods = list(dict.fromkeys(d["method"])) if methods is None else list(methods)
    mk = marks.set_index(["dataset", "method"])

    def cell(row):
        ours = ""
        if pd.notna(row["mean"]):
            ours = _short(row["mean"], decimals)
            key = (row["dataset"], row["method"])
            if key in mk.index:
                best, p = bool(mk.loc[key, "best"]), mk.loc[key, "pvalue"]
                ours = f"**{ours}**" if best else ours + ("†" if p >= alpha else "")
        paper = ""
        if pd.notna(row["paper_mean"]):
            paper = _short(row["paper_mean"], decimals)
            paper = f"**{paper}**" if row["paper_best"] else paper + ("†" if row["paper_dagger"] else "")
        sep = "\u00a0/\u00a0"  # no-break spaces: a cell never wraps inside "ours / paper"
        return f"{ours}{sep}{paper}" if ours and paper else ours or (f"–{sep}{paper}" if paper else "")

    d = d.assign(cell=[cell(r) for _, r in d.iterrows()])
    wide = d.pivot(index="dataset", columns="method", values="cell")
    return wide.reindex(index=list(dict.fromkeys(d["dataset"])), columns=methods).astype(object).fillna("")


def dataset_shift_tables() -> pd.DataFrame:
    """Tables 4-5 of the dataset-shift paper (González, Moreo & Sebastiani, DMKD 2024): MAE of CC, ACC, PCC,
    PACC, DyS and SLD by degree of shift, under prior probability shift (Table 4, degree p_U − p_L) and
    global covariate shift with p_L = 0.5 (Table 5, degree α_L − α_U, blocks p_U = 0.25, 0.5, 0.75).

    Long DataFrame with columns ``paper, table, p_L, degree, p_U, method, mae, mark, provenance`` (``mark``:
    the paper's ``‡``/``†``; see ``capshift/data/paper/README.md``). A schema of its own, so it is not in
    :data:`TABLES` (whose tables are per dataset and method).
    """
    path = importlib.resources.files("capshift") / "data" / "paper" / "gonzalez2024_tables4-5_mae.csv"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, dtype={"mark": object}, keep_default_na=False, na_values={"p_L": [""], "p_U": [""]})


def marked_comparison(results: pd.DataFrame, task: str, measure: str, methods, alpha: float = 0.01,
                      paper: str = "leap2025", aliases: dict | None = None):
    """One of a paper's tables from tidy results: :func:`marked_table`'s cells and :func:`compare`'s frame.

    ``results`` (:func:`capshift.experiment.run_experiment` / ``run_grid`` rows of one classifier) are
    restricted to ``task`` ("binary"/"multiclass", from :data:`capshift.datasets.REGISTRY`), ``measure`` and
    ``methods``; the marks come from :func:`capshift.significance.significance`: per dataset paired over the test
    samples, and for the "Average (datasets run)" row paired over every (dataset, sample). ``aliases`` as in
    :func:`compare` (default: none).

    Returns ``(marked, comparison)``: the DataFrame of str of :func:`marked_table` and the DataFrame of
    :func:`compare`. Raises ValueError as those two do (no rows for ``task``/``measure``, several classifiers,
    ``alpha`` outside (0, 1)).
    """
    need = {"dataset", "classifier", "method", "measure", "sample", "ae"}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        raise ValueError(f"results must be a tidy frame of run_experiment/run_grid with columns {sorted(need)}")
    methods = list(methods)
    d = results[(results["measure"] == measure) & results["method"].isin(methods)
                & (results["dataset"].map(lambda k: REGISTRY[k].task) == task)]
    comparison = compare(d, paper, aliases)
    d = d.assign(dataset=d["dataset"].map(lambda k: REGISTRY[k].name))  # the names of the comparison
    marks = pd.concat([significance(d, "dataset", "sample"),
                       significance(d, None, ("dataset", "sample")).assign(dataset="Average (datasets run)")])
    return marked_table(comparison, marks, task, measure, methods, alpha=alpha), comparison


def interval_table() -> pd.DataFrame:
    """Table 3 of the LEAP paper (Machine Learning 2025, Sect. 5.10): bootstrap confidence intervals of DoC and
    O-LEAP_KDEy on the 29 binary datasets, LR, vanilla accuracy, samples of 500, 500 bootstrap resamples.

    Long DataFrame with columns ``paper, table, classifier, measure, setting, dataset, method, quantity, value,
    dagger, provenance``: ``quantity`` is ``AE`` (mean absolute error of the point estimate), ``A`` (mean
    amplitude of the 95% interval) or ``C`` (coverage: fraction of test samples whose true accuracy lies in
    the interval); ``value`` as printed (3 decimals); ``provenance`` the source line and printed text of the
    cell and its transcription status (six cells carry a † the caption does not define: status
    ``suspect``). No Average row (the paper prints none). A schema of its own, so not in :data:`TABLES`.
    """
    path = importlib.resources.files("capshift") / "data" / "paper" / "leap2025_table3_LR_binary_acc_bootstrapCI.csv"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p)


# ------------------------------------------------------------------------------------ a recorded study vs the paper
#: The paper's claim tested per table by :func:`leap_kdey_verdict`: "LEAP methods with KDEy beat the baselines".
LEAP_KDEY = ("LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy")
BASELINES = ("Naive", "ATC", "DoC", "DS", "L-CBPE", "NN", "Q-COT", "CBPE", "SLD-CBPE", "BCTS-CBPE", "SLD-CBPE-raw")
#: The LEAP paper's own baselines (its Tables 1-2), a subset of :data:`BASELINES`.
PAPER_BASELINES = ("Naive", "ATC", "DoC", "DS", "L-CBPE", "NN", "Q-COT")


def compare_record(record: pd.DataFrame, classifier: str, task: str, measure: str = "accuracy",
                   paper: str = "leap2025repo", aliases: dict | None = None) -> pd.DataFrame:
    """One table of a recorded study (:func:`capshift.experiment.study_record`) next to a published one.

    ``record``: the study record (columns ``classifier, task, measure, dataset, method, mean, std, best,
    pvalue``); ``classifier``: our name ("lr", "knn", "svm", "mlp", "rf"); ``paper``: a key of :data:`PAPERS`
    (default: the authors' repository output); ``aliases``: our method name -> the paper's (e.g.
    ``{"O-LEAP_KDEy-h": "O-LEAP_KDEy"}``). Returns one row per (dataset, method) of ours, dataset under the paper's
    name:
    ``dataset, method, mean, std, best, pvalue, paper_mean, paper_std`` (NaN where the paper has no cell), then
    rows ``dataset="Average (datasets shared)"``: for the methods the paper has, both means averaged over the
    datasets where the paper has every one of them (so both sides average the same datasets), with ``n_datasets``.
    Raises ValueError when the record has no rows for (classifier, task, measure) or the paper has no such table.
    """
    aliases = aliases or {}
    r = record[(record["classifier"] == classifier) & (record["task"] == task) & (record["measure"] == measure)
               & (record["dataset"] != "Average")]
    if r.empty:
        raise ValueError(f"the record has no rows for classifier={classifier!r}, task={task!r}, measure={measure!r}")
    pub = paper_values(paper, _PAPER_MEASURE.get(measure, measure), _CLASSIFIER.get(classifier, classifier), task)
    out = r[["dataset", "method", "mean", "std", "best", "pvalue"]].copy()
    out["dataset"] = [REGISTRY[d].name if d in REGISTRY else d for d in out["dataset"]]
    keys = list(zip(out["dataset"], out["method"].map(lambda m: aliases.get(m, m))))
    out["paper_mean"] = [pub["mean"].get(k, float("nan")) for k in keys]
    out["paper_std"] = [pub["std"].get(k, float("nan")) for k in keys]
    has = out[out["paper_mean"].notna()]
    methods = list(dict.fromkeys(has["method"]))
    full = has.groupby("dataset")["method"].nunique()
    shared = full[full == len(methods)].index
    s = has[has["dataset"].isin(shared)]
    avg = s.groupby("method", sort=False).agg(mean=("mean", "mean"), paper_mean=("paper_mean", "mean")).reset_index()
    avg = avg.assign(dataset="Average (datasets shared)", n_datasets=len(shared))
    return pd.concat([out.assign(n_datasets=1), avg], ignore_index=True)


def fidelity(record: pd.DataFrame, classifier: str, task: str, measure: str = "accuracy",
             paper: str = "leap2025repo", aliases: dict | None = None, tol: float = 0.01) -> dict:
    """How close one recorded table is to a published one, cell by cell and per method (issue 30's scorecard).

    Arguments as :func:`compare_record`; ``tol`` (float > 0, default 0.01) the agreement band of a mean AE.
    Returns a dict: ``n_cells`` (the (dataset, method) cells both have), ``cells_within`` (of them, those with
    ``|ours - published| <= tol``), ``n_averages`` / ``averages_within`` (the same for the per-method averages over
    the datasets shared, :func:`compare_record`'s Average rows), ``rho`` (Spearman's rank correlation of the two
    orderings of the methods by their average; NaN with fewer than 3 methods) and ``n_datasets`` (shared). A
    published cell that rounds to 3 decimals counts as within when the difference is ``tol`` plus half its last
    digit. Raises ValueError as :func:`compare_record`, or for ``tol`` not in (0, 1].
    """
    tol = check_fraction(tol, "tol")
    if tol == 0:
        raise ValueError("tol must be > 0, got 0")
    c = compare_record(record, classifier, task, measure, paper=paper, aliases=aliases)
    avg = c[c["dataset"] == "Average (datasets shared)"]
    cells = c[(c["dataset"] != "Average (datasets shared)") & c["paper_mean"].notna()]
    band = tol + 5e-4 + 1e-12
    rho = spearmanr(avg["mean"], avg["paper_mean"]).statistic if len(avg) >= 3 else float("nan")
    def within(frame) -> int:
        return int(((frame["mean"] - frame["paper_mean"]).abs() <= band).sum())

    return {"n_cells": int(len(cells)), "cells_within": within(cells),
            "n_averages": int(len(avg)), "averages_within": within(avg),
            "rho": float(rho), "n_datasets": int(avg["n_datasets"].iloc[0]) if len(avg) else 0}


def authors_runs(classifier: str = "LR", task: str = "binary") -> pd.DataFrame:
    """The LEAP authors' own runs, summarised per dataset (github.com/lorenzovolpi/LEAP at commit ``c261937``,
    ``output/data``: per test sample, the true and estimated accuracy; package data
    ``leap_repo_runs_c261937.csv``).

    ``classifier``: "LR", "kNN", "SVM" or "MLP" (or capshift's "lr", "knn", "svm", "mlp"); ``task``: "binary" or
    "multiclass". Returns a DataFrame indexed by dataset (the paper's names; the authors' folders have underscores)
    with columns ``n_samples`` (1000), ``train_prev``, ``val_prev`` (prevalence of the positive class in L and V;
    binary), ``h_acc_on_V`` (h's accuracy on V), ``mean_true_acc``, ``std_true_acc`` (h's true accuracy over the
    1000 UPP samples of 100 items) and ``naive_mean_ae`` (Naive's mean AE), all float. Where our h's accuracy on V
    equals ``h_acc_on_V``, L, V and h are the authors'. Raises ValueError for another classifier or task.
    """
    clf = _CLASSIFIER.get(classifier, classifier)
    df = _read_runs()
    if clf not in set(df["classifier"]):
        raise ValueError(f"classifier must be one of {sorted(set(df['classifier']))}, got {classifier!r}")
    if task not in set(df["setting"]):
        raise ValueError(f"task must be 'binary' or 'multiclass', got {task!r}")
    d = df[(df["classifier"] == clf) & (df["setting"] == task)]
    d = d.assign(dataset=d["dataset"].str.replace("_", "-"))  # the authors' folders: hand_digits -> hand-digits
    return d.drop(columns=["setting", "classifier"]).set_index("dataset")


@lru_cache(maxsize=None)
def _read_runs() -> pd.DataFrame:
    path = importlib.resources.files("capshift") / "data" / "paper" / "leap_repo_runs_c261937.csv"
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p)


def recorded_pvalue(pairs: pd.DataFrame, classifier: str, task: str, measure: str, a: str, b: str) -> float:
    """The recorded paired Wilcoxon p-value of methods ``a`` and ``b`` in one table (either order), NaN when the
    pair was not tested. ``pairs``: :func:`capshift.experiment.pairwise_tests` (columns ``classifier, task,
    measure, method_a, method_b, pvalue``)."""
    p = pairs[(pairs["classifier"] == classifier) & (pairs["task"] == task) & (pairs["measure"] == measure)
              & (((pairs["method_a"] == a) & (pairs["method_b"] == b))
                 | ((pairs["method_a"] == b) & (pairs["method_b"] == a)))]["pvalue"]
    return float(p.iloc[0]) if len(p) else float("nan")


#: The effect a verdict's power is computed for when the paper prints no number for the finding: a difference of
#: 0.01 in mean AE, the smallest one the book calls a difference.
DEFAULT_EFFECT = 0.01


def _untestable(where: str, missing: str, effect_source: str) -> dict:
    """The verdict dict of a table where one of the two groups has no method run."""
    nan = float("nan")
    return {"verdict": "not testable here", "leap": None, "leap_mean": nan, "baseline": None, "baseline_mean": nan,
            "pvalue": nan, "effect": nan, "effect_source": effect_source, "sd": nan, "n": 0, "power": nan,
            "samples_needed": 0, "sentence": f"{where}: not testable here (no {missing} run)"}


def _verdict_dict(where, names, a, a_mean, b, b_mean, pvalue, sd, n, effect, effect_source, alpha, min_power):
    """The verdict of "``a`` (best of the group) beats ``b`` (best of the others)" with its rule and its power."""
    if effect is None or not np.isfinite(effect) or effect == 0:
        effect, effect_source = DEFAULT_EFFECT, "default"
    effect = abs(float(effect))
    pw = power(effect, sd, n, alpha) if np.isfinite(sd) and n >= 2 else float("nan")
    need = samples_needed(effect, sd, alpha, min_power) if np.isfinite(sd) and sd > 0 else 2
    if not np.isfinite(pvalue):
        word = "not enough evidence"  # the pair was not tested: nothing to decide on
    else:
        word = power_verdict(pvalue, a_mean < b_mean, pw if np.isfinite(pw) else 0.0, alpha, min_power)
    sentence = (f"{where}: {word} — best {names[0]} {a} {a_mean:.4f} vs best {names[1]} {b} {b_mean:.4f} "
                f"(Wilcoxon p = {pvalue:.2g}; power {pw:.2f} for an effect of {effect:.3f})")
    return {"verdict": word, "leap": a, "leap_mean": float(a_mean), "baseline": b, "baseline_mean": float(b_mean),
            "pvalue": float(pvalue), "effect": effect, "effect_source": effect_source, "sd": float(sd), "n": int(n),
            "power": pw, "samples_needed": int(need), "sentence": sentence}


def group_verdict(record: pd.DataFrame, pairs: pd.DataFrame, classifier: str, task: str, measure: str,
                  group, against, alpha: float = 0.01, names=("group", "against"), effect: float | None = None,
                  effect_source: str = "paper", min_power: float = MIN_POWER) -> dict:
    """Does the best method of ``group`` beat the best of ``against`` in one table of a recorded study?

    The best of each group is its method with the lowest Average AE in ``record`` (:func:`capshift.experiment.
    study_record`); the two are compared by the recorded paired Wilcoxon test over every (dataset, sample)
    (``pairs``). The word is :func:`capshift.significance.verdict`'s: *reproduced* when ``group``'s best has the
    lower Average and p < ``alpha``; *contradicted* when ``against``'s has and p < ``alpha``; otherwise *not
    reproduced* when the test had the power (at least ``min_power``) to see ``effect`` and *not enough evidence*
    when it had not (also when the pair was not tested); *not testable here* when either group has no method in
    the table.

    ``effect``: the difference of mean AE the finding claims (the paper's, e.g. :func:`paper_group_effect`);
    None (or 0) uses :data:`DEFAULT_EFFECT` and sets ``effect_source`` to ``"default"``. The power is
    :func:`capshift.significance.power` on the recorded number of pairs (the Average rows' ``n``) with the
    spread of the paired differences taken as ``sqrt(std_a² + std_b²)`` of the two Average rows (pooled std of
    the AE): an upper bound of the true spread when the two methods' errors are positively correlated, as they
    are on the same samples, so the power is a lower bound.

    ``names``: how the sentence calls the two groups. Returns a dict: ``verdict``, ``leap`` and ``leap_mean``
    (``group``'s best), ``baseline`` and ``baseline_mean`` (``against``'s best), ``pvalue``, ``effect``,
    ``effect_source``, ``sd``, ``n``, ``power``, ``samples_needed`` (pairs for ``min_power``) and ``sentence``.
    Raises ValueError for an ``alpha`` outside (0, 1).
    """
    alpha = check_fraction(alpha, "alpha")
    rows = record[(record["classifier"] == classifier) & (record["task"] == task) & (record["measure"] == measure)
                  & (record["dataset"] == "Average")].set_index("method")
    avg = rows["mean"]
    mine = avg[[m for m in group if m in avg.index]]
    base = avg[[m for m in against if m in avg.index]]
    where = f"{classifier}, {task}, {measure}"
    if mine.empty or base.empty:
        return _untestable(where, names[0] if mine.empty else names[1], effect_source)
    a, b = mine.idxmin(), base.idxmin()
    pvalue = recorded_pvalue(pairs, classifier, task, measure, a, b)
    sd = float(np.hypot(rows.loc[a, "std"], rows.loc[b, "std"])) if "std" in rows else float("nan")
    n = int(min(rows.loc[a, "n"], rows.loc[b, "n"])) if "n" in rows else 0
    return _verdict_dict(where, names, a, mine[a], b, base[b], pvalue, sd, n, effect, effect_source, alpha,
                         min_power)


def results_group_verdict(results: pd.DataFrame, task: str, measure: str, group, against, alpha: float = 0.01,
                          effect: float | None = None, effect_source: str = "paper", names=("group", "against"),
                          min_power: float = MIN_POWER) -> dict:
    """:func:`group_verdict` computed from tidy results of one classifier (``run_grid`` rows) instead of a record.

    Restricted to ``task`` (from :data:`capshift.datasets.REGISTRY`) and ``measure``; the mean AE of each method
    over every (dataset, sample) (the mean of the dataset means: every dataset has the same number of samples);
    the best of ``group`` against the best of ``against`` by a paired Wilcoxon signed-rank test over every
    (dataset, sample); the spread is the std of those paired differences. Returns :func:`group_verdict`'s dict.
    """
    alpha = check_fraction(alpha, "alpha")
    need = {"dataset", "method", "measure", "sample", "ae"}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        raise ValueError(f"results must be a tidy frame of run_experiment/run_grid with columns {sorted(need)}")
    d = results[(results["measure"] == measure) & (results["dataset"].map(lambda k: REGISTRY[k].task) == task)]
    wide = d.pivot_table(index=["dataset", "sample"], columns="method", values="ae", aggfunc="first")
    where = f"{task}, {measure}"
    mine = wide[[m for m in group if m in wide.columns]].mean()
    base = wide[[m for m in against if m in wide.columns]].mean()
    if mine.empty or base.empty:
        return _untestable(where, names[0] if mine.empty else names[1], effect_source)
    a, b = mine.idxmin(), base.idxmin()
    x, y = wide[a].dropna(), wide[b].dropna()
    both = x.index.intersection(y.index)
    diff = (x[both] - y[both]).to_numpy(float)
    pvalue = 1.0 if np.allclose(diff, 0) else float(wilcoxon(diff).pvalue)
    return _verdict_dict(where, names, a, x[both].mean(), b, y[both].mean(), pvalue, float(diff.std(ddof=1)),
                         len(both), effect, effect_source, alpha, min_power)


def paper_group_effect(group, against, datasets=None, paper: str = "leap2025", measure: str = "acc",
                       classifier: str = "LR", task: str = "binary") -> tuple[float, int]:
    """The paper's own difference between the best of ``against`` and the best of ``group`` (mean AE over the
    datasets, positive when ``group``'s best is lower), on ``datasets`` (paper's names; default all of the table)
    restricted to those where the paper has every method of both groups that it reports. The best of each group
    is chosen on the paper's means, as :func:`group_verdict` chooses ours. Returns ``(effect, n_datasets)``;
    ``(nan, 0)`` when the paper has no such table or no shared dataset.
    """
    try:
        pub = paper_values(paper, measure, classifier, task)["mean"].unstack("method")
    except ValueError:
        return float("nan"), 0
    pub = pub.drop(index="Average", errors="ignore")
    if datasets is not None:
        pub = pub.reindex([d for d in datasets if d in pub.index])
    cols = [m for m in list(group) + list(against) if m in pub.columns]
    pub = pub[cols].dropna(axis=1, how="all").dropna()  # a method the table never reports (ATC on F1) is absent
    g = [m for m in group if m in pub.columns]
    a = [m for m in against if m in pub.columns]
    if pub.empty or not g or not a:
        return float("nan"), 0
    means = pub.mean()
    return float(means[a].min() - means[g].min()), int(len(pub))


def leap_kdey_verdict(record: pd.DataFrame, pairs: pd.DataFrame, classifier: str, task: str, measure: str,
                      alpha: float = 0.01, baselines=BASELINES, effect: float | None = None,
                      effect_source: str = "paper") -> dict:
    """The LEAP paper's conclusion "LEAP methods with KDEy beat the baselines" (its Sect. 5.3 and 6), tested on
    one table of a recorded study: :func:`group_verdict` of :data:`LEAP_KDEY` against ``baselines`` (default
    :data:`BASELINES`; :data:`PAPER_BASELINES` for the paper's own), its power computed for ``effect`` (the
    paper's, :func:`paper_group_effect`; None: :data:`DEFAULT_EFFECT`). Returns its dict."""
    return group_verdict(record, pairs, classifier, task, measure, LEAP_KDEY, baselines, alpha,
                         names=("LEAP-KDEy", "baseline"), effect=effect, effect_source=effect_source)
