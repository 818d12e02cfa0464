"""The book's one presentation layer: how a number, a pair of numbers or a table is shown to a reader.

Every chapter formats through these functions instead of by hand, so that a value reads the same on every page:

- :func:`number`: fixed decimals that keep their trailing zeros (``.030``, never ``.03``), the papers' style of
  no leading zero for values in (-1, 1) where asked, "—" for a missing value, never a repr (``np.float64(…)``);
- :func:`magnitude`: a value whose size matters more than its digits, e.g. a residual of ``5.55e-17`` written
  "below 10⁻¹⁵", or ``1.96e+06`` written "1.96 × 10⁶";
- :func:`marked` and :func:`pair`: the papers' bold (best) and † (not significantly different from the best), and
  "ours / paper" cells; :func:`split_pairs` turns a table of such cells into an "ours" and a "paper" row per row;
- :func:`legend`: the abbreviations a table uses, as one sentence under it;
- :func:`frame` and :func:`table`: a DataFrame as text cells and as a Markdown table with a numbered caption
  (MyST's ``table`` directive: "Table N: …") that fits the book's content column. A table whose columns would
  not fit is split into several tables of fewer columns, each repeating the row labels (:func:`column_groups`);
  :func:`tabs` shows alternatives (classifier, task, measure) as sphinx-design tabs;
- :func:`vector`: a short array as a reader reads it (``(0.742, 1.000)``), not numpy's ``[0.742 1.   ]``.

All functions return ``str`` or :class:`IPython.display.Markdown` (rendered by myst-nb, whose Markdown outputs are
MyST: ``nb_render_markdown_format: myst`` in ``_config.yml``). Inputs are validated: a non-numeric value where a
number is expected raises ``TypeError`` naming the argument.
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from IPython.display import Markdown

__all__ = ["MISSING", "PAIR_SEP", "COLUMN_PX", "number", "magnitude", "marked", "pair", "split_pairs", "legend",
           "vector", "frame", "table", "tabs", "column_groups", "estimated_width", "caption"]

MISSING = "—"  # a value that does not exist (a dataset a paper does not report, a measure a method does not give)
PAIR_SEP = "\u00a0/\u00a0"  # "ours / paper" with no-break spaces: a cell never wraps inside a pair
COLUMN_PX = 809  # width of the content column of sphinx-book-theme at a 1366-px window (measured in Chromium)
# Layout constants of a table cell in that theme, measured in Chromium at 1366 px: average width of a
# character of table text (digits, lower-case) and horizontal padding plus border of a cell.
CHAR_PX = 8.4
CELL_PAD_PX = 26
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _real(x, name: str) -> float | None:
    """``x`` as a float, or None for a missing value (None, NaN, pd.NA); TypeError for anything else."""
    if x is None or x is pd.NA or x is pd.NaT:
        return None
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, np.number)):
        raise TypeError(f"{name} must be a real number (or None/NaN for a missing value), got {type(x).__name__}")
    x = float(x)
    return None if math.isnan(x) else x


def superscript(n: int) -> str:
    """An integer in superscript digits: ``superscript(-15) == "⁻¹⁵"``."""
    return str(int(n)).translate(_SUPERSCRIPT)


def number(x, decimals: int = 3, *, leading_zero: bool = True, sign: bool = False, percent: bool = False,
           missing: str = MISSING, thousands: bool = False) -> str:
    """A number with exactly ``decimals`` decimals, trailing zeros kept: ``number(0.03) == "0.030"``.

    Parameters
    ----------
    x : real number, or None / NaN (shown as ``missing``).
    decimals : int >= 0.
    leading_zero : bool, default True. False writes values in (-1, 1) the papers' way, ``.030`` and ``-.030``.
    sign : bool. Write ``+`` before positive values (differences).
    percent : bool. Show ``100 x`` followed by ``%``.
    missing : str shown for a missing value.
    thousands : bool. Group the integer part by thousands with commas, as prose writes counts: ``1,000``.

    A non-zero value that rounds to zero is written ``<.001`` (``<0.001``) rather than a misleading 0; an exact
    zero stays ``0.000``. Infinite values are written ``∞`` / ``−∞``. Raises TypeError for a non-number.
    """
    v = _real(x, "x")
    if v is None:
        return missing
    if not isinstance(decimals, (int, np.integer)) or decimals < 0:
        raise ValueError(f"decimals must be an integer >= 0, got {decimals!r}")
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if percent:
        v *= 100
    suffix = "%" if percent else ""
    if v != 0 and abs(v) < 0.5 * 10 ** -decimals:
        floor = f"{10 ** -decimals:.{decimals}f}" if decimals else "1"
        if not leading_zero and floor.startswith("0."):
            floor = floor[1:]
        return f"{'−' if v < 0 else ''}<{floor}{suffix}"
    txt = f"{v:{'+' if sign else ''}{',' if thousands else ''}.{decimals}f}"
    if v == 0:  # -0.0 or a signed zero: no sign on a zero
        txt = txt.lstrip("+-")
    if not leading_zero:
        txt = re.sub(r"^([+-]?)0\.", r"\1.", txt)
    return txt.replace("-", "−") + suffix


def magnitude(x, floor: float = 1e-15, digits: int = 3) -> str:
    """A value whose order of magnitude is the point: a floating-point residual, a condition number.

    ``|x| < floor`` (default 10⁻¹⁵, a few ulps of a value near 1) is written "below 10⁻¹⁵" (``0`` for an exact 0);
    other values with ``digits`` significant digits, in scientific notation with a superscript exponent when
    they are below 10⁻³ or at least 10⁴ (no-break spaces around ×): ``magnitude(1.960199e6) == "1.96 × 10⁶"``,
    ``magnitude(4.8e-7) == "4.80 × 10⁻⁷"``, ``magnitude(0.25) == "0.250"``. Missing values give "—".
    """
    v = _real(x, "x")
    if v is None:
        return MISSING
    f = _real(floor, "floor")
    if f is None or f <= 0:
        raise ValueError(f"floor must be a positive number, got {floor!r}")
    if v == 0:
        return "0"
    if abs(v) < f:
        return f"below 10{superscript(math.floor(math.log10(f)))}" if math.log10(f).is_integer() \
            else f"below {magnitude(f)}"
    e = math.floor(math.log10(abs(v)))
    if -3 <= e < 4:
        return number(v, max(digits - 1 - e, 0))
    mant = v / 10 ** e
    if round(abs(mant), digits - 1) >= 10:  # 9.996e5 -> 1.00 × 10⁶
        mant, e = mant / 10, e + 1
    return f"{number(mant, digits - 1)}\u00a0×\u00a010{superscript(e)}"  # no-break: never wraps in a cell


def marked(text: str, best: bool = False, dagger: bool = False) -> str:
    """The papers' marks on a formatted value: ``**text**`` if it is the best of its row, ``text†`` if a test
    cannot tell it from the best (LEAP paper, Sect. 5.3). Best wins over dagger. Empty/missing text is unmarked."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a formatted str (see number()), got {type(text).__name__}")
    if text in ("", MISSING):
        return text
    if best:
        return f"**{text}**"
    return text + "†" if dagger else text


def pair(ours: str, paper: str) -> str:
    """An "ours / paper" cell (no-break spaces around the slash); "—" stands in for a missing side."""
    ours = ours if ours not in ("", None) else MISSING
    paper = paper if paper not in ("", None) else MISSING
    return f"{ours}{PAIR_SEP}{paper}"


def _split_pair(cell) -> tuple[str, str]:
    txt = "" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell)
    # "ours / paper" with no-break or ordinary spaces around the slash (a value never contains " / ")
    m = re.fullmatch(r"(.*?)[\u00a0 ]/[\u00a0 ](.*)", txt)
    ours, paper = (m.group(1), m.group(2)) if m else (txt, "")
    fix = lambda v: MISSING if v.strip() in ("", "–", "-", "nan", MISSING) else v.strip()  # noqa: E731
    return fix(ours), fix(paper)


def split_pairs(wide: pd.DataFrame, label: str = "dataset", ours: str = "ours", paper: str = "paper") -> pd.DataFrame:
    """A table of "ours / paper" cells (:func:`pair`, :func:`capshift.reference.marked_table`) as two rows per row:
    ours, then the paper's.

    Returns a DataFrame of str with the columns ``[label, "", *wide.columns]``; the second row of each pair has an
    empty ``label``. A cell without a pair is taken as ours with the paper's value missing.
    """
    if not isinstance(wide, pd.DataFrame):
        raise TypeError(f"wide must be a DataFrame of 'ours / paper' cells, got {type(wide).__name__}")
    rows = []
    for key, r in wide.iterrows():
        parts = [_split_pair(v) for v in r]
        rows.append([str(key), ours] + [p[0] for p in parts])
        rows.append(["", paper] + [p[1] for p in parts])
    return pd.DataFrame(rows, columns=[label, ""] + [str(c) for c in wide.columns])


def legend(abbreviations: Mapping[str, str], lead: str = "") -> str:
    """The abbreviations of a table as one sentence: ``L-ACC = LEAP_ACC, O-KDEy = O-LEAP_KDEy.``"""
    if not isinstance(abbreviations, Mapping):
        raise TypeError("abbreviations must be a mapping {short: long}")
    items = ", ".join(f"{k} = {v}" for k, v in abbreviations.items())
    return f"{lead}{items}." if items else ""


def vector(values, decimals: int = 3, **kw) -> str:
    """A short 1-d array as ``(0.742, 1.000)``, each entry through :func:`number`."""
    arr = np.asarray(values, dtype=float).ravel()
    return "(" + ", ".join(number(v, decimals, **kw) for v in arr) + ")"


def frame(df: pd.DataFrame, decimals: int | Mapping[str, int] = 3, *, leading_zero: bool = True,
          percent: Iterable[str] = (), thousands: bool = True) -> pd.DataFrame:
    """Every cell of ``df`` as the text a reader reads: floats through :func:`number` (``decimals`` one for all
    or per column), integers with a thousands separator, booleans as yes/no, missing values as "—", strings kept.

    The index is kept (its values turned to str). Returns a new DataFrame of str.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a DataFrame, got {type(df).__name__}")
    percent = set(percent)
    out = {}
    for col in df.columns:
        d = decimals.get(col, 3) if isinstance(decimals, Mapping) else decimals
        out[col] = [_cell(v, d, leading_zero, col in percent, thousands) for v in df[col]]
    res = pd.DataFrame(out, index=df.index.map(lambda i: _label(i)) if not isinstance(df.index, pd.RangeIndex)
                       else df.index, columns=df.columns)
    res.index.names = df.index.names
    return res


def _label(i) -> str:
    if isinstance(i, tuple):
        return tuple(_label(j) for j in i)
    if isinstance(i, (float, np.floating)) and not float(i).is_integer():
        return number(i, 3)
    if isinstance(i, (float, np.floating)):
        return str(int(i))
    return str(i)


def _cell(v, decimals, leading_zero, percent, thousands) -> str:
    if isinstance(v, str):
        return v
    if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and math.isnan(v)):
        return MISSING
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (numbers.Integral, np.integer)):
        return f"{int(v):,}" if thousands else str(int(v))
    if isinstance(v, (numbers.Real, np.number)):
        return number(v, decimals, leading_zero=leading_zero, percent=percent)
    return str(v)


_MARKUP = re.compile(r"\*\*|`|\\")


def _text_len(s) -> int:
    return len(_MARKUP.sub("", str(s)))


def estimated_width(df: pd.DataFrame, index: bool = True) -> float:
    """Estimated rendered width in px of ``df`` as a Markdown table in the book's theme (longest text of each
    column, header included, times :data:`CHAR_PX`, plus :data:`CELL_PAD_PX` per column). A header wraps at its
    spaces, so it counts by its longest word."""
    cols = [df.index.to_series().astype(str)] if index else []
    heads = [" ".join(map(str, df.index.names)) if any(n is not None for n in df.index.names) else ""] if index else []
    for c in df.columns:
        cols.append(df[c].astype(str))
        heads.append(" ".join(map(str, c)) if isinstance(c, tuple) else str(c))
    width = 0.0
    for values, head in zip(cols, heads):
        longest_word = max((_text_len(w) for w in head.split()), default=0)
        longest = max([longest_word] + [_text_len(v) for v in values])
        width += longest * CHAR_PX + CELL_PAD_PX
    return width


def column_groups(df: pd.DataFrame, max_px: float = COLUMN_PX, index: bool = True) -> list[pd.DataFrame]:
    """``df`` split by columns into the fewest consecutive groups that each fit ``max_px`` with the row labels
    repeated; one group (``df`` itself) when it fits. A single column wider than ``max_px`` gets a group of its
    own (its text wraps)."""
    if estimated_width(df, index) <= max_px or df.shape[1] <= 1:
        return [df]
    base = estimated_width(df.iloc[:, :0], index)
    groups, current, width = [], [], base
    for c in df.columns:
        w = estimated_width(df[[c]], index=False)
        if current and width + w > max_px:
            groups.append(current)
            current, width = [], base
        current.append(c)
        width += w
    groups.append(current)
    return [df[g] for g in groups]


def caption(text: str, body: str, label: str | None = None) -> str:
    """A Markdown table with a numbered caption (MyST ``table`` directive: "Table N: text")."""
    name = f":name: {label}\n" if label else ""
    return f"\n:::{{table}} {text}\n{name}\n{body}\n:::\n"


def _markdown(df: pd.DataFrame, index: bool) -> str:
    d = df.copy()
    if index:
        names = [n for n in d.index.names if n is not None]
        d = d.reset_index()
        if not names:
            d = d.rename(columns={d.columns[0]: ""})
    d.columns = [(" ".join(map(str, c)).strip() if isinstance(c, tuple) else str(c)).replace("|", "\\|")
                 for c in d.columns]
    # a "|" in a cell or a header would end it early
    d = d.map(lambda v: str(v).replace("|", "\\|"))
    # row labels left, values right-aligned (numbers line up on their last digit)
    align = ["left" if k < (d.shape[1] - len(df.columns)) or k == 0 else "right" for k in range(d.shape[1])]
    return d.to_markdown(index=False, disable_numparse=True, colalign=align)


def table(df: pd.DataFrame, title: str | None = None, *, note: str = "", abbreviations: Mapping[str, str] | None = None,
          decimals: int | Mapping[str, int] = 3, leading_zero: bool = True, index: bool = True,
          max_px: float = COLUMN_PX, label: str | None = None, formatted: bool = False) -> Markdown:
    """``df`` as a Markdown table (or several, split by columns) that fits the content column.

    Parameters
    ----------
    df : DataFrame; numbers are formatted by :func:`frame` (unless ``formatted``: cells are already text).
    title : caption; with a title each table is numbered ("Table N: title"); a split table's parts say which
        columns they hold ("title (columns a–c)").
    note : a sentence shown under the table(s) (what the marks mean, where the values come from).
    abbreviations : {short: long} shown as a legend under the table(s).
    decimals, leading_zero : as :func:`number`.
    index : show the index as the first column (the row labels; repeated in every part of a split table).
    max_px : width budget (default the content column, :data:`COLUMN_PX`).
    label : a MyST label for cross-references (first part only).

    Returns an :class:`IPython.display.Markdown` object (the notebook output a reader sees).
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a DataFrame, got {type(df).__name__}")
    text = df.astype(str) if formatted else frame(df, decimals, leading_zero=leading_zero)
    if isinstance(text.index, pd.RangeIndex) and index:
        index = False  # a 0, 1, 2 ... column tells a reader nothing
    parts = column_groups(text, max_px, index)
    chunks = []
    for k, part in enumerate(parts):
        body = _markdown(part, index)
        if title:
            t = title if len(parts) == 1 else f"{title} ({_span(part.columns)})"
            chunks.append(caption(t, body, label if k == 0 else None))
        else:
            chunks.append(body)
    tail = " ".join(s for s in (note, legend(abbreviations or {})) if s)
    return Markdown("\n\n".join(chunks) + (f"\n\n{tail}\n" if tail else "\n"))


def _span(cols) -> str:
    names = [" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in cols]
    return names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"


def tabs(items: Mapping[str, str | Markdown], sync: str | None = None) -> Markdown:
    """Alternatives (a classifier, a task, a measure) as sphinx-design tabs: ``{label: markdown}``.

    ``sync``: a key prefix; tabs with the same label in several tab sets of a page switch together.
    """
    if not isinstance(items, Mapping) or not items:
        raise ValueError("items must be a non-empty mapping {tab label: markdown}")
    out = ["", "::::::{tab-set}"]
    for label, body in items.items():
        body = body.data if isinstance(body, Markdown) else str(body)
        key = f"\n:sync: {sync}-{re.sub(r'[^A-Za-z0-9]+', '-', str(label)).strip('-').lower()}" if sync else ""
        out += [f":::::{{tab-item}} {label}{key}", "", body, ":::::"]
    out += ["::::::", ""]
    return Markdown("\n".join(out))
