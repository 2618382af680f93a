"""A sweep's grid: the cells of a spec, resolved and preflighted by SGLang's own parser.

Contract: :func:`build` takes SGLang's parser spec for the launch's interpreter
(:func:`logkit.launch.config.spec_for`: the cache ``logkit run`` uses, one full parse when cold),
checks every cell with it in-process (:func:`logkit.launch.sglang.quick_parse`), and returns a
:class:`Grid`: one :class:`Cell` per combination of axis values, in the order of the Cartesian
product, each with its argv, its key (``moe_runner_backend=flashinfer_cutlass``, SGLang's dest
names), its fingerprint (:func:`~logkit.launch.flags.fingerprint` of the flags given) and, when
SGLang's parser refuses its flags, the parser's message (``preflight``). Where SGLang is not
importable the flags are taken as given (``parser = "plain"``) and ``"choices"`` is refused.
:func:`with_flag` sets one flag in an argv; :func:`bench_points` expands the bench axes against a
cell's host and port.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from ..errors import BadInput
from .spec import CHOICES, SweepSpec

__all__ = ["Cell", "Grid", "bench_points", "build", "with_flag"]


@dataclass
class Cell:
    """One configuration of the grid."""

    id: str
    key: str
    values: dict[str, Any]  # SGLang dest -> value
    argv: list[str]
    fingerprint: dict[str, Any] = field(default_factory=dict)
    preflight: str | None = None  # SGLang's argparse message when it refuses the flags (never launched)
    host: str | None = None
    port: int | None = None


@dataclass
class Grid:
    """Every cell of a sweep, and what resolved them."""

    cells: list[Cell]
    axes: dict[str, list[Any]]  # dest -> values ("choices" resolved)
    parser: str
    sglang_version: str | None
    python: str | None


def with_flag(words: list[str], flag: str, value: Any) -> list[str]:
    """``words`` with ``--flag value`` set: an existing ``--flag X``/``--flag=X`` is replaced."""
    opt = "--" + flag
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == opt and i < len(words) and not words[i].startswith("--"):
            i += 1  # its value
        if word != opt and not word.startswith(opt + "="):
            out.append(word)
    if isinstance(value, bool):
        return out + [opt] if value else out
    return out + [opt, str(value)]


def build(spec: SweepSpec, env: dict[str, str] | None = None, say: Callable[[str], None] | None = None) -> Grid:
    """The cells of ``spec``, preflighted in the launch's own interpreter; ``say`` hears of a cold read of SGLang's parser."""
    from ..launch.config import spec_for, valid_port
    from ..launch.flags import fingerprint, plain_parse
    from ..launch.sglang import cached_spec, quick_parse
    from ..capture.sglang import python_for
    from ..capture.sglang.detect import detect

    env = dict(os.environ if env is None else env)
    target = detect(spec.argv)
    where = f"{spec.path}: command" if spec.path else "the launch command"
    if target is None or target.kind != "launch" or target.args_at is None:
        raise BadInput(f"{where} is not an SGLang launch logkit can set flags on: {' '.join(spec.argv)[:200]}",
                       fix="python -m sglang.launch_server --model-path M ... (not inside bash -c)")
    python = python_for(target, spec.argv, env)
    head, base = spec.argv[: target.args_at], spec.argv[target.args_at :]
    if python and say is not None and cached_spec(python) is None:
        say(f"reading SGLang's flag parser in {python} (first sweep with this interpreter: a few seconds)")
    parser_spec, version = spec_for(python) if python else (None, None)
    by_option = {opt: a for a in parser_spec["actions"] for opt in a["opts"]} if parser_spec else {}
    axes: dict[str, list[Any]] = {}
    for flag, values in spec.axes.items():
        if values == CHOICES:
            described = by_option.get("--" + flag)
            if parser_spec is None:
                raise BadInput(f"{where}: {flag} = \"choices\" needs SGLang importable in {python or 'the command'}",
                               fix=f"install sglang there, or list the values: {flag} = [\"a\", \"b\"]")
            if not described or not described.get("choices"):
                raise BadInput(f"--{flag} has no choices in SGLang {version}'s parser" if described
                               else f"SGLang {version}'s parser has no --{flag}",
                               fix=f"list the values yourself: {flag} = [\"a\", \"b\"]")
            axes[flag] = list(described["choices"])
        else:
            axes[flag] = list(values)  # type: ignore[arg-type]
    dests = {f: (by_option.get("--" + f) or {}).get("dest") or f.replace("-", "_") for f in axes}
    cells: list[Cell] = []
    for n, combo in enumerate(itertools.product(*axes.values()), start=1):
        words = list(base)
        for flag, value in zip(axes, combo, strict=True):
            words = with_flag(words, flag, value)
        values = {dests[f]: v for f, v in zip(axes, combo, strict=True)}
        key = ", ".join(f"{d}={v}" for d, v in values.items())
        args, error, given = plain_parse(words), None, None
        if parser_spec is not None:
            given, error = quick_parse(words, parser_spec)
            if given is not None:
                args = {**parser_spec.get("defaults", {}), **given}
        port = args.get("port")
        # the one rule: only what the command chose, by SGLang's names (`--tp 2` is tp_size,
        # `--fp4-gemm-backend` is fp4_gemm_runner_backend); the plain names when SGLang refused it
        chosen = set(args if given is None else given) | set(values)
        cells.append(Cell(id=f"c{n}", key=key, values=values, argv=head + words,
                          fingerprint=fingerprint({k: v for k, v in args.items() if k in chosen}),
                          preflight=error, host=str(args.get("host") or "127.0.0.1"),
                          port=30000 if (p := valid_port(port)) is None else p))
    dest_axes = {d: axes[f] for f, d in zip(axes, cells[0].values, strict=True)} if cells else {}
    return Grid(cells=cells, axes=dest_axes, parser="sglang" if parser_spec else "plain",
                sglang_version=version, python=python)


def bench_points(spec: SweepSpec, cell: Cell) -> list[tuple[dict[str, Any], list[str]]]:
    """``(labels, argv)`` for each combination of the bench axes, aimed at ``cell``'s port."""
    if not spec.bench_argv:
        return []
    base = list(spec.bench_argv)
    if not any(w in ("--port", "--base-url") or w.startswith(("--port=", "--base-url=")) for w in base):
        base += ["--port", str(cell.port)]
        if cell.host not in (None, "127.0.0.1", "0.0.0.0", "localhost"):
            base += ["--host", str(cell.host)]
    axes = spec.bench_axes or {}
    points: list[tuple[dict[str, Any], list[str]]] = []
    for combo in itertools.product(*axes.values()):  # no axes: one point, the command as it is
        words = base
        for flag, value in zip(axes, combo, strict=True):
            words = with_flag(words, flag, value)
        points.append(({f.replace("-", "_"): v for f, v in zip(axes, combo, strict=True)}, list(words)))
    return points
