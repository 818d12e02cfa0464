"""Figures: the diagonal plot and error-by-shift draw one panel / line per method from tidy results."""
import matplotlib

matplotlib.use("Agg")
import numpy as np
import pandas as pd
import pytest

from capshift.plots import diagonal_plot, error_by_shift


@pytest.fixture
def results():
    rng = np.random.default_rng(0)
    rows = []
    for m in ("A", "B"):
        for s in range(40):
            t = rng.random()
            rows.append((m, s, "accuracy", t, t + 0.05 * rng.normal(), rng.random() * 2))
    df = pd.DataFrame(rows, columns=["method", "sample", "measure", "true", "predicted", "shift"])
    return df.assign(ae=(df.true - df.predicted).abs())


def test_diagonal_plot_panels_and_cap(results):
    g = diagonal_plot(results, max_points=10)
    assert [ax.get_title() for ax in g.axes.flat] == ["A", "B"]
    assert all(len(ax.collections[0].get_offsets()) == 10 for ax in g.axes.flat)


def test_error_by_shift_and_errors(results):
    ax = error_by_shift(results, bins=4)
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"A", "B"}
    with pytest.raises(ValueError, match="no rows for measure"):
        error_by_shift(results, measure="f1")
    with pytest.raises(ValueError, match="missing"):
        diagonal_plot(results.drop(columns="shift"))


def test_importing_capshift_keeps_matplotlib_settings():
    import subprocess
    import sys
    code = ("import matplotlib as m; before = dict(m.rcParams); import capshift.protocols, capshift.leap; "
            "assert all(m.rcParams[k] == before[k] for k in ('font.size', 'figure.dpi', 'figure.figsize'))")
    subprocess.run([sys.executable, "-c", code], check=True)
