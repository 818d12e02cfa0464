"""Tests of capshift.selection: transductive model selection (TMS) against inductive selection (IMS), the selector
against a loop over its candidates, the shared quantifier, the candidate grid, the selectors of the study, and the
resumable study runner (capshift.grid.run_cells)."""
from __future__ import annotations

import itertools
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import gaussians  # noqa: E402

from capshift import datasets, evaluation, grid, protocols, registry, selection, shift  # noqa: E402
from capshift.quantifiers import Quantifier  # noqa: E402
from capshift.selection import SharedQuantifier, TransductiveSelector  # noqa: E402
from capshift.tables import contingency_table, get_measure  # noqa: E402


def _opposite_candidates():
    """Two LRs with opposite class weightings on overlapping Gaussians: the first leans to class 0, the second to
    class 1, so the first is more accurate where class 0 dominates and the second where class 1 does."""
    X_L, y_L = gaussians(600, seed=1, d=2)
    X_V, y_V = gaussians(600, seed=2, d=2)
    X_U, y_U = gaussians(3000, seed=3, d=2)
    hs = [LogisticRegression(class_weight={0: 0.9, 1: 0.1}).fit(X_L, y_L),
          LogisticRegression(class_weight={0: 0.1, 1: 0.9}).fit(X_L, y_L)]
    return hs, X_V, y_V, X_U, y_U


def _samples_at(y, prevalence, k, seed):
    idx = [protocols.sample_at(y, [1 - prevalence, prevalence], 100, seed + i) for i in range(k)]
    return idx


def test_tms_with_oracle_quantifier_follows_the_prevalence_ims_does_not():
    hs, X_V, y_V, X_U, y_U = _opposite_candidates()
    tms = TransductiveSelector(hs, "O-LEAP_oracle").fit(X_V, y_V)
    for prevalence, right in ((0.05, 0), (0.95, 1)):
        idx = _samples_at(y_U, prevalence, 10, seed=int(prevalence * 100))
        samples = [X_U[i] for i in idx]
        true = np.array([[np.mean(h.predict(X_U[i]) == y_U[i]) for h in hs] for i in idx])
        assert (true.argmax(axis=1) == right).mean() >= 0.9  # the premise: the best candidate changes
        prev = np.array([np.bincount(y_U[i], minlength=2) / len(i) for i in idx])
        chosen = tms.predict_batch(samples, prevalences=prev)
        assert (chosen == right).all()
    # IMS: the highest measure on V, the same candidate for every sample
    ims = int(np.argmax(tms.val_measures_))
    assert ims in (0, 1) and np.isclose(tms.val_measures_[ims], max(np.mean(h.predict(X_V) == y_V) for h in hs))


def _small():
    X_L, y_L = gaussians(300, seed=1)
    X_V, y_V = gaussians(300, seed=2)
    X_U, y_U = gaussians(400, seed=3)
    hs = [LogisticRegression(C=c, class_weight=w).fit(X_L, y_L)
          for c, w in ((1.0, None), (0.01, "balanced"), (1.0, {0: 0.8, 1: 0.2}))]
    idx = protocols.upp_indices(y_U, 50, 6, seed=0)
    return hs, X_V, y_V, [X_U[i] for i in idx]


@pytest.mark.parametrize("method", ["O-LEAP_KDEy", "DoC", "S-LEAP_ACC"])
def test_selector_equals_a_loop_over_candidates(method):
    hs, X_V, y_V, samples = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = TransductiveSelector(hs, method, random_state=0).fit(X_V, y_V)
        loop = np.column_stack([registry.make_method(method, h, random_state=0).fit(X_V, y_V).predict_batch(samples)
                                for h in hs])
    got = sel.predict_measures_batch(samples)
    np.testing.assert_allclose(got, loop, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(sel.predict_batch(samples), loop.argmax(axis=1))
    assert sel.predict(samples[2]) == int(loop[2].argmax())
    np.testing.assert_allclose(sel.predict_measures(samples[2]), loop[2], atol=1e-10)
    if method == "O-LEAP_KDEy":  # one quantifier fit shared by every candidate
        assert isinstance(sel.quantifier_, SharedQuantifier)
        assert all(e.quantifier_ is sel.quantifier_ for e in sel.estimators_)


def test_intervals_equal_unshared_estimators_and_cautious_picks_the_highest_lower_end():
    hs, X_V, y_V, samples = _small()
    params = {"n_splits": 2, "n_cal": 20, "score": "absolute", "floor": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = TransductiveSelector(hs, "O-LEAP_KDEy", criterion="lower", interval_params=params).fit(X_V, y_V)
        got = sel.predict_interval_batch(samples[:3], alpha=0.1)
        ref = []
        for h in hs:  # each with its own, unshared quantifiers: the sharing must not change a number
            est = registry.make_method("O-LEAP_KDEy", h, random_state=0)
            est.interval_params = {**est.interval_params, **params}
            ref.append(est.fit(X_V, y_V).predict_interval_batch(samples[:3], alpha=0.1))
    np.testing.assert_allclose(got, np.stack(ref, axis=1), atol=1e-10)
    s = sel.select(samples[:3], intervals=True)
    lower = s.intervals[..., 0]
    assert s.intervals.shape == (3, 3, 2) and np.all(s.intervals[..., 0] <= s.intervals[..., 1])
    np.testing.assert_array_equal(lower[np.arange(3), s.index], lower.max(axis=1))


def test_shared_quantifier_fits_once_per_validation_set():
    X, y = gaussians(200, seed=4)
    q = SharedQuantifier("kdey", random_state=0).fit(X, y, 2)
    copy = q.unfitted().fit(X, y, 2)
    assert copy.q_ is q.q_ and copy.cache is q.cache
    other = q.unfitted().fit(X[:150], y[:150], 2)
    assert other.q_ is not q.q_
    plain = Quantifier("kdey", random_state=0).fit(X, y, 2)
    batch = [X[:50], X[50:120]]
    np.testing.assert_array_equal(q.quantify_batch(batch), plain.quantify_batch(batch))


def test_same_seed_same_selection():
    hs, X_V, y_V, samples = _small()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = TransductiveSelector(hs, "O-LEAP_KDEy", random_state=3).fit(X_V, y_V).predict_measures_batch(samples)
        b = TransductiveSelector(hs, "O-LEAP_KDEy", random_state=3).fit(X_V, y_V).predict_measures_batch(samples)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make,match,kind", [
    (lambda hs, X: TransductiveSelector([]), "empty", ValueError),
    (lambda hs, X: TransductiveSelector(hs[0]), "list", TypeError),
    (lambda hs, X: TransductiveSelector(hs + [LogisticRegression()]), r"candidates\[3\].*trained", ValueError),
    (lambda hs, X: TransductiveSelector(hs + [LogisticRegression().fit(*gaussians(90, 3, seed=5))]), "classes",
     ValueError),
    (lambda hs, X: TransductiveSelector(hs + [LogisticRegression().fit(*gaussians(90, seed=5, d=4))]), "features",
     ValueError),
    (lambda hs, X: TransductiveSelector(hs, "NoSuchMethod"), "unknown method", ValueError),
    (lambda hs, X: TransductiveSelector(hs, measure="precisionish"), "unknown measure", ValueError),
    (lambda hs, X: TransductiveSelector(hs, "ATC", measure="f1"), "does not estimate", ValueError),
    (lambda hs, X: TransductiveSelector(hs, criterion="upper"), "criterion", ValueError),
])
def test_bad_candidates_and_parameters_are_refused(make, match, kind):
    hs, X_V, y_V, _ = _small()
    with pytest.raises(kind, match=match):
        make(hs, X_V).fit(X_V, y_V)


def test_bad_samples_are_refused():
    hs, X_V, y_V, samples = _small()
    with pytest.raises(NotFittedError):
        TransductiveSelector(hs).predict(samples[0])
    sel = TransductiveSelector(hs, "DoC").fit(X_V, y_V)
    with pytest.raises(ValueError, match="features"):
        sel.predict(samples[0][:, :2])
    with pytest.raises(ValueError, match="samples is empty"):
        sel.predict_batch([])
    with pytest.raises(TypeError, match="list of 2-d arrays"):
        sel.predict_batch(samples[0])
    with pytest.raises(ValueError, match="X_val"):
        TransductiveSelector(hs, "DoC").fit(X_V[:, :2], y_V)


def test_candidate_grid_is_the_papers():
    grid_ = selection.candidate_grid(2)
    counts = pd.Series([c.family for c in grid_]).value_counts().to_dict()
    assert counts == {"lr": 30, "knn": 10, "svm": 60, "mlp": 10} and len(grid_) == 110
    assert len({c.name for c in grid_}) == 110
    assert [c.family for c in grid_ if c.default] == ["lr", "knn", "svm", "mlp"]
    w = selection.class_weightings(4)
    assert len(w) == 6 and w[0][0] == 0.5 and np.isclose(sum(w[0].values()), 1, atol=1e-3)
    with pytest.raises(ValueError, match="families"):
        selection.candidate_grid(2, ["lr", "tree"])


def test_selectors_on_a_hand_made_table():
    t = pd.DataFrame({"dataset": "d", "family": ["lr", "lr", "knn"] * 2, "candidate": ["a", "b", "c"] * 2,
                      "default": [True, False, True] * 2, "order": [0, 1, 2] * 2, "sample": [0, 0, 0, 1, 1, 1],
                      "true": [0.6, 0.9, 0.7, 0.8, 0.5, 0.8], "val": [0.7, 0.7, 0.6] * 2,
                      "pred:X": [0.1, 0.5, 0.2, 0.3, 0.2, 0.9], "shift": [0.1] * 3 + [0.5] * 3})
    s = selections(t).set_index(["sample", "selector"])
    assert s.loc[(0, "TMS-X"), "candidate"] == "b" and s.loc[(1, "TMS-X"), "candidate"] == "c"
    assert s.loc[(0, "IMS-All"), "candidate"] == "a"  # a tie on V goes to the first candidate
    assert s.loc[(1, "Oracle"), "candidate"] == "a" and s.loc[(1, "Oracle"), "regret"] == 0
    assert s.loc[(0, "default-knn"), "candidate"] == "c"
    np.testing.assert_allclose(s.loc[(0, "IMS-All"), "regret"], 0.3)


def selections(t):
    return selection.selections(t)


def test_study_runs_resumably(tmp_path):
    kw = dict(families=["lr"], n_samples=4, sample_size=30, methods=["DoC"], cautious=None, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = grid.run_selection_study(["haberman"], tmp_path, **kw)
        again = grid.run_selection_study(["haberman"], tmp_path, **kw)
    assert first.attrs["cells"]["computed"] == 1 and again.attrs["cells"] == {"reused": 1, "computed": 0, "failed": 0}
    pd.testing.assert_frame_equal(first, again)
    assert len(first) == 30 * 4 and set(first.columns) >= {"true", "val", "pred:DoC", "shift"}
    with pytest.raises(ValueError, match="cautious"):
        grid.run_selection_study(["haberman"], tmp_path, methods=["DoC"], cautious="O-LEAP_KDEy")


def test_verdicts_count_datasets_and_the_gap_by_shift():
    rng = np.random.default_rng(0)
    rows = []
    for d, tms_better in (("a", True), ("b", True), ("c", False)):
        for s in range(60):
            shift = s / 60
            oracle = 0.9
            ims = 0.8 - 0.1 * shift + 0.01 * rng.random()
            tms = ims + (0.15 * shift if tms_better else -0.05) + 0.01 * rng.random()
            for name, v in (("TMS-O-LEAP_KDEy", tms), ("IMS-All", ims), ("Oracle", oracle)):
                rows.append((d, s, name, v, oracle - v, shift))
    sel = pd.DataFrame(rows, columns=["dataset", "sample", "selector", "true", "regret", "shift"])
    v = selection.verdicts(sel)
    assert (v["n_datasets"], v["n_best"], v["n_not_best"], v["n_not_worse"]) == (3, 2, 1, 0)
    assert v["claim1"] == "reproduced" and v["claim2"] == "not reproduced"
    assert v["gap_high"] > v["gap_low"] and v["claim3"] == "reproduced"
    with pytest.raises(ValueError, match="selector"):
        selection.verdicts(sel, tms="TMS-nope")


# ---------------------------------------------------------------- the candidate grid, in closed form
def test_class_weightings_closed_form():
    assert selection.class_weightings(2) == [{0: 0.2, 1: 0.8}, {0: 0.4, 1: 0.6}, {0: 0.6, 1: 0.4}, {0: 0.8, 1: 0.2},
                                             None, "balanced"]
    # n = 3: one class boosted to 2/3, the other two sharing 1/3, rounded to 4 digits
    big, small = 0.6667, 0.1667
    assert selection.class_weightings(3) == [{0: big, 1: small, 2: small}, {0: small, 1: big, 2: small},
                                             {0: small, 1: small, 2: big}, None, "balanced"]
    with pytest.raises(ValueError, match="n_classes must be >= 2, got 1"):
        selection.class_weightings(1)


def _names(fam, grid_):
    """Names of the paper's grid of one family, written out: the order of the axes is the grid's."""
    return [f"{fam}[" + ";".join(f"{k}={v}" for k, v in zip(grid_, combo)) + "]"
            for combo in itertools.product(*grid_.values())]


def test_candidate_grid_names_params_and_seeds():
    cw = ["{0:0.2,1:0.8}", "{0:0.4,1:0.6}", "{0:0.6,1:0.4}", "{0:0.8,1:0.2}", "None", "balanced"]
    C = ["0.01", "0.1", "1", "10", "100"]
    paper = {"lr": {"C": C, "class_weight": cw},
             "knn": {"n_neighbors": ["5", "7", "9", "11", "13"], "weights": ["uniform", "distance"]},
             "svm": {"C": C, "gamma": ["scale", "auto"], "class_weight": cw},
             "mlp": {"alpha": ["1e-05", "0.0001", "0.001", "0.01", "0.1"], "learning_rate": ["constant", "adaptive"]}}
    grid_ = selection.candidate_grid(2, seed=7, mlp_hidden=(6, 3), mlp_max_iter=30)
    assert [c.name for c in grid_] == sum((_names(f, g) for f, g in paper.items()), [])
    assert [c.name for c in grid_ if c.default] == ["lr[C=1;class_weight=None]", "knn[n_neighbors=5;weights=uniform]",
                                                    "svm[C=1;gamma=scale;class_weight=None]",
                                                    "mlp[alpha=0.0001;learning_rate=constant]"]
    for c in grid_:  # the parameters are set on the family's estimator, every estimator seeded with the seed
        est = c.estimator.estimator if c.family == "svm" else c.estimator
        assert {k: est.get_params()[k] for k in c.params} == c.params
        assert c.estimator.get_params().get("random_state", 7) == 7
    lr, svm, mlp = grid_[0].estimator, grid_[40].estimator, grid_[-1].estimator
    assert lr.max_iter == 1000 and lr.random_state == 7
    assert svm.estimator.kernel == "rbf" and svm.estimator.random_state == 7 and svm.ensemble is False
    assert mlp.hidden_layer_sizes == (6, 3) and mlp.max_iter == 30 and mlp.random_state == 7
    mlp = selection.candidate_grid(2, "mlp", mlp_hidden=4)[0].estimator  # the defaults: seed 0, 200 iterations
    assert mlp.hidden_layer_sizes == (4,) and mlp.random_state == 0 and mlp.max_iter == 200


def test_candidate_grid_small_and_multiclass_counts():
    def counts(g):
        return {f: sum(c.family == f for c in g) for f in selection.FAMILIES}
    small = selection.candidate_grid(2, size="small")
    assert counts(small) == {"lr": 12, "knn": 6, "svm": 12, "mlp": 4} and len(small) == 34
    assert [c.name for c in small if c.family == "lr"][:4] == [
        "lr[C=0.01;class_weight={0:0.2,1:0.8}]", "lr[C=0.01;class_weight={0:0.8,1:0.2}]",
        "lr[C=0.01;class_weight=None]", "lr[C=0.01;class_weight=balanced]"]
    assert [c.name for c in small if c.family == "knn"] == [f"knn[n_neighbors={k};weights={w}]" for k in (5, 9, 13)
                                                            for w in ("uniform", "distance")]
    assert {c.params["C"] for c in small if c.family == "svm"} == {0.01, 1.0, 100.0}
    assert {c.params["gamma"] for c in small if c.family == "svm"} == {"scale"}
    assert [c.params["alpha"] for c in small if c.family == "mlp"] == [1e-4, 1e-4, 1e-2, 1e-2]
    assert [c.family for c in small if c.default] == list(selection.FAMILIES)
    # 3 classes: 5 class weightings (3 boosted, None, balanced); the small grid keeps the first and last boosted
    assert counts(selection.candidate_grid(3)) == {"lr": 25, "knn": 10, "svm": 50, "mlp": 10}
    three = selection.candidate_grid(3, ["knn", "lr", "knn"], size="small")
    assert [c.family for c in three] == ["knn"] * 6 + ["lr"] * 12
    assert [c.params["class_weight"] for c in three[6:10]] == [{0: 0.6667, 1: 0.1667, 2: 0.1667},
                                                               {0: 0.1667, 1: 0.1667, 2: 0.6667}, None, "balanced"]


@pytest.mark.parametrize("kw,kind,message", [
    (dict(families=[]), ValueError, "families is empty: name at least one of ('lr', 'knn', 'svm', 'mlp')"),
    (dict(families=["lr", "tree"]), ValueError, "unknown candidate families ['tree']; choose from ('lr', 'knn', 'svm', "
                                                "'mlp')"),
    (dict(size="big"), ValueError, "size must be one of ('paper', 'small'), got 'big'"),
    (dict(mlp_max_iter=0), ValueError, "mlp_max_iter must be >= 1, got 0"),
    (dict(mlp_hidden=(5, 0)), ValueError, "mlp_hidden must be >= 1, got 0"),
    (dict(seed=-1), ValueError, "seed must be in 0..2**32-1"),
])
def test_candidate_grid_refuses_bad_arguments(kw, kind, message):
    with pytest.raises(kind, match=re.escape(message)):
        selection.candidate_grid(2, **kw)


def test_check_families():
    assert selection.check_families("svm") == ["svm"]
    assert selection.check_families(("mlp", "lr", "mlp")) == ["mlp", "lr"]
    with pytest.raises(ValueError, match=r"unknown candidate families \['SVM', 'x'\]"):
        selection.check_families(["lr", "SVM", "x"])


# ------------------------------------------------- the study's selectors on a small table where every pick is known
def _study_table():
    """Four candidates (a, b: lr; c, d: knn; a and c the defaults) on three samples (dataset d: samples 0 and 1;
    dataset e: sample 0), with ties that the grid order (``order``) breaks; rows in no particular order."""
    cands = [("c", "knn", True, 2), ("a", "lr", True, 0), ("d", "knn", False, 3), ("b", "lr", False, 1)]
    #                 true of a, b, c, d         val                 pred:X              lower:X       shift
    cells = {("d", 0): ([.6, .9, .7, .9], [.7, .7, .6, .65], [.1, .5, .5, .2], [.05, .3, .4, .1], .1),
             ("d", 1): ([.8, .5, .8, .6], [.7, .7, .6, .65], [.3, .2, .9, .9], [.2, .1, .3, .3], .5),
             ("e", 0): ([.5, .6, .9, .4], [.5, .9, .6, .6], [.8, .1, .1, .1], [.1, .1, .1, .6], .3)}
    rows = []
    for (ds, s), (true, val, pred, lower, shift) in cells.items():
        for name, fam, default, order in cands:
            rows.append((ds, s, fam, name, default, order, true[order], val[order], pred[order], lower[order], shift))
    t = pd.DataFrame(rows, columns=["dataset", "sample", "family", "candidate", "default", "order", "true", "val",
                                    "pred:X", "lower:X", "shift"])
    return t.sample(frac=1, random_state=3).reset_index(drop=True)


#: (dataset, sample) -> the candidate each selector picks there, in the order of the selectors.
_PICKS = {("d", 0): {"TMS-X": "b", "TMS-X-lower": "c", "IMS-All": "a", "IMS-lr": "a", "IMS-knn": "d",
                     "default-lr": "a", "default-knn": "c", "Oracle": "b"},
          ("d", 1): {"TMS-X": "c", "TMS-X-lower": "c", "IMS-All": "a", "IMS-lr": "a", "IMS-knn": "d",
                     "default-lr": "a", "default-knn": "c", "Oracle": "a"},
          ("e", 0): {"TMS-X": "a", "TMS-X-lower": "d", "IMS-All": "b", "IMS-lr": "b", "IMS-knn": "c",
                     "default-lr": "a", "default-knn": "c", "Oracle": "c"}}


def test_selections_pick_regret_and_ties_by_grid_order():
    t = _study_table()
    got = selection.selections(t)
    true = t.set_index(["dataset", "sample", "candidate"])["true"].sort_index()
    shift = {("d", 0): .1, ("d", 1): .5, ("e", 0): .3}
    rows = []
    for sel in _PICKS[("d", 0)]:  # selector by selector, the samples in the order of the keys
        for key, picks in _PICKS.items():
            c = picks[sel]
            oracle = true[key].max()
            rows.append((*key, sel, c, "lr" if c in "ab" else "knn", true[(*key, c)], shift[key], oracle,
                         oracle - true[(*key, c)]))
    want = pd.DataFrame(rows, columns=["dataset", "sample", "selector", "candidate", "family", "true", "shift",
                                       "oracle", "regret"])
    pd.testing.assert_frame_equal(got, want)
    # the rows' order does not matter: the selectors pair by key and break ties by grid order (the shuffled
    # frame's index reset twice: columns "index" and "level_0")
    pd.testing.assert_frame_equal(selection.selections(t.sample(frac=1, random_state=8).reset_index().reset_index()),
                                  got)
    # the columns needed and no more: no TMS selector, no shift
    bare = selection.selections(t[["dataset", "sample", "family", "candidate", "default", "order", "true", "val"]])
    assert bare.set_index(["dataset", "sample", "selector"])["candidate"].to_dict() == {
        (*key, sel): c for key, picks in _PICKS.items() for sel, c in picks.items() if not sel.startswith("TMS")}
    # one key: the samples of both datasets with number 0 are one group; without "shift", no shift column
    one = selection.selections(t[t["dataset"] == "d"].drop(columns=["dataset", "shift"]), keys=["sample"])
    assert list(one.columns) == ["sample", "selector", "candidate", "family", "true", "oracle", "regret"]
    assert one.set_index(["sample", "selector"])["candidate"].to_dict() == {
        (s, sel): c for (ds, s), picks in _PICKS.items() if ds == "d" for sel, c in picks.items()}


def test_selections_refuse_a_table_without_the_columns():
    with pytest.raises(ValueError, match=re.escape("table lacks the columns ['order', 'val']: pass candidate_table's")):
        selection.selections(_study_table().drop(columns=["val", "order"]))
    with pytest.raises(ValueError, match=re.escape("lacks the columns ['candidate', 'dataset', 'default', 'family', "
                                                   "'order', 'sample', 'true', 'val']")):
        selection.selections({"true": [1.0]})


def _selected():
    """A frame of selections: datasets y then x, 6 samples each, selectors B, A and Oracle (true = 0.9 - regret).
    On x, A is best and B has regret A's + 0.01 .. 0.06 (a Wilcoxon p of 2/64); on y, B is best and A's regret
    differs by +-0.01 .. 0.06 (p = 54/64)."""
    a_x = np.array([.10, .12, .08, .10, .11, .09])
    b_y = np.full(6, .2)
    regrets = {"y": {"B": b_y, "A": b_y + [.06, -.01, .02, -.03, .04, -.05], "Oracle": np.zeros(6)},
               "x": {"B": a_x + np.arange(1, 7) / 100, "A": a_x, "Oracle": np.zeros(6)}}
    shifts = {"y": [.65, .7, .85, .9, 1.0, .55], "x": [0, .1, .25, .3, .45, .5]}
    rows = [(ds, s, name, .9 - r[s], r[s], shifts[ds][s]) for ds, sel in regrets.items() for name, r in sel.items()
            for s in range(6)]
    return pd.DataFrame(rows, columns=["dataset", "sample", "selector", "true", "regret", "shift"])


def test_selection_summary_marks_best_and_dagger():
    sel = _selected()
    got = selection.selection_summary(sel)
    assert list(got.columns) == ["dataset", "selector", "mean", "std", "regret", "best", "pvalue", "dagger"]
    assert list(zip(got["dataset"], got["selector"])) == [("y", "B"), ("y", "A"), ("y", "Oracle"), ("x", "B"),
                                                          ("x", "A"), ("x", "Oracle")]
    g = got.set_index(["dataset", "selector"])
    np.testing.assert_allclose(g["regret"], [.2, .205, 0, .135, .1, 0], atol=1e-12)
    np.testing.assert_allclose(g["mean"], [.7, .695, .9, .765, .8, .9], atol=1e-12)
    a_x = np.array([.10, .12, .08, .10, .11, .09])
    np.testing.assert_allclose(g["std"], [0, np.std([.06, -.01, .02, -.03, .04, -.05], ddof=1), 0,
                                          np.std(a_x + np.arange(1, 7) / 100, ddof=1), np.std(a_x, ddof=1), 0],
                               atol=1e-12)
    # the oracle is not tested: neither best nor dagger
    assert g["best"].tolist() == [True, False, False, False, True, False]
    np.testing.assert_allclose(g["pvalue"], [np.nan, 54 / 64, np.nan, 2 / 64, np.nan, np.nan], rtol=1e-9)
    assert g["dagger"].tolist() == [False, True, False, True, False, False]
    # p = alpha is not told apart
    assert selection.selection_summary(sel, alpha=2 / 64)["dagger"].tolist() == [False, True, False, True, False,
                                                                                  False]
    # at alpha = 0.05, B on x is told from the best
    assert selection.selection_summary(sel, alpha=0.05)["dagger"].tolist() == [False, True, False, False, False, False]
    # only the selectors named, the groups by a list of columns
    some = selection.selection_summary(sel, selectors=["A", "Oracle"], by=["dataset"])
    assert list(zip(some["selector"], some["best"], some["dagger"])) == [("A", True, False),
                                                                         ("Oracle", False, False)] * 2


def test_regret_table_means_per_group_then_over_groups():
    t = selection.regret_table(_selected())
    assert list(t.index) == ["y", "x", "Mean"] and list(t.columns) == ["B", "A", "Oracle"]
    np.testing.assert_allclose(t.to_numpy(), [[.2, .205, 0], [.135, .1, 0], [.1675, .1525, 0]], atol=1e-12)
    # the mean over groups weights each group once, not each row
    sel = pd.concat([_selected(), _selected().query("dataset == 'x' and sample < 2").assign(dataset="z")])
    z = selection.regret_table(sel)
    np.testing.assert_allclose(z.loc["z"], [.125, .11, 0], atol=1e-12)
    np.testing.assert_allclose(z.loc["Mean"], (z.loc["y"] + z.loc["x"] + z.loc["z"]) / 3, atol=1e-12)


def test_shift_bins_equal_width_between_the_extremes():
    sel = _selected()
    got = selection.shift_bins(sel, n_bins=2)
    # edges 0, 0.5, 1: shift 0 .. 0.45 (x's samples 0-4) in [0, 0.5), 0.5 .. 1 (x's sample 5, all of y) in the last
    low = (sel["dataset"] == "x") & (sel["sample"] < 5)
    want = []
    for centre, mask in ((.25, low), (.75, ~low)):
        for name in ("A", "B", "Oracle"):
            v = sel.loc[mask & (sel["selector"] == name), "true"]
            want.append((centre, name, v.mean(), v.std(ddof=1) / np.sqrt(len(v)), len(v)))
    want = pd.DataFrame(want, columns=["bin", "selector", "mean", "sem", "n"])
    pd.testing.assert_frame_equal(got, want, check_dtype=False, atol=1e-12)
    # the default: 5 bins of width 0.2, the largest shift in the last
    five = selection.shift_bins(sel)
    np.testing.assert_allclose(sorted(set(five["bin"])), [.1, .3, .5, .7, .9], atol=1e-12)
    assert five.groupby("bin")["n"].sum().tolist() == [6, 6, 9, 6, 9]
    with pytest.raises(ValueError, match="n_bins must be >= 1"):
        selection.shift_bins(sel, n_bins=0)


def _verdict_frame():
    """Datasets a (7 samples), b and c (6 each); the 19 samples have shifts 0, 0.01, .. 0.18 (a: 0, 0.03, ..;
    b: 0.01, 0.04, ..; c: 0.02, 0.05, ..). IMS-All's true measure is 0.6, TMS's 0.6 + gap with gap = r/100 - 0.04
    on a and b (TMS best there) and 0.004 r - 0.08 < 0 on c (IMS best, told apart at p = 2/64); the lower variant
    of TMS (0.9) is not among the default baselines, default-lr is 0.5, the oracle 0.95."""
    rows = []
    for d, (ds, n) in enumerate((("a", 7), ("b", 6), ("c", 6))):
        for s in range(n):
            r = 3 * s + d
            gap = r / 100 - 0.04 if ds != "c" else 0.004 * r - 0.08
            for name, true in (("TMS-O-LEAP_KDEy", 0.6 + gap), ("TMS-O-LEAP_KDEy-lower", 0.9), ("IMS-All", 0.6),
                               ("default-lr", 0.5), ("Oracle", 0.95)):
                rows.append((ds, s, name, true, 0.95 - true, r / 100))
    return pd.DataFrame(rows, columns=["dataset", "sample", "selector", "true", "regret", "shift"])


def test_verdicts_on_a_hand_made_frame():
    sel = _verdict_frame()
    v = selection.verdicts(sel)
    # gap by thirds of shift: the lower third is r <= 6 (7 samples), the upper r > 12 (6 samples)
    low = [-.04, -.03, -.072, -.01, 0, -.06, .02]
    high = [.09, -.024, .11, .12, -.012, .14]
    assert {k: v[k] for k in ("n_datasets", "n_best", "best_on_most", "n_not_best", "n_not_worse", "not_worse",
                              "grows")} == dict(n_datasets=3, n_best=2, best_on_most=True, n_not_best=1,
                                                n_not_worse=1, not_worse=True, grows=True)
    np.testing.assert_allclose([v["gap_low"], v["gap_high"]], [np.mean(low), np.mean(high)], atol=1e-12)
    np.testing.assert_allclose(v["gap_p"], 2 * 30 / 1716, rtol=1e-9)  # exact Mann-Whitney: U = 36 of 42
    assert (v["claim1"], v["claim2"], v["claim3"]) == ("reproduced", "reproduced", "reproduced")
    # at alpha = 0.05 the loss on c is significant
    v = selection.verdicts(sel, alpha=0.05, by=["dataset"])
    assert (v["n_not_worse"], v["not_worse"], v["claim2"]) == (0, False, "not reproduced")
    # p = alpha is not told apart; the gap is against the selector named by ims
    v = selection.verdicts(sel, alpha=2 / 64, ims="default-lr")
    assert v["n_not_worse"] == 1
    np.testing.assert_allclose([v["gap_low"], v["gap_high"]], [np.mean(low) + .1, np.mean(high) + .1], atol=1e-12)
    # the shifts permuted (r -> 2r mod 19): the gap is larger in the upper third, but not significantly (p = 0.29)
    r = np.round(sel["shift"] * 100).astype(int)
    v = selection.verdicts(sel.assign(shift=(2 * r % 19) / 100))
    assert v["gap_high"] > v["gap_low"] and v["gap_p"] > 0.2 and (v["grows"], v["claim3"]) == (False, "not reproduced")
    # against default-lr alone TMS is best everywhere: claim 2 has nothing to test
    v = selection.verdicts(sel, baselines=["default-lr"])
    assert (v["n_best"], v["n_not_best"], v["not_worse"], v["claim2"]) == (3, 0, True, "not testable here")
    # against its own lower variant it is best nowhere, but not told apart (p = 2/128 on a, 2/64 on b and c)
    v = selection.verdicts(sel, baselines=["IMS-All", "TMS-O-LEAP_KDEy-lower"])
    assert (v["n_best"], v["best_on_most"], v["n_not_worse"], v["claim1"]) == (0, False, 3, "not reproduced")
    # best on one dataset of two is not "most"
    v = selection.verdicts(sel[sel["dataset"] != "b"])
    assert (v["n_datasets"], v["n_best"], v["best_on_most"]) == (2, 1, False)
    with pytest.raises(ValueError, match=re.escape("sel lacks the selector 'TMS-O-LEAP_KDEy' or 'IMS-nope'; it has "
                                                   "['TMS-O-LEAP_KDEy', 'TMS-O-LEAP_KDEy-lower', 'IMS-All'")):
        selection.verdicts(sel, ims="IMS-nope")


# ------------------------------------------- the selector's criteria, with stand-in estimators whose picks are known
class _Line:
    """A stand-in CAP estimator: on a sample X it predicts ``a + b * mean(X[:, 0])`` and the interval of half-width
    ``w * (1 - alpha)`` around it; it records the prevalences it was given. ``proba``: it predicts instead the mean
    posterior of class 1 it is handed (the selector classifies each distinct item once)."""

    def __init__(self, h, a, b, w, proba=False, warn=None):
        self.classifier, self.a, self.b, self.w, self.needs_proba, self.warn = h, a, b, w, proba, warn
        self.seen, self.posts = [], []

    def _point(self, samples, post=None):
        if self.needs_proba:
            post = [self.classifier.predict_proba(X) for X in samples] if post is None else post
            return np.array([P[:, 1].mean() for P in post])
        return np.array([self.a + self.b * np.asarray(X[:, 0].mean()).item() for X in samples])

    def predict_measures(self, samples, measures, prevalences=None, post=None):
        self.seen.append(prevalences)
        self.posts.append(post)
        return {measures[0]: self._point(samples, post)}

    def predict_interval_measures(self, samples, measures, alpha, prevalences=None):
        self.seen.append(prevalences)
        if self.warn is not None:
            warnings.warn("calibrating", self.warn)
        m, half = self._point(samples), self.w * (1 - alpha)
        return {measures[0]: np.stack([m - half, m + half], axis=1)}


def _line_selector(criterion="point", alpha=0.5, lines=None):
    """A selector over five stand-ins (the fifth a copy of the second), set up as ``fit`` leaves it.
    At alpha 0.5 the lower ends are 0.49 + 0.1 mu, 0.40 - 0.1 mu, 0.40 + 0.2 mu, 0.49 + 0.1 mu, as the second."""
    X, y = gaussians(60, seed=9, d=2)
    h = LogisticRegression().fit(X, y)
    lines = lines or [(.50, .1, .02), (.60, -.1, .40), (.45, .2, .10), (.52, .1, .06), (.60, -.1, .40)]
    sel = TransductiveSelector([h] * len(lines), "DoC", criterion=criterion, alpha=alpha)
    sel.estimators_ = [_Line(h, *line) for line in lines]
    sel.n_classes_, sel.n_features_in_, sel.n_candidates_, sel.shared_path_, sel.quantifier_ = 2, 2, len(lines), \
        False, None
    return sel


def _at(mu):
    """A sample whose first feature has mean ``mu``."""
    return np.array([[mu - 1, 0.0], [mu + 1, 1.0], [mu, 2.0]])


def test_point_criterion_picks_the_highest_estimate_first_on_ties():
    sel = _line_selector()
    samples = [_at(0), _at(1), _at(-1)]
    # predictions: mu = 0: .5 .6 .45 .52 .6; mu = 1: .6 .5 .65 .62 .5; mu = -1: .4 .7 .25 .42 .7
    np.testing.assert_allclose(sel.predict_measures_batch(samples), [[.5, .6, .45, .52, .6], [.6, .5, .65, .62, .5],
                                                                     [.4, .7, .25, .42, .7]], atol=1e-12)
    np.testing.assert_array_equal(sel.predict_batch(samples), [1, 2, 1])
    assert sel.predict(_at(1)) == 2 and isinstance(sel.predict(_at(1)), int)
    np.testing.assert_allclose(sel.predict_measures(_at(-1)), [.4, .7, .25, .42, .7], atol=1e-12)
    s = sel.select(samples)
    assert s.intervals is None and s.index.tolist() == [1, 2, 1] and s.measures.shape == (3, 5)
    s = sel.select(samples, intervals=True)
    assert s.index.tolist() == [1, 2, 1]
    np.testing.assert_allclose(s.intervals[0, :, 0], [.49, .40, .40, .49, .40], atol=1e-12)


def test_lower_criterion_picks_the_highest_lower_end_then_the_highest_estimate():
    sel = _line_selector("lower")
    samples = [_at(0), _at(1), _at(-1)]
    # mu = 0: candidates 0 and 3 tie at 0.49, 3 has the higher estimate; mu = 1: 2 (0.60); mu = -1: 1 (0.50, tied
    # with its copy 4 on both: the first)
    assert sel.predict_batch(samples).tolist() == [3, 2, 1]
    s = sel.select(samples)
    assert s.index.tolist() == [3, 2, 1] and s.intervals is None
    assert sel.select(samples, intervals=True).intervals.shape == (3, 5, 2)
    assert sel.predict(_at(0)) == 3
    # the intervals at the constructor's alpha (half-width w / 2) or the one given
    np.testing.assert_allclose(sel.predict_interval(_at(0)), [[.49, .51], [.4, .8], [.4, .5], [.49, .55], [.4, .8]],
                               atol=1e-12)
    np.testing.assert_allclose(sel.predict_interval(_at(0), alpha=0.9)[:, 1], [.502, .64, .46, .526, .64], atol=1e-12)
    np.testing.assert_allclose(sel.predict_interval_batch(samples[1:], alpha=0.9)[:, 2, 0], [.64, .24], atol=1e-12)
    np.testing.assert_allclose(sel.predict_interval_batch(samples[1:])[:, 2], [[.6, .7], [.2, .3]], atol=1e-12)
    # alpha 0.1: the half-widths grow, the lower ends of 0 and 3 part (0.482 and 0.466): 0 is picked
    assert _line_selector("lower", alpha=0.1).predict(_at(0)) == 0
    with pytest.raises(ValueError, match=re.escape("alpha must be in (0.0, 1.0), got 1.5")):
        sel.predict_interval(_at(0), alpha=1.5)


def test_prevalences_are_checked_and_passed_on():
    sel = _line_selector()
    samples = [_at(0), _at(1)]
    prev = [[.3, .7], [.6, .4]]
    sel.predict_batch(samples, prevalences=prev)
    sel.predict_measures_batch(samples, prevalences=prev)
    sel.predict_interval_batch(samples, prevalences=prev)
    sel.predict(_at(0), prevalence=[.2, .8])
    sel.predict_measures(_at(0), prevalence=[.2, .8])
    sel.predict_interval(_at(0), prevalence=[.2, .8])
    seen = sel.estimators_[2].seen
    assert len(seen) == 6
    for got in seen[:3]:
        np.testing.assert_array_equal(got, prev)
    for got in seen[3:]:
        np.testing.assert_array_equal(got, [[.2, .8]])
    sel.predict_batch(samples)
    assert sel.estimators_[0].seen[-1] is None
    sel.predict_measures_batch([sp.csr_matrix(X) for X in samples], prevalences=prev)  # sparse samples too
    np.testing.assert_array_equal(sel.estimators_[0].seen[-1], prev)
    sel.predict_measures_batch(samples, prevalences=[[0, 1], [1, 0]])  # as floats
    assert sel.estimators_[0].seen[-1].dtype == np.float64
    with pytest.raises(ValueError, match=re.escape("samples[1] has 3 features, but the estimator was fitted on 2 "
                                                   "features")):
        sel.predict_batch([_at(0), np.zeros((2, 3))])
    cautious = _line_selector("lower")
    cautious.predict_batch(samples, prevalences=prev)  # the estimates and the intervals
    assert len(cautious.estimators_[1].seen) == 2
    for got in cautious.estimators_[1].seen:
        np.testing.assert_array_equal(got, prev)
    with pytest.raises(ValueError, match=re.escape("prevalences must have shape (2, 2) (the true prevalence of each "
                                                   "sample, for oracle quantifiers), got (1, 2)")):
        sel.predict_batch(samples, prevalences=[[.5, .5]])
    with pytest.raises(ValueError, match=re.escape("prevalence must have shape (2,) (the true prevalence of each "
                                                   "sample, for oracle quantifiers), got (3,)")):
        sel.predict_measures(_at(0), prevalence=[.2, .3, .5])
    with pytest.raises(ValueError, match=re.escape("prevalence must have shape (2,)")):
        sel.predict_interval(_at(0), prevalence=[[.2, .8]] * 2)


def test_posteriors_are_computed_once_per_distinct_item():
    sel = _line_selector(lines=[(0, 0, 0, True), (0, 0, 0)])
    h = sel.estimators_[0].classifier
    rng = np.random.default_rng(4)
    pool = rng.normal(size=(5, 2))
    samples = [pool[[0, 1, 1, 2]], pool[[3]], pool[[4, 0, 0, 4, 3, 2]]]  # items repeated within and across samples
    got = sel.predict_measures_batch(samples)[:, 0]
    np.testing.assert_allclose(got, [h.predict_proba(X)[:, 1].mean() for X in samples], atol=1e-12)
    # the posteriors handed to the estimator that reads them, none to the other
    assert [len(P) for P in sel.estimators_[0].posts[-1]] == [4, 1, 6] and sel.estimators_[1].posts[-1] is None
    # sparse samples go to the estimators as they are
    sparse = sel.predict_measures_batch([sp.csr_matrix(X) for X in samples])[:, 0]
    np.testing.assert_allclose(sparse, got, atol=1e-12)
    assert sel.estimators_[0].posts[-1] is None
    line = _line_selector(lines=[(.5, .1, 0), (.3, .2, 0)])
    np.testing.assert_allclose(line.predict_measures_batch([sp.csr_matrix(_at(2)), sp.csr_matrix(_at(0))]),
                               [[.7, .7], [.5, .3]], atol=1e-12)


# ------------------------------------------------------------------ the study's raw table and the shift protocols
def test_candidate_table_layout_and_true_measures():
    X_L, y_L = gaussians(120, seed=1, d=2)
    X_V, y_V = gaussians(120, seed=2, d=2)
    X_U, y_U = gaussians(200, seed=3, d=2)
    cands = selection.candidate_grid(2, "knn")[1:3] + [c for c in selection.candidate_grid(2, "lr") if c.default]
    idx = [np.arange(0, 30), np.arange(50, 90), np.arange(10, 40)]
    labels = [y_U[idx[0]], y_U[idx[1]], 1 - y_U[idx[2]]]  # the third sample's labels flipped (concept shift)
    params = {"n_splits": 2, "n_cal": 20, "score": "absolute", "floor": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = selection.candidate_table(X_L, y_L, X_V, y_V, X_U, idx, labels, cands, ["ATC", "O-LEAP_CC"],
                                      "O-LEAP_CC", interval_params=params, alpha=0.2, seed=4)
        hs = [c.estimator.fit(X_L, y_L) for c in cands]  # the grid's estimators are unfitted: the table clones them
        sel = TransductiveSelector(hs, "O-LEAP_CC", interval_params=params, random_state=4).fit(X_V, y_V)
        pred = sel.predict_measures_batch([X_U[i] for i in idx])
        lower = sel.predict_interval_batch([X_U[i] for i in idx], alpha=0.2)[..., 0]
        atc = TransductiveSelector(hs, "ATC", random_state=4).fit(X_V, y_V)
        atc = atc.predict_measures_batch([X_U[i] for i in idx])
    assert list(t.columns) == ["family", "candidate", "default", "order", "sample", "true", "val", "pred:ATC",
                               "pred:O-LEAP_CC", "lower:O-LEAP_CC"]
    assert t["candidate"].tolist() == [c.name for c in cands for _ in idx]
    assert t["family"].tolist() == ["knn"] * 6 + ["lr"] * 3 and t["default"].tolist() == [False] * 6 + [True] * 3
    assert t["order"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2] and t["sample"].tolist() == [0, 1, 2] * 3
    true = [np.mean(h.predict(X_U[i]) == lab) for h in hs for i, lab in zip(idx, labels)]
    np.testing.assert_allclose(t["true"], true, atol=1e-12)
    np.testing.assert_allclose(t["true"].to_numpy()[2::3] + [np.mean(h.predict(X_U[idx[2]]) == y_U[idx[2]])
                                                             for h in hs], 1, atol=1e-12)
    val = np.repeat([np.mean(h.predict(X_V) == y_V) for h in hs], 3)
    np.testing.assert_allclose(t["val"], val, atol=1e-12)
    np.testing.assert_allclose(t["pred:ATC"], atc.T.ravel(), atol=1e-12)
    np.testing.assert_allclose(t["pred:O-LEAP_CC"], pred.T.ravel(), atol=1e-12)
    np.testing.assert_allclose(t["lower:O-LEAP_CC"], lower.T.ravel(), atol=1e-12)
    assert np.all(t["pred:O-LEAP_CC"] - t["lower:O-LEAP_CC"] > 0.1)
    # another measure, on classes 0 and 1 only; a candidate that does not converge (its warning silenced)
    slow = selection.Candidate("lr", "lr[max_iter=1]", {"max_iter": 1}, False, LogisticRegression(max_iter=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        f1 = selection.candidate_table(X_L, y_L, X_V, y_V, X_U, idx, labels, cands[:1] + [slow], ["O-LEAP_CC"], None,
                                       "macro_f1", seed=4)
        h = LogisticRegression(max_iter=1)
        with pytest.warns(ConvergenceWarning):
            h.fit(X_L, y_L)
    macro = get_measure("macro_f1")
    want = [macro(contingency_table(lab, g.predict(X_U[i]), 2)) for g in (hs[0], h) for i, lab in zip(idx, labels)]
    np.testing.assert_allclose(f1["true"], want, atol=1e-12)
    np.testing.assert_allclose(f1["val"], np.repeat([macro(contingency_table(y_V, g.predict(X_V), 2))
                                                     for g in (hs[0], h)], 3), atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mf = TransductiveSelector([hs[0], h], "O-LEAP_CC", "macro_f1", random_state=4).fit(X_V, y_V)
    np.testing.assert_allclose(f1["pred:O-LEAP_CC"], mf.predict_measures_batch([X_U[i] for i in idx]).T.ravel(),
                               atol=1e-12)
    with pytest.raises(ValueError, match=re.escape("cautious='ATC' must be one of methods ['DoC']")):
        selection.candidate_table(X_L, y_L, X_V, y_V, X_U, idx, labels, cands, "DoC", "ATC")


def test_shift_selection_one_table_per_trial():
    X, y = gaussians(400, seed=5, d=2)
    proto = shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.2, 0.9], train_size=100,
                             test_size=20, n_samples=1, repeats=2, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = selection.shift_selection(proto, "knn", ["ATC"], val_prop=0.4, grid="small")
        split, idx, labels = evaluation.trial_split(proto.trial(1), 0.4, 3, "PriorShift")
        one = selection.candidate_table(split.X_L, split.y_L, split.X_V, split.y_V, split.X_U, idx, labels,
                                        selection.candidate_grid(2, "knn", 3, size="small"), ["ATC"], seed=3)
    assert list(t.columns) == ["dataset", "trial", "family", "candidate", "default", "order", "sample", "true", "val",
                               "pred:ATC", "degree", "shift"]
    assert len(t) == 2 * 6 * 2 and set(t["dataset"]) == {"PriorShift"}
    pd.testing.assert_index_equal(t.index, pd.RangeIndex(24))
    assert t["trial"].tolist() == [0] * 12 + [1] * 12 and t["sample"].tolist() == [0, 1] * 12
    # test prevalences 0.2 and 0.9 against L's 0.5 (train prevalence 0.5, split stratified)
    np.testing.assert_allclose(t["degree"], [-0.3, 0.4] * 12, atol=1e-12)
    np.testing.assert_allclose(t["shift"], [0.6, 0.8] * 12, atol=1e-12)
    second = t[t["trial"] == 1].drop(columns=["dataset", "trial", "degree", "shift"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(second, one)
    with pytest.raises(ValueError, match=re.escape("val_prop must be in (0.0, 1.0), got 1.0")):
        selection.shift_selection(proto, "knn", val_prop=1.0)
    with pytest.raises(ValueError, match="unknown candidate families"):
        selection.shift_selection(proto, "tree")


def test_naive_selector_predicts_the_validation_measures():
    hs, X_V, y_V, samples = _small()
    sel = TransductiveSelector(hs, "Naive").fit(X_V, y_V)
    # Naive predicts V's table for every sample: the transductive pick is the inductive one
    np.testing.assert_allclose(sel.predict_measures_batch(samples), np.tile(sel.val_measures_, (len(samples), 1)),
                               atol=1e-12)
    assert sel.predict_batch(samples).tolist() == [int(np.argmax(sel.val_measures_))] * len(samples)


class _Fixed(_Line):
    """A stand-in whose interval's lower end is ``lo`` whatever the sample."""

    def __init__(self, h, point, lo):
        super().__init__(h, point, 0.0, 0.0)
        self.lo = lo

    def predict_interval_measures(self, samples, measures, alpha, prevalences=None):
        return {measures[0]: np.array([[self.lo, 1.0]] * len(samples))}


def test_lower_ends_within_1e_12_of_the_highest_tie():
    sel = _line_selector("lower", lines=[(0, 0, 0)] * 2)
    h = sel.estimators_[0].classifier
    sel.estimators_ = [_Fixed(h, 0.6, 0.5), _Fixed(h, 0.9, 0.5 - 1e-12), _Fixed(h, 0.95, 0.5 - 3e-12)]
    sel.n_candidates_ = 3
    assert sel.predict(_at(0)) == 1


def test_fit_sets_the_state_and_refuses_bad_parameters():
    hs, X_V, y_V, samples = _small()
    sel = TransductiveSelector(hs, "DoC", interval_params={"n_cal": 7}, random_state=5).fit(X_V, y_V)
    assert (sel.n_classes_, sel.n_features_in_, sel.n_candidates_) == (2, X_V.shape[1], 3)
    assert sel.quantifier_ is None and sel.shared_path_ is False
    np.testing.assert_allclose(sel.val_measures_, [np.mean(h.predict(X_V) == y_V) for h in hs], atol=1e-12)
    assert [e.classifier for e in sel.estimators_] == hs
    est = sel.estimators_[1]
    assert est.interval_params["n_cal"] == 7 and est.random_state == 5
    assert {k: v for k, v in est.interval_params.items() if k != "n_cal"} == \
        {k: v for k, v in registry.make_method("DoC", hs[0]).interval_params.items() if k != "n_cal"}
    f1 = TransductiveSelector(hs, "DoC", measure="f1").fit(X_V, y_V)
    assert f1.estimators_[0].random_state == 0  # the default seed
    np.testing.assert_allclose(f1.val_measures_, [get_measure("f1")(contingency_table(y_V, h.predict(X_V), 2))
                                                  for h in hs], atol=1e-12)
    for kw, kind, match in [(dict(interval_params=[("n_cal", 7)]), TypeError,
                             "interval_params must be a dict or None, got list"),
                            (dict(alpha=1.5), ValueError, "^" + re.escape("alpha must be in (0.0, 1.0), got 1.5")),
                            (dict(random_state=-2), ValueError, "^random_state must be in 0..2"),
                            (dict(criterion="upper"), ValueError, re.escape("criterion must be one of ('point', "
                                                                            "'lower'), got 'upper'"))]:
        with pytest.raises(kind, match=match):
            sel.set_params(**kw).fit(X_V, y_V)
        with pytest.raises(NotFittedError):  # a failed refit leaves no fitted state behind
            sel.predict(samples[0])
        sel.set_params(interval_params=None, alpha=0.05, random_state=0, criterion="point")
    with pytest.raises(ValueError, match="^" + re.escape("X_val has 2 features, but the estimator was fitted on 3")):
        sel.fit(X_V[:, :2], y_V)
    with pytest.raises(ValueError, match="^" + re.escape(f"y_val must have one label per item: expected shape "
                                                         f"({len(y_V)},), got (50,)")):
        sel.fit(X_V, y_V[:50])
    # a quantifier that reads only x is fitted once and shared by every candidate's estimator
    oracle = TransductiveSelector(hs, "O-LEAP_oracle", random_state=5).fit(X_V, y_V)
    assert isinstance(oracle.quantifier_, SharedQuantifier) and oracle.quantifier_.random_state == 5
    assert oracle.quantifier_.method == "oracle"
    assert all(e.quantifier_ is oracle.quantifier_ for e in oracle.estimators_) and oracle.shared_path_ is True


def test_study_cell_defaults_are_the_runners_and_the_split_is_seeded():
    import inspect
    cell = inspect.signature(selection.study_cell).parameters
    runner = inspect.signature(grid.run_selection_study).parameters
    # the runner passes its defaults to the cell, except grid="paper" (left out of the cells' keys) and alpha
    for name in ("families", "n_samples", "sample_size", "seed", "methods", "cautious", "measure", "mlp_hidden",
                 "mlp_max_iter", "grid"):
        assert cell[name].default == runner[name].default, name
    assert cell["interval_params"].default == selection.STUDY_INTERVALS and cell["alpha"].default == 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = selection.study_cell("haberman", "knn", n_samples=10, sample_size=5, seed=3, methods=["ATC"],
                                 cautious=None, grid="small")
    split = datasets.load("haberman", seed=3)
    idx = protocols.upp_indices(split.y_U, 5, 10, seed=3)
    assert min(split.y_U[i].max() for i in idx) == 0  # a sample without class 1
    prev_L = np.bincount(split.y_L, minlength=2) / len(split.y_L)
    shift = [np.abs(np.bincount(split.y_U[i], minlength=2) / 5 - prev_L).sum() for i in idx]
    assert list(t.columns[:2]) == ["dataset", "family"] and set(t["dataset"]) == {"haberman"} and len(t) == 6 * 10
    np.testing.assert_allclose(t["shift"], shift * 6, atol=1e-12)
    h = selection.candidate_grid(2, "knn")[0].estimator.fit(split.X_L, split.y_L)  # L and V of the seeded split
    np.testing.assert_allclose(t["val"].iloc[0], np.mean(h.predict(split.X_V) == split.y_V), atol=1e-12)
    np.testing.assert_allclose(t["true"].iloc[:10], [np.mean(h.predict(split.X_U[i]) == split.y_U[i]) for i in idx],
                               atol=1e-12)
    # the default cautious selector is O-LEAP_KDEy's
    with pytest.raises(ValueError, match=re.escape("cautious='O-LEAP_KDEy' must be one of methods ['ATC']")):
        selection.study_cell("haberman", "knn", n_samples=2, methods=["ATC"])


def test_shift_selection_binary_grid_and_measure():
    import inspect
    # the candidates as candidate_grid's defaults: the paper's grid and MLPs
    grid_ = inspect.signature(selection.candidate_grid).parameters
    here = inspect.signature(selection.shift_selection).parameters
    for name in ("mlp_hidden", "mlp_max_iter"):
        assert here[name].default == grid_[name].default, name
    assert here["grid"].default == "paper" and here["val_prop"].default == 0.5
    X, y = gaussians(300, seed=6, d=2)
    proto = shift.PriorShift(X, y, train_prevalences=[0.5], test_prevalences=[0.3], train_size=80, test_size=20,
                             n_samples=1, repeats=1, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = selection.shift_selection(proto, "lr", ["O-LEAP_CC"], "macro_f1", val_prop=0.5, grid="small")
        split, idx, labels = evaluation.trial_split(proto.trial(0), 0.5, 2)
        h = selection.candidate_grid(2, "lr", 2, size="small")[0].estimator.fit(split.X_L, split.y_L)
    # the paper's grid by default
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        knn = selection.shift_selection(proto, "knn", ["ATC"])
    assert knn["candidate"].tolist() == [c.name for c in selection.candidate_grid(2, "knn")]
    # binary class weightings
    assert t["candidate"].tolist() == [c.name for c in selection.candidate_grid(2, "lr", size="small")]
    want = get_measure("macro_f1")(contingency_table(labels[0], h.predict(split.X_U[idx[0]]), 2))
    np.testing.assert_allclose(t["true"].iloc[0], want, atol=1e-12)


def test_candidates_refused_with_their_messages():
    X, y = gaussians(60, seed=9, d=2)
    h = LogisticRegression().fit(X, y)
    with pytest.raises(TypeError, match=re.escape("candidates must be a list of fitted classifiers, got "
                                                  "LogisticRegression; for one classifier pass [classifier]")):
        TransductiveSelector(h).fit(X, y)
    with pytest.raises(ValueError, match="^" + re.escape("candidates is empty: pass at least one fitted classifier")):
        TransductiveSelector(()).fit(X, y)
    h4 = LogisticRegression().fit(*gaussians(60, seed=9, d=4))
    with pytest.raises(ValueError, match="^" + re.escape("candidates disagree on the features: candidates[0] was "
                                                         "trained on 2, candidates[2] on 4; train every candidate")):
        TransductiveSelector([h, h, h4]).fit(X, y)


@pytest.mark.parametrize("kind,shown", [(ConvergenceWarning, False), (UserWarning, True)])
def test_calibration_silences_convergence_warnings_only(kind, shown):
    sel = _line_selector("lower", lines=[(.5, 0, .1)])
    sel.estimators_ = [_Line(sel.estimators_[0].classifier, .5, 0, .1, warn=kind)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sel.predict(_at(0)) == 0
    assert [w.category for w in caught] == ([kind] if shown else [])


def test_shared_path_counts_each_samples_predictions():
    """The shortcut of the (gamma, q-hat) path (each item classified once, the counts per sample) gives each
    estimator's own prediction, also when the last sample has no item predicted in the last class."""
    hs, X_V, y_V, X_U, y_U = _opposite_candidates()
    sel = TransductiveSelector(hs, "O-LEAP_CC").fit(X_V, y_V)
    only0 = np.flatnonzero((hs[0].predict(X_U) == 0) & (hs[1].predict(X_U) == 0))[:3]
    samples = [X_U[:40], X_U[40:45], X_U[only0]]
    want = np.column_stack([e.predict_batch(samples) for e in sel.estimators_])
    np.testing.assert_allclose(sel.predict_measures_batch(samples), want, atol=1e-12)
