"""Before a launch: does the knowledge base say this launch's backend values fail on this GPU?

Contract (the cell rule is :mod:`logkit.reasoning.matrix`'s, as the site, the sweep's skip and
``status`` read it):

* :func:`launch_cells` reads the cells a launch falls in from the index (brought up to date first),
  counted per category in SQL; only a cell that is not ``works`` has its latest attempts read.
  Cells match on backend axis and value, architecture, and model and SGLang version where both are
  known; an unknown architecture matches nothing.
* :func:`check` gives one :class:`RefutedRun` (its latest refuting attempt) per ``refuted`` cell;
  :func:`conflicts` one per ``conflicting`` cell, naming both sides: said, never asked about.
* :func:`ask` asks ``Run anyway? [y/N]`` on a terminal, answers yes with ``--yes``, and never
  prompts when stdin is not a terminal (it proceeds and prints the warning).
* :func:`check_launch` is the body of the runner's ``confirm(plan, environment)`` callback
  (plugged in by :mod:`logkit.reasoning.prelaunch`, which stays import-light), with the model and
  SGLang version the launch's parser reported. A failure inside it is reported and never blocks a
  launch; ``--yes`` skips it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .. import statuses
from ..gpu import ENV_ARCH, arch_name, arch_of, local_arch
from ..launch.flags import backend_axes, describe, model_of
from . import matrix

__all__ = ["RefutedRun", "arch_for_launch", "ask", "check", "check_launch", "conflicts", "launch_cells", "run_of",
           "warning"]


@dataclass(frozen=True)
class RefutedRun:
    """A refuted or conflicting cell as the check names it: its latest refuting (and working) attempt."""

    session: str
    attempt: str
    status: str
    arch: str | None
    suspects: dict[str, Any] = field(default_factory=dict)  # axis -> the value that failed
    label: str | None = None
    state: str = "refuted"
    worked: str | None = None


def launch_cells(backends: dict[str, Any], arch: str | None, root: Path, model: str | None = None,
                 sglang: str | None = None) -> list[matrix.Cell]:
    """The cells (every state) a launch choosing ``backends`` on ``arch`` falls in, from the index, latest last."""
    if not arch or not backends:
        return []
    from ..store.index import current

    with current(root) as snap:
        found = cells_in(snap, backends, arch, model, sglang)
    # said in the order of their latest attempts
    return sorted(found, key=lambda c: matrix.order(c.latest) if c.latest else ("", "", 0))


def cells_in(snap: Any, backends: dict[str, Any], arch: str, model: str | None = None,
             sglang: str | None = None) -> list[matrix.Cell]:
    """:func:`launch_cells` of an index snapshot, in its order (the latest of each category if not ``works``)."""
    arch = arch_name(arch) or arch
    counts: dict[matrix.Key, dict[str, int]] = {}
    for axis, value, cmodel, csglang, flashinfer, cat, count in snap.cell_counts(backends, arch, model=model,
                                                                                sglang=sglang):
        counts.setdefault((cmodel, axis, value, arch, csglang, flashinfer), {})[cat] = count
    found = []
    for key, cats in counts.items():
        latest = []
        if matrix.state(cats) != "works":
            latest = [matrix.row_of(row) for cat in cats for row in [snap.cell_latest(key, cat)] if row]
        found.append(matrix.aggregated(key, cats, latest))
    return found


def run_of(cell: matrix.Cell) -> RefutedRun:
    """A refuted or conflicting cell as the check names it (its latest refuting attempt)."""
    bad = cell.refuting[-1]
    good = cell.working[-1].ref if cell.working else None
    return RefutedRun(bad.session, bad.attempt, str(bad.status), cell.arch, {cell.axis: cell.value}, bad.label,
                      cell.state, good)


def check(backends: dict[str, Any], arch: str | None, store: Any, *, model: str | None = None,
          sglang: str | None = None) -> list[RefutedRun]:
    """One run per ``refuted`` cell this launch falls in on ``arch``; ``store``: anything with a ``root``."""
    return [run_of(c) for c in launch_cells(backends, arch, store.root, model, sglang) if c.state == "refuted"]


def conflicts(backends: dict[str, Any], arch: str | None, store: Any, *, model: str | None = None,
              sglang: str | None = None) -> list[RefutedRun]:
    """One run per ``conflicting`` cell this launch falls in (both sides named)."""
    return [run_of(c) for c in launch_cells(backends, arch, store.root, model, sglang) if c.state == "conflicting"]


def warning(run: RefutedRun) -> str:
    """``flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A4 (arch_mismatch).``"""
    verb = statuses.verb(run.status)
    text = f"{describe(run.suspects)} {verb} on {run.arch} in {run.session} {run.attempt} ({run.status})"
    if run.state == "conflicting":
        return f"conflicting evidence: {text}, and worked in {run.worked}."
    return text + "."


def ask(runs: list[RefutedRun], *, yes: bool = False, stdin: TextIO | None = None,
        stderr: TextIO | None = None) -> bool:
    """Warn about ``runs``; True to go ahead. Prompts only on a terminal, and not with ``yes``."""
    if not runs:
        return True
    stdin, stderr = stdin or sys.stdin, stderr or sys.stderr
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
        answer = stdin.readline()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def arch_for_launch(environment: Any) -> str | None:
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


def check_launch(plan: Any, environment: Any, sessions: str | None) -> bool:
    """Warn (and ask on a terminal) when ``plan``'s launch repeats a refuted one; True to launch."""
    launch = getattr(plan, "launch", None)
    if launch is not None and not isinstance(launch, dict):
        launch = launch.model_dump(mode="json")
    backends = backend_axes(launch)
    if not backends:
        return True
    err = sys.stderr
    try:
        # one read of the matrix: the refuted cells warn, the conflicting ones are said
        from ..store.files import root

        found = launch_cells(backends, arch_for_launch(environment), root(sessions), model_of(launch),
                             (launch or {}).get("sglang_version"))
        runs = [run_of(c) for c in found if c.state == "refuted"]
        for run in (run_of(c) for c in found if c.state == "conflicting"):
            err.write(f"logkit: note: {warning(run)}\n")
    except Exception as exc:  # noqa: BLE001 - the check must never stop a launch by crashing
        err.write(f"logkit: warning: the refuted-configuration check failed ({exc}); launching\n")
        return True
    return ask(runs, stderr=err)
