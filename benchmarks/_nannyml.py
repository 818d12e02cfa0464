"""NannyML's CBPE as the benchmarks run it, in NannyML's own venv: this module imports only pandas and nannyml
(NannyML 0.13.1 pins an older stack than capshift's; see benchmarks/README.md for its venv).

The reference and analysis frames hold h's posterior probabilities in columns ``p0``, ``p1``, ... (one per class),
its predictions in ``y_pred`` and, in the reference, the labels in ``y_true``."""
from __future__ import annotations

import os
import warnings


def posterior_columns(frame) -> list[str]:
    """The posterior columns ``p0``, ``p1``, ... of a frame, in class order."""
    return sorted((c for c in frame.columns if c.startswith("p") and c[1:].isdigit()), key=lambda c: int(c[1:]))


def cbpe(reference, analysis, chunk_size: int, metrics=("accuracy",)):
    """``nannyml.CBPE`` fitted on ``reference`` and estimating ``analysis`` in chunks of ``chunk_size`` rows:
    NannyML's result frame of the analysis period (``(metric, "value")``, ``(metric, "lower_confidence_boundary")``,
    ``(metric, "upper_confidence_boundary")``, ...). Binary when there are two posterior columns (NannyML reads
    the positive class's ``p1``), multiclass otherwise."""
    os.environ.setdefault("NML_DISABLE_USAGE_LOGGING", "1")  # NannyML sends usage statistics unless told not to
    import nannyml as nml
    cls = posterior_columns(reference)
    binary = len(cls) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = nml.CBPE(metrics=list(metrics), y_pred_proba="p1" if binary else {int(c[1:]): c for c in cls},
                       y_pred="y_pred", y_true="y_true", chunk_size=chunk_size,
                       problem_type="classification_binary" if binary else "classification_multiclass")
        est.fit(reference)
        return est.estimate(analysis).filter(period="analysis").to_df()


def version() -> str:
    import nannyml as nml
    return nml.__version__
