"""Parse an SGLang launch's flags the way that SGLang version parses them; fingerprint and diff them.

Contract:

* :func:`parse_launch` runs ``_argscript.py`` in the wrapped command's own interpreter (so flags,
  aliases, prefix abbreviations and defaults are exactly that install's ``ServerArgs``), with a
  timeout; it returns a :class:`~logkit.events.LaunchConfig` with ``parser="sglang"``, the full
  argument set, the non-default part and the backend fingerprint, or the SGLang argparse error
  (preflight). When SGLang is not importable there, a plain parser records the flags as given,
  ``parser="plain"``, ``unresolved=True``.
* :func:`fingerprint` picks every ``*_backend`` value plus the keys listed in
  ``logkit/data/sglang.toml``; :func:`diff_launch` compares two launches (flags, env, packages).
* Secret flag values are redacted by the recorder before anything is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...events import Attempt, BenchConfig, ConfigDiff, LaunchConfig
from .outcomes import _data

__all__ = ["ParseResult", "diff_launch", "fingerprint", "parse_bench", "parse_launch", "plain_parse"]

SCRIPT = Path(__file__).with_name("_argscript.py")
TIMEOUT_S = 60.0


@dataclass
class ParseResult:
    """A launch config, or the reason SGLang's parser refused the flags."""

    config: LaunchConfig
    error: str | None = None
    #: Versions of sglang, sgl-kernel, flashinfer, torch, ... in the command's interpreter.
    packages: dict[str, str] | None = None


def _coerce(value: str) -> Any:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def plain_parse(flags: list[str]) -> dict[str, Any]:
    """The flags as given: ``--tp-size 2`` -> ``{"tp_size": 2}``; a bare flag -> True."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(flags):
        word = flags[i]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            key = name.replace("-", "_")
            if eq:
                out[key] = _coerce(value)
                i += 1
                continue
            vals: list[str] = []
            j = i + 1
            while j < len(flags) and not (flags[j].startswith("--") or (flags[j].startswith("-") and len(flags[j]) == 2 and flags[j][1].isalpha())):
                vals.append(flags[j])
                j += 1
            out[key] = True if not vals else (_coerce(vals[0]) if len(vals) == 1 else [_coerce(v) for v in vals])
            i = j
        else:
            i += 1
    return out


def fingerprint(args: dict[str, Any]) -> dict[str, Any]:
    """The values that decide which kernels run: every ``*_backend`` plus the table's keys."""
    keys = set(_data("sglang.toml")["fingerprint_keys"])
    return {k: v for k, v in sorted(args.items()) if (k.endswith("_backend") or k in keys) and v is not None}


def _host_port(args: dict[str, Any]) -> tuple[str | None, int | None]:
    host = args.get("host")
    port = args.get("port")
    try:
        port = int(port) if port is not None else None
    except (TypeError, ValueError):
        port = None
    return (str(host) if host is not None else None), port


def parse_launch(flags: list[str], python: str | None, *, timeout: float = TIMEOUT_S) -> ParseResult:
    """Parse launch flags with SGLang's own parser in ``python`` (fallback: plain, unresolved)."""
    result: dict[str, Any] | None = None
    if python:
        try:
            proc = subprocess.run(
                [python, "-I", str(SCRIPT)], input=json.dumps(flags), capture_output=True, text=True, timeout=timeout,
            )
            line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
            result = json.loads(line) if line.startswith("{") else None
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
            result = None
    if result and result.get("defaults") and not str(result.get("error") or "").startswith("import:"):
        version = result.get("version")
        if not result.get("ok"):
            plain = plain_parse(flags)
            host, port = _host_port(plain)
            cfg = LaunchConfig(parser="plain", sglang_version=version, unresolved=True, args=plain,
                               non_default=plain, fingerprint=fingerprint(plain), host=host, port=port)
            return ParseResult(cfg, result.get("error"), result.get("packages"))
        args = result["args"]
        defaults = result["defaults"]
        non_default = {k: v for k, v in args.items() if k in defaults and v != defaults[k]}
        host, port = _host_port(args)
        cfg = LaunchConfig(parser="sglang", sglang_version=version, unresolved=False, args=args,
                           non_default=non_default, fingerprint=fingerprint(args), host=host, port=port)
        return ParseResult(cfg, None, result.get("packages"))
    plain = plain_parse(flags)
    host, port = _host_port(plain)
    version = result.get("version") if result else None
    return ParseResult(LaunchConfig(parser="plain", sglang_version=version, unresolved=True, args=plain,
                                    non_default=plain, fingerprint=fingerprint(plain), host=host, port=port),
                       None, (result or {}).get("packages"))


def parse_bench(flags: list[str]) -> BenchConfig:
    """The benchmark client's target and workload (SGLang's bench defaults where not given)."""
    a = plain_parse(flags)
    backend = a.get("backend", "sglang")
    host = a.get("host", "0.0.0.0")
    port = a.get("port")
    base_url = a.get("base_url")
    if port is None and not base_url:
        port = 8000 if str(backend).startswith("vllm") else 23333 if str(backend).startswith("lmdeploy") else 30000
    labels = {
        "backend": backend,
        "dataset": a.get("dataset_name", "sharegpt"),
        "num_prompts": a.get("num_prompts", 1000),
        "request_rate": a.get("request_rate", "inf"),
        "max_concurrency": a.get("max_concurrency"),
        "random_input_len": a.get("random_input_len", 1024) if str(a.get("dataset_name", "")).startswith("random") else None,
        "random_output_len": a.get("random_output_len", 1024) if str(a.get("dataset_name", "")).startswith("random") else None,
        "tag": a.get("tag"),
    }
    return BenchConfig(host=str(host) if host is not None else None, port=int(port) if isinstance(port, int) else None,
                       base_url=base_url, output_file=a.get("output_file"),
                       labels={k: v for k, v in labels.items() if v is not None})


def diff_launch(config: LaunchConfig, previous: Attempt | None, env: dict[str, str] | None = None,
                packages: dict[str, str] | None = None) -> ConfigDiff | None:
    """What changed against the session's previous launch (flags, env vars, package versions)."""
    if previous is None or previous.launch is None:
        return None
    old, new = previous.launch.non_default or previous.launch.args, config.non_default or config.args
    skip = {"random_seed"}
    added = {k: v for k, v in new.items() if k not in old and k not in skip}
    removed = {k: v for k, v in old.items() if k not in new and k not in skip}
    changed = {k: [old[k], new[k]] for k in new if k in old and old[k] != new[k] and k not in skip}
    env_changed: dict[str, list[str | None]] = {}
    packages_changed: dict[str, list[str | None]] = {}
    prev_env = previous.environment
    if prev_env is not None and env is not None:
        for k in sorted(set(prev_env.env) | set(env)):
            if prev_env.env.get(k) != env.get(k):
                env_changed[k] = [prev_env.env.get(k), env.get(k)]
    if prev_env is not None and packages is not None:
        # Only packages the previous attempt recorded: its probe and ours may list different sets.
        for k in sorted(prev_env.packages):
            if k in packages and prev_env.packages[k] != packages[k]:
                packages_changed[k] = [prev_env.packages[k], packages[k]]
    return ConfigDiff(against=previous.short_id, added=added, removed=removed, changed=changed,
                      env_changed=env_changed, packages_changed=packages_changed)


def diff_note(diff: ConfigDiff, attempt_hint: str = "") -> str:
    """One line for the terminal: ``vs A7: nsa_decode_backend flashinfer -> trtllm`` (a secret flag
    says only that it changed, and every value is redacted: stderr is often captured to a file)."""
    from ..redact import Redactor

    redactor = Redactor()
    secret = redactor.is_secret_key
    parts = [f"{k} changed" if secret(k) else f"{k} {a} -> {b}" for k, (a, b) in diff.changed.items()]
    parts += [f"+{k}={redactor.placeholder if secret(k) else v}" for k, v in diff.added.items()]
    parts += [f"-{k}" for k in diff.removed]
    parts += [f"env {k} changed" if secret(k) else f"env {k} {a} -> {b}" for k, (a, b) in diff.env_changed.items()]
    parts += [f"{k} {a} -> {b}" for k, (a, b) in diff.packages_changed.items()]
    return redactor.text(f"vs {diff.against}: " + (", ".join(parts) if parts else "same flags"))


def default_python() -> str:
    """The interpreter to fall back on (logkit's own) when the argv names none."""
    return sys.executable
