"""The steps of ``bench/gpu_check.sh`` (issue 25): real GPU failures recorded through ``logkit run``.

Run by ``bench/gpu_check.sh``, which picks the interpreters and installs carried wheels; see
docs/gpu-check.md. Into a fresh sessions directory:

* each failure step (:data:`FAILURES`) runs its command under ``logkit run --label STEP``; its
  verdict is logkit's own classifier (:func:`classify_file`, what ``logkit classify`` runs) on the
  log ``logkit run`` recorded, against the classes the step must produce;
* the environment step holds the environment event ``logkit run`` wrote for ``env_truth.py``
  against what that command's own interpreter, PyTorch, NVML and nvidia-smi (one field at a time)
  report, and the architecture the
  pre-launch check derives from the event (``refuted.arch_for_launch``) and from this machine
  (``logkit.gpu.local_arch``);
* the throughput step runs ``matmul_loop.py`` (a matmul loop printing a line per product) with and
  without ``logkit run``, alternately, and gives the ratios.

Without a GPU (``logkit.gpu.local_arch`` finds none) every step is skipped, and says so. The table
goes to stdout and ``WORK/table.md``; with ``$OUT`` set, the table, the session's events.jsonl and a
tarball of the logs are copied there. Exit status 1 when a step that ran missed its class.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logkit.capture.sglang.outcomes import Classification, classify_file, load_signatures
from logkit.events import Attempt, AttemptEnvironment, Outcome
from logkit.gpu import arch_name, local_arch
from logkit.reasoning.refuted import arch_for_launch
from logkit.store import Store

HERE = Path(__file__).resolve().parent
NO_GPU = "skipped: no GPU"
STEP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Failure:
    """A step that must fail on the GPU in a way the classifier names."""

    name: str
    expected: tuple[str, ...]
    what: str
    #: the command; "{python}" is the steps' interpreter, "{work}" the work directory
    command: tuple[str, ...]


FAILURES = (
    Failure("oom", ("oom",), "PyTorch asks for twice the card's memory", ("{python}", "oom.py")),
    Failure("illegal_memory", ("illegal_memory",), "a CuPy kernel writes 4 TiB past its buffer",
            ("{python}", "illegal_memory.py")),
    Failure("arch", ("arch_mismatch", "missing_kernel"), "a kernel nvcc built for sm_120 only, launched here",
            ("{work}/sm120_only",)),
    Failure("nan", ("nan",), "fp16 logits overflow to inf, softmax makes NaN, torch.multinomial refuses them",
            ("{python}", "nan.py")),
)


def say(text: str) -> None:
    print(f"gpu_check: {text}", file=sys.stderr, flush=True)


def verdict(expected: tuple[str, ...], status: str | None) -> str:
    """``match`` when the classifier gave one of the expected classes, else ``MISS``."""
    return "match" if status in expected else "MISS"


def run_logged(cmd: list[str], stdout: Path, stderr: Path, timeout: float = STEP_TIMEOUT_S) -> int | None:
    """Run ``cmd`` with its output to files; on timeout SIGTERM (``logkit run`` forwards it to the
    command's group), then SIGKILL. The exit status, or None when it timed out."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return None


class Check:
    """One run of the steps into ``work``: a fresh sessions directory and one session."""

    def __init__(self, python: str, work: Path, logkit: list[str] | None = None) -> None:
        self.python = python
        self.work = work
        self.sessions = work / "sessions"
        self.logkit = [*(logkit or [sys.executable, "-m", "logkit"]), "--sessions", str(self.sessions)]
        self.skipped: dict[str, str] = {}
        self.session = ""

    def start(self, title: str) -> None:
        if self.sessions.exists():
            shutil.rmtree(self.sessions)
        done = subprocess.run([*self.logkit, "session", "start", title, "--json"], capture_output=True, text=True,
                              check=True)
        self.session = json.loads(done.stdout)["session"]

    def record(self, label: str, command: list[str], timeout: float = STEP_TIMEOUT_S) -> int | None:
        """``logkit run --label LABEL -- COMMAND``; its stdout/stderr land in WORK/LABEL.out/.err."""
        cmd = [*self.logkit, "run", "--label", label, "--", *command]
        return run_logged(cmd, self.work / f"{label}.out", self.work / f"{label}.err", timeout)

    def command(self, step: Failure) -> list[str]:
        words = [w.format(python=self.python, work=self.work) for w in step.command]
        return [str(HERE / w) if w.endswith(".py") else w for w in words]

    # -- the steps ----------------------------------------------------------------------------

    def failures(self, gpu: str | None) -> None:
        for step in FAILURES:
            reason = NO_GPU if gpu is None else (self._build_sm120() if step.name == "arch" else None)
            if reason is not None:
                self.skipped[step.name] = reason
                say(f"{step.name}: {reason}")
                continue
            say(f"{step.name}: {step.what}")
            if self.record(step.name, self.command(step)) is None:
                say(f"{step.name}: timed out after {STEP_TIMEOUT_S:.0f} s")

    def _build_sm120(self) -> str | None:
        """Build sm120_only.cu for sm_120 alone; None when built, else why the step cannot run."""
        nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK)
                                        else None)
        if nvcc is None:
            return "not run: nvcc not found (PATH, /usr/local/cuda/bin)"
        cmd = [nvcc, "-gencode", "arch=compute_120,code=sm_120", "-o", str(self.work / "sm120_only"),
               str(HERE / "sm120_only.cu")]
        if run_logged(cmd, self.work / "nvcc.out", self.work / "nvcc.err", 60) != 0:
            return f"not run: nvcc failed (see {self.work / 'nvcc.err'})"
        return None

    def environment(self, gpu: str | None) -> dict[str, Any] | None:
        """Record ``env_truth.py``; its JSON line, or None when skipped or it printed none."""
        if gpu is None:
            self.skipped["environment"] = NO_GPU
            say(f"environment: {NO_GPU}")
            return None
        say("environment: the recorded environment event against the command's interpreter, PyTorch, NVML, nvidia-smi")
        self.record("environment", [self.python, str(HERE / "env_truth.py")])
        lines = (self.work / "environment.out").read_text(encoding="utf-8", errors="replace").splitlines()
        try:
            return json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            return None

    def throughput(self, gpu: str | None, *, rounds: int = 2, iterations: int = 2000, size: int = 8192,
                   device: str = "cuda") -> dict[str, Any] | None:
        """The matmul loop without and with ``logkit run``, alternately; the median ratios."""
        if gpu is None and device == "cuda":
            self.skipped["throughput"] = NO_GPU
            say(f"throughput: {NO_GPU}")
            return None
        say(f"throughput: {rounds} x ({iterations} {size}^3 matmuls on {device}, without then with logkit run)")
        loop = [self.python, str(HERE / "matmul_loop.py"), "--iterations", str(iterations), "--size", str(size),
                "--device", device]
        runs: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
        for n in range(1, rounds + 1):
            for variant in ("without", "with"):
                label = f"throughput-{variant}-{n}"
                start = time.perf_counter()
                if variant == "with":
                    code = self.record(label, loop)
                else:
                    code = run_logged(loop, self.work / f"{label}.out", self.work / f"{label}.err")
                wall = time.perf_counter() - start
                lines = (self.work / f"{label}.out").read_text(encoding="utf-8", errors="replace").splitlines()
                if code != 0 or not lines:
                    say(f"throughput: {label} failed (exit {code}); see {self.work / (label + '.err')}")
                    return {"error": f"{label} exited {code}"}
                runs[variant].append({**json.loads(lines[-1]), "wall_s": round(wall, 3)})
        pairs = list(zip(runs["with"], runs["without"]))
        return {
            "device": device, "rounds": rounds, "iterations": iterations, "size": size, "runs": runs,
            "loop_ratio": round(statistics.median(w["seconds"] / o["seconds"] for w, o in pairs), 4),
            "wall_ratio": round(statistics.median(w["wall_s"] / o["wall_s"] for w, o in pairs), 4),
        }

    # -- reading back what was recorded ---------------------------------------------------------

    def recorded(self) -> dict[str, tuple[Attempt, Outcome | None, AttemptEnvironment | None]]:
        """Each attempt of the session by label, with its outcome and environment event."""
        handle = Store(self.sessions).handle(self.session)
        read = handle.read()
        if read.problems:
            raise SystemExit("gpu_check: the recorded session does not read back: "
                             + "; ".join(str(p) for p in read.problems))
        attempts = {e.short_id: e for e in read.events if isinstance(e, Attempt)}
        outcomes = {e.attempt: e for e in read.events if isinstance(e, Outcome)}
        envs = {e.attempt: e for e in read.events if isinstance(e, AttemptEnvironment)}
        return {a.label or a.short_id: (a, outcomes.get(a.short_id), envs.get(a.short_id)) for a in attempts.values()}

    def failure_rows(self) -> list[dict[str, Any]]:
        """One row per failure step: what ``logkit run`` recorded, what the classifier says of its log."""
        recorded = self.recorded()
        rows = []
        for step in FAILURES:
            row: dict[str, Any] = {"step": step.name, "what": step.what, "expected": step.expected}
            if step.name in self.skipped:
                rows.append({**row, "verdict": self.skipped[step.name]})
                continue
            if step.name not in recorded:
                rows.append({**row, "verdict": f"not recorded: see {self.work / (step.name + '.err')}"})
                continue
            attempt, outcome, _ = recorded[step.name]
            found = classify_file(self.sessions / self.session / attempt.log.path)
            rows.append({
                **row, "recorded": f"{outcome.status}: {outcome.label}" if outcome else "no outcome",
                "classified": found.status, "signature": found.signature, "evidence": deciding_line(found)[:160],
                "log": f"{self.session}/{attempt.log.path}", "verdict": verdict(step.expected, found.status),
            })
        return rows


def deciding_line(found: Classification) -> str:
    """The evidence line the deciding signature matched ("L14: RuntimeError: ..."), else the first."""
    sig = next((s for s in load_signatures() if s.id == found.signature), None)
    lines = [e for e in found.evidence if sig is not None and sig.pattern and re.search(sig.pattern, e.text)]
    pick = (lines or found.evidence or [None])[0]
    return f"L{pick.line}: {pick.text}" if pick is not None else ""


def environment_rows(env: dict[str, Any], truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The environment event (a dict) against the command's own report: one row per fact, ``ok``
    True/False, or None when the truth could not be read."""
    gpu = (env.get("gpus") or [{}])[0]
    cap = truth.get("torch_capability")
    topo, true_topo = env.get("topology"), truth.get("topology")
    facts = [
        ("GPU name (nvidia-smi)", gpu.get("name"), truth.get("smi_name")),
        ("GPU name (NVML)", gpu.get("name"), truth.get("nvml_name")),
        ("GPU name (PyTorch)", gpu.get("name"), truth.get("torch_name")),
        ("compute capability (nvidia-smi)", gpu.get("compute_cap"), truth.get("smi_capability")),
        ("compute capability (NVML)", gpu.get("compute_cap"), truth.get("nvml_capability")),
        ("compute capability (PyTorch)", gpu.get("compute_cap"), cap),
        ("driver (nvidia-smi)", gpu.get("driver"), truth.get("smi_driver")),
        ("driver (NVML)", gpu.get("driver"), truth.get("nvml_driver")),
        ("memory MiB (nvidia-smi)", gpu.get("memory_mib"), truth.get("smi_memory_mib")),
        ("nvidia-smi topo -m", _lines(topo), _lines(true_topo)),
        ("torch.version.cuda", env.get("torch_cuda"), truth.get("torch_cuda")),
        ("interpreter", env.get("interpreter"), truth.get("interpreter")),
        ("pre-launch check's arch", arch_for_launch(env), arch_name(cap)),
        ("logkit.gpu.local_arch()", local_arch(), arch_name(cap)),
    ]
    rows = []
    for fact, logged, true in facts:
        ok = None if true is None else (topo == true_topo if fact == "nvidia-smi topo -m" else logged == true)
        rows.append({"fact": fact, "logkit": logged, "truth": true, "ok": ok})
    return rows


def _lines(text: str | None) -> str | None:
    return None if text is None else f"{len(text.splitlines())} lines"


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(title: str, rows: list[dict[str, Any]], env_rows: list[dict[str, Any]] | None,
          skipped_env: str | None, speed: dict[str, Any] | None, skipped_speed: str | None) -> str:
    out = [f"## {title}", "", "| step | what it does | expected | `logkit run` recorded | classifier on its log "
           "| signature | first evidence line | verdict |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| " + " | ".join(_cell(v) for v in (
            r["step"], r["what"], " or ".join(r["expected"]), r.get("recorded"), r.get("classified"),
            r.get("signature"), r.get("evidence"), r["verdict"])) + " |")
    out += ["", "| environment fact | recorded by `logkit run` | the command's own report | agrees |",
            "|---|---|---|---|"]
    if env_rows is None:
        out.append(f"| environment | {_cell(skipped_env)} | | |")
    else:
        for r in env_rows:
            agrees = "not read" if r["ok"] is None else ("yes" if r["ok"] else "NO")
            out.append(f"| {_cell(r['fact'])} | {_cell(r['logkit'])} | {_cell(r['truth'])} | {agrees} |")
    out.append("")
    if speed is None:
        out.append(f"throughput: {skipped_speed}")
    elif "error" in speed:
        out.append(f"throughput: FAILED: {speed['error']}")
    else:
        tf = {v: statistics.median(r["tflops"] for r in speed["runs"][v]) for v in ("without", "with")}
        out.append(f"throughput ({speed['rounds']} rounds of {speed['iterations']} {speed['size']}^3 matmuls on "
                   f"{speed['device']}, a line printed per product): with/without `logkit run` = "
                   f"{speed['loop_ratio']:.3f} in-loop time, {speed['wall_ratio']:.3f} wall time "
                   f"(start-up included); {tf['without']:.1f} vs {tf['with']:.1f} TFLOP/s (medians)")
    return "\n".join(out) + "\n"


def copy_out(check: Check, table_text: str, out: Path) -> None:
    """The table, the session's events.jsonl and a tarball of the session and step outputs."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.md").write_text(table_text, encoding="utf-8")
    events = check.sessions / check.session / "events.jsonl"
    if check.session and events.is_file():
        shutil.copyfile(events, out / "events.jsonl")
    with tarfile.open(out / "gpu-check.tar.gz", "w:gz") as tar:
        for path in sorted(check.work.iterdir()):
            if path.name not in ("site", ".gpu_check"):  # the carried wheels, installed
                tar.add(path, arcname=f"gpu-check/{path.name}")


def run_all(check: Check) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any] | None, str]:
    """Every step, then the table (printed, and written to WORK/table.md)."""
    gpu = local_arch()
    say(f"GPU architecture (logkit.gpu.local_arch): {gpu or 'none: no nvidia-smi, or no GPU it lists'}")
    check.start(f"gpu_check on {gpu or 'a machine without a GPU'}")
    check.failures(gpu)
    truth = check.environment(gpu)
    speed = check.throughput(gpu)
    env_rows, name = None, "an unnamed GPU"
    event = check.recorded().get("environment", (None, None, None))[2]
    if event is not None and truth is not None:
        env = event.environment.model_dump(mode="json")
        env_rows = environment_rows(env, truth)
        name = (env.get("gpus") or [{}])[0].get("name") or name
    elif gpu is not None:
        check.skipped["environment"] = "FAILED: no environment event, or env_truth.py printed no JSON"
    rows = check.failure_rows()
    where = f"{name} ({gpu})" if gpu else "a machine without a GPU"
    title = f"gpu_check on {where}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    text = table(title, rows, env_rows, check.skipped.get("environment"), speed, check.skipped.get("throughput"))
    (check.work / "table.md").write_text(text, encoding="utf-8")
    print(text, flush=True)
    return rows, env_rows, speed, text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/gpu_check.sh", description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="python3", help="the interpreter the steps run under (PyTorch, CuPy)")
    parser.add_argument("--work", type=Path, default=Path("bench/out/gpu-check"))
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    check = Check(args.python, args.work.resolve())
    text = "gpu_check stopped before its table: see its output, and gpu-check.tar.gz\n"
    try:
        rows, env_rows, speed, text = run_all(check)
    finally:  # what a GPU machine recorded comes back, even when this script breaks
        if os.environ.get("OUT"):
            copy_out(check, text, Path(os.environ["OUT"]))
            say(f"copied table.md, events.jsonl and gpu-check.tar.gz to {os.environ['OUT']}")
    misses = [r["step"] for r in rows if r["verdict"] not in ("match",) and not r["verdict"].startswith("skipped")]
    misses += [r["fact"] for r in env_rows or [] if r["ok"] is False]
    if speed is not None and "error" in speed:
        misses.append("throughput")
    if check.skipped.get("environment", "").startswith("FAILED"):
        misses.append("environment")
    if misses:
        say("missed: " + ", ".join(misses))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
