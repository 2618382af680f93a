"""``logkit sweep``: run every cell of a grid as ordinary attempts, unattended and resumable.

Contract:

* A sweep lives in one session and is named ``SW-<first 8 hex of its spec hash>`` (``-2``, ``-3``
  with ``new=True``). Running a spec whose sweep exists resumes it: only cells without a
  ``sweep_cell`` result run, so a crash, a Ctrl-C or a SIGKILL loses at most the running cell.
* Known outcomes first: a cell SGLang's parser refuses is refuted at once (``preflight``, never
  launched); a cell in a ``refuted`` matrix cell (:func:`known_refuted`, as the pre-launch check
  matches) is ``skipped``, unless ``retry_refuted``; every other cell runs (:mod:`.cell`).
* Each cell gets a hypothesis (``moe_runner_backend=X works on SM120``, tagged with the sweep and
  cell), closed by a verdict citing its attempts: confirmed when it launched, passed the smoke
  prompts and ran its benchmarks; else refuted, or inconclusive where the matrix's rule says the
  failure refutes nothing or the value's cells are ``conflicting`` once it counts (the working
  launch named, as ``status`` proposes nothing there); then its ``sweep_cell`` result.
* The time budget: no cell starts when the time spent plus the mean cell time so far would pass it;
  the rest stay pending (a budget of 0 records the sweep and runs none).
* One run of a spec at a time (:func:`logkit.store.shared.running_lock`). The sweep log
  (``logs/sweep-SW-*.log``) goes through the recorder's redactor. SIGINT/SIGTERM/SIGHUP stop the
  current cell cleanly (no result written) and end the run with status 130; a rerun resumes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import BadInput
from ..events import Hypothesis, Sweep, SweepCell, SweepCellResult, SweepPoint
from ..reasoning import hypotheses, matrix
from ..capture.redact import Redactor
from ..store import SessionHandle, Store, shared
from .cell import CellContext, CellRun, Interrupted, run_cell
from .grid import Cell, Grid, bench_points, build
from .progress import PlainProgress, make
from .spec import SweepSpec
from .state import SweepView, find, load

__all__ = ["SweepOptions", "SweepReport", "known_refuted", "points_of", "run"]


@dataclass
class SweepOptions:
    """How to run a sweep (from the command line)."""

    sessions: str | None = None
    session: str | None = None
    new: bool = False
    retry_refuted: bool = False
    arch: str | None = None


@dataclass
class SweepReport:
    """What a run of a sweep did."""

    view: SweepView
    ran: int
    interrupted: bool
    budget_left: int
    overhead_s: list[float]  # per cell, besides the launch and bench ``logkit run`` processes it waited on


def _values(metrics: list[dict[str, Any]], name: str) -> list[float]:
    """Every run's value of ``name`` (several with ``[bench] repeat``)."""
    return [float(m["value"]) for m in metrics if m.get("name") == name and isinstance(m.get("value"), (int, float))]


def _metric(metrics: list[dict[str, Any]], name: str) -> float | None:
    """The runs' figure of ``name`` (:func:`logkit.stats.figure`, their median), None when not measured."""
    from ..stats import figure

    values = _values(metrics, name)
    return figure(values) if values else None


def points_of(run: CellRun, limit_metric: str | None, limit_max: float | None) -> list[SweepPoint]:
    """The cell's bench points, with throughput, throughput per user and latency against the limit."""
    out: list[SweepPoint] = []
    for labels, attempt, outcome, metrics in run.points:
        if attempt is None:
            continue
        tput = _metric(metrics, "output_throughput")
        tpot = _metric(metrics, "mean_tpot_ms")
        conc = labels.get("max_concurrency") or _metric(metrics, "max_concurrency")
        per_user = round(1000.0 / tpot, 3) if tpot else (round(tput / float(conc), 3) if tput and conc else None)
        latency = _metric(metrics, limit_metric) if limit_metric else None
        within = None if latency is None or limit_max is None else latency <= limit_max
        runs = _values(metrics, "output_throughput")
        out.append(SweepPoint(attempt=attempt, labels=labels, status=(outcome or {}).get("status"),
                              output_throughput=tput, runs=runs if len(runs) > 1 else [], per_user=per_user,
                              latency=latency, within_limit=within))
    return out


def _hypothesis(handle: SessionHandle, sweep: str, cell: SweepCell, arch: str | None) -> str:
    """The cell's hypothesis id: the open one a resumed run left, else a new one."""
    tag = f"{sweep}/{cell.id}"
    for event in handle.read().events:
        if isinstance(event, Hypothesis) and tag in event.tags:
            return event.short_id
    text = f"{cell.key} works on {arch or 'this GPU'}"
    return hypotheses.add(handle, text, tags=["sweep", sweep, tag]).short_id


def _start(store: Store, spec: SweepSpec, grid: Grid, opts: SweepOptions, arch: str | None) -> tuple[str, Sweep]:
    spec_hash = spec.spec_hash()
    existing = find(store, spec_hash=spec_hash)
    if existing and not opts.new:
        return existing[-1]
    base = f"SW-{spec_hash[:8]}"
    taken = {s.sweep for _sid, s in find(store)}
    sweep_id, n = base, 1
    while sweep_id in taken:
        n += 1
        sweep_id = f"{base}-{n}"
    session = opts.session or spec.session
    handle = (store.open(session) if session
              else store.create(f"sweep: {spec.title}", tags=["sweep"], make_current=False))
    event = Sweep(session=handle.id, sweep=sweep_id, title=spec.title, spec_hash=spec_hash, spec_path=spec.path,
                  argv=spec.argv, axes=grid.axes, smoke=spec.smoke, bench_argv=spec.bench_argv,
                  bench_axes=spec.bench_axes, limit_metric=spec.limit_metric, limit_max=spec.limit_max,
                  budget_s=spec.budget_s, arch=arch, sglang_version=grid.sglang_version,
                  cells=[SweepCell(id=c.id, key=c.key, values=c.values, argv=c.argv) for c in grid.cells])
    handle.append(event, durable=True)
    return handle.id, event


@contextlib.contextmanager
def _redacted_log(path: Path, redactor: Redactor) -> Iterator[IO[bytes]]:
    """A pipe whose bytes reach ``path`` (appended) through the recorder's redactor."""
    # the sweep log holds the logkit run command lines and what they print (a server's api_key='...'),
    # and is committed
    from ..capture.recorder import Recorder

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    recorder = Recorder(fd, redactor, None)
    read_end, write_end = os.pipe()

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            recorder.consume(read_end, chunk)
        recorder.flush_stale(time.monotonic(), everything=True)

    thread = threading.Thread(target=drain, name="logkit-sweep-log", daemon=True)
    thread.start()
    writer = os.fdopen(write_end, "wb")
    try:
        yield writer
    finally:
        writer.close()
        thread.join(timeout=10.0)  # a straggler holding the pipe open must not hold the sweep
        if not thread.is_alive():
            os.close(read_end)
            recorder.close_log(sync=True)


def _say(text: str) -> None:
    print(f"logkit: {text}", file=sys.stderr, flush=True)


def run(spec: SweepSpec, opts: SweepOptions, *, progress: PlainProgress | None = None) -> SweepReport:
    """Run (or resume) the sweep of ``spec``; returns what happened."""
    from ..gpu import arch_name, local_arch

    store = Store.from_env(opts.sessions, scrub=Redactor().scrub)
    env = dict(os.environ)
    grid = build(spec, env, say=_say if sys.stderr.isatty() else None)
    if not grid.cells:
        raise BadInput("the sweep has no cells", fix="give every axis at least one value")
    arch = arch_name(opts.arch) if opts.arch else local_arch(env)
    # one run of a spec at a time: two would fight over its servers' ports and blame healthy backends
    with shared.running_lock(store.root, f"sweep-{spec.spec_hash()[:16]}", f"a sweep of {spec.path or spec.title!r}"):
        return _run(store, spec, grid, opts, arch, env, progress)


def _run(store: Store, spec: SweepSpec, grid: Grid, opts: SweepOptions, arch: str | None, env: dict[str, str],
         progress: PlainProgress | None) -> SweepReport:
    session, sweep = _start(store, spec, grid, opts, arch)
    handle = store.open(session)
    done = set(load(store, sweep.sweep).results)
    by_key = {c.key: c for c in grid.cells}
    todo = [(c, by_key.get(c.key)) for c in sweep.cells if c.id not in done]
    stop = threading.Event()  # set by a signal; Interrupted is raised only once it is
    old = {s: signal.signal(s, lambda _sig, _frame: stop.set())
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    prog = progress or make(len(sweep.cells), len(done))
    log_path = handle.log_path(f"sweep-{sweep.sweep}.log")
    started = time.monotonic()
    overhead: list[float] = []
    durations: list[float] = []  # of the cells that launched
    left = 0
    try:
        redactor = Redactor.for_run(env, [*spec.argv, *spec.bench_argv, *spec.smoke])
        with _redacted_log(log_path, redactor) as log, prog:
            ctx = CellContext(sessions=str(store.root), session=session, sweep=sweep.sweep, smoke=spec.smoke,
                              ready_timeout=spec.ready_timeout, grace=spec.grace, port_wait=spec.port_wait, log=log,
                              stop=stop, phase=prog.phase, env=env, accuracy=spec.accuracy, repeat=spec.repeat,
                              warmup=spec.warmup)
            for n, (recorded, cell) in enumerate(todo):
                if stop.is_set():
                    break
                if spec.budget_s is not None and (durations or spec.budget_s == 0):
                    mean = sum(durations) / len(durations) if durations else 0.0  # budget 0: no cell starts
                    if time.monotonic() - started + mean > spec.budget_s:
                        left = len(todo) - n
                        prog.say(f"time budget ({spec.budget_s:g}s) spent: {left} cell(s) left; rerun to resume")
                        break
                if cell is None:  # the spec's grid no longer yields this cell (its flags changed meaning)
                    continue
                prog.cell(recorded.key)
                t0 = time.monotonic()
                try:
                    result, wrapped = _one(handle, store, spec, grid, sweep, recorded, cell, arch, ctx, opts)
                except Interrupted:
                    break
                seconds = time.monotonic() - t0
                result.duration_s = round(seconds, 3)
                handle.append(result, durable=True)
                if wrapped is not None:  # the overhead includes writing the cell's result
                    durations.append(seconds)
                    overhead.append(max(0.0, time.monotonic() - t0 - wrapped))
                prog.ended(recorded.key, result.status, result.reason if result.status != "works" else None,
                           seconds, wrapped is not None)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if stop.is_set():  # a signal during the last cell's last steps is still one
        prog.say(f"interrupted: the current cell was stopped cleanly; rerun the same sweep to resume ({sweep.sweep})")
    return SweepReport(view=load(store, sweep.sweep), ran=len(durations), interrupted=stop.is_set(),
                       budget_left=left, overhead_s=overhead)


def _launch_cells(cell: Cell, arch: str | None, store: Store, sglang: str | None) -> list[Any]:
    """The matrix cells ``cell`` falls in on ``arch`` (its model, ``sglang``), as the pre-launch check reads them."""
    from ..launch.flags import backend_axes, model_of
    from ..reasoning.refuted import launch_cells

    launch = {"fingerprint": cell.fingerprint}
    return launch_cells(backend_axes(launch), arch, store.root, model_of(launch), sglang)


def known_refuted(cell: Cell, arch: str | None, store: Store, sglang: str | None) -> list[Any]:
    """The refuted matrix cells ``cell`` falls in (a conflicting one, or one of another SGLang or model, is tried)."""
    from ..reasoning.refuted import run_of

    return [run_of(c) for c in _launch_cells(cell, arch, store, sglang) if c.state == "refuted"]


def _worked_elsewhere(cell: Cell, arch: str | None, store: Store, sglang: str | None) -> str:
    """``flashinfer_cutedsl MoE worked in S/A3`` when every cell ``cell`` falls in is ``conflicting``, else ``""``."""
    from ..launch.flags import describe

    found = _launch_cells(cell, arch, store, sglang)
    if not found or any(c.state != "conflicting" for c in found):
        return ""
    return "; ".join(f"{describe({c.axis: c.value})} worked in {c.working[-1].ref}" for c in found if c.working)


def _one(handle: SessionHandle, store: Store, spec: SweepSpec, grid: Grid, sweep: Sweep, recorded: SweepCell,
         cell: Cell, arch: str | None, ctx: CellContext, opts: SweepOptions) -> tuple[SweepCellResult, float | None]:
    """One cell: its result event (not yet written) and the seconds of wrapped ``logkit run``s (None: no launch)."""
    from ..reasoning.hypotheses import close

    hyp = _hypothesis(handle, sweep.sweep, recorded, arch)
    base = {"session": handle.id, "sweep": sweep.sweep, "cell": recorded.id, "key": recorded.key, "hypothesis": hyp}
    if cell.preflight:
        close(handle, hyp, "refuted", because=f"SGLang's parser refuses it: {cell.preflight}")
        return SweepCellResult(**base, status="preflight", reason=cell.preflight), None
    hits = [] if opts.retry_refuted else known_refuted(cell, arch, store, grid.sglang_version)
    if hits:
        hit = hits[0]
        ref = f"{hit.session}/{hit.attempt}"
        why = f"refuted on {hit.arch} by {ref} ({hit.status}{': ' + hit.label if hit.label else ''}); --retry-refuted runs it"
        close(handle, hyp, "refuted", because=why)  # the refuting attempt tested another hypothesis: named, not cited
        return SweepCellResult(**base, status="skipped", outcome=hit.status, reason=why, refuted_by=ref), None
    points = bench_points(spec, cell)
    label = f"sweep {sweep.sweep} {recorded.id}: {recorded.key}"
    run_ = run_cell(ctx, cell, hyp, points, label)
    pts = points_of(run_, spec.limit_metric, spec.limit_max)
    attempts = [a for a in [run_.launch, *[p.attempt for p in pts]] if a]
    reason = run_.reason
    if run_.survivors:
        reason = ((reason + "; ") if reason else "") + "survivors killed: " + ", ".join(map(str, run_.survivors))
        ctx.phase(f"survivors of the server's group: {run_.survivors}")
    if run_.status == "works" and spec.bench_argv and not any(p.output_throughput is not None for p in pts):
        run_.status, run_.outcome, reason = "failed", run_.outcome, "the benchmark produced no throughput"
    verdict = "confirmed" if run_.status == "works" else "refuted"
    if verdict == "refuted" and not matrix.refutes(run_.outcome, ctx.ready_timeout if run_.outcome == "hang" else None):
        verdict = "inconclusive"  # the one rule of the matrix cell: a shortened hang, an import error, ... refute nothing
    because = None if verdict == "confirmed" else f"{run_.outcome}: {run_.reason or ''}".rstrip(": ")
    if verdict == "refuted" and (worked := _worked_elsewhere(cell, arch, store, grid.sglang_version)):
        # the cell as every reader reads it is conflicting: not refuted (status proposes nothing there either)
        verdict, because = "inconclusive", f"{because}; conflicting evidence: {worked}"
    if attempts or because:
        close(handle, hyp, verdict, evidence=attempts, because=because or "launched, smoke passed, benchmarked")
    wrapped = run_.seconds.get("wrapped", 0.0)
    return SweepCellResult(**base, status=run_.status, outcome=run_.outcome, reason=reason, attempts=attempts,
                           points=pts), wrapped

