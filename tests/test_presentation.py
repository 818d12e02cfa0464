"""The book's presentation layer (capshift.presentation): what a reader sees of a number or a table."""
import math

import numpy as np
import pandas as pd
import pytest
from IPython.display import Markdown

from capshift import presentation as pr


@pytest.mark.parametrize("x, kw, shown", [
    (0.03, {}, "0.030"),                                  # trailing zeros kept
    (0.03, {"leading_zero": False}, ".030"),              # the papers' style
    (-0.03, {"leading_zero": False}, "−.030"),            # a real minus sign
    (0.1, {"decimals": 2}, "0.10"),
    (np.float64(0.8651234), {}, "0.865"),                 # never a repr
    (np.float32(0.5), {}, "0.500"),
    (2, {"decimals": 1}, "2.0"),
    (1234.5678, {"decimals": 1}, "1234.6"),
    (0.0004, {}, "<0.001"),                               # non-zero that rounds to zero
    (-0.0004, {"leading_zero": False}, "−<.001"),
    (0.0, {}, "0.000"),                                   # an exact zero stays zero
    (-0.0001, {"sign": True, "decimals": 2}, "−<0.01"),
    (0.0, {"sign": True}, "0.000"),                       # no sign on zero
    (-1e-12, {"decimals": 2}, "−<0.01"),
    (0.25, {"sign": True}, "+0.250"),
    (0.1234, {"percent": True, "decimals": 1}, "12.3%"),
    (None, {}, "—"), (float("nan"), {}, "—"), (pd.NA, {}, "—"),
    (math.inf, {}, "∞"), (-math.inf, {}, "−∞"),
    (0.5, {"decimals": 0}, "0"), (1.5, {"decimals": 0}, "2"),
])
def test_number(x, kw, shown):
    assert pr.number(x, **kw) == shown


def test_number_bad_input():
    for bad in ("0.5", True, [0.5], object()):
        with pytest.raises(TypeError, match="x must be a real number"):
            pr.number(bad)
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match="decimals"):
            pr.number(0.5, bad)


@pytest.mark.parametrize("x, shown", [
    (5.551115e-17, "below 10⁻¹⁵"), (-2e-16, "below 10⁻¹⁵"), (0.0, "0"),
    (1.960199e6, "1.96 × 10⁶"), (4.77759014e-07, "4.78 × 10⁻⁷"), (-4.8e-7, "−4.80 × 10⁻⁷"),
    (0.25, "0.250"), (12.5, "12.5"), (1234.0, "1234"), (9.996e5, "1.00 × 10⁶"), (None, "—"),
])
def test_magnitude(x, shown):
    assert pr.magnitude(x) == shown


def test_magnitude_floor():
    assert pr.magnitude(3e-10, floor=1e-9) == "below 10⁻⁹"
    assert pr.magnitude(3e-10, floor=5e-9) == "below 5.00 × 10⁻⁹"
    with pytest.raises(ValueError, match="floor"):
        pr.magnitude(1.0, floor=0)
    assert pr.superscript(-15) == "⁻¹⁵" and pr.superscript(6) == "⁶"


def test_marks_and_pairs():
    assert pr.marked(".028", best=True) == "**.028**"
    assert pr.marked(".028", dagger=True) == ".028†"
    assert pr.marked(".028", best=True, dagger=True) == "**.028**"  # best wins
    assert pr.marked(".028") == ".028" and pr.marked("—", best=True) == "—"
    with pytest.raises(TypeError, match="formatted str"):
        pr.marked(0.028)
    assert pr.pair(".028", ".024") == ".028\u00a0/\u00a0.024"
    assert pr.pair(".028", "") == ".028\u00a0/\u00a0—"


def test_split_pairs_reads_both_separators():
    # the chapter's old splitter looked for " / " while reference.marked_table writes no-break spaces (issue 28):
    # every paper row came out empty. Both spellings split, and a missing side is "—".
    wide = pd.DataFrame({"A": ["**.028**\u00a0/\u00a0.024", ".5 / .6"], "B": [".030†", "–\u00a0/\u00a0**.1**"]},
                        index=["cmc.1", "haberman"])
    got = pr.split_pairs(wide)
    assert list(got.columns) == ["dataset", "", "A", "B"]
    assert got.values.tolist() == [["cmc.1", "ours", "**.028**", ".030†"], ["", "paper", ".024", "—"],
                                   ["haberman", "ours", ".5", "—"], ["", "paper", ".6", "**.1**"]]
    with pytest.raises(TypeError, match="DataFrame"):
        pr.split_pairs([".1 / .2"])


def test_frame_formats_every_kind_of_cell():
    df = pd.DataFrame({"f": [0.03, np.nan], "i": [1234567, 2], "b": [True, False], "s": ["x", None]},
                      index=pd.Index([0.5, 1.0], name="q"))
    got = pr.frame(df, {"f": 2})
    assert got.values.tolist() == [["0.03", "1,234,567", "yes", "x"], ["—", "2", "no", "—"]]
    assert list(got.index) == ["0.500", "1"] and got.index.name == "q"
    assert pr.frame(df[["f"]], 3, leading_zero=False)["f"].tolist() == [".030", "—"]
    with pytest.raises(TypeError, match="df must be a DataFrame"):
        pr.frame(np.zeros((2, 2)))


def test_vector_and_legend():
    assert pr.vector(np.array([0.742, 1.0])) == "(0.742, 1.000)"
    assert pr.legend({"L-ACC": "LEAP_ACC", "O-KDEy": "O-LEAP_KDEy"}) == "L-ACC = LEAP_ACC, O-KDEy = O-LEAP_KDEy."
    assert pr.legend({}) == ""


def _wide(n_cols, width=5):
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.random((3, n_cols)), columns=[f"m{'x' * width}{k}" for k in range(n_cols)],
                        index=pd.Index(["cmc.1", "german", "wdbc"], name="dataset"))


def test_table_fits_the_column_by_splitting_columns():
    narrow = pr.table(_wide(3), "Three methods")
    assert isinstance(narrow, Markdown)
    assert narrow.data.count(":::{table}") == 1 and "Three methods" in narrow.data
    wide = _wide(14)
    assert pr.estimated_width(pr.frame(wide)) > pr.COLUMN_PX
    parts = pr.column_groups(pr.frame(wide))
    assert len(parts) >= 2 and sum(p.shape[1] for p in parts) == 14
    assert all(pr.estimated_width(p) <= pr.COLUMN_PX for p in parts)
    assert [c for p in parts for c in p.columns] == list(wide.columns)  # order kept, nothing lost
    md = pr.table(wide, "Fourteen methods", abbreviations={"mx": "method x"}, note="Bold: best.").data
    assert md.count(":::{table}") == len(parts)
    assert "Fourteen methods (mxxxxx0 to " in md and md.count("| cmc.1 ") == len(parts)  # row labels repeated
    assert md.rstrip().endswith("Bold: best. mx = method x.")


def test_table_cells_and_alignment():
    df = pd.DataFrame({"AE": [0.03, 0.1], "n": [100, 1000]}, index=["a|b", "c"])
    md = pr.table(df).data
    assert "0.030" in md and "0.100" in md and "1,000" in md and "a\\|b" in md  # a "|" cannot end a cell
    assert "|:----" in md and "---:|" in md  # labels left, numbers right
    assert ":::{table}" not in md  # no title, no caption
    ranged = pr.table(pd.DataFrame({"x": [0.5]})).data
    assert "| 0 " not in ranged  # a RangeIndex is not a column a reader needs
    assert pr.table(df, formatted=True).data.count("0.03 ") == 1  # text cells are left as they are


def test_tabs():
    md = pr.tabs({"binary": "a", "multiclass": pr.table(_wide(2))}, sync="task").data
    assert "::::::{tab-set}" in md and ":::::{tab-item} binary" in md and ":sync: task-multiclass" in md
    assert md.count(":::::{tab-item}") == 2 and "| cmc.1 " in md
    with pytest.raises(ValueError, match="non-empty"):
        pr.tabs({})
