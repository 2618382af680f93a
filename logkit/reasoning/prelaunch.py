"""The pre-launch check: ``logkit run``'s confirm hook, and the same check of an argv for agents.

Import-light on purpose (``logkit run`` start-up, ``logkit hook pre-launch`` on every shell command
an agent runs): :mod:`logkit.reasoning.refuted` is imported only for a launch with backend values.

Contract:

* :func:`launch_confirmer` is the runner's ``confirm(plan, environment)``:
  :func:`logkit.reasoning.refuted.check_launch` of a plan with a launch.
* :func:`check_argv` answers for an argv that has not run (an agent's ``check_launch`` tool, the
  coding-agent hook): None when it launches no SGLang server; else a JSON-ready dict with the
  architecture (``arch``, else ``$LOGKIT_GPU_ARCH``, else this host's GPUs), the model, the backend
  values (of :func:`logkit.launch.config.for_check`'s config), every matrix cell the launch falls in
  (:func:`logkit.reasoning.refuted.launch_cells`, matched as ``logkit run``'s check and the sweep's
  skip match them) with its state, counts and evidence, the command redacted, and the ``verdict``:
  the worst of :data:`VERDICTS` found.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["VERDICTS", "cell_json", "check_argv", "launch_confirmer"]

VERDICTS = ("refuted", "conflicting", "works", "untested", "unknown_arch", "no_backend")  # worst first


def launch_confirmer(sessions: str | None) -> Callable[[Any, Any], bool]:
    """The runner's ``confirm(plan, environment)``: the refuted-fingerprint check of the plan's launch."""

    def confirm(plan: Any, environment: Any) -> bool:
        if getattr(plan, "launch", None) is None:
            return True
        from .refuted import check_launch

        return check_launch(plan, environment, sessions)

    return confirm


def check_argv(argv: list[str], sessions: str | None, *, arch: str | None = None,
               run_parser: bool = True) -> dict[str, Any] | None:
    """What the knowledge base says of the SGLang launch in ``argv`` on this GPU (see the contract)."""
    import shlex

    from ..capture.sglang import python_for
    from ..capture.sglang.detect import detect

    target = detect(argv)
    if target is None or target.kind != "launch":
        return None
    from ..capture.redact import Redactor
    from ..gpu import arch_name, local_arch
    from ..launch.config import for_check
    from ..launch.flags import backend_axes, model_of
    from ..store.files import root

    env = {**os.environ, **target.env}
    parsed = for_check(target.args, python_for(target, argv, env), run_parser=run_parser)
    config = parsed.config
    backends, model, sglang = backend_axes(config), model_of(config), config.get("sglang_version")
    here = arch_name(arch) if arch else local_arch(env)
    answer: dict[str, Any] = {  # shown to an agent: redacted
        "command": shlex.join(Redactor().argv(argv)), "arch": here, "model": model, "backends": backends,
        "sglang_version": sglang, "sglang_refuses": parsed.error, "notes": list(parsed.notes),
        "cells": [], "verdict": "no_backend" if not backends else "unknown_arch" if not here else "untested"}
    sessions_dir = root(sessions)
    if not backends or not here or not sessions_dir.is_dir():
        return answer
    from .refuted import launch_cells

    cells = launch_cells(backends, here, sessions_dir, model=model, sglang=sglang)
    answer["cells"] = [cell_json(cell) for cell in cells]
    answer["verdict"] = next((v for v in VERDICTS if v in {c.state for c in cells}), "untested")
    return answer


def cell_json(cell: Any) -> dict[str, Any]:
    """A matrix cell as an agent is told it: key, state, counts, latest, and the evidence of a refuted one."""
    from . import matrix
    from .refuted import run_of, warning

    row: dict[str, Any] = {"axis": cell.axis, "value": cell.value, "arch": cell.arch, "model": cell.model,
                           "sglang": cell.sglang, "flashinfer": cell.flashinfer, "state": cell.state,
                           "counts": dict(cell.counts), "latest": cell.latest.ref if cell.latest else None,
                           "working": cell.working[-1].ref if cell.working else None}
    if cell.refuting:
        bad = cell.refuting[-1]
        row["refuting"] = {"attempt": bad.ref, "status": bad.status, "label": bad.label, "class": matrix.category(bad)}
    if cell.state in ("refuted", "conflicting"):
        row["warning"] = warning(run_of(cell))
    return row
