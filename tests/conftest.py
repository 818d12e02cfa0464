"""Shared fixtures: the CI-profile book is built once per test session (tests/test_book.py checks the build,
tests/test_site.py loads its pages in a browser)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capshift import book

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def ci_book(tmp_path_factory):
    """``python -m capshift.book build --profile ci`` into a session folder, as a local build (no repository
    URL in the environment, so no repository/launch buttons). Returns (out_dir, CompletedProcess).

    ``CAPSHIFT_TEST_BUILD=DIR`` (a developer's shortcut, never set by ``.ci/run``) checks the build in DIR
    instead of building one."""
    reuse = os.environ.get("CAPSHIFT_TEST_BUILD")  # a developer's shortcut: check an existing build's pages
    if reuse:
        return Path(reuse), subprocess.CompletedProcess(["(reused)", reuse], 0, "", "")
    out = tmp_path_factory.mktemp("ci_book") / "_build"
    env = {k: v for k, v in os.environ.items() if k not in (book.REPOSITORY_ENV, book.BRANCH_ENV)}
    res = subprocess.run([sys.executable, "-m", "capshift.book", "build", "--profile", "ci", "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=3600, env=env)
    return out, res
