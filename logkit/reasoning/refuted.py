"""Before a launch: does the knowledge base say this launch's backend values fail on this GPU?

Contract:

* Every session's launches become matrix rows (:class:`logkit.reasoning.matrix.Row`, read by
  :func:`session_rows` from the decoded lines, kept per session in the ``refuted`` read cache), and
  the cells of :func:`logkit.reasoning.matrix.cells` decide: the same rule as the site's matrix,
  the sweep's skip and ``status``'s proposals.
* :func:`check` returns one :class:`RefutedRun` per ``refuted`` cell the new launch falls in
  (same backend axis and value, architecture, and model and SGLang version where both are known):
  its latest refuting attempt. :func:`conflicts` returns the ``conflicting`` ones, each naming both
  sides; they are said, never asked about. An unknown architecture matches nothing.
* :func:`ask` asks ``Run anyway? [y/N]`` on a terminal, answers yes with ``--yes``, and never
  prompts when stdin is not a terminal (it proceeds and prints the warning).
* :func:`check_launch` is the body of the runner's ``confirm(plan, environment)`` callback
  (plugged in by :mod:`logkit.reasoning.prelaunch`, which stays import-light). A failure inside
  the check is reported and never blocks a launch. ``--yes`` skips the callback altogether.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .. import files, statuses
from ..gpu import ENV_ARCH, arch_name, arch_of, local_arch
from ..launch.flags import backend_axes, model_of, table
from ..launch.flags import describe as describe_values
from ..readcache import SessionCache
from . import matrix

if TYPE_CHECKING:  # the check runs before every launch: the event models (pydantic) stay unimported
    from ..store import Store

__all__ = [
    "CACHE_VERSION",
    "RefutedRun",
    "ask",
    "check",
    "check_launch",
    "conflicts",
    "describe",
    "refuted_runs",
    "session_rows",
    "warning",
]


@dataclass(frozen=True)
class RefutedRun:
    """A refuted (or conflicting) matrix cell, as the pre-launch check names it: its latest
    refuting attempt, and for a conflicting cell its latest working one."""

    session: str
    attempt: str
    status: str
    arch: str | None
    #: axis -> the value that failed
    suspects: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    state: str = "refuted"
    worked: str | None = None


#: the versions a row records, by the package names they may be recorded under
_VERSIONS = {"sglang": ("sglang",), "flashinfer": ("flashinfer-python", "flashinfer_python", "flashinfer")}


def session_rows(session: str, events: list[dict[str, Any]]) -> list[matrix.Row]:
    """The launches of one session (its events as stored dicts, in file order) as matrix rows."""
    attempts: dict[str, dict[str, Any]] = {}
    envs: dict[str, Any] = {}
    launches: dict[str, dict[str, Any]] = {}
    outcomes: dict[str, dict[str, Any]] = {}
    resolved: dict[str, dict[str, Any]] = {}
    smoke_failed: set[str] = set()
    for e in events:
        kind, ref = e.get("kind"), e.get("attempt")
        if kind == "attempt" and e.get("role") == "launch" and isinstance(e.get("short_id"), str):
            attempts[e["short_id"]] = e
        elif not isinstance(ref, str):
            continue
        elif kind == "environment":
            envs[ref] = e.get("environment") or {}
        elif kind == "launch_config" and isinstance(e.get("launch"), dict):
            launches[ref] = e["launch"]
        elif kind == "outcome":
            outcomes[ref] = e
        elif kind == "server_info":
            resolved[ref] = e.get("resolved") or {}
        elif kind == "smoke" and e.get("ok") is False:
            smoke_failed.add(ref)
    rows = []
    for sid, a in attempts.items():
        launch = launches.get(sid) or a.get("launch")
        if not isinstance(launch, dict):
            continue
        env = envs.get(sid) or a.get("environment") or {}
        packages = env.get("packages") or {} if isinstance(env, dict) else {}
        versions = {name: next((str(packages[k]) for k in keys if packages.get(k)), None)
                    for name, keys in _VERSIONS.items()}
        o = outcomes.get(sid) or {}
        status = o.get("status")
        rows.append(matrix.Row(
            session=session, attempt=sid, role="launch", started=str(a.get("started") or a.get("ts") or ""),
            status=status, model=model_of(launch) or a.get("model"), arch=arch_of(env),
            sglang=versions["sglang"] or launch.get("sglang_version"), flashinfer=versions["flashinfer"],
            backends=backend_axes(launch, resolved.get(sid)),
            hang_timeout=matrix.hang_limit(o.get("label")) if status == "hang" else None,
            tests=tuple(a.get("tests") or ()), smoke_failed=sid in smoke_failed, label=o.get("label")))
    return rows


#: bump when what :func:`session_rows` derives changes (the per-session cache is then rebuilt)
CACHE_VERSION = 3


def _derive(session: str, raw: bytes) -> list[dict[str, Any]]:
    events = [d for line in files.current_bytes(raw).split(b"\n") if line.strip()
              if (d := files.decode(line)) is not None]
    return [_row_dict(r) for r in session_rows(session, events)]


def _row_dict(row: matrix.Row) -> dict[str, Any]:
    d = dict(row.__dict__)
    d["tests"] = list(row.tests)
    return d


def _valid_rows(rows: Any) -> bool:
    return type(rows) is list and all(type(r) is dict and type(r.get("attempt")) is str
                                      and type(r.get("backends")) is dict for r in rows)


def refuted_runs(store: Store) -> list[RefutedRun]:
    """One run per refuted cell of the whole knowledge base."""
    return [_run(c) for c in matrix.cells(_rows(store)).values() if c.state == "refuted"]


#: before a launch, a session bigger than this that the read cache cannot answer is not read: the
#: child must start in a bounded time; :func:`check_launch` says so and has a background process
#: read it for the next launch
COLD_LIMIT = 16 << 20


class _TooBig(Exception):
    """A session :func:`_rows` was asked not to derive."""


def _rows(store: Store, cold_limit: int | None = None, skipped: list[str] | None = None) -> list[matrix.Row]:
    """Every launch of the store as a matrix row, through the ``refuted`` read cache. With
    ``cold_limit``, a session that would have to be derived from more bytes than that is left out
    and named in ``skipped``."""
    rules = [table(), sorted(statuses.refuting()), sorted(statuses.of_class("works"))]
    digest = hashlib.sha256(json.dumps(rules, sort_keys=True, default=str).encode()).hexdigest()[:16]
    cache = SessionCache(store.root, "refuted", f"{CACHE_VERSION}-{digest}")
    out: list[matrix.Row] = []
    found = files.session_dirs(store.root)
    for session, path, st in found:
        def derive(raw: bytes, sid: str = session) -> list[dict[str, Any]]:
            if cold_limit is not None and len(raw) > cold_limit:
                raise _TooBig(sid)
            return _derive(sid, raw)

        try:
            rows = cache.get(session, path, derive, valid=_valid_rows, st=st)
        except _TooBig:
            if skipped is not None:
                skipped.append(session)
            continue
        out.extend(matrix.Row(**{**r, "tests": tuple(r.get("tests") or ())}) for r in rows)
    cache.prune({f[0] for f in found})
    cache.save()
    return out


def _run(cell: matrix.Cell) -> RefutedRun:
    bad = cell.refuting[-1]
    good = cell.working[-1].ref if cell.working else None
    return RefutedRun(bad.session, bad.attempt, str(bad.status), cell.arch, {cell.axis: cell.value}, bad.label,
                      cell.state, good)


def _cells(backends: dict[str, Any], arch: str | None, store: Store, model: str | None, sglang: str | None,
           cold_limit: int | None, skipped: list[str] | None) -> list[matrix.Cell]:
    if not arch:
        return []
    arch = arch_name(arch) or arch
    found = matrix.cells(_rows(store, cold_limit, skipped))
    return matrix.matching(found, backends, arch, model=model, sglang=sglang)


def check(backends: dict[str, Any], arch: str | None, store: Store, *, model: str | None = None,
          sglang: str | None = None, cold_limit: int | None = None,
          skipped: list[str] | None = None) -> list[RefutedRun]:
    """One run per ``refuted`` cell this launch (its backend values) falls in on ``arch`` (none when
    ``arch`` is unknown); ``cold_limit`` and ``skipped`` as :func:`_rows` takes them."""
    return [_run(c) for c in _cells(backends, arch, store, model, sglang, cold_limit, skipped)
            if c.state == "refuted"]


def conflicts(backends: dict[str, Any], arch: str | None, store: Store, *, model: str | None = None,
              sglang: str | None = None) -> list[RefutedRun]:
    """One run per ``conflicting`` cell this launch falls in (both sides named)."""
    return [_run(c) for c in _cells(backends, arch, store, model, sglang, None, None) if c.state == "conflicting"]


def describe(suspected: dict[str, Any]) -> str:
    """``{"moe_runner_backend": "flashinfer_trtllm"}`` -> ``flashinfer_trtllm MoE``."""
    return describe_values(suspected)


def warning(run: RefutedRun) -> str:
    """``flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A4 (arch_mismatch).``"""
    verb = statuses.verb(run.status)
    text = f"{describe(run.suspects)} {verb} on {run.arch} in {run.session} {run.attempt} ({run.status})"
    if run.state == "conflicting":
        return f"conflicting evidence: {text}, and worked in {run.worked}."
    return text + "."


def ask(
    runs: list[RefutedRun],
    *,
    yes: bool = False,
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
    ask: Callable[[str], str] | None = None,
) -> bool:
    """Warn about ``runs``; True to go ahead. Prompts only on a terminal, and not with ``yes``."""
    if not runs:
        return True
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    for run in runs:
        stderr.write(f"logkit: warning: {warning(run)}\n")
    if yes:
        return True
    try:
        interactive = stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        stderr.write("logkit: not a terminal, running anyway (pass --yes to silence this check)\n")
        return True
    stderr.write("Run anyway? [y/N] ")
    stderr.flush()
    try:
        answer = ask("") if ask else stdin.readline()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _arch_for_launch(environment: Any) -> str | None:
    """The architecture from the runner's environment snapshot (a dict, or an ``Environment``)."""
    if os.environ.get(ENV_ARCH):
        return arch_name(os.environ[ENV_ARCH])
    found = arch_of(environment)
    if found:
        return found
    if environment is not None and not isinstance(environment, dict):
        environment = environment.model_dump(mode="json")
    probe = ((environment or {}).get("probes") or {}).get("gpus")
    if isinstance(probe, dict) and (probe.get("ok") or "not found" in (probe.get("error") or "")):
        return None  # the runner already asked nvidia-smi: no GPU, or none with a known capability
    return local_arch()


class _Sessions:
    """The sessions directory as :func:`refuted_runs` reads it (root and ids), without the typed store."""

    def __init__(self, override: str | None) -> None:
        self.root = Path(override or os.environ.get("LOGKIT_SESSIONS") or "sessions")

    def session_ids(self) -> list[str]:
        return files.session_ids(self.root)


def check_launch(plan: Any, environment: Any, sessions: str | None, *,
                 stdin: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Warn (and ask on a terminal) when ``plan``'s launch repeats a refuted one; True to launch."""
    launch = getattr(plan, "launch", None)
    if launch is not None and not isinstance(launch, dict):
        launch = launch.model_dump(mode="json")
    backends = backend_axes(launch)
    if not backends:
        return True
    err = stderr or sys.stderr
    skipped: list[str] = []
    try:
        store = _Sessions(sessions)
        arch = _arch_for_launch(environment)
        # one read of the matrix: the refuted cells warn, the conflicting ones are said
        found = _cells(backends, arch, store, model_of(launch), None,  # type: ignore[arg-type]
                       COLD_LIMIT, skipped)
        runs = [_run(c) for c in found if c.state == "refuted"]
        for run in (_run(c) for c in found if c.state == "conflicting"):
            err.write(f"logkit: note: {warning(run)}\n")
    except Exception as exc:  # noqa: BLE001 - the check must never stop a launch by crashing
        err.write(f"logkit: warning: the refuted-configuration check failed ({exc}); launching\n")
        return True
    if skipped:
        err.write(f"logkit: warning: the refuted-configuration check did not read {', '.join(skipped)} (big, and "
                  "not in its read cache yet); a background process reads it for the next launch\n")
        _warm_in_background(store.root)
    return ask(runs, stdin=stdin, stderr=err)


_WARM = """
import os, sys, time
from logkit.reasoning.refuted import _Sessions, refuted_runs
pid = int(sys.argv[2])
while True:  # the launch appends to its session until it ends: read the session after that
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:
        pass
    time.sleep(1.0)
refuted_runs(_Sessions(sys.argv[1]))
"""


def _warm_in_background(root: Path) -> None:
    """Fill the ``refuted`` read cache of ``root`` in a detached, niced process, once this logkit has
    ended (the run it checks appends to its session until then); never raises."""
    nice = shutil.which("nice")
    try:
        subprocess.Popen([*([nice, "-n", "10"] if nice else []), sys.executable, "-c", _WARM, str(root),
                          str(os.getpid())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)  # its own group: never one of the launch's survivors
    except OSError:
        pass
