"""The shipped CI recipes (ci-recipes/*.yml) run as their runner would run them, in a fresh clone.

Each recipe's YAML is parsed; the steps that are commands (GitHub ``run:``, GitLab ``script:``) run
in order in bash with the runner's shell flags, inside a ``git clone`` of this working tree, with
``python`` a fresh virtual environment (the runtime dependencies reachable through a ``.pth``, so
``pip install .`` installs logkit itself from the clone, as on the runner). The runner's variables
are given the values the runner would give them. Then the artifact each recipe publishes must hold
the site, with the canonical address the variables set.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "ci-recipes"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env or {**os.environ, **GIT_ENV}, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{cmd}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A clone of this working tree (committed as it is) and a fresh venv's bin directory."""
    base = tmp_path_factory.mktemp("ci")
    src = base / "src"
    files = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], REPO).split("\0")
    for name in filter(None, files):
        path = REPO / name
        if path.is_file() and not name.startswith(("site/", ".venv/")):
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    _run(["git", "init", "-q", "-b", "main"], src)
    _run(["git", "add", "-A"], src)
    _run(["git", "commit", "-qm", "snapshot"], src)
    clone = base / "clone"
    _run(["git", "clone", "-q", str(src), str(clone)], base)
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], base)
    purelib = next(Path(p) for p in site.getsitepackages() if p.endswith("site-packages"))
    target = next((venv / "lib").glob("python*/site-packages"))
    (target / "zz-runtime-deps.pth").write_text(str(purelib) + "\n")  # the dependencies, not logkit
    return clone, venv / "bin"


def _shell_env(bin_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOGKIT_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(GIT_ENV)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env.update(extra)
    return env


def _canonical(html: str) -> str | None:
    found = re.search(r'<link rel="canonical" href="([^"]+)"', html)
    return found.group(1) if found else None


def test_github_pages_workflow_builds_the_site_it_uploads(runner: tuple[Path, Path]) -> None:
    clone, bin_dir = runner
    workflow = yaml.safe_load((RECIPES / "github-pages.yml").read_text())
    build = workflow["jobs"]["build"]
    assert workflow["jobs"]["deploy"]["needs"] == "build" and build["runs-on"] == "ubuntu-latest"
    uses = [s["uses"].split("@")[0] for s in build["steps"] if "uses" in s]
    assert uses == ["actions/checkout", "actions/setup-python", "actions/configure-pages", "actions/upload-pages-artifact"]
    outputs = {"steps.pages.outputs.base_url": "https://team.github.io/kb"}  # what configure-pages outputs
    ran = []
    for step in build["steps"]:
        if "run" not in step:
            continue
        env = {k: re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: outputs[m.group(1)], str(v))
               for k, v in step.get("env", {}).items()}
        _run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], clone, _shell_env(bin_dir, env))
        ran.append(step["run"])
    assert any("logkit build --strict" in r for r in ran) and any("pip install" in r for r in ran)
    artifact = clone / next(s for s in build["steps"] if "upload-pages-artifact" in s.get("uses", ""))["with"]["path"]
    home = (artifact / "index.html").read_text()
    assert _canonical(home) == "https://team.github.io/kb/index.html"
    assert (artifact / "decisions" / "DR-0001" / "index.html").is_file()  # the shipped ids keep their URLs


def test_gitlab_pages_job_builds_public(runner: tuple[Path, Path]) -> None:
    clone, bin_dir = runner
    shutil.rmtree(clone / "site", ignore_errors=True)
    job = yaml.safe_load((RECIPES / "gitlab-pages.yml").read_text())["pages"]
    assert job["image"].startswith("python:3") and job["artifacts"]["paths"] == ["public"]
    runner_vars = {"CI_PAGES_URL": "https://team.gitlab.io/kb", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}
    variables = {k: os.path.expandvars(v) if "$" not in v else v.replace("$CI_PAGES_URL", runner_vars["CI_PAGES_URL"])
                 for k, v in job["variables"].items()}
    # GitLab runs the script's lines in one shell that stops at the first failure
    _run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(job["script"])], clone,
         _shell_env(bin_dir, {**runner_vars, **variables}))
    home = (clone / "public" / "index.html").read_text()
    assert _canonical(home) == "https://team.gitlab.io/kb/index.html"


def test_a_site_without_an_address_has_no_canonical_link(tmp_path: Path) -> None:
    """The shipped configuration sets no site_url: relative links, no canonical, until the team sets one."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert "site_url" not in config
    env = {k: v for k, v in os.environ.items() if k != "LOGKIT_SITE_URL"}
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "logkit", "--sessions", str(REPO / "sessions"), "build", "--docs",
                    str(tmp_path / "docs"), "--out", str(out)], cwd=REPO, env=env, check=True, capture_output=True,
                   timeout=600)
    assert _canonical((out / "index.html").read_text()) is None
    assert "kb.example" not in (out / "index.html").read_text()
