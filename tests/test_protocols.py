"""Tests for capshift.protocols: UPP/APP sample indices through QuaPy."""
import re
from math import comb

import numpy as np
import pytest
import quapy as qp
from quapy.data import LabelledCollection
from scipy import stats

from capshift import datasets
from capshift import protocols as P

Y3 = np.repeat([0, 1, 2], [60, 30, 10])
Y2 = np.repeat([0, 1], [40, 160])


def test_upp_deterministic_and_sized():
    a, b, c = (P.upp_indices(Y3, 50, 20, seed=s) for s in (7, 7, 8))
    assert len(a) == 20 and all(i.shape == (50,) and i.dtype.kind == "i" for i in a)
    assert all(np.array_equal(x, z) for x, z in zip(a, b))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c))
    assert all(i.min() >= 0 and i.max() < len(Y3) for i in a)


def test_upp_is_quapys_upp_and_keeps_global_rng():
    state = np.random.get_state()[1].copy()
    ours = P.upp_indices(Y3, 100, 10, seed=3)
    assert np.array_equal(np.random.get_state()[1], state)
    lc = LabelledCollection(Y3.reshape(-1, 1), Y3)
    theirs = list(qp.protocol.UPP(lc, sample_size=100, repeats=10, random_state=3, return_type="index")())
    assert all(np.array_equal(x, z) for x, z in zip(ours, theirs))
    assert len(P.upp_indices(Y3, 100, 1, seed=3)) == 1  # QuaPy's UPP fails for repeats=1


@pytest.mark.parametrize("y,n", [(Y2, 2), (Y3, 3)])
def test_sample_prevalence_matches_request(y, n):
    size, reps = 100, 200
    idx = P.upp_indices(y, size, reps, seed=0)
    prevs = P.upp_prevalences(n, reps, seed=0)
    assert prevs.shape == (reps, n) and np.allclose(prevs.sum(axis=1), 1)
    got = np.array([P.sample_prevalence(y, i, n) for i in idx])
    # per-class counts are round(size * p) plus at most the rounding remainder (< n/2 items)
    assert np.abs(got - prevs).max() <= (0.5 + n / 2) / size
    if n == 2:
        assert np.abs(got - prevs).max() <= 0.5 / size + 1e-12


def test_upp_covers_the_simplex_uniformly():
    reps = 4000
    p = P.upp_prevalences(2, reps, seed=1)[:, 1]
    assert abs(p.mean() - 0.5) < 4 * np.sqrt(1 / 12 / reps)
    assert stats.kstest(p, "uniform").pvalue > 1e-3
    p3 = P.upp_prevalences(3, reps, seed=1)  # uniform on the 2-simplex: each marginal is Beta(1, 2)
    assert stats.kstest(p3[:, 0], stats.beta(1, 2).cdf).pvalue > 1e-3


def test_sampling_with_replacement():
    y = np.array([0, 0, 1, 1, 1])
    idx = P.upp_indices(y, 50, 3, seed=0)
    assert all(len(i) == 50 and len(np.unique(i)) <= 5 for i in idx)


def test_app_grid_and_samples():
    grid = P.app_prevalences(3, n_prevalences=5, repeats=2)
    assert grid.shape == (15 * 2, 3) and np.allclose(grid.sum(axis=1), 1)
    assert np.allclose(grid * 4, np.round(grid * 4)) and len(np.unique(grid, axis=0)) == 15
    assert np.allclose(P.app_prevalences(2, 3), [[0, 1], [0.5, 0.5], [1, 0]])
    idx = P.app_indices(Y3, 40, n_prevalences=5, repeats=2, seed=0)
    assert len(idx) == 30 and all(len(i) == 40 for i in idx)
    got = np.array([P.sample_prevalence(Y3, i, 3) for i in idx])
    assert np.abs(got - grid).max() <= 2 / 40
    assert all(np.array_equal(x, z) for x, z in zip(idx, P.app_indices(Y3, 40, 5, 2, seed=0)))


def test_validation_errors():
    with pytest.raises(ValueError, match="sample_size"):
        P.upp_indices(Y3, 0, 5, seed=0)
    with pytest.raises(ValueError, match="repeats"):
        P.upp_indices(Y3, 10, 0, seed=0)
    with pytest.raises(ValueError, match=r"class\(es\) \[2\]"):
        P.upp_indices(Y2, 10, 5, seed=0, n_classes=3)
    with pytest.raises(ValueError, match=r"class\(es\) \[1\]"):
        P.app_indices(np.array([0, 0, 2]), 10)
    with pytest.raises(ValueError, match="integer"):
        P.upp_indices(Y3.astype(float), 10, 5, seed=0)
    with pytest.raises(TypeError, match="seed"):
        P.upp_indices(Y3, 10, 5, seed=None)
    with pytest.raises(TypeError, match="sample_size"):
        P.upp_indices(Y3, 10.0, 5, seed=0)


def test_sample_prevalence_rejects_codes_outside_the_codeframe():
    # a code >= n_classes would silently be left out of the fractions (which would no longer describe the sample)
    assert np.allclose(P.sample_prevalence(Y3, [0, 60, 95, 99], 3), [0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match=r"codes 0\.\.2, outside 0\.\.1"):
        P.sample_prevalence(Y3, [0, 99], 2)
    with pytest.raises(ValueError, match="empty"):
        P.sample_prevalence(Y3, [], 3)


def test_sample_at_hits_the_requested_prevalence_and_is_seeded():
    from capshift.protocols import sample_at, sample_prevalence

    y = np.repeat([0, 1, 2], [50, 30, 20])
    idx = sample_at(y, [0.2, 0.3, 0.5], 200, seed=4)
    np.testing.assert_allclose(sample_prevalence(y, idx, 3), [0.2, 0.3, 0.5])
    np.testing.assert_array_equal(idx, sample_at(y, [0.2, 0.3, 0.5], 200, seed=4))
    with pytest.raises(ValueError, match="distribution"):
        sample_at(y, [0.5, 0.6, 0.1], 10, seed=0)


# ---- protocols as objects and their registry
def test_registry_lists_the_pps_protocols_and_makes_them():
    assert P.names()[:3] == ["upp", "app", "npp"]
    assert isinstance(P.make_protocol("upp"), P.UPP) and P.make_protocol("app").n_prevalences == 21
    proto = P.make_protocol("app", n_prevalences=11)
    assert P.make_protocol(proto) is proto
    with pytest.raises(ValueError, match=r"unknown protocol 'uniform'.*'upp', 'app', 'npp'"):
        P.make_protocol("uniform")
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['repeats'\].*n_prevalences"):
        P.make_protocol("app", repeats=2)
    with pytest.raises(TypeError, match="protocol must be a protocol name"):
        P.make_protocol(3)
    with pytest.raises(ValueError, match="Protocol instance"):
        P.make_protocol(proto, n_prevalences=5)


def test_protocol_objects_draw_what_the_functions_draw():
    upp = P.make_protocol("upp").indices(Y3, 50, 20, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(upp, P.upp_indices(Y3, 50, 20, 4)))
    # APP: the 21-point grid repeated ceil(n_samples / 21) times, cut at n_samples (the runner's rule)
    app = P.make_protocol("app").indices(Y2, 30, 50, seed=4)
    ref = P.app_indices(Y2, 30, repeats=3, seed=4)[:50]
    assert len(app) == 50 and all(np.array_equal(a, b) for a, b in zip(app, ref))
    coarse = P.make_protocol("app", n_prevalences=5).indices(Y2, 40, 5, seed=0)
    got = [P.sample_prevalence(Y2, i, 2)[1] for i in coarse]
    assert np.allclose(sorted(got), [0, .25, .5, .75, 1])  # the 5-point grid, one sample each


def test_npp_is_quapys_npp_at_the_pools_prevalence():
    ours = P.npp_indices(Y2, 50, 30, seed=5)
    lc = LabelledCollection(Y2.reshape(-1, 1), Y2)
    theirs = list(qp.protocol.NPP(lc, sample_size=50, repeats=30, random_state=5, return_type="index")())
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert not all(np.array_equal(a, b) for a, b in zip(ours, P.npp_indices(Y2, 50, 30, seed=6)))
    mean = np.mean([P.sample_prevalence(Y2, i, 2)[1] for i in ours])
    assert abs(mean - 0.8) < 0.03  # the pool's prevalence: 160 of 200 (standard error of the mean .01)


def test_protocol_key_names_only_changed_parameters():
    assert P.make_protocol("upp").key() == "upp" and P.make_protocol("app").key() == "app"
    assert P.make_protocol("app", n_prevalences=11).key() == "app(n_prevalences=11)"
    assert repr(P.make_protocol("app")) == "APP(n_prevalences=21)"


def test_register_adds_a_protocol_in_one_place(monkeypatch):
    monkeypatch.setattr(P, "PROTOCOLS", dict(P.PROTOCOLS))

    @P.register
    class Fixed(P.Protocol):
        name, description = "first-items", "the first items of the pool"

        def indices(self, y, sample_size, n_samples, seed, n_classes=None):
            return [np.arange(sample_size)] * n_samples

    assert "first-items" in P.names() and isinstance(P.make_protocol("first-items"), Fixed)
    with pytest.raises(ValueError, match="not registered yet"):
        P.register(Fixed)
    with pytest.raises(TypeError):
        P.register(object)


def test_app_refuses_a_grid_of_fewer_than_two_points_when_made():
    from capshift import protocols

    with pytest.raises(ValueError, match="n_prevalences"):
        protocols.make_protocol("app", n_prevalences=1)
    with pytest.raises(TypeError, match="n_prevalences"):
        protocols.make_protocol("app", n_prevalences=2.5)


# ---- the APP grid: its closed-form size, QuaPy's order, its defaults
@pytest.mark.parametrize("n", [2, 3, 4])
def test_app_grid_has_the_closed_form_count_and_quapys_order(n):
    for k in (2, 3, 5):
        grid = P.app_prevalences(n, n_prevalences=k)
        assert grid.shape == (comb(k + n - 2, n - 1), n)
        # QuaPy's order: itertools.product over the first n - 1 classes (lexicographic), the last one implied
        assert [tuple(r) for r in grid[:, :-1]] == sorted(tuple(r) for r in grid[:, :-1])
    assert len(P.app_prevalences(n)) == comb(21 + n - 2, n - 1)  # the default 21-point grid


def test_app_grid_by_hand():
    assert P.app_prevalences(3, 3).tolist() == [[0, 0, 1], [0, .5, .5], [0, 1, 0], [.5, 0, .5], [.5, .5, 0], [1, 0, 0]]
    assert P.app_prevalences(2, 2).tolist() == [[0, 1], [1, 0]]  # 2 points: the smallest grid allowed
    assert P.app_prevalences(2, 2, repeats=3).tolist() == [[0, 1]] * 3 + [[1, 0]] * 3  # each point repeated in place
    assert np.allclose(P.app_prevalences(2)[:, 1], np.arange(21)[::-1] / 20)  # default: 21 points, step 0.05
    # a grid point whose float sum exceeds 1 (0.2 + 0.7 + 0.1) gets last class exactly 0, not -2.2e-16
    grid = P.app_prevalences(4, 11)
    row = grid[np.all(np.isclose(grid[:, :3], [0.2, 0.7, 0.1]), axis=1)]
    assert grid.min() == 0.0 and row.shape == (1, 4) and row[0, 3] == 0.0
    # more than QuaPy's sanity_check of 10000 samples is allowed
    assert P.app_prevalences(2, 21, repeats=500).shape == (10500, 2)
    assert len(P.app_indices(np.array([0, 1]), 1, 21, repeats=477)) == 21 * 477


# ---- seeds, repetitions, sample sizes and class counts
Y_TINY = np.array([0, 1, 1])


def test_every_seed_argument_changes_the_draws_and_the_same_seed_repeats_them():
    draws = {
        "upp_prevalences": lambda s: [P.upp_prevalences(3, 4, s)],
        "upp_indices": lambda s: P.upp_indices(Y3, 20, 4, s),
        "app_indices": lambda s: P.app_indices(Y3, 20, n_prevalences=3, seed=s),
        "npp_indices": lambda s: P.npp_indices(Y3, 20, 4, s),
        "sample_at": lambda s: [P.sample_at(Y3, [0.2, 0.3, 0.5], 20, s)],
    }
    draws.update({name: (lambda s, name=name: P.make_protocol(name).indices(Y3, 20, 4, s))
                  for name in P.names("pps")})
    for name, draw in draws.items():
        a, b, c = draw(1), draw(1), draw(2)
        assert len(a) == len(b) == len(c), name
        assert all(np.array_equal(x, z) for x, z in zip(a, b)), name
        assert not all(np.array_equal(x, z) for x, z in zip(a, c)), name
    # app_indices' default seed is 0
    assert all(np.array_equal(x, z) for x, z in zip(P.app_indices(Y3, 20, 3), P.app_indices(Y3, 20, 3, seed=0)))


def test_app_repetitions_differ_and_keep_the_grid_order():
    idx = P.app_indices(Y2, 40, n_prevalences=5, repeats=2, seed=3)
    assert len(idx) == 10 and len(P.app_indices(Y2, 40, n_prevalences=5)) == 5  # default repeats=1
    grid = P.app_prevalences(2, 5)
    for k, p in enumerate(grid):
        a, b = idx[2 * k], idx[2 * k + 1]  # the two repetitions of grid point k
        # 40 * p items of each class, exactly (no rounding remainder on this grid)
        assert np.array_equal(np.bincount(Y2[a], minlength=2), np.round(40 * p).astype(int))
        assert np.array_equal(np.bincount(Y2[b], minlength=2), np.round(40 * p).astype(int))
        assert not np.array_equal(a, b)


def test_samples_have_the_requested_size_and_class_counts():
    for idx in P.upp_indices(Y3, 30, 5, seed=2):
        assert idx.shape == (30,)
    prevs = P.upp_prevalences(3, 5, seed=2)
    counts = np.array([np.bincount(Y3[i], minlength=3) for i in P.upp_indices(Y3, 30, 5, seed=2)])
    assert np.all(counts.sum(axis=1) == 30)
    # round(30 p) per class, plus or minus the remainder (at most 1 per class for 3 classes)
    assert np.abs(counts - np.round(30 * prevs)).max() <= 1
    npp = P.npp_indices(Y3, 25, 4, seed=2)
    assert len(npp) == 4 and all(i.shape == (25,) for i in npp)
    assert len(P.npp_indices(Y3, 25, 1, seed=2)) == 1
    assert np.array_equal(np.bincount(Y3[P.sample_at(Y3, [0.5, 0.25, 0.25], 8, seed=1)], minlength=3), [4, 2, 2])


def test_every_pps_protocol_on_a_tiny_pool():
    # y = [0, 1, 1]: APP's 3-point grid is all class 1, half and half, all class 0
    app = P.make_protocol("app", n_prevalences=3).indices(Y_TINY, 4, 3, seed=0)
    assert len(app) == 3
    assert set(app[0]) <= {1, 2} and np.array_equal(app[2], [0, 0, 0, 0])
    assert np.sum(app[1] == 0) == 2 and set(app[1][app[1] != 0]) <= {1, 2}
    # 5 samples of the 2-point grid: ceil(5 / 2) = 3 repetitions of each point, in place, cut at 5
    two = P.make_protocol("app", n_prevalences=2).indices(Y_TINY, 2, 5, seed=0)
    assert len(two) == 5 and all(set(i) <= {1, 2} for i in two[:3]) and [i.tolist() for i in two[3:]] == [[0, 0]] * 2
    # UPP: the class-0 count is round(4 p_0) up to the remainder; NPP: uniform over the pool
    upp = P.make_protocol("upp").indices(Y_TINY, 4, 6, seed=0)
    p0 = P.upp_prevalences(2, 6, seed=0)[:, 0]
    assert len(upp) == 6 and all(abs(np.sum(i == 0) - 4 * p) <= 1 for i, p in zip(upp, p0))
    npp = P.make_protocol("npp").indices(Y_TINY, 5, 2, seed=0)
    assert len(npp) == 2 and all(i.shape == (5,) and set(i) <= {0, 1, 2} for i in npp)
    assert all(np.array_equal(a, b) for a, b in zip(npp, P.npp_indices(Y_TINY, 5, 2, 0)))
    # a one-item pool: a single class, every sample repeats that item
    assert [i.tolist() for i in P.npp_indices(np.array([0]), 3, 2, seed=0)] == [[0, 0, 0]] * 2
    # the dataset-shift families draw no indices from a pool
    for name in P.names("shift"):
        with pytest.raises(TypeError, match=re.escape(
                f"protocol {name!r} is a dataset-shift family: it draws training samples as well as test samples, "
                "from a dataset of capshift.datasets.SHIFT_DATASETS; use capshift.evaluation.contexts (or capshift "
                "run --protocol) rather than indices()")):
            P.make_protocol(name).indices(Y_TINY, 2, 1, 0)


def test_n_classes_reaches_every_sampler():
    # n_classes=3 on a binary pool: class 2 has no item, whichever function or protocol object draws
    calls = [lambda: P.upp_indices(Y2, 10, 2, 0, n_classes=3), lambda: P.app_indices(Y2, 10, 3, n_classes=3),
             lambda: P.npp_indices(Y2, 10, 2, 0, n_classes=3), lambda: P.sample_at(Y2, [0.2, 0.3, 0.5], 10, 0)]
    calls += [lambda name=name: P.make_protocol(name).indices(Y2, 10, 2, 0, n_classes=3) for name in P.names("pps")]
    for call in calls:
        with pytest.raises(ValueError, match=re.escape("class(es) [2] have no item in y")):
            call()


# ---- exact error messages, naming the argument
@pytest.mark.parametrize("call,exc,message", [
    (lambda: P.upp_indices(Y3, 0, 5, seed=0), ValueError, "sample_size must be >= 1, got 0"),
    (lambda: P.upp_indices(Y3, 10, 0, seed=0), ValueError, "repeats must be >= 1, got 0"),
    (lambda: P.upp_indices(Y3, 10, 5, seed=None), TypeError, "seed must be an int"),
    (lambda: P.upp_indices(Y3, 10, 5, seed=0, n_classes=0), ValueError, "n_classes must be >= 1, got 0"),
    (lambda: P.upp_prevalences(0, 5, 0), ValueError, "n_classes must be >= 1, got 0"),
    (lambda: P.upp_prevalences(3, 0, 0), ValueError, "repeats must be >= 1, got 0"),
    (lambda: P.upp_prevalences(1, 5, 0), ValueError, "n_classes must be >= 2, got 1"),
    (lambda: P.app_prevalences(0), ValueError, "n_classes must be >= 1, got 0"),
    (lambda: P.app_prevalences(2, 3, repeats=0), ValueError, "repeats must be >= 1, got 0"),
    (lambda: P.app_prevalences(2, 0), ValueError, "n_prevalences must be >= 1, got 0"),
    (lambda: P.app_prevalences(2, 1), ValueError, "n_prevalences and n_classes must be >= 2, got 1 and 2"),
    (lambda: P.app_prevalences(1, 3), ValueError, "n_prevalences and n_classes must be >= 2, got 3 and 1"),
    (lambda: P.app_indices(Y2, 0), ValueError, "sample_size must be >= 1, got 0"),
    (lambda: P.app_indices(Y2, 5, repeats=0), ValueError, "repeats must be >= 1, got 0"),
    (lambda: P.app_indices(Y2, 5, 0), ValueError, "n_prevalences must be >= 1, got 0"),
    (lambda: P.app_indices(Y2, 5, 1), ValueError, "n_prevalences must be >= 2, got 1"),
    (lambda: P.npp_indices(Y2, 0, 2, 0), ValueError, "sample_size must be >= 1, got 0"),
    (lambda: P.npp_indices(Y2, 5, 0, 0), ValueError, "repeats must be >= 1, got 0"),
    (lambda: P.sample_at(Y2, [0.5, 0.6], 10, 0), ValueError, "prevalence must be a probability distribution"),
    (lambda: P.sample_at(Y2, [[0.5, 0.5]], 10, 0), ValueError,
     "prevalence must be a 1-d distribution over the classes, got shape (1, 2)"),
    (lambda: P.sample_at(Y2, [0.5, 0.5], 0, 0), ValueError, "size must be >= 1, got 0"),
    (lambda: P.sample_prevalence(Y3, [0], 0), ValueError, "n_classes must be >= 1, got 0"),
    (lambda: P.sample_prevalence(Y3, [], 3), ValueError,
     "idx is empty: the prevalence of an empty sample is undefined"),
    (lambda: P.sample_prevalence(Y3, [0.0], 3), TypeError, "idx must hold integer indices into y, got dtype float64"),
    (lambda: P.sample_prevalence(Y3, [0, 100], 3), ValueError, "idx holds indices outside 0..99 (y has 100 items)"),
    (lambda: P.sample_prevalence(Y3, [-101], 3), ValueError, "idx holds indices outside 0..99 (y has 100 items)"),
    (lambda: P.upp_indices(np.zeros((2, 2), int), 1, 1, 0), ValueError,
     "y must be a non-empty 1-d integer array of class codes 0..n-1, got shape (2, 2) and dtype int64"),
    (lambda: P.npp_indices(np.array([], int), 1, 1, 0), ValueError,
     "y must be a non-empty 1-d integer array of class codes 0..n-1, got shape (0,)"),
    (lambda: P.upp_indices(np.array([0, -1, 1]), 1, 1, 0), ValueError,
     "y must hold class codes in 0..1 (n_classes=2), found -1..1"),
    (lambda: P.upp_indices(np.array([0, 1, 3]), 1, 1, 0, n_classes=3), ValueError,
     "y must hold class codes in 0..2 (n_classes=3), found 0..3"),
    (lambda: P.make_protocol("app").indices(Y2, 5, 0, 0), ValueError, "n_samples must be >= 1, got 0"),
    (lambda: P.make_protocol("app", n_prevalences=2.5), TypeError, "n_prevalences must be an int"),
    (lambda: P.make_protocol("upp", foo=1), ValueError,
     "protocol 'upp' has no parameter(s) ['foo']; its parameters are none"),
    (lambda: P.make_protocol(3), TypeError, "protocol must be a protocol name (['upp', 'app', 'npp', 'prior', "
     "'global-pure-covariate', 'global-mixed-covariate', 'local-covariate', 'concept']) or a "
     "capshift.protocols.Protocol, got int"),
    (lambda: P.register(object), TypeError, "register takes a Protocol subclass, got <class 'object'>"),
    (lambda: P.make_protocol("prior").data("haberman"), ValueError,
     "protocol 'prior' runs on a dataset of capshift.datasets.SHIFT_DATASETS (['marketing', 'diabetes', "
     "'wine-quality']), got 'haberman'; the PPS protocols (['upp', 'app', 'npp']) run on the others"),
])
def test_error_messages_name_the_argument(call, exc, message):
    with pytest.raises(exc, match="^" + re.escape(message)):
        call()


def test_index_bounds_of_sample_prevalence():
    # negative indices count from the end, down to -len(y); len(y) itself is outside
    assert P.sample_prevalence(Y3, [-100, -1], 3).tolist() == [0.5, 0.0, 0.5]
    assert P.sample_prevalence(Y3, [99], 3).tolist() == [0.0, 0.0, 1.0]
    assert P.sample_prevalence(np.arange(2), np.array([1], dtype=np.uint8), 2).tolist() == [0.0, 1.0]


# ---- the registry and the protocol objects' parameters
def test_registry_kinds_params_and_keys():
    assert P.names("pps") == ["upp", "app", "npp"]
    assert P.names("shift") == ["prior", "global-pure-covariate", "global-mixed-covariate", "local-covariate",
                                "concept"]
    proto = P.make_protocol("prior", train_prevalences=[0.2, 0.8], repeats=1, train_size=400)
    assert proto.train_prevalences == (0.2, 0.8)  # a list becomes a tuple: one key for one grid
    assert proto.key() == "prior(repeats=1, train_prevalences=(0.2, 0.8), train_size=400)"
    assert repr(P.make_protocol("local-covariate")) == (
        "LocalCovariateShiftFamily(train_size=5000, repeats=10, train_prop=0.6, val_prop=0.5, group=None, "
        "cut_point=None, test_prevalences=None)")
    two = P.make_protocol("app", n_prevalences=2)  # the smallest grid
    assert [P.sample_prevalence(Y2, i, 2).tolist() for i in two.indices(Y2, 10, 2, 0)] == [[0, 1], [1, 0]]


# ---- the dataset-shift families: what each passes to capshift.shift
@pytest.fixture(scope="module")
def marketing_sex():
    """marketing's levels and its sex groups (the shift families' data for group="sex")."""
    data = datasets.load_shift("marketing", group="sex")
    return data.levels, data.groups


COMMON = dict(repeats=2, train_size=300, train_prop=0.5, group="sex", cut_point=5)


def _check_common(family):
    # every common parameter and family() argument reaches capshift.shift (none is the default)
    assert (family.train_size, family.test_size, family.n_samples, family.repeats) == (300, 40, 3, 2)
    assert family.train_prop == 0.5 and family.random_state == 7


def test_a_shift_familys_data_follow_group_and_cut_point(marketing_sex):
    levels, groups = marketing_sex
    data, X, y, g = P.make_protocol("prior", **COMMON).data("marketing")
    assert data.group == "sex" and np.array_equal(data.groups, groups)
    keep = levels != 5  # an integer cut drops its level
    assert X.shape == (keep.sum(), 13) and np.array_equal(y, (levels[keep] > 5).astype(int))
    assert np.array_equal(g, groups[keep])


def test_prior_shift_family(marketing_sex):
    levels, _ = marketing_sex
    keep = levels != 5
    f = P.make_protocol("prior", train_prevalences=[0.3, 0.7], test_prevalences=[0.1, 0.9], **COMMON).family(
        "marketing", 40, 3, 7)
    _check_common(f)
    assert f.X_.shape == (keep.sum(), 13) and np.array_equal(f.y_, (levels[keep] > 5).astype(int))
    assert np.allclose(f.train_prevalences_[:, 1], [0.3, 0.7]) and np.allclose(f.test_prevalences_[:, 1], [0.1, 0.9])
    default = P.make_protocol("prior").family("marketing", 40, 3, 7)  # None: the paper's grids
    assert np.allclose(default.train_prevalences_[:, 1], [0.02, .1, .2, .3, .4, .5, .6, .7, .8, .9, 0.98])
    assert np.allclose(default.test_prevalences_[:, 1], np.arange(11) / 10)


@pytest.mark.parametrize("name,kind", [("global-pure-covariate", "pure"), ("global-mixed-covariate", "mixed")])
def test_global_covariate_shift_families(marketing_sex, name, kind):
    levels, groups = marketing_sex
    keep = levels != 5
    f = P.make_protocol(name, train_prevalences=[0.5], test_prevalences=[0.5, 0.75], train_alphas=[0.2],
                        test_alphas=[0.4, 0.6], **COMMON).family("marketing", 40, 3, 7)
    _check_common(f)
    assert f.kind == kind and f.X_.shape == (keep.sum(), 13)
    assert np.array_equal(f.y_, (levels[keep] > 5).astype(int))
    assert np.array_equal(f.group_, 1 - groups[keep])  # group A: the smaller value of the attribute
    assert f.train_prevalences_.tolist() == [0.5] and f.test_prevalences_.tolist() == [0.5, 0.75]
    assert f.train_alphas_.tolist() == [0.2] and f.test_alphas_.tolist() == [0.4, 0.6]
    default = P.make_protocol(name).family("marketing", 40, 3, 7)  # None: the paper's alphas 0, 0.1, ..., 1
    assert np.allclose(default.train_alphas_, np.arange(11) / 10)
    assert np.allclose(default.test_alphas_, np.arange(11) / 10)


def test_local_covariate_shift_family(marketing_sex):
    levels, groups = marketing_sex
    keep = levels != 5
    f = P.make_protocol("local-covariate", test_prevalences=[0.4, 0.6], **COMMON).family("marketing", 40, 3, 7)
    _check_common(f)
    assert f.test_prevalences_.tolist() == [0.4, 0.6] and f.X_.shape == (keep.sum(), 13)
    assert np.array_equal(f.y_, (levels[keep] > 5).astype(int))
    assert np.array_equal(f.group_, 1 - groups[keep])
    default = P.make_protocol("local-covariate").family("marketing", 40, 3, 7)  # None: .25, .30, ..., .75
    assert np.allclose(default.test_prevalences_, np.arange(25, 76, 5) / 100)


def test_concept_shift_family(marketing_sex):
    levels, _ = marketing_sex
    f = P.make_protocol("concept", train_cuts=[2.5], test_cuts=[3.5, 6.5], balance=False, **COMMON).family(
        "marketing", 40, 3, 7)
    _check_common(f)
    # every item of the dataset and its levels (the cut point is the family's own): no balancing
    assert f.X_.shape == (len(levels), 13) and np.array_equal(f.levels_, levels)
    assert f.train_cuts_.tolist() == [2.5] and f.test_cuts_.tolist() == [3.5, 6.5] and f.balance is False
    default = P.make_protocol("concept").family("marketing", 40, 3, 7)  # None: every half-integer cut, balanced
    assert default.train_cuts_.tolist() == default.test_cuts_.tolist() == [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]
    # balanced: each of the 9 levels subsampled to the rarest level's count
    assert default.balance is True and default.X_.shape == (9 * np.unique(levels, return_counts=True)[1].min(), 13)


def test_draws_in_threads_are_the_serial_draws():
    """QuaPy's streams use NumPy's global random state: draws in threads (joblib's threading backend, Dask's
    threads) must not interleave (the module's lock), so each gives the serial draw of its seed."""
    from concurrent.futures import ThreadPoolExecutor
    y = np.repeat(np.arange(3), 40)
    draws = {"upp": lambda s: P.upp_indices(y, 50, 20, s), "app": lambda s: P.app_indices(y, 50, 5, 1, s),
             "npp": lambda s: P.npp_indices(y, 50, 20, s)}
    for name, draw in draws.items():
        serial = [draw(s) for s in range(16)]
        with ThreadPoolExecutor(8) as pool:
            threaded = list(pool.map(draw, list(range(16)) * 4))
        for k, got in enumerate(threaded):
            assert all(np.array_equal(a, b) for a, b in zip(got, serial[k % 16])), (name, k % 16)
