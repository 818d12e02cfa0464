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
(validate parameters only). Unknown parameter names are reported before anything is executed.
"""
from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
import papermill
import yaml

GENERATED = {"run_record"}  # toc entries written by this module, not read from the source tree
PACKAGES = ["numpy", "scipy", "scikit-learn", "quapy", "cvxpy", "pandas", "papermill", "jupyter-book"]
STAGED_FILES = ["_config.yml", "_toc.yml", "references.bib"]
KERNEL = "python3"
INLINE = "module://matplotlib_inline.backend_inline"  # so that figures are captured as cell outputs


class BookError(Exception):
    """A user-facing error (bad parameter, missing file, failed chapter)."""


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
    return path.suffix == ".md" and "kernelspec" in jupytext.read(path).metadata


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
            out[name] = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise BookError(f"-p {name} {value!r}: the value is not valid YAML ({str(e).splitlines()[0]}); quote "
                            "strings and close brackets, e.g. -p datasets '[cmc, haberman]'") from None
    return out


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
                raise BookError(f"chapter {name!r}: parameter {p} is declared {want} (default {valid[p].get('default')}) "
                                f"but got {value!r} ({type(value).__name__}); pass a {want}")
        plan[name] = params
    return plan


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
def execute(name: str, src: Path, params: dict, profile: str, dest: Path, tmp: Path, failed: Path) -> float:
    """Execute one chapter with papermill into ``dest``; hide the injected cell; return the run time (s)."""
    ipynb = to_ipynb(src, tmp / f"{name}.ipynb")
    defaults = {k: v["default"] for k, v in papermill.inspect_notebook(str(ipynb)).items()}
    staging = tmp / f"{name}.executed.ipynb"
    print(f"[capshift.book] executing {name} with {params or 'its defaults'}", flush=True)
    t0 = time.perf_counter()
    backend = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = INLINE  # the kernel inherits our environment; `make` exports MPLBACKEND=Agg
    try:
        papermill.execute_notebook(
            str(ipynb), str(staging), parameters=params, kernel_name=KERNEL, cwd=str(src.parent),
            progress_bar=False, log_output=False,
        )
    except Exception as exc:  # papermill.PapermillExecutionError and kernel failures
        kept = failed / f"{name}.ipynb"
        if staging.exists():
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(staging, kept)
        raise BookError(f"chapter {name!r} failed: {exc}\n(the partly executed notebook: {kept})") from exc
    finally:
        if backend is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = backend
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
    nb.metadata["capshift"] = {
        "chapter": name, "source": src.name, "profile": profile, "defaults": defaults, "overrides": params,
        "seconds": round(seconds, 2), "executed": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest)
    print(f"[capshift.book] {name}: {seconds:.1f} s -> {dest}", flush=True)
    return seconds


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


def run_record(notebooks: dict[str, Path], root: Path) -> str:
    """Markdown for the run-record page, read back from the executed notebooks' metadata."""
    out = ["# Run record", "",
           "How the pages of this build were produced: each chapter was executed by papermill "
           "(`python -m capshift.book`) with the parameters below, then the book was built with execution off.", "",
           "## Environment", "", "| | |", "| --- | --- |",
           f"| git commit | `{git_commit(root)}` |", f"| python | `{platform.python_version()}` |",
           f"| platform | `{platform.platform()}` |"]
    out += [f"| {pkg} | `{version(pkg)}` |" for pkg in PACKAGES]
    out += ["", "## Chapters", ""]
    for name, path in notebooks.items():
        meta = nbformat.read(path, as_version=4).metadata.get("capshift", {})
        out += [f"### {name}", "",
                f"Profile `{meta.get('profile')}`; run time {meta.get('seconds')} s; executed {meta.get('executed')}.", ""]
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


# ------------------------------------------------------------------------------------------------------------- build
def stage(toc: Path, src_dir: Path) -> None:
    """Copy config, toc, bibliography, plain pages and assets (not chapters, not unlisted .md) into ``src_dir``."""
    root = toc.parent
    src_dir.mkdir(parents=True, exist_ok=True)
    for f in STAGED_FILES:
        if (root / f).exists():
            shutil.copy2(toc if f == "_toc.yml" else root / f, src_dir / f)
    dirs = set()
    for doc in toc_docnames(toc):
        if doc in GENERATED:
            continue
        page = root / f"{doc}.md"
        dirs.add(page.parent)
        if not is_notebook(page):
            (src_dir / doc).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page, src_dir / f"{doc}.md")
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


def run(toc: Path, out: Path, profile_name: str, only: list[str] | None, cli: dict, reuse: bool = False) -> int:
    """Validate, execute (``only`` or all chapters; the rest reused when ``reuse`` and present), stage and build."""
    toc, out = toc.resolve(), out.resolve()
    root, src_dir = toc.parent, out / "src"
    chaps = chapters(toc)
    profile = load_profile(profile_name, root)
    dest = {name: src_dir / src.relative_to(root).with_suffix(".ipynb") for name, src in chaps.items()}
    with tempfile.TemporaryDirectory(prefix="capshift-book-") as tmp:
        plan = make_plan(chaps, only, profile, cli, Path(tmp), skip={n for n in chaps if reuse and dest[n].exists()})
        for name in chaps:
            if name not in plan:
                stale = chaps[name].stat().st_mtime > dest[name].stat().st_mtime
                print(f"[capshift.book] reusing {dest[name]}" + (" (older than its source!)" if stale else ""))
        for name, params in plan.items():
            execute(name, chaps[name], params, profile_name, dest[name], Path(tmp), out / "failed")
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
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m capshift.book", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--profile", default="default",
                        help="'default' (the chapters' own defaults), a name in book/params/ (e.g. 'ci'), or a .yml path")
    common.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help="override a parameter (value parsed as YAML); repeatable")
    common.add_argument("--toc", type=Path, default=None, help="table of contents (default ./_toc.yml); its folder is the book root")
    common.add_argument("--out", type=Path, default=None, help="build folder (default <root>/_build): src/ and html/ go there")
    b = sub.add_parser("build", parents=[common], help="execute every chapter and build the HTML")
    b.add_argument("--only", nargs="+", metavar="NAME", help="execute only these chapters, reuse the others' notebooks")
    c = sub.add_parser("chapter", parents=[common], help="re-execute one chapter (reuse the others) and rebuild")
    c.add_argument("name")
    k = sub.add_parser("check", parents=[common], help="validate profile and -p parameters without executing")
    k.add_argument("--only", nargs="+", metavar="NAME")
    args = ap.parse_args(argv)

    toc = args.toc or default_toc()
    out = args.out or toc.resolve().parent / "_build"
    try:
        cli = parse_overrides(args.param)
        if args.cmd == "check":
            profile = load_profile(args.profile, toc.resolve().parent)
            with tempfile.TemporaryDirectory(prefix="capshift-book-") as tmp:
                plan = make_plan(chapters(toc.resolve()), args.only, profile, cli, Path(tmp))
            print(json.dumps(plan, indent=1, default=str))
            print(f"[capshift.book] parameters OK for {len(plan)} chapter(s)")
            return 0
        only = [args.name] if args.cmd == "chapter" else args.only
        return run(toc, out, args.profile, only, cli, reuse=bool(only))
    except BookError as exc:
        print(f"[capshift.book] error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
