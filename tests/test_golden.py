"""Golden outputs: the Markdown the builder renders and the text the main CLI commands print.

Every page the builder writes for the shipped ``sessions/`` and for the realistic test knowledge
base (``tests/kb_factory.py``, which adds the page kinds the seeds lack: signatures, charts,
supersession, stale configurations) is compared byte for byte with ``tests/golden/pages/``; the
stdout, stderr and exit status of the main commands (``status``, ``session show|list``,
``hypothesis list``, ``decision list``, ``classify`` and ``bench parse`` on fixtures, ``run``'s
summary lines, ``--help`` of every command) with ``tests/golden/cli/``. All run as real processes
(``python -m logkit ...``) on real files. What changes from run to run is normalised first
(:func:`normalise`): timestamps of live runs, 32-hex event ids, temporary paths, durations, the
host name.

A change to a template or to a command's text fails here with a unified diff. When the change is
intended, regenerate the golden files and review them like code::

    LOGKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_golden.py
    git diff tests/golden/

Regenerating also deletes golden files of pages that are no longer built.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kb_factory import realistic
from logkit.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("LOGKIT_UPDATE_GOLDEN") == "1"
REGENERATE = "LOGKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/test_golden.py"

SHIPPED_SESSION = "2026-11-15-glm5-nvfp4-nan-at-decode"
CLASSIFY_LOG = REPO / "tests" / "fixtures" / "logs" / "arch-sglang-748.log"
BENCH_TEXT = REPO / "logkit" / "demo" / "standin" / "fixtures" / "bench" / "sglang-33108-2026.txt"

_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_EVENT_ID = re.compile(r"\b[0-9a-f]{32}\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms)\b")
_PID = re.compile(r"\b(pid|pgid)([ =:]+)\d+\b")


def normalise(text: str, *, roots: Iterable[tuple[Path, str]] = (), live: bool = False) -> str:
    """``text`` with what differs between runs replaced by placeholders.

    Always: 32-hex event ids, the given directories (``roots``: path -> placeholder, longest
    first) and the host name. With ``live`` (output of commands that really ran something just
    now) also timestamps, durations and process ids; the shipped sessions' timestamps are fixed
    and stay, so a change to how dates are shown is a diff too.
    """
    for path, placeholder in sorted(roots, key=lambda r: -len(str(r[0]))):
        text = text.replace(str(path), placeholder)
    text = _EVENT_ID.sub("<ID>", text)
    host = socket.gethostname()
    if host:
        text = re.sub(rf"\b{re.escape(host)}\b", "<HOST>", text)
    if live:
        text = _TIMESTAMP.sub("<TIME>", text)
        text = _DURATION.sub("<DURATION>", text)
        text = _PID.sub(r"\1\2<PID>", text)
    return text


def _compare(golden_dir: Path, actual: dict[str, str]) -> None:
    """Compare ``actual`` (relative path -> text) with the files under ``golden_dir``.

    With ``LOGKIT_UPDATE_GOLDEN=1`` writes them instead (and removes golden files nothing
    produces any more). Otherwise fails with one unified diff per differing file.
    """
    existing = {p.relative_to(golden_dir).as_posix() for p in golden_dir.rglob("*") if p.is_file()} \
        if golden_dir.is_dir() else set()
    if UPDATE:
        for rel, text in actual.items():
            path = golden_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
        for rel in existing - set(actual):
            (golden_dir / rel).unlink()
        for folder in sorted((p for p in golden_dir.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            if not any(folder.iterdir()):
                folder.rmdir()
        return
    problems = []
    for rel in sorted(set(actual) | existing):
        where = f"{golden_dir.relative_to(REPO)}/{rel}"
        if rel not in existing:
            problems.append(f"new output with no golden file: {where}")
            continue
        if rel not in actual:
            problems.append(f"golden file no longer produced: {where}")
            continue
        want = (golden_dir / rel).read_text(encoding="utf-8")
        if want != actual[rel]:
            problems.append("".join(difflib.unified_diff(
                want.splitlines(keepends=True), actual[rel].splitlines(keepends=True),
                fromfile=f"golden/{where}", tofile=f"actual/{rel}")))
    if problems:
        pytest.fail(f"{len(problems)} output(s) differ from tests/golden/; if intended, regenerate with\n"
                    f"    {REGENERATE}\nand review `git diff tests/golden/`.\n\n" + "\n".join(problems),
                    pytrace=False)


# --------------------------------------------------------------------------------------- pages


def _pages(docs: Path, roots: list[tuple[Path, str]]) -> dict[str, str]:
    return {p.relative_to(docs).as_posix(): normalise(p.read_text(encoding="utf-8"), roots=roots)
            for p in sorted(docs.rglob("*.md"))}


def _generate(sessions: Path, docs: Path) -> None:
    """Stages 1-5 of ``logkit build`` in a real process (mkdocs is not needed for the Markdown)."""
    # every line must validate (no warning), but not strict: the realistic knowledge base cites a
    # session that is not there on purpose, which --strict would refuse to publish
    script = ("import sys; from pathlib import Path; from logkit.builder import generate; "
              "r = generate(Path(sys.argv[1]), Path(sys.argv[2])); assert not r.warnings, r.warnings; print(r.pages)")
    done = subprocess.run([sys.executable, "-c", script, str(sessions), str(docs)], capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_pages_of_the_shipped_sessions(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(REPO / "sessions", sessions, ignore=shutil.ignore_patterns(".current", "*.lock"))
    docs = tmp_path / "docs"
    _generate(sessions, docs)
    pages = _pages(docs, [(tmp_path, "<TMP>")])
    # every page kind the seeds give rise to is covered
    assert {"index.md", "decisions/index.md", "configs/index.md", "backends/index.md", "signatures/index.md",
            "metrics/index.md", "sessions/index.md", "tags.md"} <= set(pages)
    assert any(p.startswith("decisions/DR-") for p in pages) and any(p.startswith("sessions/2026-") for p in pages)
    _compare(GOLDEN / "pages" / "shipped", pages)


@pytest.mark.slow
def test_pages_of_the_realistic_knowledge_base(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    realistic(sessions)
    docs = tmp_path / "docs"
    _generate(sessions, docs)
    pages = _pages(docs, [(tmp_path, "<TMP>")])
    kinds = {rel.split("/")[0] for rel in pages if "/" in rel}
    assert {"backends", "configs", "decisions", "metrics", "sessions", "signatures"} <= kinds
    assert len([p for p in pages if p.startswith("signatures/") and p != "signatures/index.md"]) >= 1
    _compare(GOLDEN / "pages" / "realistic", pages)


# ----------------------------------------------------------------------------------------- CLI


def _env(sessions: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOGKIT_")}
    env.update(LOGKIT_SESSIONS=str(sessions), COLUMNS="100", LINES="50", NO_COLOR="1", TZ="UTC",
               LOGKIT_GPU_ARCH="SM120")
    return env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "logkit", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


def _transcript(args: list[str], done: subprocess.CompletedProcess[str]) -> str:
    shown = " ".join(a if re.fullmatch(r"[\w./:=@,+-]+", a) else repr(a) for a in args)
    return f"$ logkit {shown}\n[exit {done.returncode}]\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"


def _name(args: list[str]) -> str:
    words = [a for a in (args[:args.index("--")] if "--" in args else args) if not a.startswith("/")]
    return re.sub(r"[^\w.-]+", "_", "_".join(words)).strip("_") + ".txt"


@pytest.mark.slow
def test_cli_on_the_shipped_sessions(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    shutil.copytree(REPO / "sessions", sessions, ignore=shutil.ignore_patterns(".current", "*.lock"))
    env = _env(sessions)
    roots = [(tmp_path, "<TMP>"), (REPO, "<REPO>")]
    commands = [
        ["session", "list"],
        ["session", "show", SHIPPED_SESSION],
        ["status", "--session", SHIPPED_SESSION],
        ["hypothesis", "list", "--session", SHIPPED_SESSION],
        ["decision", "list"],
        ["decision", "check"],
        ["classify", str(CLASSIFY_LOG)],
        ["classify", str(CLASSIFY_LOG), "--json"],
        ["bench", "parse", str(BENCH_TEXT)],
        ["schema", "--list"],
    ]
    actual = {}
    for args in commands:
        done = _run(args, env, tmp_path)
        actual["shipped/" + _name(args)] = normalise(_transcript(args, done), roots=roots)
    assert "DR-0001" in actual["shipped/decision_list.txt"]
    _compare(GOLDEN / "cli" / "shipped", {k.split("/", 1)[1]: v for k, v in actual.items()})


@pytest.mark.slow
def test_cli_on_a_live_session(tmp_path: Path) -> None:
    """A session recorded just now by real commands: run's summary, status, show, list."""
    sessions = tmp_path / "sessions"
    env = _env(sessions)
    roots = [(tmp_path, "<TMP>"), (REPO, "<REPO>"), (Path(sys.executable), "<PYTHON>")]
    py = sys.executable
    steps = [
        ["session", "start", "golden live session", "--id", "golden-live", "--goal", "see every line kind",
         "--tag", "golden"],
        ["hypothesis", "add", "exit status 3 is a crash", "--priority", "high"],
        ["hypothesis", "add", "a clean exit is fine"],
        ["run", "--tests", "H1", "--label", "fails", "--", py, "-c", "import sys; print('hello'); sys.exit(3)"],
        ["run", "--tests", "H2", "--label", "works", "--", py, "-c", "print('fine')"],
        ["hypothesis", "confirm", "H2", "--evidence", "A2", "--because", "exited 0"],
        ["note", "A1 printed hello before it failed", "--ref", "A1"],
        ["status"],
        ["status", "--last", "1"],
        ["session", "show"],
        ["session", "list"],
        ["hypothesis", "list"],
        ["decision", "list"],
    ]
    actual = {}
    for i, args in enumerate(steps, 1):
        done = _run(args, env, tmp_path)
        shown = [a.replace(py, "<PYTHON>") for a in args]
        words = [a for a in args[:2] if re.fullmatch(r"[a-z]+", a)]
        actual[f"{i:02d}_{'_'.join(words)}.txt"] = normalise(_transcript(shown, done), roots=roots, live=True)
    assert "[exit 3]" in actual["04_run.txt"]
    _compare(GOLDEN / "cli" / "live", actual)


def test_a_changed_output_fails_with_a_diff_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "GOLDEN", tmp_path)
    golden = tmp_path / "pages"
    golden.mkdir()
    (golden / "index.md").write_text("# Home\n\nold line\n", encoding="utf-8")
    (golden / "gone.md").write_text("x\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "UPDATE", False)
    with pytest.raises(pytest.fail.Exception) as failed:
        _compare(golden, {"index.md": "# Home\n\nnew line\n", "new.md": "y\n"})
    message = str(failed.value)
    assert "-old line\n+new line" in message and REGENERATE in message
    assert "no longer produced: pages/gone.md" in message and "no golden file: pages/new.md" in message
    monkeypatch.setattr(sys.modules[__name__], "UPDATE", True)
    _compare(golden, {"index.md": "# Home\n\nnew line\n", "sub/new.md": "y\n"})
    assert sorted(p.relative_to(golden).as_posix() for p in golden.rglob("*.md")) == ["index.md", "sub/new.md"]
    assert (golden / "index.md").read_text(encoding="utf-8").endswith("new line\n")


def test_normalise_masks_what_changes_between_runs() -> None:
    text = ("A1 -> exit_ok after 0.3s at 2026-12-03T07:53:27.123Z pid 4242 id 180610962a3441b19374054ab504c706 "
            f"in /tmp/x/sessions on {socket.gethostname()}")
    assert normalise(text, roots=[(Path("/tmp/x"), "<TMP>")], live=True) == \
        "A1 -> exit_ok after <DURATION> at <TIME> pid <PID> id <ID> in <TMP>/sessions on <HOST>"
    assert "2026-11-15 09:00:00" in normalise("2026-11-15 09:00:00  session")


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(prefix + (name,))
                found.extend(_commands(sub, prefix + (name,)))
    return found


@pytest.mark.slow
def test_help_of_every_command(tmp_path: Path) -> None:
    env = _env(tmp_path / "sessions")
    commands = [(), *_commands(build_parser())]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda c: _run([*c, "--help"], env, tmp_path), commands))
    actual = {}
    for command, done in zip(commands, results):
        assert done.returncode == 0, (command, done.stderr)
        actual[("_".join(command) or "logkit") + ".txt"] = done.stdout
    _compare(GOLDEN / "cli" / "help", actual)
