"""capshift: classifier accuracy prediction (CAP) under dataset shift.

Modules: ``tables`` (contingency tables, measures), ``equations`` (governing equations),
``leap`` (S-LEAP, LEAP, O-LEAP), ``quantifiers`` (QuaPy quantifiers by name), ``calibration`` (temperature
scaling, BCTS, LasCal, RLLS), ``baselines``, ``quacc``, ``registry`` (every CAP method by name), ``datasets``,
``shift`` (dataset-shift families beyond PPS), ``protocols`` (every protocol by name: PPS and the shift families),
``evaluation`` (the one evaluation path), ``experiment`` (runner, results), ``grid`` (resumable grid runner),
``cli``, ``plots``, ``uncertainty`` (intervals around a CAP prediction), ``selection`` (model selection without
labels), ``estimate`` (your model on your files), ``reference`` (the papers' published numbers), ``validation``
(the argument checks and capshift's warnings), ``book`` (chapter runner).
"""
__version__ = "0.1.0"

# QuaPy's plotting module changes matplotlib's global rcParams when QuaPy is imported (font size 18,
# dpi 200, figure size 10x6); import it here once and put the user's settings back.
import matplotlib as _mpl

_saved = {k: _mpl.rcParams[k] for k in ("figure.figsize", "figure.dpi", "font.size")}
import quapy as _quapy  # noqa: E402,F401

_mpl.rcParams.update(_saved)
del _saved

# capshift's warnings (an input that is valid but leads to an estimate that cannot be trusted)
from .validation import (CalibrationWarning, CAPWarning, DegenerateClassifierWarning,  # noqa: E402,F401
                          InsufficientEvidenceWarning)

__all__ = ["CAPWarning", "CalibrationWarning", "DegenerateClassifierWarning", "InsufficientEvidenceWarning"]
