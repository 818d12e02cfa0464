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
    (1120000, {"decimals": 0, "thousands": True}, "1,120,000"),   # counts in prose
    (-1234.5678, {"decimals": 1, "thousands": True, "sign": True}, "−1,234.6"),
    (0.03, {"thousands": True, "leading_zero": False}, ".030"),
    (999, {"decimals": 0, "thousands": True}, "999"),
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
    (1.960199e6, "1.96\u00a0×\u00a010⁶"), (4.77759014e-07, "4.78\u00a0×\u00a010⁻⁷"), (-4.8e-7, "−4.80\u00a0×\u00a010⁻⁷"),
    (0.25, "0.250"), (12.5, "12.5"), (1234.0, "1234"), (9.996e5, "1.00\u00a0×\u00a010⁶"), (None, "—"),
])
def test_magnitude(x, shown):
    assert pr.magnitude(x) == shown


def test_magnitude_floor():
    assert pr.magnitude(3e-10, floor=1e-9) == "below 10⁻⁹"
    assert pr.magnitude(3e-10, floor=5e-9) == "below 5.00\u00a0×\u00a010⁻⁹"
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
    assert "| p\\|q " in pr.table(pd.DataFrame({"p|q": [1]})).data  # nor a header
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


# ------------------------------------------------------------------ edges the mutation run found unpinned
def test_number_edges():
    assert pr.number(0.3, 0) == "<1" and pr.number(-0.3, 0) == "−<1"  # below half the last digit
    assert pr.number(-0.0, sign=True) == "0.000" and pr.number(0.0, 2, sign=True) == "0.00"
    with pytest.raises(TypeError, match="^x must be a real number .* got str$"):
        pr.number("1")


def test_magnitude_edges():
    # plain digits for 10⁻³ <= |x| < 10⁴, scientific outside; the floor itself is shown, not hidden
    assert pr.magnitude(0.001) == "0.00100" and pr.magnitude(1e-4) == "1.00\u00a0×\u00a010⁻⁴"
    assert pr.magnitude(9999) == "9999" and pr.magnitude(1e4) == "1.00\u00a0×\u00a010⁴"
    assert pr.magnitude(1e-15) == "1.00\u00a0×\u00a010⁻¹⁵"
    assert pr.magnitude(9.96e5) == "9.96\u00a0×\u00a010⁵" and pr.magnitude(123456, digits=2) == "1.2\u00a0×\u00a010⁵"
    with pytest.raises(TypeError, match="^x must be"):
        pr.magnitude("1")
    with pytest.raises(TypeError, match="^floor must be"):
        pr.magnitude(1.0, floor="1e-15")


def test_marks_pairs_errors():
    assert pr.marked("", best=True) == ""
    assert pr.pair("", ".1") == "—\u00a0/\u00a0.1" and pr.pair(None, None) == "—\u00a0/\u00a0—"
    with pytest.raises(TypeError, match="got float"):
        pr.marked(0.5)
    with pytest.raises(TypeError, match="got list"):
        pr.split_pairs([])
    with pytest.raises(TypeError, match="^abbreviations must be a mapping"):
        pr.legend(["a"])
    got = pr.split_pairs(pd.DataFrame({"A": [np.nan, "-", "nan\u00a0/\u00a0 .2 "]}, index=["x", "y", "z"]))
    assert got["A"].tolist() == ["—", "—", "—", "—", "—", ".2"]


def test_vector_passes_its_options():
    assert pr.vector([0.5, 2], 1) == "(0.5, 2.0)"
    assert pr.vector(np.array([[0.25], [0.5]]), 2, leading_zero=False) == "(.25, .50)"


def test_frame_options_and_labels():
    df = pd.DataFrame({"p": [0.1234], "n": [12345], "x": [pd.NA], "o": [object.__class__]},
                      index=pd.MultiIndex.from_tuples([("a", 0.25)], names=["k", "q"]))
    got = pr.frame(df, {"n": 1}, percent=["p"], thousands=False)
    assert got.loc[("a", "0.250")].tolist() == ["12.340%", "12345", "—", "<class 'type'>"]  # p: default 3 decimals
    assert list(got.index.names) == ["k", "q"]
    assert list(pr.frame(df[["p"]], 2).columns) == ["p"]


def test_width_counts_every_part():
    d = pd.DataFrame({"a": ["12345"]}, index=pd.Index(["r"], name="a_long_index_name"))
    one_col = 5 * pr.CHAR_PX + pr.CELL_PAD_PX
    assert pr.estimated_width(d, index=False) == pytest.approx(one_col)
    assert pr.estimated_width(d) == pytest.approx(one_col + len("a_long_index_name") * pr.CHAR_PX + pr.CELL_PAD_PX)
    unnamed = d.rename_axis(None)
    assert pr.estimated_width(unnamed) == pytest.approx(one_col + 1 * pr.CHAR_PX + pr.CELL_PAD_PX)
    # a header wraps at its spaces; **bold** and † marks: ** and backslashes take no room
    words = pd.DataFrame({"two words": ["**1**"]})
    assert pr.estimated_width(words, index=False) == pytest.approx(5 * pr.CHAR_PX + pr.CELL_PAD_PX)
    tup = pd.DataFrame([["1"]], columns=pd.MultiIndex.from_tuples([("abcdefgh", "ours")]))
    assert pr.estimated_width(tup, index=False) == pytest.approx(8 * pr.CHAR_PX + pr.CELL_PAD_PX)


def test_column_groups_boundaries():
    d = pd.DataFrame({f"c{k}": ["1234567890"] for k in range(4)}, index=pd.Index(["r"], name="i"))
    col = 10 * pr.CHAR_PX + pr.CELL_PAD_PX
    base = pr.estimated_width(d.iloc[:, :0])
    assert len(pr.column_groups(d, base + 4 * col)) == 1  # exactly the budget fits
    parts = pr.column_groups(d, base + 2 * col)
    assert [list(p.columns) for p in parts] == [["c0", "c1"], ["c2", "c3"]]
    assert [list(p.columns) for p in pr.column_groups(d, 4 * col, index=False)] == [["c0", "c1", "c2", "c3"]]
    assert len(pr.column_groups(d, 10)) == 4  # a column wider than the budget gets a part of its own
    assert len(pr.column_groups(d[["c0"]], 10)) == 1


def test_table_passes_its_options_and_labels_the_first_part():
    df = pd.DataFrame({f"m{k}": [0.123456] for k in range(12)}, index=pd.Index(["cmc"], name="dataset"))
    md = pr.table(df, "T", decimals=4, leading_zero=False, label="tab-x", max_px=400).data
    assert ".1235" in md and "0.1235" not in md
    assert md.count(":name: tab-x") == 1 and md.index(":name: tab-x") < md.index("(m4")
    assert "T (m0 to " in md and "| dataset " in md
    one = pr.table(df[["m0"]], "T", label="tab-y").data
    assert ":::{table} T\n:name: tab-y\n" in one and "(m0)" not in one
    assert "0.123" in pr.table(df[["m0"]]).data and "0.1235" not in pr.table(df[["m0"]]).data
    assert "| dataset " not in pr.table(df[["m0"]], index=False).data
    unnamed = pr.table(df[["m0"]].rename_axis(None)).data.splitlines()
    assert unnamed[0].split("|")[1].strip() == "" and "index" not in unnamed[0]  # no header over the labels
    with pytest.raises(TypeError, match="^df must be a DataFrame, got list"):
        pr.table([1])
    multi = pd.DataFrame([[0.5, 0.25]], columns=pd.MultiIndex.from_tuples([("O-LEAP", "ours"), ("O-LEAP", "paper")]))
    assert "O-LEAP ours" in pr.table(multi).data and "O-LEAP paper" in pr.table(multi).data
    assert "(O-LEAP ours)" in pr.table(multi, "T", max_px=10).data


def test_alignment_of_label_columns():
    df = pd.DataFrame({"AE": [0.5]}, index=pd.MultiIndex.from_tuples([("a", "b")], names=["k", "q"]))
    sep = pr.table(df).data.splitlines()[1]
    assert sep.count(":-") == 2 and sep.count("-:") == 1  # both label columns left, the value right
    sep = pr.table(df.reset_index(drop=True), index=False).data.splitlines()[1]
    assert sep.strip("|").startswith(":-")  # without an index, the first column is the label column


# -- Pinned by mutation testing (issue 32): messages, boundaries, exact output -----------------------------------------
def test_number_floor_at_many_decimals():
    # 10 ** -8 written with 8 decimals (11 ** -8 would round to 0.00000000)
    assert pr.number(1e-10, 8) == "<0.00000001"
    assert pr.number(-1e-10, 8, leading_zero=False) == "−<.00000001"


def test_split_pair_of_missing_cells():
    assert pr._split_pair(None) == (pr.MISSING, pr.MISSING)
    assert pr._split_pair(float("nan")) == (pr.MISSING, pr.MISSING)


def test_vector_casts_to_float():
    assert pr.vector(["0.5", "1"]) == "(0.500, 1.000)"
    assert pr.vector([True, False], 1) == "(1.0, 0.0)"


def test_frame_default_decimals_message_and_column_name():
    df = pd.DataFrame({"a": [0.12345]})
    df.columns.name = "measure"
    out = pr.frame(df)
    assert out.iloc[0, 0] == "0.123"
    assert out.columns.name == "measure"
    with pytest.raises(TypeError) as e:
        pr.frame([1, 2])
    assert str(e.value) == "df must be a DataFrame, got list"


def test_estimated_width_index_names_and_empty_header():
    idx = pd.MultiIndex.from_tuples([("a", "b")], names=["abcdefghijklmnop", "q"])
    df = pd.DataFrame({"c": ["1"]}, index=idx)
    # index column: longest word of "abcdefghijklmnop q" is 16 > len("('a', 'b')") = 10; column "c": 1
    assert pr.estimated_width(df) == pytest.approx(16 * pr.CHAR_PX + pr.CELL_PAD_PX + 1 * pr.CHAR_PX + pr.CELL_PAD_PX)
    # an empty header over empty cells: only the padding
    assert pr.estimated_width(pd.DataFrame({"": [""]}), index=False) == pr.CELL_PAD_PX


def _four():
    return pd.DataFrame({"aaaa": ["1"], "bbbb": ["2"], "cccc": ["3"], "dddd": ["4"]},
                        index=pd.Index(["r"], name="x"))


def test_column_groups_boundaries_and_index():
    df = _four()   # index column 34.4 px, each column 59.6 px
    assert pr.column_groups(df, pr.estimated_width(df))[0] is df          # exactly the budget: fits
    no_index = pr.estimated_width(df, index=False)
    assert [list(g.columns) for g in pr.column_groups(df, no_index, index=False)] == [list(df.columns)]
    assert [list(g.columns) for g in pr.column_groups(df, no_index, index=True)] == \
        [["aaaa", "bbbb", "cccc"], ["dddd"]]
    three = pr.estimated_width(df[["aaaa", "bbbb", "cccc"]], index=False)
    assert [list(g.columns) for g in pr.column_groups(df, three, index=False)] == \
        [["aaaa", "bbbb", "cccc"], ["dddd"]]
    # a df that fits (duplicate column names) and a single too-wide column: df itself
    dup = pd.DataFrame([["1", "2"]], columns=["a", "a"])
    assert pr.column_groups(dup)[0] is dup
    # without the index it fits (duplicate names stay two columns); with the 50-character index it would not
    dup = pd.DataFrame([["1", "2"]], columns=["a", "a"], index=["r" * 50])
    assert [g.shape for g in pr.column_groups(dup, pr.estimated_width(dup, index=False), index=False)] == [(1, 2)]
    wide = pd.DataFrame({"w": ["x" * 200]})
    assert pr.column_groups(wide)[0] is wide


def test_caption_without_label():
    assert pr.caption("t", "b") == "\n:::{table} t\n\nb\n:::\n"


def test_table_exact_text():
    assert pr.table(pd.DataFrame({"a": [1, 2]}), formatted=True).data == "| a   |\n|:----|\n| 1   |\n| 2   |\n"
    assert pr.table(pd.DataFrame({"a": [0.5]}), note="n").data == "| a     |\n|:------|\n| 0.500 |\n\nn\n"
    df = _four()
    out = pr.table(df, "T", max_px=pr.estimated_width(df[["aaaa", "bbbb", "cccc"]]), formatted=True).data
    assert out == ("\n:::{table} T (aaaa to cccc)\n\n"
                   "| x   |   aaaa |   bbbb |   cccc |\n|:----|-------:|-------:|-------:|\n| r   |      1 |      2 |      3 |"
                   "\n:::\n\n\n\n:::{table} T (dddd)\n\n"
                   "| x   |   dddd |\n|:----|-------:|\n| r   |      4 |\n:::\n\n")
    # a RangeIndex is not shown, and the width budget then leaves it out
    flat = df.reset_index(drop=True)
    assert pr.table(flat, max_px=pr.estimated_width(flat, index=False), formatted=True).data.count("|:") == 1


def test_tabs_exact_text():
    assert pr.tabs({"(a) Foo!": 7, "AB": Markdown("y")}, sync="s").data == (
        "\n::::::{tab-set}\n:::::{tab-item} (a) Foo!\n:sync: s-a-foo\n\n7\n:::::\n"
        ":::::{tab-item} AB\n:sync: s-ab\n\ny\n:::::\n::::::\n")
    assert ":sync: s-xa\n" in pr.tabs({"Xa": "x"}, sync="s").data
    assert pr.tabs({"A": "x"}).data == "\n::::::{tab-set}\n:::::{tab-item} A\n\nx\n:::::\n::::::\n"
    with pytest.raises(ValueError) as e:
        pr.tabs({})
    assert str(e.value) == "items must be a non-empty mapping {tab label: markdown}"
