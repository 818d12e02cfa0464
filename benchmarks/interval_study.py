"""Interval constructions compared on the 23 offline datasets, with NannyML's CBPE band on the same samples (issue 31).

Usage (from the repository root)::

    PYTHONPATH=lib .venv/bin/python benchmarks/interval_study.py run --work $TMPDIR/intervals --n-jobs 2
    /work/nannyml-venv/bin/python benchmarks/interval_study.py nannyml --work $TMPDIR/intervals
    PYTHONPATH=lib .venv/bin/python benchmarks/interval_study.py collect --work $TMPDIR/intervals

``all`` runs the three (``--nannyml-python`` names NannyML's interpreter; see benchmarks/README.md for its venv).
Over several L/V/U splits (the split is drawn from ``--seed``; ``collect_splits``)::

    for s in 0 1 2 3 4; do PYTHONPATH=lib .venv/bin/python benchmarks/interval_study.py run --seed $s \
        --work $TMPDIR/iv/s$s --candidates rates rates-prevbins-floor \
        rates-prevbins-union; done
    PYTHONPATH=lib .venv/bin/python benchmarks/interval_study.py splits --works $TMPDIR/iv/s*

and where each split's error comes from (stage ``misses``, one construction: :func:`misses`)::

    PYTHONPATH=lib .venv/bin/python benchmarks/interval_study.py misses --works $TMPDIR/iv/s* --candidates default

Stage ``run`` (capshift's venv), per dataset (joblib, ``--n-jobs`` processes, one BLAS thread each): the LEAP
paper's L / V / U split, a logistic regression h trained on L, ``--n-samples`` UPP test samples from U at each
size of ``--sizes``; for each method of ``--methods`` (O-LEAP_KDEy and SLD-CBPE unless told), the method fitted
on V and one Monte Carlo cross-conformal calibrator (:class:`capshift.conformal.ConformalInterval`, 10 random
halvings of V, 500 calibration samples per size and measure) whose fits every construction of :data:`CANDIDATES` shares
(:meth:`~capshift.conformal.ConformalInterval.with_options`); the 95% interval of every construction on every test
sample, for accuracy and F1 (binary F1 of class 1, macro-F1 for multiclass, as the LEAP paper). It writes h's
posteriors on V and on the samples for NannyML. Stage ``nannyml`` (NannyML 0.13.1's venv, no capshift import):
``nannyml.CBPE`` fitted on V's posteriors and labels, estimating every sample as one chunk; its band is NannyML's
``lower/upper_confidence_boundary`` (the estimate +- 3 standard errors of the metric on chunks of that size, clipped
to the metric's range). Stage ``collect``: one tidy CSV, a row per (dataset, method, construction, size, measure,
sample) in the work folder, summarised per dataset (``capshift.uncertainty.dataset_scores``: coverage, mean width,
Winkler score, oracle width, AE) into ``book/measured/interval_study.csv``, and for the default, the previous default
and NannyML's band also per amount of shift (:data:`SHIFT_EDGES`) into ``book/measured/interval_study_by_shift.csv``,
each with a header of the command, commit, wall time and machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "measured" / "interval_study.csv"
METHODS = ["O-LEAP_KDEy", "SLD-CBPE"]
MEASURES = ["accuracy", "f1"]
#: Constructions: the scheme of ConformalInterval, then the options of ConformalInterval.with_options
#: (pool_correction, bins, score, floor, bin_by). Constructions of one scheme share its fits and calibration samples.
CANDIDATES = {
    "mc-both-floor": ("mc", False, 1, "both", True, "predicted"),  # the default before issue 31
    "mc": ("mc", False, 1, "absolute", False, "predicted"),
    "mc-floor": ("mc", False, 1, "absolute", True, "predicted"),
    "mc-pool-floor": ("mc", True, 1, "absolute", True, "predicted"),
    "mc-pool-both-floor": ("mc", True, 1, "both", True, "predicted"),
    "mc-bins-floor": ("mc", False, 4, "absolute", True, "predicted"),
    "mc-prevbins-floor": ("mc", False, 4, "absolute", True, "prevalence"),
    "mc-pool-prevbins-floor": ("mc", True, 4, "absolute", True, "prevalence"),
    "mc-pool-prevbins-both-floor": ("mc", True, 4, "both", True, "prevalence"),
    "rates": ("rates", False, 1, "absolute", False, "predicted"),
    "rates-floor": ("rates", False, 1, "absolute", True, "predicted"),
    "rates-both-floor": ("rates", False, 1, "both", True, "predicted"),
    "rates-prevbins": ("rates", False, 4, "absolute", False, "prevalence"),
    "rates-prevbins-floor": ("rates", False, 4, "absolute", True, "prevalence"),
    "rates-prevbins-union": ("rates", False, 4, "absolute", "union", "prevalence"),
    "rates-prevbins-floor-perks": ("rates", False, 4, "absolute", True, "prevalence", "perks"),
    "rates-prevbins-union-perks": ("rates", False, 4, "absolute", "union", "prevalence", "perks"),
    # predict_interval's default for the LEAP and CBPE families, read from capshift.conformal.RATES_INTERVALS when
    # the run starts (_default_options), so that the record is of the default itself
    "default": ("rates", "RATES_INTERVALS"),
    # the default with the rate discrepancy drawn from the posterior predictive of the test pool's rates
    # (ConformalInterval rate_model="posterior") instead of the halvings of V (issue 31)
    "default-pp": ("rates", "RATES_INTERVALS"),
    # the default with the rate discrepancy propagated through the prevalence estimate for every number of classes
    # (ConformalInterval propagate=True; the default's "auto" propagates for two classes only), with the halvings
    # and with the posterior pools (issue 31)
    "default-prop": ("rates", "RATES_INTERVALS"),
    "default-pp-prop": ("rates", "RATES_INTERVALS"),
    # the default with the method's own response to the halvings (ConformalInterval rate_model="response": the
    # method fitted on each half, both predicting samples of the second) instead of the measure's (issue 31)
    "default-resp": ("rates", "RATES_INTERVALS"),
    # the propagation with the floor's reach only (floor=True), not the union that the default's "auto" takes for
    # two classes: the propagation widens the near-constant classifiers' intervals itself (issue 31)
    "default-prop-reach": ("rates", "RATES_INTERVALS"),
    # per method: the method's own response to the halvings for the CBPE family, the default's halvings for the
    # LEAP family (issue 31)
    "default-cbpe-resp": ("rates", "RATES_INTERVALS"),
    # predict_interval's default of each method as its class defines it (``interval_params``: RATES_INTERVALS for
    # the LEAP family, CBPE_INTERVALS for the CBPE family, whose rate term is the method's own response for two
    # classes); the run checks that the class's options are otherwise RATES_INTERVALS (:func:`_rate_model`)
    "method-default": ("rates", "RATES_INTERVALS"),
}
#: ConformalInterval ``rate_model`` of the constructions that do not use the halvings, or a dict method ->
#: rate_model for a construction that chooses it per method (the halvings for the methods it does not name), or
#: "interval_params" for the one read from the method's registered class
RATE_MODEL = {"default-pp": "posterior", "default-pp-prop": "posterior", "default-resp": "response",
              "default-cbpe-resp": {"SLD-CBPE": "response"}, "method-default": "interval_params"}
#: The constructions whose rate discrepancy is propagated through the prevalence estimate
PROPAGATE = ("default-prop", "default-pp-prop", "default-prop-reach")
#: The constructions whose floor is the reach (floor=True) whatever the default's
REACH = ("default-prop-reach",)


def _command() -> str:
    """This run's command line for a record: a path inside the repository relative to it, one in the temporary
    folder as ``$TMPDIR/...`` (no machine path in a record)."""
    tmp = Path(tempfile.gettempdir()).resolve()

    def portable(arg: str) -> str:  # one shell word
        path = Path(arg)
        if not path.is_absolute():
            return shlex.quote(arg)
        path = path.resolve()
        if path.is_relative_to(ROOT):
            return shlex.quote(str(path.relative_to(ROOT)))
        return f"$TMPDIR/{shlex.quote(str(path.relative_to(tmp)))}" if path.is_relative_to(tmp) else shlex.quote(arg)

    return "PYTHONPATH=lib python benchmarks/interval_study.py " + " ".join(map(portable, sys.argv[1:]))


def _rate_model(construction: str, method: str) -> str:
    """The ConformalInterval ``rate_model`` of ``construction`` for ``method`` (:data:`RATE_MODEL`)."""
    rm = RATE_MODEL.get(construction, "halvings")
    if rm == "interval_params":  # the method's own default; its other options must be the run's (RATES_INTERVALS)
        from capshift.conformal import RATES_INTERVALS
        from capshift.registry import get
        params = dict(get(method).cls.interval_params)
        rm = params.pop("rate_model", "halvings")
        if params != {k: v for k, v in RATES_INTERVALS.items() if k != "rate_model"}:
            raise SystemExit(f"{method}'s interval_params {params} differ from RATES_INTERVALS beyond the rate "
                             "model: the run's other options are RATES_INTERVALS', so add them to the run first")
        return rm
    return rm.get(method, "halvings") if isinstance(rm, dict) else rm


def _default_options():
    """The options of ``with_options`` that :data:`capshift.conformal.RATES_INTERVALS` sets (the scheme, splits and
    calibration samples are the run's: rates, 10, 500, which the run checks against it), the propagation last."""
    from capshift.conformal import RATES_INTERVALS as R
    if (R["scheme"], R["n_splits"], R["n_cal"]) != ("rates", 10, 500):
        raise SystemExit(f"RATES_INTERVALS is {R}, but the run's scheme, splits and calibration samples are rates, 10, "
                         "500: make the run's follow it")
    return (False, R["bins"], R["score"], R["floor"], R["bin_by"], R["prior"], R.get("propagate", False))


def _one_dataset(name: str, args) -> str:
    os.environ["OMP_NUM_THREADS"] = "1"
    import warnings

    import numpy as np
    import pandas as pd
    from threadpoolctl import threadpool_limits

    from capshift import datasets, evaluation, protocols, registry
    from capshift.conformal import ConformalInterval
    from capshift.tables import contingency_table, get_measure

    work = Path(args.work)
    out = work / f"{name}_capshift{'_' + args.tag if args.tag else ''}.parquet"
    if out.exists():
        return f"{name}: cached"
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    with threadpool_limits(1):
        s = datasets.load(name, seed=args.seed)
        h = evaluation.train_classifier("lr", args.seed, s.X_L, s.y_L)
        n = s.n_classes
        p_val = np.bincount(s.y_V, minlength=n) / len(s.y_V)
        pred_U = h.predict(s.X_U)
        samples, true_tables, shifts = {}, {}, {}
        for size in args.sizes:
            idx = protocols.upp_indices(s.y_U, size, args.n_samples, args.seed, n_classes=n)
            samples[size] = [s.X_U[i] for i in idx]
            true_tables[size] = np.stack([contingency_table(s.y_U[i], pred_U[i], n) for i in idx])
            shifts[size] = np.abs(true_tables[size].sum(axis=2) - p_val).sum(axis=1)
        rows, seconds, failures = [], {}, {}
        for m in args.methods:
            t1 = time.perf_counter()
            base = registry.make_method(m, h, random_state=args.seed)
            full = registry.make_method(m, h, random_state=args.seed).fit(s.X_V, s.y_V)
            seconds[m] = {"method fit": time.perf_counter() - t1}
            cis = {}
            for key in dict.fromkeys((CANDIDATES[c][0], _rate_model(c, m)) for c in args.candidates):
                t1 = time.perf_counter()
                # the posterior draws use the default's prior (fixed at fit; with_options does not redraw)
                cis[key] = ConformalInterval(base, scheme=key[0], n_splits=10, n_cal=500, random_state=args.seed,
                                             rate_model=key[1], prior=_default_options()[5])
                cis[key].fit(s.X_V, s.y_V, point_estimator=full)
                seconds[m][f"{key[0]}{'' if key[1] == 'halvings' else ' ' + key[1]} fit"] = time.perf_counter() - t1
            for size in args.sizes:
                for measure in MEASURES:
                    true = np.asarray(get_measure(measure)(true_tables[size]), dtype=float)
                    try:
                        point = np.asarray(full.predict_batch(samples[size], measure), dtype=float)
                    except ValueError as e:  # the method fitted on V fails on this split's samples (SLD-CBPE's
                        # BCTS overflow): every construction fails for it here
                        failures.update({(m, c): str(e) for c in args.candidates})
                        continue
                    for cand in args.candidates:
                        if (m, cand) in failures:
                            continue
                        scheme, *opts = CANDIDATES[cand]
                        opts = list(_default_options()) if opts == ["RATES_INTERVALS"] else opts
                        if cand in PROPAGATE:  # the default's options with the propagation forced on
                            opts[-1] = True
                        if cand in REACH:  # with_options' fourth option is the floor
                            opts[3] = True
                        t2 = time.perf_counter()
                        ci = cis[scheme, _rate_model(cand, m)]
                        try:
                            b = ci.with_options(*opts).bounds(samples[size], point, measure, 0.05)
                        except ValueError as e:  # e.g. rate_model="response": the method fitted on a half fails
                            failures[m, cand] = str(e)
                            continue
                        seconds[m][f"{cand}/{size}/{measure}"] = time.perf_counter() - t2
                        # rate_model="response": calibration samples on which a half's fit failed and that fell
                        # back to the halvings' term (0 for the other rate models)
                        fell = getattr(ci, "response_fallbacks_", {}).get((size, measure), 0)
                        rows.append(pd.DataFrame({
                            "dataset": name, "task": "binary" if n == 2 else "multiclass", "method": m,
                            "construction": cand, "size": size, "measure": measure,
                            "sample": np.arange(len(point)), "true": true, "predicted": point,
                            "lower": b[:, 0], "upper": b[:, 1], "shift": shifts[size], "fallbacks": fell}))
        cls = [f"p{c}" for c in range(n)]
        ref = pd.DataFrame(h.predict_proba(s.X_V), columns=cls)
        ref["y_pred"], ref["y_true"] = h.predict(s.X_V), s.y_V
        ref.to_parquet(work / f"{name}_reference.parquet", index=False)
        for size in args.sizes:
            Xa = np.vstack(samples[size])
            ana = pd.DataFrame(h.predict_proba(Xa), columns=cls)
            ana["y_pred"] = h.predict(Xa)
            ana.to_parquet(work / f"{name}_analysis_{size}.parquet", index=False)
            pd.DataFrame({"sample": range(args.n_samples), "shift": shifts[size],
                          **{f"true_{ms}": np.asarray(get_measure(ms)(true_tables[size]), dtype=float)
                             for ms in MEASURES}}).to_parquet(work / f"{name}_truth_{size}.parquet", index=False)
        (work / f"{name}_seconds{'_' + args.tag if args.tag else ''}.json").write_text(json.dumps(seconds))
        # a construction that failed for a method on this split has no rows for it at any size: the splits stage
        # scores a (dataset, method, construction) only with every split done
        rows = [r for r in rows if (r["method"].iat[0], r["construction"].iat[0]) not in failures]
        (work / f"{name}_failures{'_' + args.tag if args.tag else ''}.json").write_text(
            json.dumps([{"method": m, "construction": c, "error": e} for (m, c), e in failures.items()]))
        pd.concat(rows, ignore_index=True).to_parquet(out, index=False)
    return f"{name}: {time.perf_counter() - t0:.0f} s"


def run(args) -> None:
    from joblib import Parallel, delayed
    Path(args.work).mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _recording import git_commit
    (Path(args.work) / f"run{'_' + args.tag if args.tag else ''}.json").write_text(
        json.dumps({**vars(args), "commit": git_commit()}))
    for msg in Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")(
            delayed(_one_dataset)(name, args) for name in args.datasets):
        print(msg, flush=True)


def run_nannyml(args) -> None:
    """In NannyML's venv: no capshift import here (benchmarks/_nannyml.py)."""
    import pandas as pd
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _nannyml import cbpe, version
    work = Path(args.work)
    for name in args.datasets:
        ref = pd.read_parquet(work / f"{name}_reference.parquet")
        frames = []
        for size in args.sizes:
            ana = pd.read_parquet(work / f"{name}_analysis_{size}.parquet")
            t0 = time.perf_counter()
            metrics = ["accuracy", "f1"]
            res = cbpe(ref, ana, size, metrics)
            sec = time.perf_counter() - t0
            for metric, measure in zip(metrics, ["accuracy", "f1"]):
                frames.append(pd.DataFrame({
                    "dataset": name, "size": size, "measure": measure, "sample": range(len(res)),
                    "predicted": res[(metric, "value")].to_numpy(),
                    "lower": res[(metric, "lower_confidence_boundary")].to_numpy(),
                    "upper": res[(metric, "upper_confidence_boundary")].to_numpy(), "seconds": sec}))
        pd.concat(frames, ignore_index=True).to_parquet(work / f"{name}_nannyml.parquet", index=False)
        print(f"nannyml {name}", flush=True)
    (work / "nannyml.json").write_text(json.dumps({"nannyml": version(), "python": platform.python_version()}))


#: Amount of shift (L1 distance between the sample's and V's prevalence) of the by-shift file: about terciles of
#: the UPP samples' shift over the 23 datasets.
SHIFT_EDGES = (0.4, 0.7)
SHIFT_LABELS = ("low (< 0.4)", "moderate (0.4-0.7)", "strong (>= 0.7)")
#: Constructions kept per sample for the by-shift comparison with NannyML's band.
BY_SHIFT = ("default", "method-default", "rates-prevbins-floor", "nannyml-band")  # those of them that the record holds


def collect(args, wall=None) -> None:
    import numpy as np
    import pandas as pd
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _recording import git_commit, machine, write_recording

    from capshift.uncertainty import dataset_scores
    folders = [Path(w) for w in (args.works or [args.work])]
    if args.works:  # the datasets whose NannyML stage ran in one of the folders
        args.datasets = [n for n in args.datasets if any((w / f"{n}_nannyml.parquet").exists() for w in folders)]
    frames = []
    for name in args.datasets:
        work = next((w for w in folders if (w / f"{name}_nannyml.parquet").exists()), folders[0])
        ours = pd.concat([pd.read_parquet(f) for f in sorted(work.glob(f"{name}_capshift*.parquet"))],
                         ignore_index=True)
        ours = ours[ours["construction"].isin(args.candidates)]  # --candidates: the constructions recorded
        nm = pd.read_parquet(work / f"{name}_nannyml.parquet").drop(columns="seconds")
        task = ours["task"].iloc[0]
        truth = pd.concat([pd.read_parquet(work / f"{name}_truth_{size}.parquet").assign(size=size)
                           for size in args.sizes])
        truth = truth.melt(id_vars=["sample", "shift", "size"], var_name="measure", value_name="true")
        truth["measure"] = truth["measure"].str.removeprefix("true_")
        nm = nm.merge(truth, on=["size", "measure", "sample"], validate="one_to_one")
        nm = nm.assign(task=task, method="NannyML-CBPE", construction="nannyml-band")
        nm["lower"], nm["upper"] = nm["lower"].fillna(0.0), nm["upper"].fillna(1.0)  # NaN: no bound that side
        frames += [ours, nm.reindex(columns=ours.columns)]  # NannyML's band has no calibration (fallbacks NaN)
    df = pd.concat(frames, ignore_index=True)
    by = ["task", "method", "size", "measure"]
    scores = dataset_scores(df, 0.05, by)
    df["shift_bin"] = pd.Categorical.from_codes(np.digitize(df["shift"], SHIFT_EDGES), SHIFT_LABELS)
    shift = dataset_scores(df[df["construction"].isin(BY_SHIFT)], 0.05, by + ["shift_bin"])
    run_args = json.loads(sorted(folders[0].glob("run*.json"))[0].read_text())  # a run, tagged or not
    versions = json.loads((folders[0] / "nannyml.json").read_text())
    cmd = _command()
    what = (f"{len(args.datasets)} offline datasets, LR, {run_args['n_samples']} UPP samples of each size "
            f"{args.sizes}, 95% intervals, accuracy and F1")
    runs = [json.loads(f.read_text()) for w in folders for f in w.glob("run*.json")]
    commits = {r["commit"] for r in runs if set(r["candidates"]) & set(df["construction"])}
    tail = [f"commit of the runs {', '.join(sorted(commits))}, of this summary {git_commit()}; "
            f"NannyML {versions['nannyml']} in its own venv (Python {versions['python']})",
            f"wall time: {'%.0f s' % wall if wall else 'see book/measured/runs.yml'}; machine: {machine()}"]
    write_recording(args.out, [f"capshift: interval constructions and NannyML CBPE's band on the same samples "
                               f"({what}), per dataset (uncertainty.dataset_scores), measured {date.today()}",
                               f"command: {cmd}", *tail], scores.round(6))
    out_shift = Path(args.out).with_name(Path(args.out).stem + "_by_shift.csv")
    kept = ", ".join(c for c in BY_SHIFT if c in set(df["construction"]))
    write_recording(out_shift, [f"capshift: the interval constructions {kept} (NannyML CBPE's band) "
                                f"by amount of shift ({what}), per dataset and shift bin (L1 distance of the "
                                f"sample's prevalence to V's: edges {SHIFT_EDGES}), measured {date.today()}",
                                f"command: {cmd}", *tail], shift.round(6))
    print(f"wrote {len(scores)} rows to {args.out} and {len(shift)} to {out_shift}")


#: The repeated-splits record (stage ``splits``): the default and plain "rates" over several L/V/U splits.
OUT_SPLITS = ROOT / "book" / "measured" / "interval_splits.csv"


def collect_splits(args) -> None:
    """Stage ``splits``: the ``run`` stage's per-sample rows of several work folders, one per split seed (``run
    --seed s --work W_s``), scored per dataset over the splits (``capshift.uncertainty.split_scores``: the
    oracle that does not know the split beside each split's own) into ``book/measured/interval_splits.csv``."""
    import pandas as pd
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _recording import git_commit, machine, write_recording

    from capshift.uncertainty import split_scores
    frames, seeds, sizes, n_samples, all_runs = [], set(), set(), set(), []
    for w in map(Path, args.works):
        # a folder holds one split seed; its tagged runs (run_<tag>.json) add datasets or candidates
        runs = [json.loads(f.read_text()) for f in sorted(w.glob("run*.json"))]
        if len({r["seed"] for r in runs}) != 1:
            raise SystemExit(f"{w}: its runs used different split seeds; use one folder per seed")
        seeds.add(runs[0]["seed"])
        all_runs += runs
        sizes |= {tuple(r["sizes"]) for r in runs}
        n_samples |= {r["n_samples"] for r in runs}
        for name in args.datasets:
            files = sorted(w.glob(f"{name}_capshift*.parquet"))
            if files:
                frames += [pd.read_parquet(f).assign(split=runs[0]["seed"]) for f in files]
    if len(sizes) != 1 or len(n_samples) != 1:
        raise SystemExit(f"the runs differ in --sizes {sorted(sizes)} or --n-samples {sorted(n_samples)}")
    df = pd.concat(frames, ignore_index=True)
    # a dataset, and a construction of it, count only with every split done
    done = df.groupby("dataset")["split"].nunique()
    df = df[df["dataset"].isin(done[done == len(seeds)].index)]
    every = df.groupby(["dataset", "method", "construction"])["split"].transform("nunique") == len(seeds)
    dropped = sorted(set(map(tuple, df.loc[~every, ["dataset", "method", "construction"]].to_numpy())))
    pairs = df.groupby("construction")[["dataset", "method"]].apply(lambda g: len(g.drop_duplicates()))
    df = df[every]
    words = []  # per construction: every (dataset, method) pair, or the pairs
    for c in dict.fromkeys(d[2] for d in dropped):
        mine = [f"{d} {m}" for d, m, k in dropped if k == c]
        words.append(f"{c}: " + ("all" if len(mine) == pairs[c] else ", ".join(mine)))
    kept = set(df["construction"])  # the commits of the runs whose constructions the record keeps
    commits = {r.get("commit", "not recorded") for r in all_runs if kept & set(r["candidates"])}
    names = list(dict.fromkeys(df["dataset"]))
    scores = split_scores(df, 0.05, ["task", "method", "size", "measure"])
    # calibration samples (of n_cal per split) whose response term fell back to the halvings' term, summed over the
    # splits; runs made before the fallback have no column and had none (a failing half aborted the construction)
    keys = ["dataset", "task", "method", "size", "measure", "construction"]
    fell = df.assign(fallbacks=df.get("fallbacks", 0)).fillna({"fallbacks": 0}).groupby(keys + ["split"])[
        "fallbacks"].first().groupby(keys).sum().astype(int).rename("fallbacks")
    scores = scores.merge(fell.reset_index(), on=keys, how="left", validate="one_to_one")
    cmd = _command()
    write_recording(args.out_splits, [
        f"capshift: interval constructions over {len(seeds)} L/V/U splits (seeds {sorted(seeds)}) of {len(names)} "
        f"offline datasets, LR, {n_samples.pop()} UPP samples of each size {list(sizes.pop())} per split, 95% "
        f"intervals, accuracy and F1, per dataset over the splits (uncertainty.split_scores), measured {date.today()}",
        f"command: {cmd} (after `run --seed s --work W_s` for each seed)",
        f"commit of the runs {', '.join(sorted(commits))}, of this summary {git_commit()}; machine: {machine()}",
        "not scored, done on fewer than all the splits (not run on some, or failed there for the method: the run "
        f"stage's <dataset>_failures*.json): {'; '.join(words) if words else 'none'}"],
        scores.round(6))
    print(f"wrote {len(scores)} rows ({len(names)} datasets, {len(seeds)} splits) to {args.out_splits}")


#: Stage ``misses``: where a split's errors come from (issue 31), per (dataset, split, method, size, measure)
OUT_MISSES = ROOT / "book" / "measured" / "interval_misses.csv"


def _misses_of(name: str, seed: int, rows):
    """One dataset and split seed: ``rows`` (the run stage's per-sample rows of one construction, every method)
    with each sample's error split in three, from the sample's true prevalence pi and h's class-conditional rates
    (rows of its table) on V (R_V) and on the test pool U (R_U), for the measure f: ``quantification`` =
    predicted - f(pi R_V) (the method's error had U's rates been V's), ``rates`` = f(pi R_V) - f(pi R_U) (h's
    rates on the two pools differ), ``sampling`` = f(pi R_U) - true (the sample's own draw from U); the three sum
    to the error. The split and h are made once for all the methods of ``rows``."""
    import numpy as np

    from capshift import datasets, evaluation, protocols
    from capshift.tables import contingency_table, get_measure
    s = datasets.load(name, seed=seed)
    h = evaluation.train_classifier("lr", seed, s.X_L, s.y_L)
    n = s.n_classes
    pred_U = h.predict(s.X_U)
    rates = {}
    for pool, X, y in (("V", s.X_V, s.y_V), ("U", s.X_U, s.y_U)):
        t = contingency_table(y, h.predict(X) if pool == "V" else pred_U, n)
        rates[pool] = t / t.sum(axis=1, keepdims=True)
    out = []
    for (_, size, measure), g in rows.groupby(["method", "size", "measure"], sort=False):
        idx = protocols.upp_indices(s.y_U, int(size), len(g), seed, n_classes=n)
        prev = np.stack([contingency_table(s.y_U[i], pred_U[i], n).sum(axis=1) for i in idx])
        f = get_measure(measure)
        at = {k: np.asarray(f(prev[:, :, None] * r[None]), dtype=float) for k, r in rates.items()}
        g = g.sort_values("sample")
        out.append(g.assign(quantification=g["predicted"].to_numpy() - at["V"], rates=at["V"] - at["U"],
                            sampling=at["U"] - g["true"].to_numpy(), v_items=len(s.y_V), u_items=len(s.y_U)))
    return out


def misses(args) -> None:
    """Stage ``misses``: for ``--candidates`` (one construction) in the work folders of several split seeds, per
    (dataset, split, method, size, measure): coverage, mean half-width, mean error and its three parts
    (:func:`_misses_of`), into ``book/measured/interval_misses.csv``."""
    import numpy as np
    import pandas as pd
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _recording import git_commit, machine, write_recording
    if len(args.candidates) != 1:
        raise SystemExit("stage misses takes one construction (--candidates NAME)")
    frames = []
    for w in map(Path, args.works):
        seed = json.loads(next(iter(sorted(w.glob("run*.json")))).read_text())["seed"]
        for name in args.datasets:
            files = sorted(w.glob(f"{name}_capshift*.parquet"))
            rows = pd.concat([pd.read_parquet(f) for f in files]) if files else None
            if rows is None or not (rows["construction"] == args.candidates[0]).any():
                continue
            rows = rows[rows["construction"] == args.candidates[0]]  # the split and h made once for all methods
            frames += [x.assign(split=seed) for x in _misses_of(name, seed, rows)]
    df = pd.concat(frames, ignore_index=True)
    df["covered"] = (df["lower"] <= df["true"]) & (df["true"] <= df["upper"])
    df["half_width"] = (df["upper"] - df["lower"]) / 2
    df["error"] = df["predicted"] - df["true"]
    keys = ["dataset", "task", "v_items", "u_items", "split", "method", "size", "measure"]
    parts = ["error", "quantification", "rates", "sampling"]
    out = df.groupby(keys, sort=False).agg(C=("covered", "mean"), half_width=("half_width", "mean"),
                                           **{p: (p, "mean") for p in parts}).reset_index()
    assert np.allclose(out["error"], out[parts[1:]].sum(axis=1)), "the three parts must sum to the error"
    cmd = _command()
    write_recording(args.out_misses, [
        f"capshift: where the errors of the interval record's splits come from (construction {args.candidates[0]}, "
        f"{out['dataset'].nunique()} datasets, {out['split'].nunique()} splits), per dataset, split, method, size "
        f"and measure: coverage C, mean half-width, mean error = quantification + rates + sampling (stage misses), "
        f"measured {date.today()}",
        f"command: {cmd} (after `run --seed s --work W_s` for each seed)",
        f"commit {git_commit()}; machine: {machine()}"], out.round(6))
    print(f"wrote {len(out)} rows to {args.out_misses}")


def main(argv=None):
    sys.path.insert(0, str(ROOT / "lib"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=["run", "nannyml", "collect", "all", "splits", "misses"])
    ap.add_argument("--work", help="folder of the intermediate files (a re-run reuses them)")
    ap.add_argument("--works", nargs="+", default=None, help="stage splits: the work folders of the split seeds")
    ap.add_argument("--out-splits", default=str(OUT_SPLITS))
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--out-misses", default=str(OUT_MISSES))
    ap.add_argument("--datasets", nargs="+", default=None, help="default: the 23 offline LEAP datasets")
    ap.add_argument("--sizes", nargs="+", type=int, default=[100, 500])
    ap.add_argument("--n-samples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--nannyml-python", default=None)
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument("--methods", nargs="+", default=METHODS, help="stage run: the CAP methods (registry names)")
    ap.add_argument("--tag", default="", help="suffix of this run's files in --work (runs with other candidates)")
    args = ap.parse_args(argv)
    if args.stage in ("splits", "misses") and (args.work is not None or not args.works):
        ap.error(f"stage {args.stage} takes --works (one folder per split seed)")
    if args.stage not in ("splits", "misses") and (args.work is None) == (args.stage != "collect" or not args.works):
        ap.error("stage collect takes --work or --works (folders of one split seed: e.g. the binary and the "
                 "multiclass datasets' runs); the stages run, nannyml and all take --work")
    if args.datasets is None:
        if args.stage == "nannyml":
            args.datasets = json.loads((Path(args.work) / "run.json").read_text())["datasets"]
        else:
            from capshift import datasets
            args.datasets = datasets.names(offline=True)
    t0 = time.perf_counter()
    if args.stage in ("run", "all"):
        run(args)
    if args.stage == "nannyml":
        run_nannyml(args)
    if args.stage == "all":
        import subprocess
        subprocess.run([args.nannyml_python, __file__, "nannyml", "--work", args.work, "--sizes",
                        *map(str, args.sizes), "--datasets", *args.datasets], check=True)
    if args.stage in ("collect", "all"):
        collect(args, time.perf_counter() - t0 if args.stage == "all" else None)
    if args.stage == "splits":
        collect_splits(args)
    if args.stage == "misses":
        misses(args)


if __name__ == "__main__":
    main()
