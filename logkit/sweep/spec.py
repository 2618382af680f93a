"""A sweep's specification: ``SPEC.toml``, or the one-axis command-line form.

Contract: :func:`load` reads a TOML file (its format: docs/reference.md, ``logkit
sweep``) into a :class:`SweepSpec` and :func:`from_cli` builds one from ``--axis FLAG=V1,V2 --
CMD ...``. Bad input raises :class:`~logkit.errors.BadInput` naming the file, the line of the
offending key and the fix; nothing else is checked here (SGLang's parser checks the flags later, in
the target interpreter). :meth:`SweepSpec.spec_hash` is the identity a rerun resumes by: the launch
command, axes, smoke prompts and bench command with its axes (the latency limit and the time budget
are not part of it: changing them does not change what runs).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..launch.flags import coerce
from ..store import shared

__all__ = ["CHOICES", "SweepSpec", "from_cli", "line_of", "load", "parse_duration"]

CHOICES = "choices"  # the axis value that means "every choice SGLang's parser allows for this flag"
KNOWN_KEYS = {"title", "command", "smoke", "accuracy", "ready_timeout", "budget", "grace", "port_wait", "session", "axes",
              "bench", "limit"}
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass
class SweepSpec:
    """What to sweep: a base launch, its axes, and how each working cell is judged."""

    title: str
    argv: list[str]
    axes: dict[str, list[Any] | str]  # flag without dashes, as written (moe-runner-backend) -> values, or "choices"
    smoke: list[str] = field(default_factory=list)
    bench_argv: list[str] = field(default_factory=list)
    bench_axes: dict[str, list[Any]] = field(default_factory=dict)
    limit_metric: str | None = None
    limit_max: float | None = None
    budget_s: float | None = None
    ready_timeout: float = 900.0
    grace: float = 90.0
    port_wait: float = 120.0
    session: str | None = None
    path: str | None = None
    accuracy: float | None = None  # the accuracy gate's threshold (logkit run --accuracy), None for no gate
    # runs per bench point (logkit run --repeat) and whether an unmeasured warm-up run comes first
    repeat: int = 1
    warmup: bool = False

    def spec_hash(self) -> str:
        """sha256 of what the sweep runs (not of its limit or budget)."""
        canon: dict[str, Any] = {"argv": self.argv, "axes": self.axes, "smoke": self.smoke, "bench_argv": self.bench_argv,
                                 "bench_axes": self.bench_axes}
        # only when set, so that a spec without them keeps the hash it had before they existed
        canon |= {k: v for k, v in (("accuracy", self.accuracy), ("repeat", self.repeat), ("warmup", self.warmup))
                  if v not in (None, 1, False)}
        return hashlib.sha256(json.dumps(canon, sort_keys=True, default=str).encode()).hexdigest()


def parse_duration(value: Any, *, where: str = "budget", zero: bool = False) -> float:
    """``3600``, ``"90m"``, ``"4h"`` -> seconds; ``0`` too with ``zero`` (a budget that runs nothing)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (value > 0 or (zero and value == 0)):
        return float(value)
    match = None if isinstance(value, bool) else _DURATION.match(str(value))
    if not match or float(match.group(1)) < 0 or (float(match.group(1)) == 0 and not zero):
        raise BadInput(f"{where} = {value!r} is not a duration", fix=f'{where} = "4h" (or seconds, or "90m")')
    return float(match.group(1)) * _UNITS[match.group(2)]


def line_of(text: str, key: str) -> int:
    """The 1-based line where ``key`` is set (first match), else 1."""
    pattern = re.compile(r"^[ \t]*(?:\[[ \t]*)?[\"']?" + re.escape(key) + r"[\"']?[ \t]*[=\]]", re.M)
    match = pattern.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else 1


def _argv(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise BadInput(f"{where}: cannot split the command ({exc})", fix="check its quotes") from None
    elif isinstance(value, list) and all(isinstance(w, str) for w in value):
        words = list(value)
    else:
        raise BadInput(f"{where} must be a command string or a list of words, not {value!r}",
                       fix='command = "python -m sglang.launch_server --model-path M"')
    if not words:
        raise BadInput(f"{where} is empty", fix='command = "python -m sglang.launch_server --model-path M"')
    return words


def _flag(name: str) -> str:
    return name.strip().lstrip("-")


def _axes(raw: Any, where: str, *, allow_choices: bool, at: Any = None) -> dict[str, list[Any] | str]:
    """The axes table; ``at(key)`` gives ``file:line`` of a key (errors point at the axis itself)."""
    if not isinstance(raw, dict) or not raw:
        raise BadInput(f"{where} must be a table of flag = [values]", fix='[axes]\nmoe-runner-backend = ["auto", "triton"]')
    out: dict[str, list[Any] | str] = {}
    for name, values in raw.items():
        flag = _flag(name)
        if allow_choices and values == CHOICES:
            out[flag] = CHOICES
        elif isinstance(values, list) and values and all(isinstance(v, (str, int, float, bool)) for v in values):
            if len({json.dumps(v) for v in values}) != len(values):
                raise BadInput(f"{where}: {name} lists a value twice: {values!r}", fix="list each value once")
            out[flag] = list(values)
        else:
            hint = ' or "choices"' if allow_choices else ""
            if at is not None:
                where = f"{at(name)}: {where.rpartition(': ')[2]}"
            raise BadInput(f"{where}: {name} = {values!r} is not a non-empty list of values{hint}",
                           fix=f'{name} = ["a", "b"]{hint}')
    return out


def _build(data: dict[str, Any], text: str, path: str) -> SweepSpec:
    def where(key: str) -> str:
        return f"{path}:{line_of(text, key)}"

    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise BadInput(f"{where(unknown[0])}: unknown key {unknown[0]!r}", fix="known keys: " + ", ".join(sorted(KNOWN_KEYS)))
    if "command" not in data:
        raise BadInput(f"{path}: no 'command'", fix='command = "python -m sglang.launch_server --model-path M ..."')
    argv = _argv(data["command"], f"{where('command')}: command")
    if "axes" not in data:
        raise BadInput(f"{path}: no [axes] table", fix='[axes]\nmoe-runner-backend = ["auto", "flashinfer_cutlass"]')
    axes = _axes(data["axes"], f"{where('axes')}: [axes]", allow_choices=True, at=where)
    smoke = data.get("smoke", [])
    if isinstance(smoke, str):
        smoke = [smoke]
    if not isinstance(smoke, list) or not all(isinstance(p, str) and p.strip() for p in smoke):
        raise BadInput(f"{where('smoke')}: smoke must be a list of prompts", fix='smoke = ["What is 3 + 5?"]')
    bench = data.get("bench", {})
    if not isinstance(bench, dict):
        raise BadInput(f"{where('bench')}: bench must be a table", fix='[bench]\ncommand = "python -m sglang.bench_serving ..."')
    extra = sorted(set(bench) - {"command", "axes", "repeat", "warmup"})
    if extra:
        raise BadInput(f"{where(extra[0])}: unknown key bench.{extra[0]}", fix="[bench] takes command, axes, repeat and warmup")
    repeat = bench.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise BadInput(f"{where('repeat')}: bench.repeat must be a whole number of runs, 1 or more",
                       fix="repeat = 5 (from 5 runs a bootstrap interval of the median)")
    warmup = bench.get("warmup", False)
    if not isinstance(warmup, bool):
        raise BadInput(f"{where('warmup')}: bench.warmup must be true or false", fix="warmup = true")
    accuracy = data.get("accuracy")
    if accuracy is True:
        from ..capture.sglang.accuracy import default_threshold

        accuracy = default_threshold()
    elif accuracy is False:
        accuracy = None
    elif accuracy is not None and (isinstance(accuracy, bool) or not isinstance(accuracy, (int, float))
                                   or not 0 <= accuracy <= 1):
        raise BadInput(f"{where('accuracy')}: accuracy must be a share of the questions (0 to 1) or true",
                       fix="accuracy = 0.9")
    bench_argv = _argv(bench["command"], f"{where('command')}: bench.command") if "command" in bench else []
    bench_axes: dict[str, list[Any]] = {}
    if "axes" in bench:
        if not bench_argv:
            raise BadInput(f"{where('bench')}: bench.axes without bench.command", fix='add command = "python -m sglang.bench_serving ..."')
        bench_axes = _axes(bench["axes"], f"{where('axes')}: bench.axes", allow_choices=False)  # type: ignore[assignment]
    limit = data.get("limit", {})
    metric, ceiling = None, None
    if limit:
        if not isinstance(limit, dict) or set(limit) != {"metric", "max"} or not isinstance(limit["metric"], str) \
                or isinstance(limit["max"], bool) or not isinstance(limit["max"], (int, float)):
            raise BadInput(f"{where('limit')}: [limit] needs metric (a bench metric name) and max (a number)",
                           fix='[limit]\nmetric = "p99_tpot_ms"\nmax = 50')
        metric, ceiling = limit["metric"], float(limit["max"])
    spec = SweepSpec(title=str(data.get("title") or f"sweep of {', '.join(axes)}"), argv=argv, axes=axes, smoke=list(smoke),
                     bench_argv=bench_argv, bench_axes=bench_axes, limit_metric=metric, limit_max=ceiling, path=path,
                     accuracy=None if accuracy is None else float(accuracy), repeat=repeat, warmup=warmup)
    for key in ("ready_timeout", "grace", "port_wait"):
        if key in data:
            setattr(spec, key, parse_duration(data[key], where=f"{where(key)}: {key}"))
    if "budget" in data:
        spec.budget_s = parse_duration(data["budget"], where=f"{where('budget')}: budget", zero=True)
    if "session" in data:
        spec.session = str(data["session"])
    return spec


def load(path: str | Path) -> SweepSpec:
    """Read ``SPEC.toml``; errors name ``file:line`` and the fix."""
    p = Path(path)
    text, data = shared.read_toml(p, fix="give the path of a sweep spec (SPEC.toml)")
    return _build(data, text, str(p))


def from_cli(axes: list[str], argv: list[str], *, smoke: list[str] | None = None, bench: str | None = None,
             bench_axes: list[str] | None = None, title: str | None = None) -> SweepSpec:
    """``--axis moe-runner-backend=auto,triton -- python -m sglang.launch_server ...``."""
    if not argv:
        raise BadInput("no launch command after --", fix="logkit sweep --axis FLAG=A,B -- python -m sglang.launch_server ...")

    def split(items: list[str], what: str) -> dict[str, list[Any] | str]:
        out: dict[str, list[Any] | str] = {}
        for item in items:
            name, eq, values = item.partition("=")
            if not eq or not name.strip() or not values.strip():
                raise BadInput(f"{what} {item!r} is not FLAG=V1,V2", fix=f"{what} moe-runner-backend=auto,triton")
            out[_flag(name)] = CHOICES if values.strip() == CHOICES else [coerce(v.strip()) for v in values.split(",") if v.strip()]
        return out

    spec_axes = split(axes, "--axis")
    if not spec_axes:
        raise BadInput("no --axis given", fix="logkit sweep --axis moe-runner-backend=auto,triton -- CMD ...")
    b_axes = split(bench_axes or [], "--bench-axis")
    if any(v == CHOICES for v in b_axes.values()):
        raise BadInput("--bench-axis takes values, not 'choices'", fix="--bench-axis max-concurrency=1,16,64")
    return SweepSpec(title=title or f"sweep of {', '.join(spec_axes)}", argv=list(argv), axes=spec_axes,
                     smoke=list(smoke or []), bench_argv=_argv(bench, "--bench") if bench else [],
                     bench_axes=b_axes)  # type: ignore[arg-type]
