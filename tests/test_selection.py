"""Tests of capshift.selection: transductive model selection (TMS) against inductive selection (IMS), the selector
against a loop over its candidates, the shared quantifier, the candidate grid, the selectors of the study, and the
resumable study runner (capshift.grid.run_cells)."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import gaussians  # noqa: E402

from capshift import grid, protocols, registry, selection  # noqa: E402
from capshift.quantifiers import Quantifier  # noqa: E402
from capshift.selection import SharedQuantifier, TransductiveSelector  # noqa: E402


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
