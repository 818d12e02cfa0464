"""What the benchmark scripts share to write a recorded run: the commit, the machine, and a CSV preceded by `# `
header lines (title, command, versions, wall time) that the chapters read back (`book/measured/`).

A recorded file is read by people on other machines: :func:`portable` writes the paths of this machine (the
checkout, the home and temporary folders, the interpreter) as names a reader can substitute, so that no header
holds a path of the machine that recorded it (issue 28). Every recorded file is listed, with its commit, command,
date, wall time and machine, in ``book/measured/runs.yml``, which the book's run record shows."""
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from capshift.book import cpu_model

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """The checkout's short commit hash, with "-dirty" when the code that computes records (lib/, benchmarks/ but
    its mutation records) differs from it ("" outside a git checkout): a record made on uncommitted code says so."""
    root = Path(__file__).resolve().parents[1]
    head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True,
                          cwd=root).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "lib", "benchmarks", ":!benchmarks/mutation"],
                           cwd=root).returncode == 1
    return head + ("-dirty" if head and dirty else "")


def machine() -> str:
    """One line on the machine of a recorded run: cores, CPU, OS and Python."""
    return (f"{os.cpu_count()} cores, {cpu_model()}, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}")


def portable(text: str) -> str:
    """``text`` with this machine's paths replaced: the checkout -> ``.``, the interpreter's environment ->
    ``.venv``, the home folder -> ``~``, the temporary folder -> ``$TMPDIR``."""
    for path, name in ((Path(sys.prefix), ".venv"), (ROOT, "."), (Path(tempfile.gettempdir()), "$TMPDIR"),
                       (Path.home(), "~")):
        text = text.replace(str(path) + os.sep, name + "/").replace(str(path), name)
    return text


def write_recording(path, header: list[str], frame) -> None:
    """Write ``frame`` as CSV to ``path`` after the ``header`` lines, each prefixed with "# " and made
    :func:`portable` (their order is what the chapters read: title, command, then versions and/or commit and
    wall time)."""
    with open(Path(path), "w") as f:
        for line in header:
            f.write(f"# {portable(line)}\n")
        frame.to_csv(f, index=False)
