"""What the benchmark scripts share to write a recorded run: the commit, and a CSV preceded by `# ` header lines
(title, command, versions, wall time) that the chapters read back (`book/measured/`)."""
import subprocess
from pathlib import Path


def git_commit() -> str:
    """The checkout's short commit hash ("" outside a git checkout)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def write_recording(path, header: list[str], frame) -> None:
    """Write ``frame`` as CSV to ``path`` after the ``header`` lines, each prefixed with "# " (their order is
    what the chapters read: title, command, then versions and/or commit and wall time)."""
    with open(Path(path), "w") as f:
        for line in header:
            f.write(f"# {line}\n")
        frame.to_csv(f, index=False)
