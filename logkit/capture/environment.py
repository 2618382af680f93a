"""Where an attempt runs: host, OS, Python, git, allow-listed variables, GPUs, packages.

Contract:

* :func:`quick` is instant (no subprocess) and goes into the attempt line itself.
* :class:`Probes` runs the slow probes (git, ``nvidia-smi``, ``topo -m``, the command's interpreter) in
  threads while the child runs, each bounded by a timeout; one that fails is recorded in ``probes``
  with the reason, never raised. :meth:`Probes.result` merges them into the quick dict.
* The package probe runs the command's interpreter (``python``, ``env X=1 python3``, a ``#!`` line) on
  a script reading versions with ``importlib.metadata`` and ``torch/version.py``; it never imports
  torch (a CUDA context on the GPUs the server is about to size its memory pool on).
* Values are plain JSON-ready dicts shaped like :class:`logkit.events.Environment`, redacted.

Imports only the standard library.
"""

from __future__ import annotations

import json
import os
import sys
import re
import shutil
import subprocess
import threading
import time
import tomllib
from collections.abc import Mapping
from fnmatch import translate
from functools import lru_cache
from pathlib import Path
from typing import Any

from .redact import Redactor

_DATA = Path(__file__).resolve().parent.parent / "data"

__all__ = ["Probes", "allowed_env", "interpreter_of", "parse_gpus", "quick"]

GIT_TIMEOUT_S = 3.0
SMI_TIMEOUT_S = 5.0
PACKAGES_TIMEOUT_S = 10.0

#: Package names recorded, and the distributions that provide each (first found wins).
PACKAGES: dict[str, tuple[str, ...]] = {
    "sglang": ("sglang",),
    "sgl-kernel": ("sgl-kernel", "sglang-kernel"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "torch": ("torch",),
    "triton": ("triton", "pytorch-triton"),
    "transformers": ("transformers",),
}

_PACKAGE_SCRIPT = r"""
import json, os, re, sys
import importlib.metadata as md, importlib.util as iu
wanted = json.loads(sys.argv[1])
out = {}
for name, dists in wanted.items():
    out[name] = None
    for dist in dists:
        try:
            out[name] = md.version(dist)
            break
        except Exception:
            pass
cuda = None
try:
    spec = iu.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
        with open(path) as fh:
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", fh.read(), re.M)
        cuda = m.group(1) if m else None
except Exception:
    pass
print(json.dumps({"packages": out, "torch_cuda": cuda, "executable": sys.executable}))
"""

_PYTHON_NAME = re.compile(r"^python[0-9.]*$")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@lru_cache(maxsize=1)
def _allow_re() -> re.Pattern[str]:
    raw = (_DATA / "env_allowlist.toml").read_text(encoding="utf-8")
    return re.compile("|".join(translate(p) for p in tomllib.loads(raw)["patterns"]))


def allowed_env(env: Mapping[str, str], redactor: Redactor) -> dict[str, str]:
    """The allow-listed variables of ``env``, redacted, sorted by name."""
    allow = _allow_re()
    picked = {k: v for k, v in env.items() if allow.match(k)}
    return dict(sorted(redactor.env(picked).items()))


def quick(env: Mapping[str, str], redactor: Redactor) -> dict[str, Any]:
    """The part of the environment known without running anything."""
    uname = os.uname()
    return {"host": uname.nodename, "os": f"{uname.sysname} {uname.release} {uname.machine}",
            "python": "%d.%d.%d" % sys.version_info[:3], "env": allowed_env(env, redactor)}


def interpreter_of(argv: list[str], env: Mapping[str, str]) -> str | None:
    """The Python interpreter the wrapped command runs under, if it is a Python command."""
    words = list(argv)
    while words and os.path.basename(words[0]) == "env":
        words = words[1:]
        while words and (words[0].startswith("-") or _ENV_ASSIGN.match(words[0])):
            takes_value = words[0] in ("-u", "--unset", "-C", "--chdir")
            words = words[2:] if takes_value else words[1:]
    if not words:
        return None
    path_var = env.get("PATH", os.defpath)
    exe = words[0] if "/" in words[0] else shutil.which(words[0], path=path_var)
    if exe is None:
        return None
    if _PYTHON_NAME.match(os.path.basename(words[0])):
        return exe
    try:
        with open(exe, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    shebang = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not shebang:
        return None
    if os.path.basename(shebang[0]) == "env" and len(shebang) > 1:
        target = shebang[-1]
        return shutil.which(target, path=path_var) if _PYTHON_NAME.match(target) else None
    return shebang[0] if _PYTHON_NAME.match(os.path.basename(shebang[0])) else None


def parse_gpus(text: str) -> list[dict[str, Any]]:
    """Rows of ``nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap``."""
    gpus: list[dict[str, Any]] = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        gpu: dict[str, Any] = {"index": int(cells[0]), "name": cells[1]}
        if len(cells) > 2 and cells[2] and "N/A" not in cells[2]:
            gpu["driver"] = cells[2]
        if len(cells) > 3 and cells[3].split()[:1] and cells[3].split()[0].isdigit():
            gpu["memory_mib"] = int(cells[3].split()[0])
        if len(cells) > 4 and cells[4] and "N/A" not in cells[4]:
            gpu["compute_cap"] = cells[4]
        gpus.append(gpu)
    return gpus


def _run(cmd: list[str], timeout: float, cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=None if env is None else dict(env), stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        err = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"{cmd[0]} exited {done.returncode}: {err[-1] if err else ''}".strip())
    return done.stdout


class Probes:
    """The slow probes, started at once in background threads."""

    def __init__(self, argv: list[str], cwd: str, env: Mapping[str, str], redactor: Redactor) -> None:
        self.redactor = redactor
        self._argv, self._cwd, self._env = list(argv), cwd, dict(env)
        self._lock = threading.Lock()
        self.values: dict[str, Any] = {}
        self.probes: dict[str, dict[str, Any]] = {}
        self._threads = [
            threading.Thread(target=self._guard, args=(name, fn), name=f"logkit-probe-{name}", daemon=True)
            for name, fn in (("git", self._git), ("gpus", self._gpus), ("packages", self._packages))
        ]
        self.started = time.monotonic()
        for thread in self._threads:
            thread.start()

    def _guard(self, name: str, fn: Any) -> None:
        start = time.monotonic()
        try:
            values = fn()
            record: dict[str, Any] = {"ok": True}
        except FileNotFoundError as exc:
            values, record = {}, {"ok": False, "error": f"{exc.filename or exc} not found"}
        except subprocess.TimeoutExpired as exc:
            values, record = {}, {"ok": False, "error": f"timed out after {exc.timeout:.0f}s"}
        except Exception as exc:  # a probe never fails the run
            values, record = {}, {"ok": False, "error": self.redactor.text(f"{type(exc).__name__}: {exc}")[:300]}
        if isinstance(values, tuple):
            values, skipped = values
            record = {"ok": False, "error": skipped}
        record["seconds"] = round(time.monotonic() - start, 3)
        with self._lock:
            self.values.update(values)
            self.probes[name] = record

    def _git(self) -> Any:
        if shutil.which("git") is None:
            return {}, "git not found on PATH"
        # One process gives commit, branch and dirtiness (short commands wait for this probe).
        cmd = ["git", "-C", self._cwd, "status", "--porcelain=v2", "--branch", "--untracked-files=no"]
        try:
            out = _run(cmd, GIT_TIMEOUT_S)
        except RuntimeError:
            return {}, "not a git working tree"
        commit = branch = None
        dirty = False
        for line in out.splitlines():
            if line.startswith("# branch.oid "):
                commit = line.split()[2]
            elif line.startswith("# branch.head "):
                branch = line.split()[2]
            elif line and not line.startswith("#"):
                dirty = True
        return {"git": {"commit": None if commit == "(initial)" else commit, "dirty": dirty, "branch": branch}}

    def _gpus(self) -> Any:
        smi = shutil.which("nvidia-smi", path=self._env.get("PATH", os.defpath))
        if smi is None:
            return {}, "nvidia-smi not found on PATH (no NVIDIA GPU or driver here)"
        query = "--query-gpu=index,name,driver_version,memory.total,compute_cap"
        gpus = parse_gpus(_run([smi, query, "--format=csv,noheader,nounits"], SMI_TIMEOUT_S))
        values: dict[str, Any] = {"gpus": gpus}
        if gpus and gpus[0].get("compute_cap"):
            values["device_capability"] = gpus[0]["compute_cap"]
        try:
            values["topology"] = _run([smi, "topo", "-m"], SMI_TIMEOUT_S).rstrip()[:20000]
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
            values["topology"] = None
            with self._lock:
                self.probes["topology"] = {"ok": False, "error": str(exc)[:300]}
        return values

    def _packages(self) -> Any:
        interp = interpreter_of(self._argv, self._env)
        if interp is None:
            return {}, "not a Python command"
        script_arg = json.dumps(PACKAGES)
        out = _run([interp, "-c", _PACKAGE_SCRIPT, script_arg], PACKAGES_TIMEOUT_S, cwd=self._cwd, env=self._env)
        data = json.loads(out.strip().splitlines()[-1])
        return {"packages": data.get("packages", {}), "torch_cuda": data.get("torch_cuda"),
                "interpreter": data.get("executable") or interp}

    def join(self, name: str, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for probe ``name`` (``git``, ``gpus``, ``packages``) alone."""
        for thread in self._threads:
            if thread.name == f"logkit-probe-{name}":
                thread.join(timeout)

    def done(self) -> bool:
        """Whether every probe has finished."""
        return not any(t.is_alive() for t in self._threads)

    def result(self, base: dict[str, Any], wait: float = 0.0) -> dict[str, Any]:
        """``base`` (from :func:`quick`) merged with the probes, waiting at most ``wait`` seconds."""
        deadline = time.monotonic() + wait
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            merged = {**base, **{k: v for k, v in self.values.items() if v is not None}}
            probes = dict(self.probes)
        for thread in self._threads:
            name = thread.name.removeprefix("logkit-probe-")
            if name not in probes:
                probes[name] = {"ok": False, "error": f"still running after {time.monotonic() - self.started:.1f}s"}
        merged["probes"] = probes
        return self.redactor.scrub(merged)

