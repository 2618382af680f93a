"""Recognise SGLang launches and benchmarks in an argv, through the wrappers people put around them.

Contract: :func:`detect` returns a :class:`Target` (kind ``launch`` or ``bench``, the interpreter
words, the SGLang flags and where they sit in the argv) or ``None``, looking through ``env``,
``VAR=value`` words, ``uv run``, ``torchrun``-style launchers, ``nohup``-style prefixes, ``bash -c``
(split by :func:`commands`, which the coding-agent hook uses too), ``docker run``/``exec`` (``-e``
kept as environment), ``srun``/``mpirun``, ``systemd-run`` and ``conda run``. A wrapper's option
takes the next word as its value unless it is a known switch or the next word starts the command. Pure.
"""

from __future__ import annotations

import os
import re
import shlex
from .._slotted import Slotted

__all__ = ["Target", "command_start", "commands", "detect"]

LAUNCH_MODULES = {"sglang.launch_server": "launch", "sglang.bench_serving": "bench", "sglang.benchmark.serving": "bench"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python[0-9.]*$")
#: Prefix commands that run the rest of the argv (with how many option words they may take).
_PREFIXES = {"nohup", "time", "nice", "ionice", "stdbuf", "numactl", "taskset", "exec", "sudo", "chrt", "timeout"}


#: Wrappers that run the command after their options: (switches that take no value, options whose
#: value is an environment assignment). ``docker run`` also skips the image (:func:`_skip_wrapper`).
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "docker": (frozenset({"-d", "-i", "-t", "-it", "-ti", "--rm", "--privileged", "--init", "-P", "--detach",
                          "--interactive", "--tty", "--read-only", "--publish-all", "--no-healthcheck", "--oom-kill-disable"}),
               frozenset({"-e", "--env"})),
    "srun": (frozenset({"--exclusive", "--pty", "-l", "--label", "--overlap", "-u", "--unbuffered", "-v", "--verbose",
                        "-Q", "--quiet", "-X", "--disable-status", "-K", "--kill-on-bad-exit", "--mpi=pmix"}),
             frozenset({"--export"})),
    "mpirun": (frozenset({"--allow-run-as-root", "--oversubscribe", "--bind-to-core", "--tag-output", "-tag-output",
                          "--report-bindings", "-v", "--verbose", "-q", "--quiet", "--use-hwthread-cpus"}),
               frozenset({"-x"})),
    "systemd-run": (frozenset({"--user", "--system", "--scope", "-t", "--pty", "-P", "--pipe", "--wait", "-G", "--collect",
                               "--same-dir", "-d", "-q", "--quiet", "-r", "--remain-after-exit", "--no-block", "-S", "--shell",
                               "--no-ask-password"}),
                    frozenset({"-E", "--setenv"})),
    "conda": (frozenset({"--no-capture-output", "--live-stream", "-v", "--verbose", "--debug"}), frozenset()),
}
_WRAPPER_OF = {"docker": "docker", "podman": "docker", "nerdctl": "docker", "srun": "srun", "salloc": "srun",
               "mpirun": "mpirun", "mpiexec": "mpirun", "orterun": "mpirun", "systemd-run": "systemd-run",
               "conda": "conda", "mamba": "conda", "micromamba": "conda"}


def _starts_command(word: str) -> bool:
    base = os.path.basename(word)
    return bool(_PYTHON.match(base)) or base in _PREFIXES or base in _WRAPPER_OF or base in (
        "sglang", "env", "torchrun", "uv", "bash", "sh")


def _skip_wrapper(words: list[str], i: int, env: dict[str, str]) -> int | None:
    """The index of the command a wrapper at ``words[i]`` runs, or None (``docker ps``: runs nothing)."""
    kind = _WRAPPER_OF[os.path.basename(words[i])]
    i += 1
    if kind in ("docker", "conda"):
        # `docker run IMAGE ...`, `docker exec CONTAINER ...`, `conda run -n ENV ...`
        if i >= len(words) or words[i] not in (("run", "exec") if kind == "docker" else ("run",)):
            return None
        i += 1
    switches, env_opts = _WRAPPERS[kind]
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        w = words[i]
        if "=" in w or w in switches or i + 1 >= len(words):
            if "=" in w and w.split("=", 1)[0] in env_opts:
                k, _, v = w.split("=", 1)[1].partition("=")
                env[k] = v
            i += 1
        elif (kind != "docker" and _starts_command(words[i + 1])) or (len(w) == 2 and kind == "docker" and w[1] in "dit"):
            i += 1
        else:
            if w in env_opts and "=" in words[i + 1]:
                k, _, v = words[i + 1].partition("=")
                env[k] = v
            i += 2
    if i < len(words) and words[i] == "--":
        i += 1
    if kind == "docker":
        i += 1  # the image (or the container of `docker exec`)
    return i if i < len(words) else None


class Target(Slotted):
    """An SGLang command found in an argv (a plain record: ``dataclasses`` costs every ``logkit run``)."""

    __slots__ = ("kind", "python", "args", "args_at", "env", "container")

    kind: str  # "launch" | "bench"
    python: list[str]  # the words that start the interpreter (``["python3"]``), if any
    args: list[str]  # the SGLang flags (after the module or ``sglang serve``)
    args_at: int | None  # where they start in the argv; None inside a ``bash -c`` script
    env: dict[str, str]  # environment assignments seen in the wrapper
    container: bool  # it runs in a container: its interpreter and files are not this host's

    _defaults = {"env": {}, "container": False}


def _skip_launcher(words: list[str], i: int) -> int:
    """Skip a torchrun-style launcher's options; stop at ``-m MODULE`` or the script."""
    while i < len(words) and words[i].startswith("-"):
        if words[i] in ("-m", "--module", "--no-python", "--no_python"):
            return i
        i += 1 if "=" in words[i] or i + 1 >= len(words) or words[i + 1].startswith("-") else 2
    return i


def _strip_env(words: list[str], start: int, env: dict[str, str]) -> int:
    i = start
    while i < len(words):
        w = words[i]
        base = os.path.basename(w)
        if _ASSIGN.match(w):
            k, _, v = w.partition("=")
            env[k] = v
            i += 1
        elif base == "env":
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in ("-u", "--unset", "-C", "--chdir") else 1
        elif base in _PREFIXES:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            if base == "timeout" and i < len(words) and re.match(r"^\d", words[i]):
                i += 1
        elif base == "uv" and i + 1 < len(words) and words[i + 1] == "run":
            i += 2
            while i < len(words) and words[i].startswith("-"):
                takes = words[i] in ("--with", "--python", "-p", "--project", "--directory", "--env-file", "--extra", "--group")
                i += 2 if takes and "=" not in words[i] else 1
        elif base in ("torchrun",):
            i = _skip_launcher(words, i + 1)
        elif base in _WRAPPER_OF:
            nxt = _skip_wrapper(words, i, env)
            if nxt is None:
                return len(words)
            if _WRAPPER_OF[base] == "docker":
                env[_CONTAINER] = base
            i = nxt
        else:
            break
    return i


def command_start(words: list[str]) -> int:
    """Where the command proper starts in ``words`` (past what :func:`detect` looks through)."""
    return _strip_env(words, 0, {})


def commands(script: str) -> list[list[str]]:
    """The simple commands of a shell line (split at ``&&;|()``), without redirections; ``[]``: unsplittable."""
    try:
        lex = shlex.shlex(script, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = "#"
        inner = list(lex)
    except ValueError:
        return []
    cmds: list[list[str]] = [[]]
    skip = False
    for w in inner:
        if skip:  # a redirection's target
            skip = False
        elif w and set(w) <= set("<>&") and set(w) & set("<>"):
            # `> log`, `2>&1`, `&> log`: not words of the command (a lone digit before is the fd)
            if cmds[-1] and cmds[-1][-1].isdigit() and len(cmds[-1][-1]) == 1 and cmds[-1][-1] + w in script:
                cmds[-1].pop()
            skip = True
        elif w and set(w) <= set("&;|()"):
            cmds.append([])
        else:
            cmds[-1].append(w)
    return [cmd for cmd in cmds if cmd]


def _find(words: list[str], offset: int, env: dict[str, str], in_shell: bool) -> Target | None:
    i = _strip_env(words, offset, env)
    if i >= len(words):
        return None
    head = os.path.basename(words[i])
    if head in ("bash", "sh", "zsh", "dash") and not in_shell:
        j = i + 1
        while j < len(words) and words[j].startswith("-") and words[j] != "-c":
            j += 1
        if j + 1 < len(words) and words[j] == "-c":
            cmds = commands(words[j + 1])
            # Only the last command of `a && b; c` is the long-running one people wrap.
            for cmd in reversed(cmds):
                found = _find(cmd, 0, dict(env), True)
                if found:
                    found.args_at = None
                    return found
        return None
    if head == "sglang" and i + 1 < len(words) and words[i + 1] == "serve":
        return Target("launch", [], words[i + 2 :], None if in_shell else i + 2, env)
    python: list[str] = []
    if words[i] in ("-m", "--module") and i + 1 < len(words):  # after torchrun: -m MODULE
        kind = LAUNCH_MODULES.get(words[i + 1])
        return Target(kind, [], words[i + 2 :], None if in_shell else i + 2, env) if kind else None
    if _PYTHON.match(head):
        python = [words[i]]
        j = i + 1
        while j < len(words) and words[j].startswith("-") and words[j] != "-m":
            j += 1
        if j + 1 < len(words) and words[j] == "-m":
            module = words[j + 1]
            if module in ("torch.distributed.run", "torch.distributed.launch"):
                k = _skip_launcher(words, j + 2)
                return _find(words[:i + 1] + words[k:], i + 1, env, in_shell) if k < len(words) else None
            kind = LAUNCH_MODULES.get(module)
            if kind:
                return Target(kind, python, words[j + 2 :], None if in_shell else j + 2, env)
        return None
    # A script path: .../sglang/launch_server.py under torchrun, or a console script.
    if words[i].endswith(("sglang/launch_server.py", "launch_server.py")) and "sglang" in words[i]:
        return Target("launch", [], words[i + 1 :], None if in_shell else i + 1, env)
    return None


#: A marker key _strip_env leaves in the environment it collects when it stepped into a container.
_CONTAINER = "\0container"


def detect(argv: list[str]) -> Target | None:
    """The SGLang launch or benchmark in ``argv``, or None."""
    found = _find(list(argv), 0, {}, False)
    if found is not None and found.env.pop(_CONTAINER, None) is not None:
        found.container = True
        found.args_at = None  # the flags are the container's: no --output-file of this host's
        found.python = []
    return found
