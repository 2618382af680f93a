"""The GPU architecture: the one owner of "which SM is this?" (docs/knowledge-model.md).

Contract:

* :func:`arch_name` reads a compute capability however it was recorded: ``"12.0"``, ``" 12.0"``,
  ``"(12, 0)"``, ``"12,0"``, ``"sm120"``, ``"SM_120"``, ``"sm_120a"``, ``"9.0a"``, ``12.0`` (a
  float) -> ``"SM120"``; the arch-specific suffix (``a``, ``f``) names the same hardware, so it is
  dropped. Anything else -> ``None``.
* :func:`arch_of` is the architecture of an attempt's environment (an ``Environment`` model or its
  stored dict): the first GPU's ``compute_cap``, else ``device_capability``.
* :func:`local_arch` is the architecture of the GPUs a launch here would use: ``$LOGKIT_GPU_ARCH``
  when set, else nvidia-smi honouring ``CUDA_VISIBLE_DEVICES``; None when it cannot tell. It never
  raises.
* Standard library only: this runs before every launch (no pydantic).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

__all__ = ["ENV_ARCH", "arch_name", "arch_of", "local_arch"]

ENV_ARCH = "LOGKIT_GPU_ARCH"

# "sm120", "SM_120a": three digits or fewer, the last one the minor version
_SM = re.compile(r"^sm_?(\d{2,3})[af]?$")
# "12.0", "(12, 0)", "12,0", "9.0a", "12"
_CAP = re.compile(r"^\(?(\d{1,2})(?:[.,](\d))?[af]?\)?$")


def arch_name(capability: Any) -> str | None:
    """``"12.0"`` / ``"(12, 0)"`` / ``"sm_120a"`` / ``12.0`` -> ``"SM120"``; None when unreadable."""
    if capability is None or isinstance(capability, bool):
        return None
    if isinstance(capability, (int, float)):
        capability = f"{float(capability):.1f}"
    text = str(capability).strip().lower().replace(" ", "")
    sm = _SM.match(text)
    if sm:
        digits = sm.group(1)
        return f"SM{int(digits[:-1])}{digits[-1]}"
    cap = _CAP.match(text)
    if cap and text.startswith("(") == text.endswith(")"):
        return f"SM{int(cap.group(1))}{cap.group(2) or 0}"
    return None


def arch_of(environment: Any) -> str | None:
    """The architecture of an attempt's first GPU, from an ``Environment`` model or its stored dict."""
    if environment is not None and not isinstance(environment, dict):
        environment = environment.model_dump(mode="json")  # an Environment model
    env = environment or {}
    caps = [g.get("compute_cap") for g in env.get("gpus") or [] if isinstance(g, dict)]
    return next(filter(None, map(arch_name, [*caps, env.get("device_capability")])), None)


def local_arch(env: dict[str, str] | None = None, timeout: float = 5.0) -> str | None:
    """The architecture of the GPUs a launch here would use, or None when it cannot tell."""
    env = dict(os.environ if env is None else env)
    if env.get(ENV_ARCH):
        return arch_name(env[ENV_ARCH])
    smi = shutil.which("nvidia-smi", path=env.get("PATH", os.defpath))
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index,compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout, check=False, env=env,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    caps: dict[str, str] = {}
    for line in out.splitlines():
        index, _, cap = line.partition(",")
        caps[index.strip()] = cap.strip()
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    chosen = [caps[v] for v in visible if v in caps] or list(caps.values())
    return arch_name(chosen[0]) if chosen else None
