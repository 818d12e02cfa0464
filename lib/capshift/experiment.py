"""The experiment runner: CAP methods on one (dataset, classifier) over a PPS protocol, as a tidy table.

Protocol (LEAP 2025, Sect. 5.2): split the dataset into L / V / U (:func:`capshift.datasets.load`),
train the classifier h on L, fit every CAP method on V, draw test samples from U with the UPP
(or APP) protocol, and compare each method's predicted measure with the true one (absolute error,
AE). The classifier's predictions on U and each quantifier's per-item predictions on U are computed
once; every sample then only aggregates its slice, and every method that uses the same quantifier
shares its estimate (LEAP-family methods get ``(gamma, q-hat)`` through
``tables_from_prevalences``).

Methods are named as in the paper's tables, by the names of :data:`capshift.registry.METHODS`:
``Naive`` and ``<variant>_<quantifier>`` with variant ``S-LEAP``, ``LEAP`` or ``O-LEAP`` and quantifier
``ACC``, ``KDEy``, ``CC``, ``SLD`` or ``oracle`` (e.g. ``LEAP_ACC``, ``O-LEAP_KDEy``, ``S-LEAP_oracle``),
the baselines and the QuAcc variants. Methods whose class declares ``shared_prevalence_path = True``
get ``(gamma, q-hat)`` through ``tables_from_prevalences``; the others are evaluated through
``predict_measures`` with h's posteriors on each sample, sliced from one ``predict_proba`` of U;
a method asked for a measure it does not support (``supports``) gets no rows for that measure.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.ensemble import RandomForestClassifier
from tqdm import tqdm

from . import datasets, protocols, registry
from ._validation import check_fraction, check_int, check_seed
from .leap import DEFAULT_SOLVER, SOLVERS
from .quantifiers import QUANTIFIERS, Quantifier
from .tables import contingency_table, get_measure

__all__ = ["CLASSIFIERS", "DEFAULT_METHODS", "quacc_train_prevalences", "run_quacc_protocol", "make_classifier",
           "make_method", "run_experiment", "run_tables", "run_many", "summarise", "SHIFT_QUANTIFIERS",
           "SHIFT_CAP_METHODS", "SHIFT_GRID", "make_shift_quantifier", "run_shift_quantifiers", "run_shift_cap",
           "wilcoxon_marks", "significance"]

#: Classifier names of the LEAP paper (Sect. 5.4): scikit-learn defaults, k = 10 for kNN, RBF SVM
#: with Platt posteriors, MLP with hidden layers (100, 15) as the paper states.
CLASSIFIERS = {
    "lr": lambda seed: LogisticRegression(random_state=seed),
    "knn": lambda seed: KNeighborsClassifier(n_neighbors=10),
    "svm": lambda seed: SVC(kernel="rbf", probability=True, random_state=seed),
    "mlp": lambda seed: MLPClassifier(hidden_layer_sizes=(100, 15), random_state=seed),
    "rf": lambda seed: RandomForestClassifier(random_state=seed),
}

#: The LEAP-family columns of the paper's Tables 1-2 (plus the Naive baseline).
DEFAULT_METHODS = ("Naive", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy")

def make_classifier(name: str, random_state=0):
    """An unfitted classifier by the paper's name (:data:`CLASSIFIERS`); ValueError for unknown names."""
    if name not in CLASSIFIERS:
        raise ValueError(f"unknown classifier {name!r}; choose one of {sorted(CLASSIFIERS)}")
    return CLASSIFIERS[name](random_state)


def make_method(name: str, classifier, quantifier=None, solver=DEFAULT_SOLVER, random_state=0, **params):
    """An unfitted CAP estimator for a registered method name (:func:`capshift.registry.make_method`).

    ``quantifier`` (e.g. a fitted, shared :class:`capshift.quantifiers.Quantifier`) overrides the one in the
    name; ``solver`` is passed to the methods that have one (the LEAP family); ``params`` override other
    constructor parameters. Raises ValueError for an unknown name or parameter.
    """
    spec = registry.get(name)
    accepted = spec.cls._get_param_names()
    if quantifier is not None:
        params["quantifier"] = quantifier
    if "solver" in accepted:
        params.setdefault("solver", solver)
    return spec.make(classifier, random_state=random_state, **params)


def _check_run_args(classifier, methods, protocol, n_samples, sample_size, measures, seed, solver):
    """Validate run_experiment's arguments up front, with messages naming them; returns the method specs."""
    if classifier not in CLASSIFIERS:
        raise ValueError(f"unknown classifier {classifier!r}; choose one of {sorted(CLASSIFIERS)}")
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods must be a list of method names, got {methods!r}; e.g. methods=[{methods!r}]")
    methods = list(methods)
    if not methods:
        raise ValueError("methods is empty: name at least one method (see capshift.registry.names())")
    if protocol not in ("upp", "app"):
        raise ValueError(f"protocol must be 'upp' or 'app', got {protocol!r}")
    check_int(n_samples, "n_samples")
    check_int(sample_size, "sample_size")
    check_seed(seed, "seed")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
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
    protocol : {"upp", "app"}
        UPP: ``n_samples`` prevalence vectors uniform on the simplex (Kraemer); APP: the 21-point
        grid (binary), repeated until ``n_samples`` samples.
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
        Fig. 1b; NaN for methods without a quantifier on the shared path, 0 for the oracle).
    """
    specs, measures = _check_run_args(classifier, methods, protocol, n_samples, sample_size, measures, seed, solver)
    ctx = _prepare(dataset, classifier, [spec for _, spec in specs], protocol, n_samples, sample_size, seed, progress)
    frames = [_method_frame(ctx, name, spec, measures, solver)
              for name, spec in tqdm(specs, desc=f"{ctx.split.name}: methods", disable=not progress, leave=False)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=RESULT_COLUMNS)


#: Columns of :func:`run_experiment`'s tidy frame, in order.
RESULT_COLUMNS = ["dataset", "classifier", "method", "sample", "true_prev", "shift", "measure", "true",
                  "predicted", "ae", "path", "seconds", "q_ae"]


def _shared_quantifier(spec):
    """The quantifier name of a method on the shared (gamma, q-hat) path, or None."""
    q = spec.params.get("quantifier")
    return q if spec.cls.shared_prevalence_path and isinstance(q, str) and q in QUANTIFIERS else None


class _Context:
    """What every method of one (dataset, classifier, seed) shares: the split, h fitted on L, the protocol's
    samples, the true tables, h's predictions and posteriors on U, and the shared quantifiers' estimates."""


def _prepare(dataset, classifier, specs, protocol, n_samples, sample_size, seed, progress=False) -> _Context:
    """Everything :func:`_method_frame` needs that does not depend on the method (computed once per
    (dataset, classifier, seed)); the quantifiers fitted are those the ``specs`` share."""
    split = datasets.load(dataset, seed=seed) if isinstance(dataset, str) else dataset
    n = split.n_classes
    if sample_size < n:
        raise ValueError(f"sample_size={sample_size} is smaller than the {n} classes of {split.name!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        h = make_classifier(classifier, seed).fit(split.X_L, split.y_L)

    if protocol == "upp":
        idx = protocols.upp_indices(split.y_U, sample_size, n_samples, seed, n_classes=n)
    elif protocol == "app":
        reps = max(1, int(np.ceil(n_samples / 21)))
        idx = protocols.app_indices(split.y_U, sample_size, repeats=reps, seed=seed, n_classes=n)[:n_samples]
    k = len(idx)

    pred_U = np.asarray(h.predict(split.X_U))
    y_true = [split.y_U[i] for i in idx]
    true_tables = np.stack([contingency_table(y, pred_U[i], n) for y, i in zip(y_true, idx)])
    true_prev = true_tables.sum(axis=2)
    gamma = true_tables.sum(axis=1)
    val_prev = np.bincount(split.y_V, minlength=n) / len(split.y_V)
    shift = np.abs(true_prev - val_prev).sum(axis=1)

    quantifiers, q_hat, q_secs = {}, {}, {}
    for qname in sorted({q for q in map(_shared_quantifier, specs) if q is not None}):
        quant = Quantifier(qname, classifier=h, random_state=seed).fit(split.X_V, split.y_V, n)
        P_U = quant.classify(split.X_U)
        est, secs = np.empty((k, n)), np.empty(k)
        for s in tqdm(range(k), desc=f"{split.name}: quantify ({qname})", disable=not progress, leave=False):
            t0 = time.perf_counter()
            est[s] = quant.aggregate(None if P_U is None else P_U[idx[s]], prevalence=true_prev[s])
            secs[s] = time.perf_counter() - t0
        quantifiers[qname], q_hat[qname], q_secs[qname] = quant, est, secs

    ctx = _Context()
    ctx.__dict__.update(split=split, classifier=classifier, seed=seed, h=h, idx=idx, k=k, true_tables=true_tables,
                        true_prev=true_prev, gamma=gamma, shift=shift, quantifiers=quantifiers, q_hat=q_hat,
                        q_secs=q_secs,
                        post_U=h.predict_proba(split.X_U) if hasattr(h, "predict_proba") else None)
    return ctx


def _fit_method(ctx: _Context, name, spec, solver):
    """One method on a prepared (dataset, classifier, seed), fitted on V (sharing the prepared quantifier)."""
    qname = _shared_quantifier(spec)
    est = make_method(name, ctx.h, quantifier=ctx.quantifiers.get(qname), solver=solver, random_state=ctx.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(ctx.split.X_V, ctx.split.y_V)
    return est, qname


def _method_frame(ctx: _Context, name, spec, measures, solver) -> pd.DataFrame:
    """The tidy rows of one method on a prepared (dataset, classifier, seed): fit on V, predict every sample."""
    split, idx, k = ctx.split, ctx.idx, ctx.k
    est, qname = _fit_method(ctx, name, spec, solver)
    if spec.cls.shared_prevalence_path:  # the shared (gamma, q-hat) path
        t0 = time.perf_counter()
        q_hat = ctx.q_hat.get(qname, ctx.true_prev)
        tables = est.tables_from_prevalences(ctx.gamma, q_hat)
        secs = (time.perf_counter() - t0) / k + ctx.q_secs.get(qname, 0.0)
        q_ae = np.abs(q_hat - ctx.true_prev).mean(axis=1) if qname is not None else np.full(k, np.nan)
        predictions = {m: get_measure(m)(tables) for m in measures}
    else:
        samples = [split.X_U[i] for i in idx]
        post = None if ctx.post_U is None else [ctx.post_U[i] for i in idx]
        t0 = time.perf_counter()
        predictions = est.predict_measures(samples, measures, prevalences=ctx.true_prev, posteriors=post)
        secs = (time.perf_counter() - t0) / k
        q_ae = np.full(k, np.nan)
    secs = np.broadcast_to(secs, (k,))
    paths = getattr(est, "paths_", np.full(k, "", dtype=object))
    rows = []
    for m, pred_v in predictions.items():
        true_v = get_measure(m)(ctx.true_tables)
        for s in range(k):
            rows.append((split.name, ctx.classifier, name, s, tuple(np.round(ctx.true_prev[s], 6)),
                         float(ctx.shift[s]), m, float(true_v[s]), float(pred_v[s]),
                         float(abs(true_v[s] - pred_v[s])), str(paths[s]), float(secs[s]), float(q_ae[s])))
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


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
    specs, _ = _check_run_args(classifier, methods, protocol, n_samples, sample_size, ("accuracy",), seed, solver)
    for name, spec in specs:
        if not spec.cls.estimates_tables:
            raise TypeError(f"methods: {name!r} estimates measures directly, not contingency tables; run_tables "
                            "needs table methods (e.g. Naive, the LEAP family, CBPE, QuAcc); use run_experiment "
                            f"for {name!r}")
    ctx = _prepare(dataset, classifier, [spec for _, spec in specs], protocol, n_samples, sample_size, seed, progress)
    estimated = {}
    for name, spec in specs:
        est, qname = _fit_method(ctx, name, spec, solver)
        if spec.cls.shared_prevalence_path:
            estimated[name] = est.tables_from_prevalences(ctx.gamma, ctx.q_hat.get(qname, ctx.true_prev))
        else:
            samples = [ctx.split.X_U[i] for i in ctx.idx]
            estimated[name] = est.predict_table_batch(samples, prevalences=ctx.true_prev)
    return ctx.true_tables, estimated


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
    _check_run_args(classifier, methods, "upp", 1, sample_size, measures, seed, solver)
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



# ---------------------------------------------------------------------------------------------------------
# Dataset-shift experiments (protocols of capshift.shift; González, Moreo & Sebastiani, DMKD 2024, Sect. 5)
# ---------------------------------------------------------------------------------------------------------
#: The dataset-shift paper's six quantifiers (its Sect. 3.3), all on logistic regression (Sect. 5.2).
SHIFT_QUANTIFIERS = ("CC", "ACC", "PCC", "PACC", "DyS", "SLD")
#: CAP methods run under every shift by :func:`run_shift_cap` by default (beyond the paper).
SHIFT_CAP_METHODS = ("Naive", "ATC", "DoC", "LEAP_ACC", "LEAP_KDEy", "S-LEAP_KDEy", "O-LEAP_KDEy", "QuAccnxn_SLD")
#: The paper's model-selection grid (Sect. 5.2; its text prints C in {0.1, 1, 10, 100, 100}, the authors' code
#: explores 0.01 ... 1000): inverse regularisation C and class weighting.
SHIFT_GRID = {"C": [0.01, 0.1, 1, 10, 100, 1000], "class_weight": ["balanced", None]}


def make_shift_quantifier(name: str, random_state: int = 0):
    """An unfitted QuaPy quantifier of the dataset-shift paper, on ``LogisticRegression(max_iter=1000)``.

    CC, PCC; ACC and PACC with tpr/fpr estimated by 5-fold cross-validation; DyS with 10 bins and the
    Topsøe divergence (Maletzke et al. 2019's best setting, the paper's choice); SLD (QuaPy's ``EMQ``) on
    the classifier calibrated by Platt scaling (``CalibratedClassifierCV(method="sigmoid")``, Sect. 5.2:
    calibration only for SLD). Raises ValueError for other names.
    """
    from quapy.method.aggregative import ACC, CC, EMQ, PACC, PCC, DyS
    from sklearn.calibration import CalibratedClassifierCV
    lr = LogisticRegression(max_iter=1000, random_state=random_state)
    makers = {"CC": lambda: CC(lr), "ACC": lambda: ACC(lr, val_split=5), "PCC": lambda: PCC(lr),
              "PACC": lambda: PACC(lr, val_split=5), "DyS": lambda: DyS(lr, val_split=5, n_bins=10, divergence="topsoe"),
              "SLD": lambda: EMQ(CalibratedClassifierCV(lr, method="sigmoid", cv=5))}
    if name not in makers:
        raise ValueError(f"unknown quantifier {name!r}; choose one of {list(makers)}")
    return makers[name]()


def _fit_shift_quantifier(name, train, seed, model_selection, sample_size):
    """Fit on the training sample; with ``model_selection``, QuaPy's GridSearchQ over :data:`SHIFT_GRID` on a
    stratified 40% held-out part, by MAE over APP samples (the paper's Sect. 5.2), then refit on all of it."""
    q = make_shift_quantifier(name, seed)
    if not model_selection:
        return q.fit(*train.Xy)
    import quapy as qp
    from quapy.protocol import APP
    prefix = "classifier__estimator__" if name == "SLD" else "classifier__"
    grid = {prefix + k: v for k, v in SHIFT_GRID.items()}
    tr, va = train.split_stratified(train_prop=0.6, random_state=seed)
    protocol = APP(va, sample_size=min(sample_size, len(va)), n_prevalences=11, repeats=5, random_state=seed)
    return qp.model_selection.GridSearchQ(q, grid, protocol, error="mae", refit=True).fit(*tr.Xy).best_model()


def _shift_rows(trial, blocks) -> pd.DataFrame:
    """Stack ``{name: (dict of per-sample arrays)}`` blocks under the trial's parameter rows."""
    frames = []
    for name, cols in blocks.items():
        df = trial.test.parameters.copy()
        df.insert(0, "method", name)
        for k, v in cols.items():
            df[k] = v
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _quantify_trial(protocol, t, quantifiers, model_selection):
    trial = protocol.trial(t)
    pool = trial.test.data.instances
    true = np.array([trial.test.labels(k).mean() for k in range(trial.test.total())])
    blocks = {}
    for name in quantifiers:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = _fit_shift_quantifier(name, trial.train, protocol.random_state, model_selection, protocol.test_size)
            fit_s = time.perf_counter() - t0
            pre = q.classify(pool)  # the whole test pool once; each sample aggregates its slice
            est = np.array([q.aggregate(pre[idx])[1] for idx in trial.test.indices])
        blocks[name] = {"true": true, "estimate": est, "ae": np.abs(est - true), "fit_seconds": fit_s}
    return _shift_rows(trial, blocks)


def run_shift_quantifiers(protocol, quantifiers=SHIFT_QUANTIFIERS, model_selection: bool = False, n_jobs: int = 1,
                          progress: bool = False) -> pd.DataFrame:
    """The dataset-shift paper's experiment: quantifiers trained on each trial's training sample, evaluated on
    its test samples (Algorithms 1-4; MAE by degree of shift is Tables 4-7 and Figures 6-12).

    ``protocol``: a binary family of :mod:`capshift.shift`. ``quantifiers``: names of
    :data:`SHIFT_QUANTIFIERS`. ``model_selection``: the paper's quantification-oriented grid search (slow;
    off by default). ``n_jobs``: trials in parallel (joblib). Returns a tidy DataFrame, one row per
    (quantifier, test sample): ``method``, the sample's ``parameters`` (trial, repeat, training and test
    conditions, ``degree``, ``size``, ...), ``true`` (the sample's positive prevalence), ``estimate``,
    ``ae`` and ``fit_seconds``. Raises ValueError for a multiclass protocol or an unknown quantifier.
    """
    if getattr(protocol, "n_classes_", 2) != 2:
        raise ValueError("run_shift_quantifiers runs the paper's binary quantifiers: pass a binary protocol")
    if isinstance(quantifiers, str):
        quantifiers = (quantifiers,)
    for name in quantifiers:
        make_shift_quantifier(name)  # unknown names fail before any work
    trials = tqdm(range(protocol.n_trials), desc=type(protocol).__name__, disable=not progress)
    frames = Parallel(n_jobs=n_jobs)(delayed(_quantify_trial)(protocol, t, tuple(quantifiers), model_selection)
                                     for t in trials)
    return pd.concat(frames, ignore_index=True)


def _cap_trial(protocol, t, methods, classifier, measure, val_prop):
    from .quantifiers import Quantifier
    from sklearn.model_selection import train_test_split
    seed = protocol.random_state
    trial = protocol.trial(t)
    X, y = trial.train.Xy
    tr, va = train_test_split(np.arange(len(y)), test_size=val_prop, stratify=y, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        h = make_classifier(classifier, seed).fit(X[tr], y[tr])
    pool = trial.test.data.instances
    pred, post = h.predict(pool), h.predict_proba(pool)
    f = get_measure(measure)
    true = np.array([float(f(contingency_table(trial.test.labels(k), pred[idx], 2)))
                     for k, idx in enumerate(trial.test.indices)])
    samples = [pool[idx] for idx in trial.test.indices]
    posts = [post[idx] for idx in trial.test.indices]
    shared = None
    blocks = {}
    for name in methods:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = registry.get(name)
            if not spec.make(h).supports(measure):  # declared by the class: skip before any fitting
                continue
            if spec.family == "leap" and spec.params.get("quantifier") == "kdey":
                if shared is None:  # one KDEy fit shared by the LEAP family (as the main runner does)
                    shared = Quantifier("kdey", h, random_state=seed).fit(X[va], y[va], 2)
                est = make_method(name, h, quantifier=shared, random_state=seed)
            else:
                est = make_method(name, h, random_state=seed)
            est.fit(X[va], y[va])
            predicted = np.asarray(est.predict_batch(samples, measure, posteriors=posts), dtype=float)
        blocks[name] = {"true": true, "predicted": predicted, "ae": np.abs(predicted - true),
                        "seconds": (time.perf_counter() - t0) / len(samples)}
    return _shift_rows(trial, blocks)


def run_shift_cap(protocol, methods=SHIFT_CAP_METHODS, classifier: str = "lr", measure: str = "accuracy",
                  val_prop: float = 0.5, n_jobs: int = 1, progress: bool = False) -> pd.DataFrame:
    """CAP methods under a dataset-shift protocol (beyond the dataset-shift paper, which studies quantifiers).

    For each trial the training sample is split, stratified, into a part that trains the classifier h
    (``classifier``, by the LEAP paper's names) and a validation set V (``val_prop`` of it) on which every
    CAP method is fitted; each method then predicts ``measure`` of h on every test sample, whose true value
    uses the test labels (under the test concept for :class:`capshift.shift.ConceptShift`). Seeds come from
    ``protocol.random_state``. Returns a tidy DataFrame, one row per (method, test sample): ``method``, the
    sample's ``parameters``, ``true``, ``predicted``, ``ae`` and ``seconds`` (fit and prediction per sample).
    Methods that do not estimate ``measure`` are left out.
    """
    if getattr(protocol, "n_classes_", 2) != 2:
        raise ValueError("run_shift_cap expects a binary protocol")
    check_fraction(val_prop, "val_prop")
    if isinstance(methods, str):
        methods = (methods,)
    make_classifier(classifier)
    get_measure(measure)
    for name in methods:
        registry.get(name)  # unknown names fail before any work
    trials = tqdm(range(protocol.n_trials), desc=type(protocol).__name__, disable=not progress)
    frames = Parallel(n_jobs=n_jobs)(delayed(_cap_trial)(protocol, t, tuple(methods), classifier, measure, val_prop)
                                     for t in trials)
    return pd.concat(frames, ignore_index=True)


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
    from scipy.stats import wilcoxon
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
    table.index.name = by[0] if len(by) == 1 else None
    return table.fillna("")


# The resumable grid runner and its command line live in capshift.grid, which imports this module; they are
# reachable here too (capshift.experiment.run_grid, load_results, main), loaded on first use.
_GRID_NAMES = ("run_grid", "load_results", "main")
__all__ += ["run_grid", "load_results"]


def __getattr__(name):
    if name in _GRID_NAMES:
        from . import grid
        return getattr(grid, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    import sys

    from capshift.grid import main as _main

    sys.exit(_main())
