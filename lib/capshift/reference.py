"""Published result tables of the LEAP (Machine Learning 2025), LEAP (Discovery Science 2024) and QuAcc
(Intelligenza Artificiale 2025) papers, shipped as package data in ``capshift/data/paper/``.

Holds :data:`TABLES` (table id -> CSV file), :func:`paper_table` (one table as a long DataFrame) and
:func:`paper_values` (mean/std of the AE indexed by (dataset, method) for one paper, measure,
classifier and task). The numbers are transcribed from the papers' text; see
``capshift/data/paper/README.md`` for sources and column meanings.
"""
from __future__ import annotations

import importlib.resources
from functools import lru_cache

import pandas as pd

__all__ = ["TABLES", "PAPERS", "paper_table", "paper_values"]

TABLES = {
    "leap2025_table1": "leap2025_table1_LR_binary_acc.csv",
    "leap2025_table2": "leap2025_table2_LR_multiclass_acc.csv",
    "leap2025_table4": "leap2025_table4_LR_binary_f1.csv",
    "leap2025_table5": "leap2025_table5_LR_multiclass_f1.csv",
    "ds2024_table1": "ds2024_table1_allclassifiers_binary_acc.csv",
    "quacc2025_table3": "quacc2025_table3_LR_binary_acc_f1.csv",
    "quacc2025_table4": "quacc2025_table4_LR_multiclass_acc_f1.csv",
}
#: short paper name -> value of the CSVs' ``paper`` column
PAPERS = {"leap2025": "Volpi2025_LEAP_MLJ", "ds2024": "Volpi2024_LEAP_DS", "quacc2025": "Volpi2025_QuAcc_IA"}


@lru_cache(maxsize=None)
def _read(table_id: str) -> pd.DataFrame:
    path = importlib.resources.files("capshift") / "data" / "paper" / TABLES[table_id]
    with importlib.resources.as_file(path) as p:
        return pd.read_csv(p, dtype={"std": float, "best": object})


def paper_table(table_id: str) -> pd.DataFrame:
    """One published table, long format (one row per cell), as in its CSV.

    ``table_id``: a key of :data:`TABLES`, e.g. "leap2025_table1". Returns a new DataFrame with columns
    ``paper, table, classifier, measure, setting, dataset, method, mean, std, best, dagger`` (mean/std
    float, NaN where the paper prints no value). Raises ValueError for an unknown id.
    Source: the tables named in ``capshift/data/paper/README.md``.
    """
    if table_id not in TABLES:
        raise ValueError(f"table_id must be one of {sorted(TABLES)}, got {table_id!r}")
    return _read(table_id).copy()


def paper_values(paper: str = "leap2025", measure: str = "acc", classifier: str = "LR",
                 task: str = "binary") -> pd.DataFrame:
    """Published AE values for one (paper, measure, classifier, task), e.g. LEAP 2025 Table 1 by default.

    ``paper``: "leap2025", "ds2024" or "quacc2025"; ``measure``: "acc" or "f1"; ``classifier``: "LR"
    (plus "kNN", "SVM", "MLP" for ds2024); ``task``: "binary" or "multiclass". Returns a DataFrame
    indexed by (dataset, method), columns ``mean``, ``std`` (float; std NaN where not printed) and
    ``dagger``, in the paper's row order; includes the paper's ``Average`` rows where it has them.
    Raises ValueError naming the argument when no shipped table has that combination.
    """
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)}, got {paper!r}")
    df = pd.concat([_read(t) for t in TABLES if t.startswith(paper + "_")], ignore_index=True)
    for arg, col, val in (("measure", "measure", measure), ("classifier", "classifier", classifier),
                          ("task", "setting", task)):
        if val not in set(df[col]):
            raise ValueError(f"{arg}={val!r} is not available for paper={paper!r}; choose from {sorted(set(df[col]))}")
        df = df[df[col] == val]
    if df.empty:
        raise ValueError(f"paper={paper!r} has no table for measure={measure!r}, classifier={classifier!r}, "
                         f"task={task!r}; see capshift.reference.TABLES")
    return df.set_index(["dataset", "method"])[["mean", "std", "dagger"]]
