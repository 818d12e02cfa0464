"""capshift: classifier accuracy prediction (CAP) under dataset shift.

Modules: ``tables`` (contingency tables, measures), ``equations`` (governing equations),
``leap`` (S-LEAP, LEAP, O-LEAP), ``quantifiers`` (QuaPy quantifiers by name), ``baselines``,
``datasets``, ``protocols``, ``experiment`` (runner, results), ``plots``, ``reference`` (the
papers' published numbers), ``book`` (chapter runner).
"""
__version__ = "0.1.0"
