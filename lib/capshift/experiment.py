"""The experiment runner: CAP methods on one (dataset, classifier) over a PPS protocol, as a tidy table.

Protocol (LEAP 2025, Sect. 5.2): split the dataset into L / V / U (:func:`capshift.datasets.load`),
train the classifier h on L, fit every CAP method on V, draw test samples from U with the UPP
(or APP) protocol, and compare each method's predicted measure with the true one (absolute error,
AE). The evaluation itself (h trained once, applied to U once, each shared quantifier fitted once, one tidy
frame per method) is :mod:`capshift.evaluation`, the one path every study takes.

Methods are named as in the paper's tables, by the names of :data:`capshift.registry.METHODS`:
``Naive`` and ``<variant>_<quantifier>`` with variant ``S-LEAP``, ``LEAP`` or ``O-LEAP`` and quantifier
``ACC``, ``KDEy``, ``CC``, ``SLD`` or ``oracle`` (e.g. ``LEAP_ACC``, ``O-LEAP_KDEy``, ``S-LEAP_oracle``),
the baselines and the QuAcc variants. Methods whose class declares ``shared_prevalence_path = True``
get ``(gamma, q-hat)`` through ``tables_from_prevalences``, those declaring ``shared_prevalence_estimates = True``
(Q-COT) h's posteriors and q-hat through ``measures_from_prevalences``; the others are evaluated through
``predict_measures`` with h's posteriors on each sample, sliced from one ``predict_proba`` of U;
a method asked for a measure it does not support (``supports``) gets no rows for that measure.

This module is the layer of *one run* (:mod:`capshift.grid` runs many, on disk): :func:`run_experiment`,
:func:`run_tables`, :func:`run_many`, :func:`summarise`; the QuAcc paper's protocol (:func:`run_quacc_protocol`)
and the QuAcc chapter's one-factor study (:func:`configuration_study`); and :func:`check_run_args`, which the grid reuses
(:func:`prepare` -> :class:`RunContext` and :func:`method_frame` are :mod:`capshift.evaluation`'s, importable here). The classifiers h are
:mod:`capshift.classifiers`, the dataset-shift experiments :mod:`capshift.shift_experiments`, the Wilcoxon marks
:mod:`capshift.significance`; their names stay importable from here.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.stats import wilcoxon
from tqdm import tqdm

from . import datasets, protocols, registry
from .validation import check_fraction, check_int, check_seed
from .classifiers import CLASSIFIERS, check_classifier_name, make_classifier
from .evaluation import (RESULT_COLUMNS, RunContext, contexts, estimated_tables, evaluate, method_frame, prepare,
                         require_tables)
from .leap import DEFAULT_SOLVER, check_solver
from .registry import make_method
from .tables import get_measure
# Kept importable from here (their homes are the modules named): the chapters and users' scripts of earlier
# versions import them as capshift.experiment.<name>.
from .shift_experiments import (SHIFT_CAP_METHODS, SHIFT_GRID, SHIFT_QUANTIFIERS, make_shift_quantifier,
                                run_shift_cap, run_shift_quantifiers)
from .significance import significance, wilcoxon_marks

__all__ = ["DEFAULT_METHODS", "RESULT_COLUMNS", "STUDY_METHODS", "AUTHORS_VARIANTS", "RECORD_COLUMNS", "study_record",
           "pairwise_tests", "SHIFT_BINS", "shift_profile", "RunContext", "check_run_args", "prepare", "method_frame",
           "make_method", "run_experiment", "run_tables", "run_many", "summarise", "quacc_train_prevalences",
           "run_quacc_protocol", "configuration_study",
           # re-exported (see the imports above)
           "CLASSIFIERS", "make_classifier", "SHIFT_QUANTIFIERS", "SHIFT_CAP_METHODS", "SHIFT_GRID",
           "make_shift_quantifier", "run_shift_quantifiers", "run_shift_cap", "significance", "wilcoxon_marks"]

#: The LEAP-family columns of the paper's Tables 1-2 (plus the Naive baseline).
DEFAULT_METHODS = ("Naive", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy")

def check_run_args(classifier, methods, protocol, n_samples, sample_size, measures, seed, solver):
    """Validate :func:`run_experiment`'s arguments up front (also used by :func:`capshift.grid.run_grid`).

    Returns ``(specs, measures)``: a list of ``(name, capshift.registry.MethodSpec)`` and the list of measure
    names. Raises ValueError / TypeError naming the argument (unknown classifier, method, measure, protocol or
    solver; empty ``methods``; non-positive sizes; a bad seed), before any work."""
    check_classifier_name(classifier)
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods must be a list of method names, got {methods!r}; e.g. methods=[{methods!r}]")
    methods = list(methods)
    if not methods:
        raise ValueError("methods is empty: name at least one method (see capshift.registry.names())")
    protocols.make_protocol(protocol)  # a registered name or a Protocol (ValueError/TypeError otherwise)
    check_int(n_samples, "n_samples")
    check_int(sample_size, "sample_size")
    check_seed(seed, "seed")
    check_solver(solver)
    if isinstance(measures, str):
        measures = [measures]
    for m in measures:
        get_measure(m)
    return [(name, registry.get(name)) for name in methods], list(measures)


def run_experiment(dataset, classifier: str = "lr", methods=DEFAULT_METHODS, protocol: str = "upp",
                   n_samples: int = 1000, sample_size: int = 100, measures=("accuracy",), seed: int = 0,
                   solver: str = DEFAULT_SOLVER, progress: bool = True) -> pd.DataFrame:
    """Evaluate CAP methods on one dataset and classifier over a PPS protocol.

    Parameters
    ----------
    dataset : str or capshift.datasets.Split
        A registry name (loaded with ``seed``) or an already loaded split.
    classifier : str
        A name of :data:`CLASSIFIERS`, trained on L with ``random_state=seed``.
    methods : sequence of str
        Method names (see the module docstring).
    protocol : str or capshift.protocols.Protocol
        A name of :func:`capshift.protocols.names` or a protocol object. ``"upp"``: ``n_samples`` prevalence
        vectors uniform on the simplex (Kraemer); ``"app"``: the 21-point grid (binary), repeated until
        ``n_samples`` samples; ``"npp"``: uniform samples of U. A dataset-shift family (``"prior"``,
        ``"global-pure-covariate"``, ...; :class:`capshift.protocols.ShiftFamily`) runs on a dataset of
        :data:`capshift.datasets.SHIFT_DATASETS` (``dataset`` its name), ``n_samples`` per condition, its rows
        numbered across its trials and followed by each sample's conditions (:func:`capshift.evaluation.evaluate`).
    n_samples, sample_size : int
        Number and size of the test samples drawn from U. Methods trained on validation samples
        (DoC, DS, NN, RCA*) draw them at the test samples' size.
    measures : sequence of str
        Measures to predict (names of :data:`capshift.tables.MEASURES`).
    seed : int
        Seeds the split, the classifier, the quantifiers and the protocol.
    solver : {"active_set", "osqp", "slsqp"}
        Constrained solver of the LEAP family.

    Returns
    -------
    pandas.DataFrame
        One row per (method, sample, measure): ``dataset, classifier, method, sample, true_prev``
        (tuple), ``shift`` (L1 distance between V's and the sample's prevalence, as the paper's
        Sect. 5.13), ``measure, true, predicted, ae, path`` (LEAP solve path or ""), ``seconds``
        (per-sample prediction time, including the quantifier's share), ``q_ae`` (the quantification error
        of the method's quantifier on the sample, mean over classes of |q-hat_i - q_i|, as the paper's
        Fig. 1b; NaN for methods without a shared quantifier, :func:`capshift.evaluation.shared_quantifier`, 0 for
        the oracle).
    """
    specs, measures = check_run_args(classifier, methods, protocol, n_samples, sample_size, measures, seed, solver)
    ctxs = contexts(dataset, classifier, [spec for _, spec in specs], protocol, n_samples, sample_size, seed, progress)
    frames = [evaluate(ctxs, name, spec, measures, solver)
              for name, spec in tqdm(specs, desc=f"{ctxs[0].split.name}: methods", disable=not progress, leave=False)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=RESULT_COLUMNS)


def run_tables(dataset, classifier: str = "lr", methods=DEFAULT_METHODS, protocol: str = "upp",
               n_samples: int = 1000, sample_size: int = 100, seed: int = 0, solver: str = "osqp",
               progress: bool = False) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The true and the estimated contingency tables of :func:`run_experiment`'s test samples.

    Same arguments, split, classifier, samples and fitted methods as :func:`run_experiment` (so that
    ``accuracy(estimated[m])`` is the ``predicted`` accuracy of method ``m`` in its frame, sample by sample),
    but the methods' whole tables are returned instead of the measures computed from them: what table-level
    errors (e.g. :func:`capshift.emq.table_error`, QuAcc's evaluation) need.

    Returns
    -------
    true_tables : numpy.ndarray, shape (k, n, n), float
        Table of h on each test sample (rows true class, columns predicted class; each sums to 1),
        ``k = n_samples`` in the protocol's sample order.
    estimated : dict[str, numpy.ndarray]
        Method name -> estimated tables, shape (k, n, n), same order and orientation.

    Raises
    ------
    ValueError / TypeError
        As :func:`run_experiment` for bad arguments; TypeError naming a method that estimates measures
        directly instead of tables (``estimates_tables = False``, e.g. ATC, DoC).
    """
    specs, _ = check_run_args(classifier, methods, protocol, n_samples, sample_size, ("accuracy",), seed, solver)
    for name, spec in specs:
        require_tables(name, spec)  # before any work
    ctx = prepare(dataset, classifier, [spec for _, spec in specs], protocol, n_samples, sample_size, seed, progress)
    return ctx.true_tables, {name: estimated_tables(ctx, name, spec, solver) for name, spec in specs}


def run_many(names, n_jobs: int = 1, progress: bool = True, **kwargs) -> pd.DataFrame:
    """:func:`run_experiment` over several datasets (same keyword arguments), concatenated.

    ``n_jobs`` datasets run in parallel processes (joblib); every dataset is seeded on its own,
    so the result does not depend on ``n_jobs``.
    """
    names = list(names)
    if n_jobs == 1:
        frames = [run_experiment(name, progress=progress, **kwargs)
                  for name in tqdm(names, desc="datasets", disable=not progress)]
    else:
        run = delayed(run_experiment)
        frames = Parallel(n_jobs=n_jobs)(run(name, progress=False, **kwargs)
                                         for name in tqdm(names, desc="datasets", disable=not progress))
    return pd.concat(frames, ignore_index=True)


def summarise(results: pd.DataFrame, by=("dataset", "method")) -> pd.DataFrame:
    """Mean and standard deviation of AE per group (default: dataset x method), wide by method.

    Returns a DataFrame indexed by the first key of ``by`` with a (stat, method) column index,
    stat in {"mean", "std"}, plus an "Average" row: the mean of the per-group means and the
    standard deviation of all samples pooled, ``sqrt(mean(std²) + var(means))`` (groups of equal
    size), which is how the LEAP paper's Average rows are computed (it reproduces the printed
    Average std of Tables 1-2 to within 0.001).
    """
    by = list(by)
    need = set(by) | {"ae"}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        have = sorted(results.columns) if isinstance(results, pd.DataFrame) else type(results).__name__
        raise ValueError(f"results must be a DataFrame from run_experiment with columns {sorted(need)}; got {have}")
    g = results.groupby(by, sort=False)["ae"].agg(["mean", lambda x: x.std(ddof=0)]).set_axis(["mean", "std"], axis=1)
    g = g.unstack(by[-1])
    means, stds = g["mean"], g["std"]
    pooled = np.sqrt((stds**2).mean() + means.var(ddof=0))
    g.loc["Average"] = pd.concat({"mean": means.mean(), "std": pooled})
    return g


#: The methods of the LEAP paper's Tables 1-2 (Sect. 5.5), then the CBPE family's other variants beside the
#: paper's L-CBPE (plain CBPE, BCTS only, SLD only, SLD after BCTS: the ablation of the experiments chapter).
STUDY_METHODS = ("Naive", "ATC", "DoC", "DS", "L-CBPE", "NN", "Q-COT", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy",
                 "O-LEAP_KDEy", "CBPE", "BCTS-CBPE", "SLD-CBPE-raw", "SLD-CBPE")
#: The paper's baselines as the LEAP authors' code computes them (issue 30), registered name -> the paper's name:
#: the table-free DS and NN report their accuracy regression under every measure, L-CBPE's table is normalised
#: per column (:func:`capshift.baselines.column_normalised`). Run beside STUDY_METHODS for the LR and SVM tables and
#: compared with the printed cells through ``reference.compare_record(..., aliases=AUTHORS_VARIANTS)``.
AUTHORS_VARIANTS = {"DS-authors": "DS", "NN-authors": "NN", "L-CBPE-authors": "L-CBPE"}
#: Columns of :func:`study_record`.
RECORD_COLUMNS = ["classifier", "task", "measure", "dataset", "method", "mean", "std", "n", "best", "pvalue",
                  "cell_seconds", "prepare_seconds"]


def _with_tasks(results, task_of: dict, need: set) -> pd.DataFrame:
    """``results`` with a ``task`` column from ``task_of``; ValueError for missing columns or datasets."""
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        raise ValueError(f"results must be a tidy frame with columns {sorted(need)}")
    missing = sorted(set(results["dataset"]) - set(task_of))
    if missing:
        raise ValueError(f"task_of has no task for dataset(s) {missing}")
    return results.assign(task=results["dataset"].map(task_of))


def study_record(results: pd.DataFrame, task_of: dict) -> pd.DataFrame:
    """A grid's results summarised per table cell, with the paper's Average rows and Wilcoxon tests: the record
    of a full-scale study that a chapter can read instead of recomputing it (``book/measured/``).

    Parameters
    ----------
    results : DataFrame
        :func:`capshift.grid.load_results` (or :func:`run_experiment`) rows: ``classifier, dataset, method,
        measure, sample, ae`` and, when present, ``cell_seconds, prepare_seconds``.
    task_of : dict
        Dataset name -> "binary" or "multiclass" (e.g. from :data:`capshift.datasets.REGISTRY`).

    Returns
    -------
    DataFrame with :data:`RECORD_COLUMNS`, one row per (classifier, task, measure, dataset, method): ``mean`` and
    ``std`` (ddof=0) of the AE over the test samples, ``n`` samples, ``best`` (lowest mean of its row, ties to
    1e-12) and ``pvalue`` (paired Wilcoxon signed-rank test against the row's first best, NaN for the best;
    :func:`capshift.significance.significance`); per (classifier, task, measure) a row ``dataset="Average"``:
    the mean of the dataset means, the std of all samples pooled (``sqrt(mean(std²) + var(means))``, as the
    paper's Average rows), ``n`` all samples, and the test paired over every (dataset, sample).
    ``cell_seconds`` / ``prepare_seconds``: the cell's time (NaN without them; summed over datasets in Average).

    Raises ValueError for missing columns or a dataset missing from ``task_of``.
    """
    r = _with_tasks(results, task_of, {"classifier", "dataset", "method", "measure", "sample", "ae"})
    for col in ("cell_seconds", "prepare_seconds"):
        if col not in r:
            r[col] = np.nan
    rows = []
    for (clf, task, measure), block in r.groupby(["classifier", "task", "measure"], sort=False):
        stats = block.groupby(["dataset", "method"], sort=False).agg(
            mean=("ae", "mean"), std=("ae", lambda x: x.std(ddof=0)), n=("ae", "size"),
            cell_seconds=("cell_seconds", "first"), prepare_seconds=("prepare_seconds", "first")).reset_index()
        sig = significance(block, by="dataset", pair=("sample",))
        stats = stats.merge(sig[["dataset", "method", "best", "pvalue"]], on=["dataset", "method"])
        means = stats.pivot(index="dataset", columns="method", values="mean")
        stds = stats.pivot(index="dataset", columns="method", values="std")
        complete = [m for m in dict.fromkeys(stats["method"]) if means[m].notna().all()]  # on every dataset, as the paper
        pooled = np.sqrt((stds[complete] ** 2).mean() + means[complete].var(ddof=0))
        avg_sig = significance(block[block["method"].isin(complete)], by=None, pair=("dataset", "sample"))
        avg = pd.DataFrame({"dataset": "Average", "method": complete, "mean": means[complete].mean().values,
                            "std": pooled.values,
                            "n": [int(stats.loc[stats.method == m, "n"].sum()) for m in complete],
                            "cell_seconds": [stats.loc[stats.method == m, "cell_seconds"].sum(min_count=1)
                                             for m in complete],
                            "prepare_seconds": np.nan})
        avg = avg.merge(avg_sig[["method", "best", "pvalue"]], on="method")
        rows.append(pd.concat([stats, avg], ignore_index=True).assign(classifier=clf, task=task, measure=measure))
    return pd.concat(rows, ignore_index=True)[RECORD_COLUMNS] if rows else pd.DataFrame(columns=RECORD_COLUMNS)


def pairwise_tests(results: pd.DataFrame, task_of: dict) -> pd.DataFrame:
    """Every pair of methods compared over a whole table: the paired Wilcoxon signed-rank test (scipy) on the AE
    of the same (dataset, sample), per (classifier, task, measure) -- what a verdict on a paper's claim such as
    "method group A beats group B" needs, beside :func:`study_record`'s tests against the best.

    Only methods with values on every dataset of the table take part (as in its Average row). Returns a DataFrame
    with columns ``classifier, task, measure, method_a, method_b, mean_a, mean_b`` (the Average-row means: mean
    of the dataset means), ``n`` (pairs) and ``pvalue`` (two-sided; 1 when every difference is 0), one row per
    unordered pair (a before b in the order the methods appear). Raises ValueError as :func:`study_record`.
    """
    r = _with_tasks(results, task_of, {"classifier", "dataset", "method", "measure", "sample", "ae"})
    rows = []
    for (clf, task, measure), block in r.groupby(["classifier", "task", "measure"], sort=False):
        wide = block.pivot(index=["dataset", "sample"], columns="method", values="ae")
        methods = [m for m in dict.fromkeys(block["method"]) if wide[m].notna().all()]
        means = block.groupby(["method", "dataset"])["ae"].mean().groupby("method").mean()
        for i, a in enumerate(methods):
            for b in methods[i + 1:]:
                d = wide[a] - wide[b]
                p = 1.0 if np.allclose(d, 0) else float(wilcoxon(wide[a], wide[b]).pvalue)
                rows.append((clf, task, measure, a, b, float(means[a]), float(means[b]), int(len(d)), p))
    return pd.DataFrame(rows, columns=["classifier", "task", "measure", "method_a", "method_b", "mean_a", "mean_b",
                                       "n", "pvalue"])


#: Bins of the amount of shift (L1 distance between V's and the sample's prevalence, in [0, 2]) of
#: :func:`shift_profile`.
SHIFT_BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 2.0)


def shift_profile(results: pd.DataFrame, task_of: dict, bins=SHIFT_BINS) -> pd.DataFrame:
    """Mean AE by amount of shift: per (classifier, task, measure, method) and bin of ``shift`` (the L1 distance
    between V's prevalence and the sample's, the LEAP paper's Sect. 5.13), pooled over the datasets.

    Returns a DataFrame with columns ``classifier, task, measure, method, shift_lo, shift_hi`` (the bin, closed on
    the right; the first also holds 0), ``mean`` (AE), ``n`` (samples). Empty bins are left out. Raises ValueError
    for missing columns, a dataset missing from ``task_of``, or bins that are not increasing.
    """
    r = _with_tasks(results, task_of, {"classifier", "dataset", "method", "measure", "shift", "ae"})
    bins = np.asarray(bins, dtype=float)
    if bins.ndim != 1 or len(bins) < 2 or np.any(np.diff(bins) <= 0):
        raise ValueError(f"bins must be increasing edges, got {bins.tolist()}")
    k = np.clip(np.searchsorted(bins, r["shift"].to_numpy(), side="left") - 1, 0, len(bins) - 2)
    r = r.assign(shift_lo=bins[k], shift_hi=bins[k + 1])
    out = r.groupby(["classifier", "task", "measure", "method", "shift_lo", "shift_hi"], sort=False)["ae"].agg(
        mean="mean", n="size").reset_index()
    return out


# ---- QuAcc protocol (training prevalence x test prevalence) ----
def quacc_train_prevalences(n_classes: int, n_train: int = 9, seed: int = 0, floor: float = 0.1) -> np.ndarray:
    """Training prevalences of the QuAcc protocol (QuAcc 2025, Sect. "Evaluation Protocol"), (n_train, n_classes).

    Binary: the grid 0.1, ..., 0.9 of the positive class (``n_train`` evenly spaced values in [0.1, 0.9];
    9 gives the paper's grid; ``n_train = 1`` gives 0.5; ``floor`` is not used). Multiclass: ``n_train`` vectors uniform on the simplex (Kraemer,
    :func:`capshift.protocols.upp_prevalences` with ``seed``) mixed with the uniform vector,
    ``(1 - floor) p + floor / n``, so that every class keeps a share >= floor / n and h and the CAP methods
    see every class (the paper does not say how it avoids empty classes). Raises ValueError on bad input.
    """
    n_classes = check_int(n_classes, "n_classes", min_value=2)
    n_train = check_int(n_train, "n_train")
    check_seed(seed, "seed")
    floor = check_fraction(floor, "floor", 0.0, 1.0, closed="left")
    if n_classes == 2:
        pos = np.linspace(0.1, 0.9, n_train) if n_train > 1 else np.array([0.5])
        return np.column_stack([1 - pos, pos])
    p = protocols.upp_prevalences(n_classes, n_train, seed)
    return (1 - floor) * p + floor / n_classes


def run_quacc_protocol(dataset, classifier: str = "lr", methods=("Naive", "LEAP_KDEy", "O-LEAP_KDEy"),
                       n_train: int = 9, test_repeats: int = 10, n_test_upp: int = 210, sample_size: int = 1000,
                       train_size: float | None = None, measures=("accuracy", "f1"), seed: int = 0,
                       solver: str = DEFAULT_SOLVER, progress: bool = False) -> pd.DataFrame:
    """The QuAcc paper's protocol: classifiers trained at several training prevalences x PPS test samples.

    For each training prevalence p_t (:func:`quacc_train_prevalences`), a training sample T_t is drawn from
    the split's L and a validation sample V_t from its V, both at prevalence p_t and with replacement
    (QuaPy's sampling); h is trained on T_t, every method is fitted on V_t, and test samples are drawn from U
    by :func:`run_experiment` (binary: APP, the 21-point grid, ``test_repeats`` samples per point;
    multiclass: ``n_test_upp`` UPP samples). Sizes follow the paper (QuAcc 2025, Sect. "Evaluation
    Protocol", Eqs. 3-4): binary ``|T_t| = min_c |L_c| / 0.9`` (the largest size at which the 0.9 class
    needs no repeated item; likewise for V), multiclass ``|L| / 2`` and ``|V| / 2``; ``train_size`` (a
    fraction of that) shrinks them.

    Returns the tidy frame of :func:`run_experiment` (``shift`` = L1 distance between V_t's and the test
    sample's prevalence) with two more columns, ``train_index`` (t) and ``train_prev`` (tuple).
    Raises ValueError/TypeError for bad arguments (see :func:`run_experiment`).
    """
    if train_size is not None:
        check_fraction(train_size, "train_size", 0.0, 1.0, closed="right")
    check_int(test_repeats, "test_repeats")
    check_int(n_test_upp, "n_test_upp")
    check_run_args(classifier, methods, "upp", 1, sample_size, measures, seed, solver)
    split = datasets.load(dataset, seed=seed) if isinstance(dataset, str) else dataset
    n = split.n_classes
    prevs = quacc_train_prevalences(n, n_train, seed)
    frac = 1.0 if train_size is None else float(train_size)

    def size(y):
        if n == 2:
            return max(2 * n, int(frac * np.bincount(y, minlength=n).min() / 0.9))
        return max(2 * n, int(frac * len(y) / 2))

    size_T, size_V = size(split.y_L), size(split.y_V)  # the same at every training prevalence
    protocol, k = ("app", 21 * test_repeats) if n == 2 else ("upp", n_test_upp)
    frames = []
    for t, p in enumerate(tqdm(prevs, desc=f"{split.name}: training prevalences", disable=not progress)):
        iT = protocols.sample_at(split.y_L, p, size_T, seed + 1000 + t)
        iV = protocols.sample_at(split.y_V, p, size_V, seed + 2000 + t)
        sub = datasets.Split(split.name, split.X_L[iT], split.y_L[iT], split.X_V[iV], split.y_V[iV],
                             split.X_U, split.y_U, split.classes, n)
        df = run_experiment(sub, classifier=classifier, methods=methods, protocol=protocol, n_samples=k,
                            sample_size=sample_size, measures=measures, seed=seed, solver=solver, progress=False)
        frames.append(df.assign(train_index=t, train_prev=[tuple(float(v) for v in np.round(p, 4))] * len(df)))
    return pd.concat(frames, ignore_index=True)


# ---- one factor at a time (the QuAcc chapter's configuration study) ----
def configuration_study(split, configurations: dict, n_samples: int = 12, sample_size: int = 1000,
                        classifier: str = "lr", measure: str = "accuracy", seed: int = 0):
    """Predict ``measure`` on the same UPP test samples with several CAP configurations (for studies that vary
    one factor of QuAcc at a time; book chapter ``quacc``).

    Parameters
    ----------
    split : capshift.datasets.Split
        h (``classifier``, seeded with ``seed``) is trained on L, every configuration is fitted on V, and
        ``n_samples`` UPP samples of ``sample_size`` items are drawn from U (:func:`capshift.protocols.upp_indices`).
    configurations : dict
        Display name -> a registered method name (str, e.g. ``"O-LEAP_KDEy"``; :mod:`capshift.registry`) or a
        callable ``f(h)`` returning an unfitted CAP estimator (e.g. ``lambda h: QuAcc1xN2(h, "sld", C=0.01)``).
    measure : str
        Measure predicted (:data:`capshift.tables.MEASURES`); a configuration that cannot estimate it gets NaN.

    Returns
    -------
    pandas.DataFrame with one row per (configuration, sample): ``dataset, n_val, seed, configuration, sample,
    true, predicted, ae, error`` (``error`` = predicted - true, signed; ``ae`` its absolute value).

    Raises
    ------
    ValueError
        ``configurations`` is empty, or a name is not registered; bad sizes or seed.
    TypeError
        A configuration is neither a str nor a callable, or ``split`` is not a Split.
    """
    if not isinstance(split, datasets.Split):
        raise TypeError(f"split must be a capshift.datasets.Split (e.g. gaussian_split()), got {type(split).__name__}")
    if not isinstance(configurations, dict) or not configurations:
        raise ValueError("configurations must be a non-empty dict: name -> method name or callable(h) -> estimator")
    for name, conf in configurations.items():
        if not (isinstance(conf, str) or callable(conf)):
            raise TypeError(f"configurations[{name!r}] must be a registered method name or a callable f(h) "
                            f"returning an unfitted estimator, got {type(conf).__name__}")
    n_samples, sample_size = check_int(n_samples, "n_samples"), check_int(sample_size, "sample_size")
    seed = check_seed(seed, "seed")
    get_measure(measure)
    ctx = prepare(split, classifier, [], "upp", n_samples, sample_size, seed)
    h, true = ctx.h, get_measure(measure)(ctx.true_tables)
    samples, posts = ctx.samples(), ctx.posteriors()
    frames = []
    for name, conf in configurations.items():
        est = make_method(conf, h, random_state=seed) if isinstance(conf, str) else conf(h)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(split.X_V, split.y_V)
            pred = est.predict_measures(samples, [measure], posteriors=posts).get(measure, np.full(ctx.k, np.nan))
        pred = np.asarray(pred, dtype=float)
        frames.append(pd.DataFrame({"dataset": split.name, "n_val": len(split.y_V), "seed": seed,
                                    "configuration": name, "sample": np.arange(ctx.k), "true": true,
                                    "predicted": pred, "ae": np.abs(pred - true), "error": pred - true}))
    return pd.concat(frames, ignore_index=True)


if __name__ == "__main__":  # the command line's earlier name: say where it went instead of doing nothing
    raise SystemExit("`python -m capshift.experiment` is now `python -m capshift` (or the `capshift` console "
                     "script): e.g. `python -m capshift run --datasets haberman --results runs/`")
