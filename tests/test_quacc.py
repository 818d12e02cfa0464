"""QuAcc: exact tables on noise-free relabelled data, n×n bookkeeping, 1×(n+1) refusals, covariates, selection."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from quapy.method.aggregative import CC
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from capshift import experiment
from capshift.quacc import (QuAcc1xN2, QuAcc1xNp1, QuAccGridSearch, QuAccNxN, augment_features,
                            cell_labels, max_confidence, max_inverse_softmax, negative_entropy, paper_grid)
from capshift.tables import accuracy, contingency_table, f1, macro_f1, predicted_prevalence
from capshift.validation import InsufficientEvidenceWarning


class ColumnClassifier(ClassifierMixin, BaseEstimator):
    """A 'trained' classifier whose prediction is column 1 of X (so the cells are known by construction)."""

    def __init__(self, n_classes=2):
        self.n_classes = n_classes

    def fit(self, X, y):
        self.classes_ = np.arange(self.n_classes)
        return self

    def predict_proba(self, X):
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        P = np.full((X.shape[0], self.n_classes), 0.2 / (self.n_classes - 1))
        P[np.arange(X.shape[0]), X[:, 1].astype(int)] = 0.8
        return P

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


def _cells(counts, seed):
    """Noise-free items: true class i in column 0, predicted class j in column 1, cell counts (n, n), shuffled."""
    n = counts.shape[0]
    X, y = [], []
    for i in range(n):
        for j in range(n):
            m = int(counts[i, j])
            X.append(np.column_stack([np.full(m, 10.0 * i), np.full(m, j)]))
            y.append(np.full(m, i))
    perm = np.random.default_rng(seed).permutation(int(counts.sum()))
    return np.vstack(X)[perm], np.concatenate(y)[perm]


def _noise_free(n, seed=0):
    rng = np.random.default_rng(seed)
    V_counts = (rng.integers(10, 40, (n, n)) + 60 * np.eye(n)).astype(int)
    U_counts = (rng.integers(5, 80, (n, n)) + 20 * np.eye(n)).astype(int)  # different cell and class priors
    X_V, y_V = _cells(V_counts, seed + 1)
    X_U, y_U = _cells(U_counts, seed + 2)
    h = ColumnClassifier(n).fit(X_V, y_V)
    return h, X_V, y_V, X_U, y_U, contingency_table(y_U, h.predict(X_U), n)


ORACLE = CC(DecisionTreeClassifier(random_state=0))  # separates the cells perfectly: an oracle for their counts


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("cls", [QuAcc1xN2, QuAccNxN])
def test_noise_free_full_table(n, cls):
    h, X_V, y_V, X_U, y_U, true = _noise_free(n, n)
    est = cls(h, quantifier=ORACLE).fit(X_V, y_V)
    T = est.predict_table(X_U)
    np.testing.assert_allclose(T, true, atol=1e-12)
    assert est.predict(X_U) == pytest.approx(accuracy(true))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_noise_free_1xnp1_diagonal_and_total_error(n):
    h, X_V, y_V, X_U, y_U, true = _noise_free(n, 10 + n)
    T = QuAcc1xNp1(h, quantifier=ORACLE).fit(X_V, y_V).predict_table(X_U)
    np.testing.assert_allclose(np.diag(T), np.diag(true), atol=1e-12)
    assert T.sum() - np.trace(T) == pytest.approx(true.sum() - np.trace(true), abs=1e-12)
    assert T.min() >= 0 and T.sum() == pytest.approx(1.0)
    if n == 2:  # binary: the error mass placed by the observed predicted fractions gives the true FP and FN
        np.testing.assert_allclose(T, true, atol=1e-12)


def test_noise_free_with_quapy_sld_is_close():
    # (1x(n+1) is left out: its merged error cell is not linearly separable here, so SLD's logistic
    # regression cannot model it -- and the cell is not PPS-stable anyway, the paper's Fig. 2)
    h, X_V, y_V, X_U, y_U, true = _noise_free(3, 7)
    for cls in (QuAcc1xN2, QuAccNxN):
        T = cls(h, quantifier="sld", random_state=0).fit(X_V, y_V).predict_table(X_U)
        assert abs(accuracy(T) - accuracy(true)) < 0.02, cls.__name__


def _real(n=3, seed=0, m=1500):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n, m)
    X = rng.normal(size=(m, 4)) + 1.2 * np.eye(n, 4)[y]
    h = LogisticRegression().fit(X[: m // 3], y[: m // 3])
    return h, X[m // 3: 2 * m // 3], y[m // 3: 2 * m // 3], X[2 * m // 3:], y[2 * m // 3:]


@pytest.mark.parametrize("quantifier", ["sld", "kdey", "cc"])
def test_nxn_column_sums_are_observed_predicted_fractions(quantifier):
    h, X_V, y_V, X_U, y_U = _real()
    est = QuAccNxN(h, quantifier=quantifier, random_state=0).fit(X_V, y_V)
    for sl in (slice(0, 300), slice(100, 140), slice(0, 3)):
        T = est.predict_table(X_U[sl])
        gamma = np.bincount(h.predict(X_U[sl]), minlength=3) / len(X_U[sl])
        np.testing.assert_allclose(predicted_prevalence(T), gamma, atol=1e-12)
        assert T.min() >= 0 and T.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("cls", [QuAcc1xN2, QuAccNxN, QuAcc1xNp1])
def test_tables_valid_and_batch_equals_single(cls):
    h, X_V, y_V, X_U, y_U = _real(seed=1)
    est = cls(h, quantifier="sld", covariates=True, random_state=0).fit(X_V, y_V)
    samples = [X_U[:200], X_U[200:260], X_U[260:500]]
    B = est.predict_table_batch(samples)
    assert B.shape == (3, 3, 3) and np.all(B >= 0)
    np.testing.assert_allclose(B.sum(axis=(1, 2)), 1.0)
    for k, X in enumerate(samples):
        np.testing.assert_allclose(est.predict_table(X), B[k], atol=1e-10)
    acc = est.predict_batch(samples, "accuracy", posteriors=[h.predict_proba(X) for X in samples])
    np.testing.assert_allclose(acc, accuracy(B), atol=1e-10)


def test_1xnp1_refuses_measures_it_cannot_compute():
    h, X_V, y_V, X_U, y_U = _real()
    est = QuAcc1xNp1(h, quantifier="sld").fit(X_V, y_V)
    assert est.supports("accuracy") and not est.supports("macro_f1") and not est.supports("f1")
    for m in ("macro_f1", "f1", "balanced_accuracy"):
        with pytest.raises(ValueError, match="merges all errors"):
            est.predict(X_U, measure=m)
        with pytest.raises(ValueError, match="merges all errors"):
            est.predict_batch([X_U], m)
    with pytest.raises(ValueError, match="merges all errors"):
        QuAcc1xNp1(h, measure="macro_f1").fit(X_V, y_V)
    # binary: F1 only needs FP + FN, so it is supported; balanced accuracy needs the split, so it is not
    h2, X_V2, y_V2, X_U2, y_U2 = _real(n=2)
    est2 = QuAcc1xNp1(h2, quantifier="sld").fit(X_V2, y_V2)
    assert est2.supports("f1") and est2.supports("macro_f1") and not est2.supports("balanced_accuracy")
    T = est2.predict_table(X_U2)
    assert est2.predict(X_U2, measure="f1") == pytest.approx(float(f1(T)))
    with pytest.raises(ValueError, match="balanced_accuracy"):
        est2.predict(X_U2, measure="balanced_accuracy")
    # the runner skips what it does not support
    df = experiment.run_experiment(_split(), methods=["QuAcc1xn+1_SLD", "QuAcc1xn2_SLD"], n_samples=5,
                                   sample_size=50, measures=("accuracy", "macro_f1"), progress=False)
    assert set(df[df.method == "QuAcc1xn+1_SLD"].measure) == {"accuracy"}
    assert set(df[df.method == "QuAcc1xn2_SLD"].measure) == {"accuracy", "macro_f1"}


def _split(n=3, seed=0):
    from capshift.datasets import Split

    rng = np.random.default_rng(seed)
    y = rng.integers(0, n, 1800)
    X = rng.normal(size=(1800, 4)) + 1.2 * np.eye(n, 4)[y]
    return Split("toy", X[:600], y[:600], X[600:1200], y[600:1200], X[1200:], y[1200:], np.arange(n), n)


def test_covariates_match_hand_computed_values():
    P = np.array([[0.7, 0.2, 0.1], [1 / 3, 1 / 3, 1 / 3], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(max_confidence(P), [0.7, 1 / 3, 1.0])
    ne = [0.7 * np.log(0.7) + 0.2 * np.log(0.2) + 0.1 * np.log(0.1), -np.log(3), 0.0]
    np.testing.assert_allclose(negative_entropy(P), ne)
    logs = np.log([0.7, 0.2, 0.1])
    mis = max_inverse_softmax(P)
    assert mis[0] == pytest.approx(np.log(0.7) - logs.mean())
    assert mis[1] == pytest.approx(0.0, abs=1e-12)
    assert np.isfinite(mis[2]) and mis[2] == pytest.approx(2 / 3 * (0 - np.log(1e-12)))
    Xh = augment_features(np.ones((3, 2)), P, True)
    np.testing.assert_allclose(Xh, np.column_stack([np.ones((3, 2)), P, max_confidence(P), ne, mis]))
    assert augment_features(np.ones((3, 2)), P, ("mis",)).shape == (3, 6)
    assert augment_features(np.ones((3, 2)), P).shape == (3, 5)


def test_sparse_input_stays_sparse():
    rng = np.random.default_rng(0)
    X = sp.random(300, 50, density=0.05, format="csr", random_state=0)
    P = rng.dirichlet(np.ones(2), 300)
    Xh = augment_features(X, P, True)
    assert sp.issparse(Xh) and Xh.format == "csr" and Xh.shape == (300, 55)
    np.testing.assert_allclose(Xh[:, :50].toarray(), X.toarray())
    np.testing.assert_allclose(Xh[:, 50:52].toarray(), P)
    # end to end on tf-idf-like data: the quantifier is trained on a sparse x̂
    y = (np.asarray(X[:, :5].sum(axis=1)).ravel() + 0.1 * rng.normal(size=300) > 0.05).astype(int)
    h = LogisticRegression().fit(X[:100], y[:100])
    est = QuAcc1xN2(h, quantifier="sld", covariates=True).fit(X[100:200], y[100:200])
    seen = {}
    q = est.quantifiers_[0]
    orig = q.classify
    q.classify = lambda Z: (seen.setdefault("sparse", sp.issparse(Z)), orig(Z))[1]
    T = est.predict_table(X[200:])
    assert seen["sparse"] and T.shape == (2, 2) and T.sum() == pytest.approx(1.0)


def test_cell_labels():
    y, p = np.array([0, 1, 2, 2]), np.array([0, 2, 1, 2])
    np.testing.assert_array_equal(cell_labels(y, p, 3), [0, 5, 7, 8])
    np.testing.assert_array_equal(cell_labels(y, p, 3, "1xn+1"), [0, 3, 3, 2])
    with pytest.raises(ValueError, match="variant"):
        cell_labels(y, p, 3, "2x2")
    with pytest.raises(ValueError, match="outside"):
        cell_labels(y, p, 2)


def test_bad_input_is_reported():
    h, X_V, y_V, X_U, y_U = _real()
    with pytest.raises(ValueError, match="unknown quantifier"):
        QuAcc1xN2(h, quantifier="emq!").fit(X_V, y_V)
    with pytest.raises(ValueError, match="unknown covariate"):
        QuAcc1xN2(h, covariates=("mc", "foo")).fit(X_V, y_V)
    with pytest.raises(TypeError, match="predict_proba"):
        QuAcc1xN2(LinearSVC().fit(X_V, y_V)).fit(X_V, y_V)
    with pytest.raises(ValueError, match="posteriors has"):
        augment_features(X_V, h.predict_proba(X_V[:5]))
    with pytest.raises(ValueError, match="sum to 1"):
        augment_features(X_V[:2], np.array([[0.5, 0.6, 0.0], [1, 0, 0]]))
    with pytest.raises(ValueError, match="bandwidth"):
        QuAcc1xN2(h, quantifier="kdey", bandwidth=0).fit(X_V, y_V)
    with pytest.raises(Exception, match="not fitted"):
        QuAccNxN(h).predict(X_U)


def test_grid_search_selects_and_refits():
    h, X_V, y_V, X_U, y_U = _real(seed=3)
    ests = [QuAcc1xN2(h, quantifier="sld"), QuAccNxN(h, quantifier="sld"), QuAcc1xNp1(h, quantifier="sld")]
    gs = QuAccGridSearch(h, ests, {"covariates": [False, True]}, n_samples=20, random_state=0).fit(X_V, y_V)
    assert len(gs.cv_results_) == 6
    assert gs.best_score_ == min(r["mae"] for r in gs.cv_results_)
    assert gs.best_params_["variant"] in {"QuAcc1xN2", "QuAccNxN", "QuAcc1xNp1"}
    assert gs.best_estimator_.classifier is h and gs.best_estimator_.val_table_.sum() == pytest.approx(1)
    np.testing.assert_allclose(gs.predict_table(X_U), gs.best_estimator_.predict_table(X_U))
    # macro-F1 in the multiclass case: 1x(n+1) is skipped (the paper's step (f))
    gs2 = QuAccGridSearch(h, ests, {"covariates": [False]}, measure="macro_f1", n_samples=10).fit(X_V, y_V)
    assert {r["variant"] for r in gs2.cv_results_} == {"QuAcc1xN2", "QuAccNxN"}
    with pytest.raises(ValueError, match="holdout"):
        QuAccGridSearch(h, ests, holdout=1.5).fit(X_V, y_V)
    # several measures at once come from the selected estimator's tables (gs2 selected a full-table variant)
    samples = [X_U[:150], X_U[150:300]]
    out = gs2.predict_measures(samples, ["accuracy", "macro_f1"])
    for m in ("accuracy", "macro_f1"):
        np.testing.assert_allclose(out[m], gs2.best_estimator_.predict_batch(samples, m), atol=1e-12)


def test_paper_grid():
    from sklearn.model_selection import ParameterGrid

    # C in 10^-3..10^3 (7) x class_weight (2) x covariates (2), times recalib (2) for SLD, bandwidth (20) for KDEy
    assert len(ParameterGrid(paper_grid("cc"))) == 28
    assert len(ParameterGrid(paper_grid("sld"))) == 56
    g = paper_grid("kdey")
    assert len(ParameterGrid(g)) == 560 and g["bandwidth"][0] == 0.01 and g["bandwidth"][-1] == 0.2
    assert "bandwidth" not in paper_grid("sld") and "recalib" not in paper_grid("kdey")
    with pytest.raises(ValueError, match="quantifier"):
        paper_grid("acc")
    C = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    common = {"C": C, "class_weight": [None, "balanced"], "covariates": [False, True]}
    assert paper_grid("cc") == common
    assert paper_grid("sld") == {**common, "recalib": [None, "bcts"]}
    assert paper_grid("kdey") == {**common, "bandwidth": [i / 100 for i in range(1, 21)]}
    with pytest.raises(ValueError, match=r"^quantifier must be 'cc', 'sld' or 'kdey', got 'SLD'$"):
        paper_grid("SLD")


def test_default_parameters():
    from capshift.quacc import QuAccSelected

    h = ColumnClassifier(2).fit(None, None)
    for cls in (QuAcc1xN2, QuAccNxN, QuAcc1xNp1):
        assert cls(h).get_params(deep=False) == {
            "classifier": h, "quantifier": "sld", "measure": "accuracy", "C": 1.0, "class_weight": None,
            "recalib": None, "bandwidth": 0.1, "covariates": False, "min_separation": 0.5, "random_state": None}
    grid = {"classifier": h, "estimators": None, "param_grid": None, "measure": "accuracy", "holdout": 0.4,
            "n_samples": 100, "sample_size": 100, "random_state": 0}
    assert QuAccGridSearch(h).get_params(deep=False) == grid
    assert QuAccSelected(h).get_params(deep=False) == {**grid, "quantifier": "sld"}
    est = QuAccGridSearch(h, "e", "g", "f1", 0.3, 5, 7, 9)  # stored as given (positional order)
    assert est.get_params(deep=False) == {"classifier": h, "estimators": "e", "param_grid": "g", "measure": "f1",
                                          "holdout": 0.3, "n_samples": 5, "sample_size": 7, "random_state": 9}
    est = QuAccSelected(h, "cc", "e", "g", "f1", 0.3, 5, 7, 9)
    assert est.get_params(deep=False) == {"classifier": h, "quantifier": "cc", "estimators": "e", "param_grid": "g",
                                          "measure": "f1", "holdout": 0.3, "n_samples": 5, "sample_size": 7,
                                          "random_state": 9}
    est = QuAccNxN(h, "cc", "f1", 2.0, "balanced", "bcts", 0.3, True, 0.2, 4)
    assert est.get_params(deep=False) == {"classifier": h, "quantifier": "cc", "measure": "f1", "C": 2.0,
                                          "class_weight": "balanced", "recalib": "bcts", "bandwidth": 0.3,
                                          "covariates": True, "min_separation": 0.2, "random_state": 4}


def test_methods_registered_and_protocol():
    from capshift import registry

    assert {"QuAcc1xn2_SLD", "QuAccnxn_KDEy", "QuAcc1xn+1_CC", "QuAcc(SLD)"} <= set(registry.names("quacc"))
    P = experiment.quacc_train_prevalences(2, 9)
    np.testing.assert_allclose(P[:, 1], np.arange(1, 10) / 10)
    Pm = experiment.quacc_train_prevalences(4, 5, seed=1)
    assert Pm.shape == (5, 4) and Pm.min() >= 0.1 / 4 - 1e-12
    np.testing.assert_allclose(Pm.sum(1), 1)
    df = experiment.run_quacc_protocol(_split(n=2), methods=["Naive", "QuAccnxn_SLD"], n_train=3, test_repeats=1,
                                       sample_size=50, measures=("accuracy",))
    assert len(df) == 3 * 21 * 2 and sorted(df.train_index.unique()) == [0, 1, 2]
    assert df.groupby("train_index").train_prev.first().tolist() == [(0.9, 0.1), (0.5, 0.5), (0.1, 0.9)]
    # training prevalences 0.9/0.1 and 0.1/0.9 put V far from most APP test samples: Naive (IID assumption) is
    # badly off there, QuAcc (PPS-robust cell quantification) much less so
    mae = df.groupby(["train_index", "method"]).ae.mean()
    for t in (0, 2):
        assert mae[(t, "QuAccnxn_SLD")] < 0.5 * mae[(t, "Naive")]


# ------------------------------------------------------------------------------------------ configuration study
def test_gaussian_split_shapes_prevalence_and_means():
    from capshift.quacc import gaussian_split

    s = gaussian_split(n_classes=3, n_train=300, n_val=3000, n_test=400, dim=2, separation=1.5, seed=4)
    assert (s.X_L.shape, s.X_V.shape, s.X_U.shape) == ((300, 2), (3000, 2), (400, 2)) and s.n_classes == 3
    # uniform prevalence; class means separation * e_i (the third class, beyond dim, at the origin)
    np.testing.assert_allclose(np.bincount(s.y_V) / 3000, 1 / 3, atol=0.03)
    means = np.stack([s.X_V[s.y_V == i].mean(0) for i in range(3)])
    np.testing.assert_allclose(means, 1.5 * np.eye(3, 2), atol=0.1)
    again = gaussian_split(n_classes=3, n_train=300, n_val=3000, n_test=400, dim=2, separation=1.5, seed=4)
    np.testing.assert_array_equal(again.X_U, s.X_U)


def test_configuration_study_agrees_with_a_direct_computation():
    from capshift.protocols import upp_indices
    from capshift.experiment import configuration_study
    from capshift.quacc import gaussian_split

    split = gaussian_split(n_train=400, n_val=400, n_test=600, seed=1)
    confs = {"Naive": "Naive", "nxn CC": lambda h: QuAccNxN(h, "cc"),
             "1xn+1 CC": lambda h: QuAcc1xNp1(h, "cc")}
    res = configuration_study(split, confs, n_samples=5, sample_size=100, measure="macro_f1", seed=2)
    assert len(res) == 15 and set(res["configuration"]) == set(confs)
    # the true values and the Naive prediction, recomputed from the same h and samples
    h = experiment.make_classifier("lr", 2).fit(split.X_L, split.y_L)
    idx = upp_indices(split.y_U, 100, 5, 2, n_classes=3)
    true = [macro_f1(contingency_table(split.y_U[i], h.predict(split.X_U[i]), 3)) for i in idx]
    naive = res[res.configuration == "Naive"]
    np.testing.assert_allclose(naive["true"], true)
    np.testing.assert_allclose(naive["predicted"], macro_f1(contingency_table(split.y_V, h.predict(split.X_V), 3)))
    # a factory configuration: the same as fitting it by hand
    est = QuAccNxN(h, "cc").fit(split.X_V, split.y_V)
    mine = res[res.configuration == "nxn CC"]
    np.testing.assert_allclose(mine["predicted"], [float(macro_f1(est.predict_table(split.X_U[i]))) for i in idx])
    np.testing.assert_allclose(mine["ae"], np.abs(mine["predicted"] - mine["true"]))
    # 1x(n+1) cannot estimate macro-F1 for 3 classes: NaN, not an error
    assert res[res.configuration == "1xn+1 CC"]["predicted"].isna().all()


@pytest.mark.parametrize("quantifier", ["sld", "cc"])
def test_1xnp1_is_1xn2_when_every_error_cell_is_rated(quantifier):
    """The identity of the book's configuration study (quacc, "variant 1×(n+1)" gives the default's predictions to
    the last digit). When every error cell is left to V's rates, 1×n² trains its quantifier on V's correctly
    classified items with the labels i*n+i and 1×(n+1) on the same items with the labels i: the same classes in the
    same order, so the same fitted quantifier; both then fill cell (i, j) with Ĉ_ii C^V_ij / C^V_ii. The tables are
    equal exactly. Once the error cells are quantified (min_separation=0, the paper's setting) the two differ."""
    from capshift.protocols import upp_indices
    from capshift.quacc import gaussian_split

    split = gaussian_split(n_classes=3, n_train=600, n_val=900, n_test=1500, seed=3)
    h = experiment.make_classifier("lr", 3).fit(split.X_L, split.y_L)
    samples = [split.X_U[i] for i in upp_indices(split.y_U, 300, 6, 3, n_classes=3)]
    off = ~np.eye(3, dtype=bool)
    # min_separation = 1: no cell but each column's absorber (the diagonal) counts as separated
    a = QuAcc1xN2(h, quantifier, min_separation=1.0, random_state=0).fit(split.X_V, split.y_V)
    b = QuAcc1xNp1(h, quantifier, min_separation=1.0, random_state=0).fit(split.X_V, split.y_V)
    assert a.rate_cells_[off].all() and b.rate_cells_[off].all() and not a.rate_cells_.diagonal().any()
    np.testing.assert_array_equal(a.predict_table_batch(samples), b.predict_table_batch(samples))
    # the defaults (min_separation = 0.5) on this problem leave every error cell to the rates too: the same estimator
    a5 = QuAcc1xN2(h, quantifier, random_state=0).fit(split.X_V, split.y_V)
    b5 = QuAcc1xNp1(h, quantifier, random_state=0).fit(split.X_V, split.y_V)
    if a5.rate_cells_[off].all() and b5.rate_cells_[off].all():
        np.testing.assert_array_equal(a5.predict_batch(samples), b5.predict_batch(samples))
    a0 = QuAcc1xN2(h, quantifier, min_separation=0.0, random_state=0).fit(split.X_V, split.y_V)
    b0 = QuAcc1xNp1(h, quantifier, min_separation=0.0, random_state=0).fit(split.X_V, split.y_V)
    assert not a0.rate_cells_.any() and not b0.rate_cells_.any()
    assert np.abs(a0.predict_batch(samples) - b0.predict_batch(samples)).max() > 1e-6


# ------------------------------------------------------------------------------------------ covariates and relabelling
def test_max_inverse_softmax_floor_and_its_range():
    P = np.array([[0.7, 0.2, 0.1]])
    logs = np.log([0.7, 0.5, 0.5])  # floored at eps = 0.5
    assert max_inverse_softmax(P, eps=0.5)[0] == pytest.approx(logs[0] - logs.mean(), abs=1e-12)
    assert max_inverse_softmax(np.array([[1.0, 0.0]]), eps=1e-3)[0] == pytest.approx(0.5 * -np.log(1e-3))
    for eps in (0, 1.0, -0.1):
        with pytest.raises(ValueError, match=rf"^eps must be in \(0.0, 1.0\), got {eps}$"):
            max_inverse_softmax(P, eps=eps)
    with pytest.raises(ValueError, match="sum to 1"):
        max_inverse_softmax(np.array([[0.7, 0.7]]))


def test_covariate_names_order_and_errors():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    X = np.array([[1, 2], [3, 4]])  # ints: x̂ is float
    mc, ne, mis = max_confidence(P), negative_entropy(P), max_inverse_softmax(P)
    for cov, extra in [("MC", [mc]), (["ne", "Mis"], [ne, mis]), (("mis", "mc"), [mis, mc]), (True, [mc, ne, mis]),
                       (False, []), (None, []), ((), [])]:
        Xh = augment_features(X, P, cov)
        assert Xh.dtype == np.float64
        np.testing.assert_allclose(Xh, np.column_stack([X, P] + extra), err_msg=str(cov))
    with pytest.raises(TypeError, match=r"^covariates must be True/False or a sequence of names from "
                                        r"\('mc', 'ne', 'mis'\), got 3$"):
        augment_features(X, P, 3)
    with pytest.raises(ValueError, match=r"^unknown covariate\(s\) \['foo', 'x'\]; choose among \('mc', 'ne', "
                                         r"'mis'\) \(or True for all, False for none\)$"):
        augment_features(X, P, ("mc", "foo", "x"))
    with pytest.raises(ValueError, match=r"^X has 3 rows but posteriors has 2; pass the posteriors of X's items$"):
        augment_features(np.ones((3, 2)), P)
    with pytest.raises(TypeError, match=r"^X must be a 2-d array of items x features"):
        augment_features("X", P)
    Xh = augment_features(sp.csc_matrix(X), P, "mc")  # a CSC x gives a CSR x̂ too
    assert Xh.format == "csr"
    np.testing.assert_allclose(Xh.toarray(), np.column_stack([X, P, mc]))
    with pytest.raises(ValueError, match="unknown covariate"):  # checked by fit, before anything is fitted
        QuAcc1xN2(ColumnClassifier(3).fit(X, None), quantifier=ORACLE, covariates="entropy").fit(X, [0, 1])


def test_cell_labels_of_each_variant():
    y, p = np.array([0, 1, 2, 3, 3, 1]), np.array([0, 3, 1, 3, 0, 1])
    np.testing.assert_array_equal(cell_labels(y, p, 4), [0, 7, 9, 15, 12, 5])
    np.testing.assert_array_equal(cell_labels(y, p, 4, "1xn2"), [0, 7, 9, 15, 12, 5])
    np.testing.assert_array_equal(cell_labels(y, p, 4, "1xn+1"), [0, 4, 4, 3, 4, 1])
    out = cell_labels(y, p, 4, "nxn")
    np.testing.assert_array_equal(out, y)
    assert out.dtype == np.int64 and cell_labels(y, p, 4).dtype == np.int64
    with pytest.raises(ValueError, match=r"^variant must be '1xn2', 'nxn' or '1xn\+1', got '2x2'$"):
        cell_labels(y, p, 4, "2x2")


# ------------------------------------------------------------------------------------- tables from a known estimate
class FixedCC(CC):
    """A quantifier whose estimate is fixed: ``prev`` over its classes (the labels of V it was trained on), as given
    (None: uniform)."""

    def __init__(self, classifier=None, prev=None):
        super().__init__(classifier)
        self.prev = prev

    def aggregate(self, classif_predictions):
        if self.prev is None:
            return np.full(len(self.classes_), 1 / len(self.classes_))
        return np.asarray(self.prev, dtype=float)


def _fixed(prev):
    return FixedCC(DecisionTreeClassifier(random_state=0), prev)


def _column_data(counts, seed=0):
    """Noise-free V from cell counts, and its ColumnClassifier h."""
    X, y = _cells(np.asarray(counts), seed)
    return ColumnClassifier(len(counts)).fit(X, y), X, y


def test_1xn2_table_is_the_quantifier_estimate_reshaped_and_normalised():
    h, X, y = _column_data([[30, 10], [8, 40]])
    est = QuAcc1xN2(h, _fixed([0.8, np.nan, -0.2, 1.2])).fit(X, y)  # NaN and < 0 clipped to 0, then / 2
    assert not est.rate_cells_.any()
    np.testing.assert_allclose(est.predict_table(X[:7]), [[0.4, 0.0], [0.0, 0.6]], atol=1e-15)
    assert est.predict(X[:7]) == pytest.approx(1.0)
    est.quantifiers_[0].prev = [0.1, 0.2, 0.3, 0.4]
    np.testing.assert_allclose(est.predict_table(X), [[0.1, 0.2], [0.3, 0.4]], atol=1e-15)
    est.quantifiers_[0].prev = [0.0, -1.0, np.nan, 0.0]
    with pytest.raises(RuntimeError, match="^the quantifier FixedCC returned no prevalence mass; check its input$"):
        est.predict_table(X)


class _WarningCC(FixedCC):
    def aggregate(self, classif_predictions):
        warnings.warn("overflow in the estimate", RuntimeWarning)
        warnings.warn("this estimator will change", FutureWarning)
        return super().aggregate(classif_predictions)


def test_quantifier_runtime_warnings_are_silenced_others_are_not():
    h, X, y = _column_data([[30, 10], [8, 40]])
    est = QuAcc1xN2(h, _WarningCC(DecisionTreeClassifier(random_state=0), [0.1, 0.2, 0.3, 0.4])).fit(X, y)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        T = est.predict_table(X)
    assert [(w.category, str(w.message)) for w in rec] == [(FutureWarning, "this estimator will change")]
    np.testing.assert_allclose(T, [[0.1, 0.2], [0.3, 0.4]], atol=1e-15)


def test_1xn2_cell_absent_from_v_gets_zero():
    h, X, y = _column_data([[30, 0], [8, 40]])
    est = QuAcc1xN2(h, _fixed([0.5, 0.2, 0.3])).fit(X, y)  # the quantifier's classes: cells 0, 2, 3
    np.testing.assert_array_equal(est.quantifiers_[0].classes_, [0, 2, 3])
    assert not est.rate_cells_.any()
    np.testing.assert_allclose(est.predict_table(X), [[0.5, 0.0], [0.2, 0.3]], atol=1e-15)


def test_thin_cell_is_estimated_from_v_rates():
    # cell (0, 1) has 4 < 5 items: rated, = x[(0, 0)] * 4/50, its mass taken from its column's absorber (1, 1)
    h, X, y = _column_data([[50, 4], [10, 40]])
    msg = ("QuAcc1xN2: validation cells with fewer than 5 items ((true 0, predicted 1): 4); the quantifier needs at "
           "least 5 validation items per cell to learn a cell, so these are estimated from V's rates P(h=j|y=i) and "
           "the estimated prevalence of their true class (prior probability shift) instead, and rates from so few "
           "items are unreliable; collect more validation items")
    with pytest.warns(InsufficientEvidenceWarning) as rec:
        est = QuAcc1xN2(h, _fixed([0.5, 0.2, 0.3]), min_separation=0.0).fit(X, y)
    assert [str(w.message) for w in rec if w.category is InsufficientEvidenceWarning] == [msg]
    np.testing.assert_array_equal(est.rate_cells_, [[False, True], [False, False]])
    np.testing.assert_array_equal(est.quantifiers_[0].classes_, [0, 2, 3])
    np.testing.assert_allclose(est.predict_table(X), [[0.5, 0.04], [0.2, 0.26]], atol=1e-15)
    # the absorber has less than the rated cell asks for: the cell gets all of it, no more
    est.quantifiers_[0].prev = [0.5, 0.48, 0.02]
    np.testing.assert_allclose(est.predict_table(X), [[0.5, 0.02], [0.48, 0.0]], atol=1e-15)
    est.quantifiers_[0].prev = [0.14, 0.857, 0.003]  # the absorber's remainder 0.003 - 0.003 is -4e-19: clipped
    T = est.predict_table(X)
    np.testing.assert_allclose(T, [[0.14, 0.003], [0.857, 0.0]], atol=1e-15)
    assert T[1, 1] == 0.0 and T.min() == 0.0
    est.quantifiers_[0].prev = [0.0, 1.0, 0.0]  # nothing asked of an empty absorber: no 0/0
    np.testing.assert_array_equal(est.predict_table(X), [[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="^X has 5 features, but the estimator was fitted on 2 features"):
        est.classify(np.ones((2, 5)))
    # two thin cells, each taking its mass from the other's reference: the fixed point x = 0.5 - 0.08 x, not one round
    hc, Xc, yc = _column_data([[50, 4], [4, 50]])
    both = r"\(\(true 0, predicted 1\): 4, \(true 1, predicted 0\): 4\);"
    with pytest.warns(InsufficientEvidenceWarning, match=both):
        estc = QuAcc1xN2(hc, _fixed([0.5, 0.5]), min_separation=0.0).fit(Xc, yc)
    np.testing.assert_allclose(estc.predict_table(Xc), np.array([[12.5, 1], [1, 12.5]]) / 27, atol=1e-14)
    # n×n: the thin cells of every column are reported
    both = r"\(\(true 1, predicted 0\): 4, \(true 0, predicted 1\): 4\);"  # column by column
    with pytest.warns(InsufficientEvidenceWarning, match=both):
        estc = QuAccNxN(hc, ORACLE, min_separation=0.0).fit(Xc, yc)
    np.testing.assert_array_equal(estc.rate_cells_, [[False, True], [True, False]])
    # 5 items are enough: no rated cell, no warning
    h5, X5, y5 = _column_data([[50, 5], [10, 40]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientEvidenceWarning)
        est5 = QuAcc1xN2(h5, _fixed([0.4, 0.1, 0.2, 0.3]), min_separation=0.0).fit(X5, y5)
    assert not est5.rate_cells_.any()
    np.testing.assert_allclose(est5.predict_table(X5), [[0.4, 0.1], [0.2, 0.3]], atol=1e-15)


def test_1xnp1_with_few_errors_in_v_uses_v_rates():
    # 4 errors in V: the merged error cell is thin, so every error cell is rated (row's diagonal x V's ratio)
    h, X, y = _column_data([[30, 2, 0], [1, 30, 0], [0, 1, 30]])
    with pytest.warns(InsufficientEvidenceWarning, match=r"^QuAcc1xNp1: validation cells with fewer than 5 items "
                                                         r"\(4 merged error items\); the quantifier needs"):
        est = QuAcc1xNp1(h, _fixed([0.3, 0.4, 0.3]), min_separation=0.0).fit(X, y)
    np.testing.assert_array_equal(est.rate_cells_, [[False, True, False], [True, False, False], [False, True, False]])
    # (0, 1) = x00 2/30 from (1, 1); (1, 0) = x11 / 30 from (0, 0); (2, 1) = 0.3 / 30 from (1, 1)
    x00 = (0.3 - (0.4 - 0.01) / 30) / (1 - 2 / 900)
    x11 = 0.4 - 0.01 - x00 * 2 / 30
    T = [[x00, x00 * 2 / 30, 0], [x11 / 30, x11, 0], [0, 0.01, 0.3]]
    np.testing.assert_allclose(est.predict_table(X), T, atol=1e-14)
    assert est.predict(X) == pytest.approx(x00 + x11 + 0.3, abs=1e-14)
    # the merged error cell belongs to no column: more errors (4) than correct items of class 0 (3) make class 0's
    # cell its column's largest, not thin, and the errors thin
    h, X, y = _column_data([[3, 1, 0], [1, 30, 0], [0, 2, 30]])
    with pytest.warns(InsufficientEvidenceWarning, match=r"\(4 merged error items\)"):
        est = QuAcc1xNp1(h, _fixed(None), min_separation=0.0).fit(X, y)
    np.testing.assert_array_equal(est.rate_cells_, [[False, True, False], [True, False, False], [False, True, False]])
    assert est.quantifiers_[0].classes_.tolist() == [0, 1, 2]
    # h is never right when it predicts 1: (0, 1) and (2, 1) have no quantified cell in their column (mass 0), and
    # row 1 has none either, so (1, 0) = x00 / 30 takes its reference's own mass: x00 = 0.5 * 30/31
    h, X, y = _column_data([[30, 2, 0], [1, 0, 0], [0, 1, 30]])
    with pytest.warns(InsufficientEvidenceWarning, match="4 merged error items"):
        est = QuAcc1xNp1(h, _fixed([0.5, 0.5]), min_separation=0.0).fit(X, y)
    np.testing.assert_allclose(est.predict_table(X), [[0.5 * 30 / 31, 0, 0], [0.5 / 31, 0, 0], [0, 0, 0.5]], atol=1e-15)


class _HardTree(ClassifierMixin, BaseEstimator):
    """A decision tree without predict_proba (its separation is computed from hard predictions)."""

    def fit(self, X, y):
        self.tree_ = DecisionTreeClassifier(random_state=0).fit(X, y)
        self.classes_ = self.tree_.classes_
        return self

    def predict(self, X):
        return self.tree_.predict(X)


def test_separation_from_posteriors_or_from_hard_predictions():
    # (1, 0): 10 items like (0, 0)'s 40, 10 items apart. Cross-validated posteriors: 0.6 on its items, 0.2 on
    # (0, 0)'s, separation 0.4 < 0.5; hard predictions (the majority, 0 where they mix): 0.5 - 0, separated
    X = np.vstack([np.tile([0.0, 0.0], (50, 1)), np.tile([5.0, 0.0], (10, 1)), np.tile([0.0, 1.0], (8, 1)),
                   np.tile([10.0, 1.0], (40, 1))])
    y = np.repeat([0, 1, 1, 0, 1], [40, 10, 10, 8, 40])
    h = ColumnClassifier(2).fit(X, y)
    soft = QuAcc1xN2(h, _fixed(None), random_state=0).fit(X, y)
    np.testing.assert_array_equal(soft.rate_cells_, [[False, False], [True, False]])
    hard = QuAcc1xN2(h, FixedCC(_HardTree(), None), random_state=0).fit(X, y)
    assert not hard.rate_cells_.any()


def test_separation_folds_follow_the_seed():
    """The separation of cell (1, 0) is cross-validated in 5 stratified shuffled folds seeded by random_state (None:
    0); with min_separation between the separations of two fold draws, the seed decides whether it is rated."""
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    X = np.vstack([np.tile([0.0, 0.0], (52, 1)), np.tile([5.0, 0.0], (6, 1)), np.tile([0.0, 1.0], (8, 1)),
                   np.tile([10.0, 1.0], (40, 1))])
    y = np.repeat([0, 1, 1, 0, 1], [43, 9, 6, 8, 40])
    h = ColumnClassifier(2).fit(X, y)
    labels = cell_labels(y, h.predict(X), 2)
    Xh = augment_features(X, h.predict_proba(X))

    def separation(cv, cell=2):  # of cell (1, 0), label 1 * n + 0, from (0, 0), label 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # 5 folds for a class of 2 items (below): as in QuAcc
            P = cross_val_predict(DecisionTreeClassifier(random_state=0), Xh, labels, method="predict_proba", cv=cv)
        P = P[:, np.searchsorted(np.unique(labels), cell)]
        return P[labels == cell].mean() - P[labels == 0].mean()

    s0, s1 = (separation(StratifiedKFold(5, shuffle=True, random_state=k)) for k in (0, 1))
    plain = separation(StratifiedKFold(5))
    assert abs(s0 - s1) > 1e-3 and abs(s0 - plain) > 1e-3

    def rated(seed, threshold):
        est = QuAcc1xN2(h, _fixed(None), min_separation=threshold, random_state=seed).fit(X, y)
        return bool(est.rate_cells_[1, 0])

    mid = (s0 + s1) / 2
    assert [rated(None, mid), rated(0, mid), rated(1, mid)] == [s0 < s1, s0 < s1, s1 < s0]
    mid = (s0 + plain) / 2
    assert [rated(None, mid), rated(0, mid)] == [s0 < plain] * 2
    s6 = separation(StratifiedKFold(6, shuffle=True, random_state=0))  # at most 5 folds
    assert abs(s0 - s6) > 1e-5 and rated(0, (s0 + s6) / 2) == (s0 < s6)  # apart by 1e-4, far above round-off
    # with a quantified cell of 2 items (class 2, its column's absorber) the folds are 2
    X, y = np.vstack([X, np.tile([20.0, 2.0], (2, 1))]), np.r_[y, 2, 2]
    h = ColumnClassifier(3).fit(X, y)
    labels = cell_labels(y, h.predict(X), 3)
    Xh = augment_features(X, h.predict_proba(X))
    s2, s5 = (separation(StratifiedKFold(k, shuffle=True, random_state=0), cell=3) for k in (2, 5))
    assert abs(s2 - s5) > 1e-3
    assert rated(0, (s2 + s5) / 2) == (s2 < s5)


def test_nxn_column_with_one_class_needs_no_separation_check():
    # a logistic-regression surrogate cannot be fitted on one class: column 1 (only class 1) is not checked
    h, X, y = _column_data([[30, 0], [8, 30]])
    est = QuAccNxN(h, FixedCC(LogisticRegression(), None), random_state=0).fit(X, y)
    assert est.quantifiers_[1].classes_.tolist() == [1] and not est.rate_cells_.any()
    np.testing.assert_allclose(est.predict_table(X), [[19 / 68, 0], [19 / 68, 30 / 68]], atol=1e-15)


def test_rated_cell_reference_and_absorber_are_the_largest_quantified_cells():
    # (2, 0) has 3 items: its reference is row 2's largest quantified cell (2, 2), not (2, 1); its absorber is column
    # 0's largest (1, 0), not (0, 0)
    h, X, y = _column_data([[10, 6, 6], [40, 40, 6], [3, 8, 40]])
    with pytest.warns(InsufficientEvidenceWarning, match=r"\(\(true 2, predicted 0\): 3\)"):
        est = QuAcc1xN2(h, _fixed(np.full(8, 0.125)), min_separation=0.0).fit(X, y)
    T = np.full((3, 3), 0.125)
    T[2, 0], T[1, 0] = 0.125 * 3 / 40, 0.125 - 0.125 * 3 / 40
    np.testing.assert_allclose(est.predict_table(X), T, atol=1e-15)
    # a column whose largest cell has 1 item is still quantified, and absorbs its rated cell
    h, X, y = _column_data([[30, 1], [5, 1]])
    with pytest.warns(InsufficientEvidenceWarning, match=r"\(\(true 1, predicted 1\): 1\)"):
        est = QuAcc1xN2(h, _fixed([0.5, 0.2, 0.3]), min_separation=0.0).fit(X, y)
    np.testing.assert_allclose(est.predict_table(X), [[0.5, 0.14], [0.3, 0.06]], atol=1e-15)


def _unseparated(n_err=10):
    """V where the items of true class 1 predicted 0 look exactly like those of cell (0, 0) (x = (0, 0))."""
    X = np.vstack([np.tile([0.0, 0.0], (40, 1)), np.tile([0.0, 0.0], (n_err, 1)), np.tile([0.0, 1.0], (8, 1)),
                   np.tile([10.0, 1.0], (40, 1))])
    y = np.repeat([0, 1, 0, 1], [40, n_err, 8, 40])
    return ColumnClassifier(2).fit(X, y), X, y


def test_cell_the_quantifier_cannot_separate_is_rated():
    h, X, y = _unseparated()
    est = QuAcc1xN2(h, _fixed([0.5, 0.1, 0.4]), random_state=0).fit(X, y)  # default min_separation 0.5
    np.testing.assert_array_equal(est.rate_cells_, [[False, False], [True, False]])
    np.testing.assert_array_equal(est.quantifiers_[0].classes_, [0, 1, 3])
    # (1, 0) = x[(1, 1)] * 10/40, taken from its column's absorber (0, 0)
    np.testing.assert_allclose(est.predict_table(X), [[0.4, 0.1], [0.1, 0.4]], atol=1e-15)
    # min_separation = 0 (the paper): every cell with enough items is quantified
    est0 = QuAcc1xN2(h, _fixed([0.4, 0.1, 0.1, 0.4]), min_separation=0.0, random_state=0).fit(X, y)
    assert not est0.rate_cells_.any()
    np.testing.assert_allclose(est0.predict_table(X), [[0.4, 0.1], [0.1, 0.4]], atol=1e-15)
    # 1x(n+1): the merged error cell is told from all other items; half of it looks like (0, 0): 0.56 - 0.1 < 0.5
    est = QuAcc1xNp1(h, _fixed(None), random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.rate_cells_, [[False, True], [True, False]])
    # min_separation = 0 skips the check: a cell below 0 (here -0.004: 7 items like (0, 0)'s) is quantified too
    h7, X7, y7 = _unseparated(7)
    assert not QuAcc1xN2(h7, _fixed(None), min_separation=0.0, random_state=0).fit(X7, y7).rate_cells_.any()
    # n×n: column 0's quantifier has two classes to tell apart, and cannot; (1, 0) from V's rates gives V back
    est = QuAccNxN(h, quantifier=ORACLE, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.rate_cells_, [[False, False], [True, False]])
    np.testing.assert_allclose(est.predict_table(X), contingency_table(y, h.predict(X), 2), atol=1e-15)
    # the smallest quantified cell has 2 items (class 2, an absorber): 2 folds are enough to check the others
    X3 = np.vstack([X, np.tile([20.0, 2.0], (2, 1))])
    y3 = np.r_[y, 2, 2]
    h3 = ColumnClassifier(3).fit(X3, y3)
    est = QuAcc1xN2(h3, _fixed(None), random_state=0).fit(X3, y3)
    np.testing.assert_array_equal(est.rate_cells_, [[False, False, False], [True, False, False], [False] * 3])
    with pytest.raises(ValueError, match=r"^min_separation must be in \[0.0, 1.0\], got 1.5$"):
        QuAcc1xN2(h, _fixed([1.0]), min_separation=1.5).fit(X, y)


def test_1xnp1_places_the_error_mass_by_hand():
    # V: column 1 has no error of V (its error mass is split uniformly over rows 0 and 2)
    h, X, y = _column_data([[40, 0, 2], [4, 40, 8], [6, 0, 40]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientEvidenceWarning)  # 20 errors: enough
        est = QuAcc1xNp1(h, _fixed([0.3, 0.1, 0.2, 0.4]), min_separation=0.0).fit(X, y)
    _, X_U, _ = _column_data(np.diag([4, 3, 3]), 1)  # gamma = (0.4, 0.3, 0.3): m = gamma - d = (0.1, 0.2, 0.1)
    np.testing.assert_allclose(est.predict_table(X_U), [[0.3, 0.1, 0.02], [0.04, 0.1, 0.08], [0.06, 0.1, 0.2]],
                               atol=1e-15)
    _, X_U, _ = _column_data(np.diag([2, 5, 3]), 1)  # gamma - d = (-0.1, 0.4, 0.1): clipped, rescaled to 0.4
    np.testing.assert_allclose(est.predict_table(X_U), [[0.3, 0.16, 0.016], [0.0, 0.1, 0.064], [0.0, 0.16, 0.2]],
                               atol=1e-15)
    assert est.predict(X_U) == pytest.approx(0.6)
    # no estimated error: the diagonal alone (no 0/0 when every m_j is 0)
    est.quantifiers_[0].prev = [0.2, 0.5, 0.3, 0.0]
    np.testing.assert_allclose(est.predict_table(X_U), np.diag([0.2, 0.5, 0.3]), atol=1e-15)
    # a vanishing error estimate with every m_j = 0 (gamma = d): it is spread as V's off-diagonal column sums
    est.quantifiers_[0].prev = [0.2, 0.5, 0.3, 1e-20]
    T = est.predict_table(X_U)
    np.testing.assert_array_equal(np.diag(T), [0.2, 0.5, 0.3])
    np.testing.assert_allclose((T - np.diag(np.diag(T))) * 1e20, [[0, 0, 0.1], [0.2, 0, 0.4], [0.3, 0, 0]], atol=1e-9)
    # a sample where h never predicts class 2: gamma = (0.5, 0.5, 0), m = (0.2, 0.4, 0) rescaled to 0.4
    _, X_U2, _ = _column_data(np.diag([5, 5, 0]), 1)
    est.quantifiers_[0].prev = [0.3, 0.1, 0.2, 0.4]
    np.testing.assert_allclose(est.predict_table(X_U2), [[0.3, 2 / 15, 0], [4 / 75, 0.1, 0], [2 / 25, 2 / 15, 0.2]],
                               atol=1e-15)
    # V without any error: the quantifier knows only the diagonal, the error estimate is 0
    h0, X0, y0 = _column_data(np.diag([20, 30, 25]))
    est0 = QuAcc1xNp1(h0, _fixed([0.2, 0.5, 0.3]), min_separation=0.0).fit(X0, y0)
    np.testing.assert_allclose(est0.predict_table(X_U), np.diag([0.2, 0.5, 0.3]), atol=1e-15)


def test_nxn_columns_with_one_or_no_class_in_v():
    # column 0 of V holds three true classes (quantified, here exactly), column 1 nothing, column 2 only class 2
    h, X, y = _column_data([[30, 0, 0], [6, 0, 0], [5, 0, 30]])
    est = QuAccNxN(h, quantifier=ORACLE).fit(X, y)
    assert est.quantifiers_[1] is None and est.quantifiers_[2].classes_.tolist() == [2]
    _, X_U, y_U = _column_data([[10, 4, 0], [2, 6, 0], [3, 0, 10]], 2)
    T = np.array([[10, 0, 0], [2, 10, 0], [3, 0, 10]]) / 35  # column 1 on the diagonal, column 2 all class 2
    np.testing.assert_allclose(est.predict_table(X_U), T, atol=1e-15)
    cl = est.classify(X_U)
    np.testing.assert_allclose(est.aggregate(cl), T, atol=1e-15)  # index None: the whole pool
    B = est.predict_table_batch([X_U[:20], X_U[20:]])  # one pool, aggregated sample by sample
    np.testing.assert_allclose(B, [est.predict_table(X_U[:20]), est.predict_table(X_U[20:])], atol=1e-15)
    assert np.abs(B[0] - B[1]).max() > 0.1
    np.testing.assert_allclose(est.aggregate(cl, np.flatnonzero(y_U == 2)),
                               [[0, 0, 0], [0, 0, 0], [3 / 13, 0, 10 / 13]], atol=1e-15)
    with pytest.raises(ValueError, match="^index selects no item: a sample needs at least one item$"):
        est.aggregate(cl, [])
    with pytest.raises(ValueError, match=r"^posteriors must have shape \(\.\.\., 3\) \(one entry per class\), got "
                                         r"\(35, 2\)$"):
        est.classify(X_U, np.full((35, 2), 0.5))
    with pytest.raises(ValueError, match=r"^posteriors must have shape \(35, 3\), got \(4, 3\)$"):
        est.classify(X_U, h.predict_proba(X_U[:4]))


# ------------------------------------------------------------------------------------------ quantifier construction
def test_quantifier_built_from_the_parameters():
    from quapy.method.aggregative import EMQ, KDEyML

    h, _, _, X, y = _real(n=2, m=150)
    kw = dict(C=0.5, class_weight="balanced", random_state=3, min_separation=0.0)
    est = QuAcc1xN2(h, "CC", **kw)
    assert est.get_params(deep=False) == {"classifier": h, "quantifier": "CC", "measure": "accuracy", "C": 0.5,
                                "class_weight": "balanced", "recalib": None, "bandwidth": 0.1, "covariates": False,
                                "min_separation": 0.0, "random_state": 3}
    q = est.fit(X, y).quantifiers_[0]
    assert type(q) is CC
    lr = q.classifier
    assert (type(lr), lr.C, lr.class_weight, lr.max_iter, lr.random_state) == (LogisticRegression, 0.5, "balanced",
                                                                               1000, 3)
    assert lr.n_features_in_ == 4 + 2  # x and h's posteriors
    q = QuAcc1xN2(h, "sld", covariates=("mc", "ne"), **kw).fit(X, y).quantifiers_[0]
    assert type(q) is EMQ and q.val_split is None and q.calib is None and q.classifier.n_features_in_ == 8
    assert q.classifier.C == 0.5 and q.classifier.class_weight == "balanced"
    # (the quantifiers with inner folds are checked as built, before their 5-fold fits)
    q = QuAcc1xN2(h, "sld", recalib="bcts", **kw)._build_quantifier()
    assert (type(q), q.val_split, q.exact_train_prev, q.calib, q.on_calib_error) == (EMQ, 5, False, "bcts", "backup")
    assert q.classifier.C == 0.5 and q.classifier.random_state == 3
    for r in ("ts", "vs", "nbvs"):
        assert QuAcc1xN2(h, "sld", recalib=r)._build_quantifier().calib == r
    q = QuAcc1xN2(h, "kdey", bandwidth=0.07, **kw)._build_quantifier()
    assert (type(q), q.val_split, q.bandwidth, q.random_state) == (KDEyML, 5, 0.07, 3)
    assert q.classifier.C == 0.5 and q.classifier.random_state == 3
    # an instance: its classifier, not the logistic regression, is the surrogate
    surrogate = QuAcc1xN2(h, CC(DecisionTreeClassifier(max_depth=3)))._surrogate()
    assert type(surrogate) is DecisionTreeClassifier and surrogate.max_depth == 3
    with pytest.raises(ValueError, match=r"^recalib must be None or a QuaPy EMQ calibration \('bcts', 'ts', 'vs', "
                                         r"'nbvs'\), got 'platt'$"):
        QuAcc1xN2(h, "sld", recalib="platt", min_separation=0.0).fit(X, y)
    with pytest.raises(ValueError, match=r"^bandwidth must be in \(0.0, inf\), got -0.1$"):
        QuAcc1xN2(h, "kdey", bandwidth=-0.1, min_separation=0.0).fit(X, y)


def test_1xnp1_supports_by_name_and_class_count():
    h2, X2, y2 = _column_data([[30, 8], [6, 30]])
    h3, X3, y3 = _column_data(np.diag([20, 20, 20]))
    for h, n in ((h2, 2), (h3, 3)):
        est = QuAcc1xNp1(h)  # before fit: n from h's classes
        for m in ("accuracy", "acc", "ACC"):
            assert est.supports(m)
        for m in ("f1", "binary_f1", "macro_f1", "macro-f1", "MacroF1", "Macro-F1"):
            assert est.supports(m) == (n == 2), m
        assert not est.supports("balanced_accuracy") and not est.supports(accuracy) and not est.supports(3)
    est = QuAcc1xNp1(h3, _fixed([0.3, 0.3, 0.4])).fit(X3, y3)
    assert est.supports("acc") and not est.supports("f1")
    # once fitted, the class count is the fitted one's
    est2 = QuAcc1xNp1(h2, _fixed([0.5, 0.5])).fit(X2, y2).set_params(classifier=h3)
    assert est2.supports("f1") and not QuAcc1xNp1(h3).supports("f1")
    msg = ("QuAcc1xNp1 merges all errors into one cell, so it only knows the diagonal and the total error: it can "
           "estimate 'accuracy' (and F1 when n = 2), not 'macro_f1'. Use QuAcc1xN2 or QuAccNxN for measures that "
           "need the off-diagonal cells.")
    with pytest.raises(ValueError) as err:
        est.predict(X3, measure="macro_f1")
    assert str(err.value) == msg
    with pytest.raises(ValueError, match="unknown measure"):
        est.predict(X3, measure="accuracyy")


# ------------------------------------------------------------------------------------------ model selection
def test_grid_search_score_is_the_mae_on_upp_samples_of_the_holdout():
    from sklearn.model_selection import train_test_split
    from capshift.protocols import upp_indices

    h, X_V, y_V, X_U, y_U = _real(seed=4, m=600)
    gs = QuAccGridSearch(h, QuAcc1xN2(h, "cc", min_separation=0.0), {"covariates": [False]}, holdout=0.3,
                         n_samples=7, sample_size=40, random_state=5).fit(X_V, y_V)
    assert gs.get_params()["holdout"] == 0.3 and gs.get_params()["sample_size"] == 40
    tr, va = train_test_split(np.arange(len(y_V)), test_size=0.3, stratify=y_V, random_state=5)
    cand = QuAcc1xN2(h, "cc", covariates=False, min_separation=0.0, random_state=5).fit(X_V[tr], y_V[tr])
    samples = [va[s] for s in upp_indices(y_V[va], 40, 7, 5, n_classes=3)]
    true = [accuracy(contingency_table(y_V[s], h.predict(X_V[s]), 3)) for s in samples]
    pred = [accuracy(cand.predict_table(X_V[s])) for s in samples]
    assert gs.cv_results_ == [{"variant": "QuAcc1xN2", "covariates": False,
                               "mae": pytest.approx(np.mean(np.abs(np.subtract(pred, true))), abs=1e-12)}]
    assert gs.best_params_ == {"variant": "QuAcc1xN2", "covariates": False}
    assert gs.best_score_ == gs.cv_results_[0]["mae"]
    best = gs.best_estimator_  # refitted on the whole V, with the search's seed
    assert type(best) is QuAcc1xN2 and best.random_state == 5 and best.quantifier == "cc"
    np.testing.assert_allclose(best.val_table_, contingency_table(y_V, h.predict(X_V), 3))
    np.testing.assert_allclose(gs.predict_table_batch([X_U[:50]]), best.predict_table_batch([X_U[:50]]))
    # the posteriors given are the ones used (here: h's, and uniform-ish ones that move the predicted classes)
    fake = [np.roll(h.predict_proba(X), 1, axis=1) for X in (X_U[:50], X_U[50:90])]
    got = gs.predict_batch([X_U[:50], X_U[50:90]], posteriors=fake)
    np.testing.assert_allclose(got, best.predict_batch([X_U[:50], X_U[50:90]], posteriors=fake))
    assert np.abs(got - best.predict_batch([X_U[:50], X_U[50:90]])).max() > 0.01
    # another seed: another split and other samples
    other = QuAccGridSearch(h, QuAcc1xN2(h, "cc", min_separation=0.0), {"covariates": [False]}, holdout=0.3,
                            n_samples=7, sample_size=40, random_state=6).fit(X_V, y_V)
    assert abs(other.best_score_ - gs.best_score_) > 1e-6


def test_grid_search_ties_candidates_and_errors():
    h, X, y = _column_data([[60, 20, 15], [15, 60, 20], [20, 15, 60]])
    # the oracle is exact here, so 1xn2 scores 0; the fixed estimate is wrong; bandwidth changes nothing for them
    ests = [QuAcc1xN2(h, _fixed(None)), QuAcc1xNp1(h, ORACLE), QuAcc1xN2(h, ORACLE)]
    gs = QuAccGridSearch(h, ests, {"bandwidth": [0.1, 0.2]}, measure="macro_f1", n_samples=3, sample_size=30,
                         random_state=1)
    assert gs.supports("macro_f1") and not QuAccGridSearch(h, ests[1]).supports("macro_f1")
    gs.fit(X, y)
    assert [r["variant"] for r in gs.cv_results_] == ["QuAcc1xN2"] * 4  # 1x(n+1) skipped
    assert [r["bandwidth"] for r in gs.cv_results_] == [0.1, 0.2, 0.1, 0.2]
    assert gs.cv_results_[0]["mae"] > 0.1 and gs.cv_results_[2]["mae"] < 1e-12
    assert gs.best_params_ == {"variant": "QuAcc1xN2", "bandwidth": 0.1}  # the first of equal scores
    assert gs.best_estimator_.measure == "macro_f1" and gs.best_estimator_.random_state == 1
    assert gs.supports("macro_f1") and gs.supports("accuracy")
    assert isinstance(gs.best_estimator_.quantifier, CC)
    # accuracy: the exact 1x(n+1) is selected, and what the search supports is then what it supports
    gs = QuAccGridSearch(h, ests[:2], {"covariates": [False]}, n_samples=3, sample_size=30).fit(X, y)
    assert [r["variant"] for r in gs.cv_results_] == ["QuAcc1xN2", "QuAcc1xNp1"]
    assert gs.best_params_["variant"] == "QuAcc1xNp1" and gs.best_score_ < 1e-12 and not gs.supports("macro_f1")
    # the default grid: class weighting x covariates
    gs = QuAccGridSearch(h, ests[2], n_samples=2, sample_size=30).fit(X, y)
    assert [(r["class_weight"], r["covariates"]) for r in gs.cv_results_] == [
        (None, False), (None, True), ("balanced", False), ("balanced", True)]
    msg = r"^estimators must be a QuAcc estimator or a non-empty sequence of them \(QuAcc1xN2, QuAccNxN, QuAcc1xNp1\)$"
    for bad in ([], [QuAcc1xN2(h), LogisticRegression()], LogisticRegression(), "QuAccNxN"):  # not a sequence: refused too
        with pytest.raises(TypeError, match=msg):
            QuAccGridSearch(h, bad).fit(X, y)
    for kw, err, msg in [({"holdout": 1.0}, ValueError, r"^holdout must be in \(0.0, 1.0\), got 1.0$"),
                         ({"holdout": 0}, ValueError, r"^holdout must be in \(0.0, 1.0\), got 0$"),
                         ({"random_state": None}, TypeError, r"^random_state must be an int \(None would"),
                         ({"n_samples": 0}, ValueError, "^n_samples must be >= 1, got 0$"),
                         ({"sample_size": 2}, ValueError, "^sample_size must be >= 3, got 2$")]:
        with pytest.raises(err, match=msg):
            QuAccGridSearch(h, ests[2], **kw).fit(X, y)
    one = QuAccGridSearch(h, ests[2], {"covariates": [False]}, n_samples=1, sample_size=3).fit(X, y)
    assert one.best_score_ < 1e-12
    # the scoring samples are drawn over all n classes: a held-out part without class 2 is refused
    h2, X2, y2 = _column_data([[40, 9, 0], [9, 40, 0], [0, 0, 2]])
    with pytest.raises(ValueError, match=r"^class\(es\) \[2\] have no item in y"):
        QuAccGridSearch(h2, QuAcc1xN2(h2, ORACLE), {"C": [1.0]}, holdout=0.2, n_samples=3, sample_size=10).fit(X2, y2)


class _WarningTree(DecisionTreeClassifier):
    def fit(self, X, y, **kw):
        warnings.warn("the tree was fitted", FutureWarning)
        return super().fit(X, y, **kw)


def test_grid_search_silences_only_the_candidates_evidence_warnings():
    h, X, y = _column_data([[30, 6], [6, 30]])
    est = QuAcc1xN2(h, CC(_WarningTree(random_state=0)), min_separation=0.0)
    with pytest.warns(FutureWarning, match="the tree was fitted") as rec:
        QuAccGridSearch(h, est, {"C": [1.0]}, n_samples=2, sample_size=10).fit(X, y)
    assert sum(w.category is FutureWarning for w in rec) == 2  # the candidate's fit and the refit on V


def test_grid_search_without_a_candidate_for_the_measure():
    # 1x(n+1) does not estimate macro-F1 for 3 classes: the search has no candidate, and says so (it crashed on
    # list(None) before)
    h, X, y = _column_data([[30, 5, 5], [5, 30, 5], [5, 5, 30]])
    with pytest.raises(ValueError, match=r"^QuAccGridSearch cannot estimate measure='macro_f1' \(its supports\(\) says"):
        QuAccGridSearch(h, [QuAcc1xNp1(h, ORACLE)], measure="macro_f1").fit(X, y)


def test_default_candidates_are_the_three_variants():
    from capshift.quacc import SMALL_GRID, QuAccSelected

    h, X, y = _column_data([[20, 5], [5, 20]])
    # binary F1: 1x(n+1) supports it (with h's class count), so it is a candidate
    gs = QuAccGridSearch(h, param_grid={"quantifier": [ORACLE]}, measure="f1", n_samples=2, sample_size=10).fit(X, y)
    assert [r["variant"] for r in gs.cv_results_] == ["QuAcc1xN2", "QuAccNxN", "QuAcc1xNp1"]
    assert gs.best_score_ < 1e-12
    sel = QuAccSelected(h, ORACLE, measure="f1", n_samples=2, sample_size=10, random_state=2)
    assert sel.get_params(deep=False) == {"classifier": h, "quantifier": ORACLE, "estimators": None,
                                          "param_grid": None, "measure": "f1", "holdout": 0.4, "n_samples": 2,
                                          "sample_size": 10, "random_state": 2}
    sel.fit(X, y)
    assert [r["variant"] for r in sel.cv_results_] == ["QuAcc1xN2"] * 4 + ["QuAccNxN"] * 4 + ["QuAcc1xNp1"] * 4
    assert [(r["class_weight"], r["covariates"]) for r in sel.cv_results_[:4]] == [
        (None, False), (None, True), ("balanced", False), ("balanced", True)]
    assert type(sel.best_estimator_.quantifier) is CC and sel.best_estimator_.random_state == 2
    assert QuAccSelected(h)._grid() == {**SMALL_GRID, "recalib": [None, "bcts"]}
    assert QuAccSelected(h, "cc")._grid() == SMALL_GRID
    own = QuAccSelected(h, "sld", estimators=QuAccNxN(h, ORACLE), param_grid={"C": [2.0]}, n_samples=2,
                        sample_size=10).fit(X, y)
    assert [(r["variant"], r["C"]) for r in own.cv_results_] == [("QuAccNxN", 2.0)]


# ------------------------------------------------------------------------------------------ the synthetic problem
def test_gaussian_split_parameters_and_errors():
    from capshift.quacc import gaussian_split

    s = gaussian_split(n_classes=2, n_train=5, n_val=2000, n_test=7, dim=3, separation=2.0, seed=9)
    assert s.name == "gauss2" and s.n_classes == 2 and s.classes.tolist() == [0, 1]
    assert (s.X_L.shape, s.X_V.shape, s.X_U.shape) == ((5, 3), (2000, 3), (7, 3)) and s.y_U.shape == (7,)
    assert s.X_V.dtype == np.float64 and s.y_V.dtype == np.int64 and set(s.y_V.tolist()) == {0, 1}
    means = np.stack([s.X_V[s.y_V == i].mean(0) for i in range(2)])
    np.testing.assert_allclose(means, [[2, 0, 0], [0, 2, 0]], atol=0.1)
    np.testing.assert_allclose(np.stack([s.X_V[s.y_V == i].std(0) for i in range(2)]), 1, atol=0.06)
    # the three parts are drawn one after the other from one seeded stream
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 5)
    np.testing.assert_array_equal(s.X_L, 2.0 * np.eye(2, 3)[y] + rng.standard_normal((5, 3)))
    np.testing.assert_array_equal(s.y_L, y)
    other = gaussian_split(n_classes=2, n_train=5, n_val=20, n_test=7, dim=3, separation=2.0, seed=10)
    assert not np.array_equal(other.X_L, s.X_L)
    default = gaussian_split()  # 3 classes, 2000 / 2000 / 6000 items in 2 dimensions, separation 1.2, seed 0
    assert default.name == "gauss3" and [len(v) for v in (default.y_L, default.y_V, default.y_U)] == [2000, 2000, 6000]
    rng = np.random.default_rng(0)
    for X_part, y_part, m in ((default.X_L, default.y_L, 2000), (default.X_V, default.y_V, 2000),
                              (default.X_U, default.y_U, 6000)):
        y = rng.integers(0, 3, m)
        np.testing.assert_array_equal(y_part, y)
        np.testing.assert_array_equal(X_part, 1.2 * np.eye(3, 2)[y] + rng.standard_normal((m, 2)))
    for kw, msg in [({"n_classes": 1}, "^n_classes must be >= 2, got 1$"), ({"n_train": 0}, "^n_train must be >= 1"),
                    ({"n_val": 0}, "^n_val must be >= 1"), ({"n_test": 0}, "^n_test must be >= 1"),
                    ({"dim": 0}, "^dim must be >= 1, got 0$"),
                    ({"separation": 0}, r"^separation must be in \(0.0, inf\), got 0$")]:
        with pytest.raises(ValueError, match=msg):
            gaussian_split(**kw)
    with pytest.raises(TypeError, match="^seed must be an int"):
        gaussian_split(seed=None)
