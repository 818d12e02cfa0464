"""Tests of the executable book: toc/chapters consistency, parameter cells, profiles, the runner, the CI build."""
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest
import yaml

from capshift import book

ROOT = Path(__file__).resolve().parents[1]
TOC = ROOT / "_toc.yml"
REQUIRED_KEYS = """volpi2025leap volpi2024simple volpi2025quacc gonzalez2024binary sebastiani2020evaluation moreo2021quapy
moreo2025kdey forman2008quantifying bunse2022multiclass lipton2018detecting smith2004sampling saerens2002adjusting
garg2022leveraging guillory2021predicting kivimaki2025confidence diamond2016cvxpy stellato2020osqp pedregosa2011scikit
kelly_uci triguero2017keel""".split()

FRONT = textwrap.dedent("""\
    ---
    jupytext:
      text_representation: {extension: .md, format_name: myst, format_version: 0.13}
    kernelspec: {display_name: Python 3, language: python, name: python3}
    ---
    """)


def chapter_sources():
    return book.chapters(TOC)


def run_book(*args, cwd=ROOT, timeout=1800):
    return subprocess.run([sys.executable, "-m", "capshift.book", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def scratch_book(tmp_path, pages: dict[str, str], profile: dict | None = None) -> Path:
    """A tiny book in tmp_path with the repo's real _config.yml and references.bib; returns its toc."""
    for f in ("_config.yml", "references.bib"):
        shutil.copy2(ROOT / f, tmp_path / f)
    for name, text in pages.items():
        (tmp_path / "book" / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "book" / f"{name}.md").write_text(text)
    names = list(pages)
    toc = {"format": "jb-book", "root": f"book/{names[0]}",
           "chapters": [{"file": f"book/{n}"} for n in names[1:]] + [{"file": "run_record"}]}
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc))
    if profile is not None:
        (tmp_path / "book" / "params").mkdir(parents=True, exist_ok=True)
        (tmp_path / "book" / "params" / "ci.yml").write_text(yaml.safe_dump(profile))
    return tmp_path / "_toc.yml"


def notebook_page(title, params_src, body="print('ok')"):
    return FRONT + f"\n# {title}\n\n```{{code-cell}} ipython3\n:tags: [parameters]\n\n{params_src}\n```\n\n" \
                   f"```{{code-cell}} ipython3\n{body}\n```\n"


# ------------------------------------------------------------------------------------------ repository consistency
def test_toc_matches_book_pages():
    docs = book.toc_docnames(TOC)
    assert docs[0] == "book/intro" and docs[-1] == "run_record"
    for doc in docs:
        assert doc in book.GENERATED or (ROOT / f"{doc}.md").exists(), f"_toc.yml entry {doc} has no .md file"
    pages = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")}
    assert pages == set(docs) - book.GENERATED, "every book/*.md must be in _toc.yml and vice versa"
    assert "book/bibliography" in docs and not book.is_notebook(ROOT / "book/bibliography.md")


@pytest.mark.parametrize("src", [p for p in sorted((ROOT / "book").glob("*.md")) if book.is_notebook(p)],
                         ids=lambda p: p.stem)
def test_every_chapter_opens_the_same_way_and_ends_with_exercises(src):
    text = src.read_text()
    box = re.search(r":::\{admonition\} In this lecture\n:class: tip\n\n(.*?)\n:::", text, re.S)
    assert box, f"{src.name}: no ':::{{admonition}} In this lecture' box"
    assert box.group(1).startswith("You will learn") and "Prerequisites:" in box.group(1), src.name
    assert text.index("In this lecture") < text.index("\n## "), f"{src.name}: the box comes before the first section"
    assert "\n## Exercises\n" in text, f"{src.name}: no Exercises section"
    assert not re.search(r"^### ", text.split("\n## ", 1)[0], re.M), f"{src.name}: an H3 before the first H2"


@pytest.mark.parametrize("src", [p for p in sorted((ROOT / "book").glob("*.md")) if book.is_notebook(p)],
                         ids=lambda p: p.stem)
def test_first_code_cell_is_commented_parameters_cell(src, tmp_path):
    name = src.stem
    nb = jupytext.read(src)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "no outputs may be committed"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and "parameters" in code[0].metadata.get("tags", []), f"{name}: first code cell must be tagged parameters"
    source = code[0].source
    comments = {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    assigned = []
    for node in ast.parse(source).body:
        assert isinstance(node, (ast.Assign, ast.AnnAssign)), f"{name}: only assignments in the parameters cell"
        assert set(range(node.lineno, node.end_lineno + 1)) & comments, f"{name}: line {node.lineno} needs a comment"
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        assigned += [t.id for t in targets]
    assert set(assigned) == set(book.declared(src, tmp_path)), f"{name}: papermill must see every parameter"


def test_ci_profile_keys_are_declared(tmp_path):
    profile = book.load_profile("ci", ROOT)
    chaps = chapter_sources()
    assert set(profile) <= set(chaps), f"ci.yml names unknown chapters: {set(profile) - set(chaps)}"
    for name, params in profile.items():
        declared = papermill.inspect_notebook(str(book.to_ipynb(chaps[name], tmp_path / f"{name}.ipynb")))
        assert set(params) <= set(declared), f"ci.yml: {name} has no parameter(s) {set(params) - set(declared)}"


def test_experiments_defaults_are_the_offline_datasets(tmp_path):
    # the chapter runs, by default, every dataset with an offline copy, in the paper's table order
    from capshift import datasets

    found = book.declared(ROOT / "book" / "experiments.md", tmp_path)
    for task in ("binary", "multiclass"):
        default = ast.literal_eval(found[f"{task}_datasets"]["default"])
        assert default == datasets.names(task, offline=True), task


def test_bibliography_has_required_keys_and_every_cited_key():
    keys = set(re.findall(r"@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text()))
    assert set(REQUIRED_KEYS) <= keys, set(REQUIRED_KEYS) - keys
    cited = set()
    for md in (ROOT / "book").glob("*.md"):
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", md.read_text()):
            cited |= {k.strip() for k in group.split(",")}
    assert cited <= keys, f"cited but not in references.bib: {cited - keys}"


def test_config_builds_offline_and_strict():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["execute"]["execute_notebooks"] == "off"
    assert cfg["bibtex_bibfiles"] == ["references.bib"]
    sphinx = cfg["sphinx"]["config"]
    assert sphinx["nitpicky"] and sphinx["numfig"] and sphinx["intersphinx_mapping"] == {}
    assert not cfg["launch_buttons"]["thebe"] and not cfg["launch_buttons"]["binderhub_url"]


# ---------------------------------------------------------------------------------------------------- the runner
def test_overrides_are_parsed_as_yaml():
    assert book.parse_overrides([["n", "10"], ["c", "svm"], ["x", "0.5"], ["f", "false"]]) == \
        {"n": 10, "c": "svm", "x": 0.5, "f": False}


def test_unknown_parameter_fails_before_execution(tmp_path, capsys):
    toc = scratch_book(tmp_path, {"intro": notebook_page("A", "n: int = 1  # n\nseed: int = 0  # seed")})
    out = tmp_path / "_out"
    assert book.main(["chapter", "intro", "-p", "bogus", "3", "--toc", str(toc), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'intro'" in err and "bogus" in err and "n, seed" in err
    assert not out.exists(), "nothing may be executed when a parameter is unknown"
    assert book.main(["check", "--only", "intro", "-p", "n", "5", "--toc", str(toc)]) == 0


@pytest.mark.parametrize("value,annotation,ok", [
    (3, "int", True), (True, "int", False), ("abc", "int", False), (2.5, "int", False), (2, "float", True),
    ("x", "float", False), ("lr", "str", True), (1, "str", False), (["a", "b"], "list[str]", True),
    ([1], "list[str]", False), ("a", "list", False), (None, "int | None", True), (None, "Optional[int]", True),
    (None, "int", False), (False, "bool", True), ({"a": 1}, "dict", True), (object(), "MyType", True)])
def test_parameter_values_are_checked_against_annotations(value, annotation, ok):
    assert book.type_ok(value, annotation) is ok


def test_check_reports_bad_types_and_yaml_without_traceback(tmp_path, capsys):
    toc = scratch_book(tmp_path, {"intro": notebook_page("A", "n: int = 1  # n\nname: str = 'a'  # name")})
    assert book.main(["check", "--only", "intro", "-p", "n", "abc", "--toc", str(toc)]) == 2
    err = capsys.readouterr().err
    assert "parameter n is declared int" in err and "'abc'" in err
    assert book.main(["check", "--only", "intro", "-p", "n", "[1,", "--toc", str(toc)]) == 2
    err = capsys.readouterr().err
    assert "-p n" in err and "not valid YAML" in err and "Traceback" not in err
    bad = tmp_path / "bad.yml"
    bad.write_text("intro: [n: 1\n")
    assert book.main(["check", "--profile", str(bad), "--toc", str(toc)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    assert book.main(["check", "--toc", str(tmp_path / "missing.yml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_unparsable_parameter_line_is_an_error(tmp_path, capsys):
    # papermill silently skips a line whose comment holds '=': it could never be overridden
    toc = scratch_book(tmp_path, {"intro": notebook_page("A", "n: int = 1  # n = items\nseed: int = 0  # seed")})
    assert book.main(["check", "--toc", str(toc)]) == 2
    assert "cannot parse" in capsys.readouterr().err


def test_unknown_profile_key_is_an_error(tmp_path, capsys):
    toc = scratch_book(tmp_path, {"intro": notebook_page("A", "n: int = 1  # n")}, profile={"intro": {"m": 2}})
    assert book.main(["check", "--profile", "ci", "--toc", str(toc)]) == 2
    assert "m" in capsys.readouterr().err


@pytest.mark.parametrize("broken", ["See {numref}`fig-missing`.", "See {cite}`nobody1999nothing`.", None])
def test_build_fails_on_any_warning(tmp_path, broken):
    page = "# Scratch\n\nA page citing {cite}`volpi2025leap`.\n\n" + (broken or "") + "\n"
    toc = scratch_book(tmp_path, {"intro": page, "bibliography": "# Bibliography\n\n```{bibliography}\n```\n"})
    res = run_book("build", "--toc", toc, "--out", tmp_path / "_build", cwd=tmp_path)
    if broken:
        assert res.returncode != 0, res.stdout[-2000:]
    else:
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert (tmp_path / "_build/html/index.html").exists()


def test_markdown_outputs_render_tables_and_math_is_local(tmp_path):
    # chapters display result tables as Markdown outputs; commonmark rendering would print them as raw text
    body = "from IPython.display import Markdown, display\ndisplay(Markdown('| a | b |\\n|---|---|\\n| 1 | 2 |'))"
    toc = scratch_book(tmp_path, {"intro": notebook_page("A table and $x^2$", "n: int = 1  # n", body)})
    res = run_book("build", "--toc", toc, "--out", tmp_path / "_build", cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    html = (tmp_path / "_build/html/book/intro.html").read_text()
    assert "<table" in html and "<p>| a | b |" not in html
    # math is typeset by a MathJax copy inside the site, not fetched from a CDN
    assert (tmp_path / "_build/html/_static/mathjax/tex-chtml.js").exists()
    assert 'src="../_static/mathjax/tex-chtml.js"' in html


def test_chapter_reexecutes_one_and_reuses_the_rest(tmp_path):
    pages = {"intro": notebook_page("A", "n: int = 1  # n", "from myst_nb import glue\nglue('nn', n)"),
             "other": notebook_page("B", "k: int = 2  # k")}
    toc = scratch_book(tmp_path, pages)
    out = tmp_path / "_build"
    res = run_book("build", "--toc", toc, "--out", out, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    other = out / "src/book/other.ipynb"
    stamp = other.stat().st_mtime_ns
    res = run_book("chapter", "intro", "-p", "n", "7", "--toc", toc, "--out", out, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert other.stat().st_mtime_ns == stamp, "the other chapter must be reused"
    nb = nbformat.read(out / "src/book/intro.ipynb", as_version=4)
    assert nb.metadata.capshift.overrides == {"n": 7}
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "remove-cell" in injected[0].metadata.tags
    record = (out / "src/run_record.md").read_text()
    assert "| `n` | `7` | overridden |" in record and "| `k` | `2` | default |" in record


# ------------------------------------------------------------------------------------------- the full CI build
def test_full_ci_build(ci_book):
    """Execute every chapter with the CI profile and build the book nitpicky with warnings as errors (the build
    is the session fixture of conftest.py, shared with the browser test tests/test_site.py)."""
    out, res = ci_book
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-5000:]
    assert (out / "html/index.html").exists()
    assert (out / "html/run_record.html").exists()
    assert "_build/html/index.html" in res.stdout
    for name, src in chapter_sources().items():
        assert (out / "src" / src.relative_to(ROOT).with_suffix(".ipynb")).exists(), name



def test_float_literals_and_quoted_strings():
    from capshift.book import parse_overrides

    got = parse_overrides([["alpha", "1e-3"], ["b", "2E5"], ["c", "[1e-2, 0.5]"], ["d", '"1e-3"'], ["e", "10"]])
    assert got == {"alpha": 0.001, "b": 200000.0, "c": [0.01, 0.5], "d": "1e-3", "e": 10}
    assert book.type_ok(got["alpha"], "float")


def test_parameter_values_are_checked_before_execution(tmp_path):
    src = tmp_path / "ch.md"
    src.write_text("---\njupytext:\n  text_representation: {extension: .md, format_name: myst}\n"
                   "kernelspec: {display_name: Python 3, language: python, name: python3}\n---\n\n# C\n\n"
                   "```{code-cell} ipython3\n:tags: [parameters]\n\nclassifier: str = \"lr\"  # h\n```\n\n"
                   "```{code-cell} ipython3\n:tags: [remove-cell, check-parameters]\n\n"
                   "from capshift.classifiers import make_classifier\nmake_classifier(classifier)\n```\n")
    book.check_values("ch", src, {"classifier": "lr"}, tmp_path)  # a known name: no error
    with pytest.raises(book.BookError, match=r"chapter 'ch': unknown classifier 'xgboost'; choose one of"):
        book.check_values("ch", src, {"classifier": "xgboost"}, tmp_path)
    with pytest.raises(book.BookError, match="xgboost"):
        book.resolve({"ch": src}, ["ch"], {}, {"classifier": "xgboost"}, tmp_path)


def test_chapters_execute_two_at_a_time_and_a_failure_names_its_chapter(tmp_path):
    pages = {"intro": notebook_page("A", "n: int = 1  # n", "import os\nprint(os.getpid())"),
             "b": notebook_page("B", "n: int = 1  # n", "import os\nprint(os.getpid())"),
             "c": notebook_page("C", "n: int = 1  # n", "raise ValueError('boom in c')"),
             "d": notebook_page("D", "n: int = 1  # n", "import os\nprint(os.getpid())").replace(
                 "---\n", "---\nrun_alone: true\n", 1)}
    toc = scratch_book(tmp_path, pages)
    chaps = book.chapters(toc)
    dest = {n: tmp_path / "src" / f"{n}.ipynb" for n in chaps}
    plan = {"intro": {"n": 2}, "b": {}, "d": {}}
    assert [n for n in chaps if book.runs_alone(chaps[n])] == ["d"]
    book.execute_all(plan, chaps, dest, "ci", tmp_path, tmp_path / "failed", jobs=2)
    pids, ended = set(), {}
    for name in plan:
        nb = nbformat.read(dest[name], as_version=4)
        assert nb.metadata["capshift"]["overrides"] == plan[name]
        assert nb.metadata["capshift"]["jobs"] == (1 if name == "d" else 2)  # d measures times: run alone
        pids.add(nb.cells[-1].outputs[0]["text"].strip())
        ended[name] = dest[name].stat().st_mtime
    assert len(pids) == 3  # each chapter had a kernel of its own
    assert ended["d"] >= max(ended["intro"], ended["b"])  # after the others, not beside them
    with pytest.raises(book.BookError, match="(?s)chapter 'c' failed.*boom in c"):
        book.execute_all({"b": {}, "c": {}}, chaps, dest, "ci", tmp_path, tmp_path / "failed", jobs=2)
    assert (tmp_path / "failed" / "c.ipynb").exists()
    record = book.run_record({n: dest[n] for n in plan}, tmp_path)
    assert record.count("2 chapters executed at a time") == 2
    with pytest.raises(book.BookError, match="jobs must be at least 1"):
        book.run(toc, tmp_path / "_out", "default", None, {}, jobs=0)


# ------------------------------------------------------------------------------- recorded runs (book/measured/)
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:root|home|tmp|work|var/folders|Users)/[\w.-]+")


def test_every_recorded_file_says_how_it_was_produced():
    """book/measured/runs.yml lists every recorded file with its commit, command, date, wall time and machine
    (the run record shows it), and no recorded file holds a path of the machine that recorded it (issue 28)."""
    measured = ROOT / "book" / "measured"
    runs = yaml.safe_load((measured / "runs.yml").read_text())["runs"]
    listed = [f for r in runs for f in r["files"]]
    on_disk = sorted(p.name for p in measured.iterdir() if p.name != "runs.yml")
    assert sorted(listed) == on_disk, "book/measured/runs.yml must list each recorded file exactly once"
    for r in runs:
        assert all(r.get(k) for k in book.MEASURED_FIELDS), r
        assert re.fullmatch(r"[0-9a-f]{7,40}", str(r["commit"])), r["commit"]
        assert subprocess.run(["git", "cat-file", "-e", f"{r['commit']}^{{commit}}"], cwd=ROOT).returncode == 0, \
            f"{r['commit']} is not a commit of this repository"
    for p in measured.iterdir():
        hits = MACHINE_PATH.findall(p.read_text(errors="replace"))
        assert not hits, f"{p.name} holds machine paths: {hits[:3]}"
    lines = "\n".join(book.measured_runs(ROOT))
    assert "## Recorded runs" in lines and all(f"`{r['commit']}`" in lines for r in runs)
    assert all(len(line) <= 88 for line in lines.splitlines() if line.startswith(("python", "    ", "capshift"))), \
        "commands are wrapped so that no code line is wider than the column"
    # Sphinx highlights them as bash: a token the lexer cannot read (an unmatched quote) is a build warning
    from pygments.lexers import BashLexer
    from pygments.token import Error
    blocks = re.findall(r"```bash\n(.*?)```", lines, flags=re.S)
    assert len(blocks) == len(runs)
    assert not [v for b in blocks for t, v in BashLexer().get_tokens(b) if t is Error]


def test_measured_runs_reports_a_missing_field(tmp_path):
    (tmp_path / "book" / "measured").mkdir(parents=True)
    assert book.measured_runs(tmp_path) == []
    (tmp_path / "book" / "measured" / "runs.yml").write_text("runs:\n  - files: [a.csv]\n    what: x\n")
    with pytest.raises(book.BookError, match="entry 1 lacks commit, command, date, wall_time, machine"):
        book.measured_runs(tmp_path)


def test_read_recording_gives_the_table_and_its_header(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("# capshift: what, measured 2026-11-26\n# command: python x.py --n 3\n#commit: abc1234\na,b\n1,x\n2,y\n")
    table, header = book.read_recording(p)
    assert header == ["capshift: what, measured 2026-11-26", "command: python x.py --n 3", "commit: abc1234"]
    assert table.columns.tolist() == ["a", "b"] and table["a"].tolist() == [1, 2]
    # every recording of the book reads as a table (its header, when it has one, is set apart)
    for csv in (ROOT / "book" / "measured").glob("*.csv"):
        table, header = book.read_recording(csv)
        assert len(table) and not str(table.columns[0]).startswith("#"), csv.name


def test_kernel_environment_shares_the_cores_between_chapters(monkeypatch):
    for var in book.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    assert book.kernel_environment(1, cores=8) == {}  # one chapter at a time: the libraries' defaults
    assert book.kernel_environment(2, cores=8) == {var: "4" for var in book.THREAD_VARS}
    assert book.kernel_environment(2, cores=2) == {var: "1" for var in book.THREAD_VARS}
    assert book.kernel_environment(4, cores=2) == {var: "1" for var in book.THREAD_VARS}  # never 0 threads
    assert {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"} <= set(book.THREAD_VARS)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # what the user set is kept
    assert "OMP_NUM_THREADS" not in book.kernel_environment(2, cores=2)
    assert book.kernel_environment(2, cores=2)["OPENBLAS_NUM_THREADS"] == "1"


def test_execute_hands_the_thread_limits_to_the_kernel_and_restores_the_environment(tmp_path, monkeypatch):
    src = tmp_path / "tiny.md"
    src.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n  name: python3\n"
                   "---\n\n# Tiny\n\n```{code-cell} ipython3\n:tags: [parameters]\n\nn: int = 1  # a number\n```\n")
    for var in book.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    seen = {}

    def fake_execute(inp, out, **kw):  # papermill without a kernel: record what the kernel would inherit
        seen.update({var: os.environ.get(var) for var in (*book.THREAD_VARS, "MPLBACKEND")})
        shutil.copy(inp, out)

    monkeypatch.setattr(book.papermill, "execute_notebook", fake_execute)
    monkeypatch.setattr(book.os, "cpu_count", lambda: 2)
    book.execute("tiny", src, {}, "default", tmp_path / "out" / "tiny.ipynb", tmp_path, tmp_path / "failed", jobs=2)
    assert {var: seen[var] for var in book.THREAD_VARS} == {var: "1" for var in book.THREAD_VARS}
    assert seen["MPLBACKEND"] == book.INLINE
    assert not any(var in os.environ for var in book.THREAD_VARS)  # the builder's own environment is put back
    book.execute("tiny", src, {}, "default", tmp_path / "out" / "tiny.ipynb", tmp_path, tmp_path / "failed", jobs=1)
    assert all(seen[var] is None for var in book.THREAD_VARS)  # one chapter at a time: the libraries' defaults


def test_the_cpu_line_names_the_widest_vector_instructions(monkeypatch, tmp_path):
    # a recorded number depends on them (numpy's exponential, the BLAS kernels): the run record says which
    cpuinfo = tmp_path / "cpuinfo"
    real = book.Path
    monkeypatch.setattr(book, "Path", lambda p: real(cpuinfo) if str(p) == "/proc/cpuinfo" else real(p))
    for flags, expected in (("fpu sse2 avx avx2 avx512f avx512dq", "AMD EPYC (AVX-512)"),
                            ("fpu sse2 avx avx2", "AMD EPYC (AVX2)"), ("fpu sse2", "AMD EPYC")):
        cpuinfo.write_text(f"processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {flags}\n")
        assert book.cpu_model() == expected
