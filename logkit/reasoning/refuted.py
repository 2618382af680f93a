"""Before a launch: has this configuration already been refuted on this GPU architecture?

Contract:

* :func:`refuted_runs` scans every session of the store for launches that failed: an outcome in a
  refuting status of ``logkit/data/statuses.toml`` (category crash, garbage or oom; a launch that worked but refuted a claim, say
  "cudnn is faster", is no reason to warn before running it again). Each becomes a :class:`RefutedRun` with its GPU architecture (``SM120``,
  from the attempt's recorded GPUs) and its *suspect* flags: what the attempt changed against the
  launch before it (its config diff), else its non-default backend flags. A run with no suspect
  flags or no known architecture is never matched (it would match everything), and neither is
  one whose suspect flags all worked in another launch of the same session (a status of class ``works``:
  GLM-5's ``--attention-backend flashinfer`` failed with NaN until the NSA backends were fixed,
  and then worked with it).
* :func:`check` returns the refuted runs whose suspect flags all have the same value in the new
  launch's fingerprint, on the same architecture; one per session and suspect set (its first
  attempt), so a campaign of retries is one warning. An unknown architecture matches nothing.
* :func:`local_arch` reads the architecture of the GPUs this launch will use (nvidia-smi, honouring
  ``CUDA_VISIBLE_DEVICES``; ``$LOGKIT_GPU_ARCH`` overrides, e.g. ``SM120``). It never raises.
* :func:`ask` asks ``Run anyway? [y/N]`` on a terminal, answers yes with ``--yes``, and never
  prompts when stdin is not a terminal (it proceeds and prints the warning).
* :func:`check_launch` is the body of the runner's ``confirm(plan, environment)`` callback
  (plugged in by :mod:`logkit.reasoning.prelaunch`, which stays import-light). A failure inside
  the check is reported and never blocks a launch. ``--yes`` skips the callback altogether.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .. import files, statuses
from ..launch.flags import backend_axes, ignored, table
from ..launch.flags import describe as describe_values
from ..readcache import SessionCache

if TYPE_CHECKING:  # the check runs before every launch: the event models (pydantic) stay unimported
    from ..events import Environment, LaunchConfig
    from ..store import Store

__all__ = [
    "CACHE_VERSION",
    "ENV_ARCH",
    "RefutedRun",
    "arch_name",
    "arch_of",
    "ask",
    "check",
    "check_launch",
    "describe",
    "local_arch",
    "refuted_runs",
    "suspects",
    "warning",
]

ENV_ARCH = "LOGKIT_GPU_ARCH"
_CAP = re.compile(r"^\s*(?:SM_?)?(\d+)(?:[.,](\d+))?\s*$", re.I)


@dataclass(frozen=True)
class RefutedRun:
    """A failed attempt somewhere in the knowledge base, as the pre-launch check sees it."""

    session: str
    attempt: str
    status: str
    arch: str | None
    #: fingerprint key -> the value that failed
    suspects: dict[str, Any] = field(default_factory=dict)
    label: str | None = None


def arch_name(capability: str | None) -> str | None:
    """``"12.0"`` / ``"(12, 0)"`` / ``"sm120"`` -> ``"SM120"``."""
    if not capability:
        return None
    text = str(capability).strip().strip("()").replace(" ", "")
    if text.upper().startswith("SM") and text[2:].isdigit():
        return "SM" + text[2:]
    match = _CAP.match(text.replace(",", "."))
    if not match:
        return None
    return f"SM{int(match.group(1))}{int(match.group(2) or 0)}"


def arch_of(environment: Environment | None) -> str | None:
    """The architecture of an attempt's GPUs (the first one's; mixed hosts are rare)."""
    if environment is None:
        return None
    for gpu in environment.gpus:
        name = arch_name(gpu.compute_cap)
        if name:
            return name
    return arch_name(environment.device_capability)


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


def _fingerprint(launch: LaunchConfig | dict[str, Any] | None) -> dict[str, Any]:
    if launch is None:
        return {}
    if isinstance(launch, dict):
        return dict(launch.get("fingerprint") or launch.get("non_default") or {})
    return dict(launch.fingerprint or launch.non_default)


def suspects(launch: LaunchConfig | None) -> dict[str, Any]:
    """The flags a failed launch is blamed on: what it changed, else its non-default backends."""
    if launch is None:
        return {}
    return _blame(launch.model_dump(mode="json", exclude_none=True))


def _blame(launch: dict[str, Any]) -> dict[str, Any]:
    """:func:`suspects` on a launch config as stored (a dict): the check's hot path uses no models."""
    fingerprint = dict(launch.get("fingerprint") or launch.get("non_default") or {})
    picked: dict[str, Any] = {}
    diff = launch.get("diff") or {}
    if diff:
        picked.update(diff.get("added") or {})
        picked.update({k: v[1] for k, v in (diff.get("changed") or {}).items() if isinstance(v, list) and len(v) == 2})
        picked = {k: v for k, v in picked.items() if k in fingerprint or not fingerprint}
    if not picked:
        picked = backend_axes(launch)
    return {k: v for k, v in picked.items() if not ignored(v)}


def _arch_of_dict(environment: dict[str, Any] | None) -> str | None:
    if not environment:
        return None
    for gpu in environment.get("gpus") or []:
        name = arch_name(gpu.get("compute_cap")) if isinstance(gpu, dict) else None
        if name:
            return name
    return arch_name(environment.get("device_capability"))


_KIND = re.compile(rb'"kind":\s*"(attempt|outcome|environment)"')
_SHORT = re.compile(rb'"short_id":\s*"(A[0-9]+)"')
_ATTEMPT_REF = re.compile(rb'"attempt":\s*"(A[0-9]+)"')
_ANY_STATUS = re.compile(rb'"status":\s*"([a-z_]+)"')


def _status_re() -> re.Pattern[bytes]:
    # The refuting statuses (statuses.toml: the classes that say something about a backend).
    refutes = set(statuses.refuting())
    names = b"|".join(re.escape(k.encode()) for k in statuses.refuting() if k in refutes)
    return re.compile(rb'"status":\s*"(' + names + rb')"')


def _session_runs(session: str, raw: bytes) -> list[RefutedRun]:
    """The refuted launches of one session, from its raw bytes (see :func:`_session_state`)."""
    return _session_state(session, raw)[0]


def _session_state(session: str, raw: bytes) -> tuple[list[RefutedRun], list[dict[str, Any]] | None]:
    """The refuted launches of one session, from its raw bytes (every line at the current schema:
    :func:`logkit.files.current_bytes`).

    Speed: this runs before every launch over the whole knowledge base, so only the lines that
    can matter are decoded (:func:`logkit.files.decode`): failed outcomes first (a byte regex over
    the file), then the attempt and environment lines of those attempts. A line that does not
    decode is skipped.
    """
    if not _status_re().search(raw) and not _works_re().search(raw):
        return [], []
    lines = raw.split(b"\n")
    failed: dict[str, tuple[str, bytes]] = {}  # attempt -> (status, its outcome line)
    worked: set[str] = set()
    status_re = _status_re()
    working = set(statuses.of_class("works"))
    for line in lines:
        kind = _KIND.search(line)
        if not kind or kind.group(1) != b"outcome":
            continue
        ref, status = _ATTEMPT_REF.search(line), _ANY_STATUS.search(line)
        if not ref or not status:
            continue
        name = status.group(1).decode()
        if status_re.search(line):
            failed[ref.group(1).decode()] = (name, line)
        elif name in working:
            worked.add(ref.group(1).decode())
    good: list[bytes] = []  # attempt lines of launches that worked, decoded only when needed
    attempts: dict[str, dict[str, Any]] = {}
    probed: dict[str, dict[str, Any]] = {}
    for line in lines:
        kind = _KIND.search(line)
        if not kind or kind.group(1) == b"outcome":
            continue
        if kind.group(1) == b"attempt":
            short = _SHORT.search(line)
            sid = short.group(1).decode() if short else None
            if sid in failed:
                data = files.decode(line)
                if data is not None:
                    attempts[sid] = data
            elif sid in worked:
                good.append(line)
        elif b'"attempt"' in line:
            data = files.decode(line)
            if data is not None and data.get("attempt") in failed:
                # logkit run writes the probed environment as a later event superseding attempt.environment.
                probed[data["attempt"]] = data.get("environment") or {}
    runs: list[RefutedRun] = []
    verdicts: dict[tuple[tuple[str, str], ...], bool] = {}
    seen: set[tuple[tuple[str, str], ...]] = set()
    for sid, attempt in attempts.items():
        if attempt.get("role") != "launch" or not isinstance(attempt.get("launch"), dict):
            continue
        blamed = _blame(attempt["launch"])
        key = tuple(sorted((k, str(v)) for k, v in blamed.items()))
        if not blamed or key in seen:
            continue  # nothing to blame (it would match everything), or already listed for this session
        if key not in verdicts:
            verdicts[key] = _exonerated(blamed, good)
        if verdicts[key]:
            continue  # the same flags worked in another launch of this session: the cause was elsewhere
        arch = _arch_of_dict(probed.get(sid)) or _arch_of_dict(attempt.get("environment"))
        if arch:
            seen.add(key)
            status, outcome_line = failed[sid]
            label = (files.decode(outcome_line) or {}).get("label")
            runs.append(RefutedRun(session, sid, status, arch, blamed, label))
    return runs, _fingerprints(good)


#: more distinct working fingerprints than this in one session: its state is not kept (derived in full)
GOOD_LIMIT = 2000


def _works_re() -> re.Pattern[bytes]:
    names = b"|".join(re.escape(k.encode()) for k in statuses.of_class("works"))
    return re.compile(rb'"status":\s*"(' + names + rb')"')


def _launch_fp(line: bytes) -> dict[str, Any] | None:
    data = files.decode(line)
    if data is None or not isinstance(data.get("launch"), dict):
        return None
    fp = data["launch"].get("fingerprint") or data["launch"].get("non_default") or {}
    return fp if isinstance(fp, dict) else None


def _fingerprints(good: list[bytes]) -> list[dict[str, Any]] | None:
    """The distinct fingerprints of a session's working launches (None: too many to keep)."""
    seen: dict[str, dict[str, Any]] = {}
    for line in good:
        fp = _launch_fp(line)
        if fp:
            seen.setdefault(json.dumps(fp, sort_keys=True, default=str), fp)
            if len(seen) > GOOD_LIMIT:
                return None
    return list(seen.values())


def _cleared(blamed: dict[str, Any], fingerprints: list[dict[str, Any]]) -> bool:
    return any(all(k in fp and _same(fp[k], v) for k, v in blamed.items()) for fp in fingerprints)


def _extend(session: str, rows: list[dict[str, Any]], good: Any, appended: bytes,
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The rows and working fingerprints of a session after ``appended`` (whole lines at its end),
    from those before; None when the new lines name an attempt recorded before them (derive in full).

    What :func:`_session_state` would give: a new working launch clears the rows whose suspect
    values it ran with; a new failed launch is a row unless a working launch ran with its suspects
    or an earlier row blames the same values.
    """
    if type(good) is not list or not all(type(g) is dict for g in good):
        return None
    raw = files.current_bytes(appended)
    status_re, works_re = _status_re(), _works_re()
    if not status_re.search(raw) and not works_re.search(raw):
        return rows, good  # no outcome that says anything about a backend
    lines = [line for line in raw.split(b"\n") if line]
    attempts: dict[str, bytes] = {}
    probed: dict[str, dict[str, Any]] = {}
    ended: list[tuple[str, str, bytes]] = []  # (attempt, status, outcome line)
    for line in lines:
        kind = _KIND.search(line)
        if not kind:
            continue
        if kind.group(1) == b"attempt":
            short = _SHORT.search(line)
            if short:
                attempts[short.group(1).decode()] = line
        elif kind.group(1) == b"environment":
            data = files.decode(line)
            if data is not None and isinstance(data.get("attempt"), str):
                probed[data["attempt"]] = data.get("environment") or {}
        else:
            ref, status = _ATTEMPT_REF.search(line), _ANY_STATUS.search(line)
            if ref and status and (status_re.search(line) or works_re.search(line)):
                ended.append((ref.group(1).decode(), status.group(1).decode(), line))
    if any(sid not in attempts for sid, _status, _line in ended):
        return None  # its attempt line is before the new lines: not known here
    working = set(statuses.of_class("works"))
    good = list(good)
    known = {json.dumps(g, sort_keys=True, default=str) for g in good}
    for sid, status, _line in ended:
        fp = _launch_fp(attempts[sid]) if status in working else None
        if fp and json.dumps(fp, sort_keys=True, default=str) not in known:
            known.add(json.dumps(fp, sort_keys=True, default=str))
            good.append(fp)
    if len(good) > GOOD_LIMIT:
        return None
    rows = [r for r in rows if not _cleared(r["suspects"], good)]
    keys = {tuple(sorted((k, str(v)) for k, v in r["suspects"].items())) for r in rows}
    for sid, status, line in ended:
        if status in working or not status_re.search(line):
            continue
        attempt = files.decode(attempts[sid])
        if attempt is None or attempt.get("role") != "launch" or not isinstance(attempt.get("launch"), dict):
            continue
        blamed = _blame(attempt["launch"])
        key = tuple(sorted((k, str(v)) for k, v in blamed.items()))
        if not blamed or key in keys or _cleared(blamed, good):
            continue
        arch = _arch_of_dict(probed.get(sid)) or _arch_of_dict(attempt.get("environment"))
        if arch:
            keys.add(key)
            rows.append(_row(RefutedRun(session, sid, status, arch, blamed, (files.decode(line) or {}).get("label"))))
    return rows, good


def _exonerated(blamed: dict[str, Any], good: list[bytes]) -> bool:
    needles = [json.dumps(v).encode() if not isinstance(v, str) else f'"{v}"'.encode() for v in blamed.values()]
    for line in good:
        if not all(n in line for n in needles):
            continue  # cheap byte test first: most working launches used other values
        launch = (files.decode(line) or {}).get("launch") or {}
        fp = launch.get("fingerprint") or launch.get("non_default") or {}
        if all(k in fp and _same(fp[k], v) for k, v in blamed.items()):
            return True
    return False


#: bump when what :func:`_session_runs` derives changes (the per-session cache is then rebuilt)
CACHE_VERSION = 2


def refuted_runs(store: Store) -> list[RefutedRun]:
    """Every refuted launch of the knowledge base (unreadable lines are skipped, never fatal).

    Each session's runs come from the store's ``refuted`` read cache (:mod:`logkit.readcache`)
    while its ``events.jsonl`` is unchanged, so the check before a launch reads no session file
    that was not written since the last check; of a session that was appended to (the one the
    last ``logkit run`` recorded in), only the new lines are read (:func:`_extend`).
    """
    return [_run(session, row) for session, row in _rows(store)]


#: before a launch, a session bigger than this that the read cache cannot answer (no entry, or one it
#: cannot extend) is not read: the child must start in a bounded time (3 s for 100,000 events);
#: :func:`check_launch` says so and has a background process read it for the next launch
COLD_LIMIT = 16 << 20


class _TooBig(Exception):
    """A session :func:`_rows` was asked not to derive in full."""


def _rows(store: Store, cold_limit: int | None = None,
          skipped: list[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """:func:`refuted_runs` as ``(session, row)``: :func:`check` makes runs of the matches only.

    With ``cold_limit``, a session that would have to be derived from more bytes than that is left
    out and named in ``skipped``.
    """
    # what is derived depends on the tables too (refuting and working statuses, ignored values)
    rules = [table(), sorted(statuses.refuting()), sorted(statuses.of_class("works"))]
    digest = hashlib.sha256(json.dumps(rules, sort_keys=True, default=str).encode()).hexdigest()[:16]
    cache = SessionCache(store.root, "refuted", f"{CACHE_VERSION}-{digest}")
    found_rows: list[tuple[str, dict[str, Any]]] = []
    found = files.session_dirs(store.root)
    for session, path, st in found:
        def derive(raw: bytes, sid: str = session) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
            if cold_limit is not None and len(raw) > cold_limit:
                raise _TooBig(sid)
            return _derive(sid, raw)

        try:
            rows = cache.get(session, path, derive, valid=_valid_rows, st=st,
                             extend=lambda rows, good, new, sid=session: _extend(sid, rows, good, new))
        except _TooBig:
            if skipped is not None:
                skipped.append(session)
            continue
        found_rows.extend((session, row) for row in rows)
    cache.prune({f[0] for f in found})
    cache.save()
    return found_rows


def _derive(session: str, raw: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    if not raw:
        return [], []
    runs, good = _session_state(session, files.current_bytes(raw))
    return [_row(r) for r in runs], good


def _valid_rows(rows: Any) -> bool:
    if type(rows) is not list:
        return False
    if not rows:
        return True  # most sessions: nothing refuted
    for r in rows:
        if (type(r) is not dict or type(r.get("attempt")) is not str or type(r.get("status")) is not str
                or type(r.get("suspects")) is not dict or not isinstance(r.get("arch"), (str, type(None)))
                or not isinstance(r.get("label"), (str, type(None)))):
            return False
    return True


def _row(run: RefutedRun) -> dict[str, Any]:
    return {"attempt": run.attempt, "status": run.status, "arch": run.arch, "suspects": run.suspects,
            "label": run.label}


def _run(session: str, row: dict[str, Any]) -> RefutedRun:
    return RefutedRun(session, str(row.get("attempt")), str(row.get("status")), row.get("arch"),
                      dict(row.get("suspects") or {}), row.get("label"))


def _same(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def check(fingerprint: dict[str, Any], arch: str | None, store: Store, *, cold_limit: int | None = None,
          skipped: list[str] | None = None) -> list[RefutedRun]:
    """The refuted runs this launch repeats on the same architecture (none when ``arch`` is unknown);
    ``cold_limit`` and ``skipped`` as :func:`_rows` takes them."""
    if not arch:
        return []
    arch = arch_name(arch) or arch
    given = {k: str(v).strip().lower() for k, v in fingerprint.items()}  # _same, each side once
    return [
        _run(session, row) for session, row in _rows(store, cold_limit, skipped)
        if row.get("arch") == arch and all(k in given and given[k] == str(v).strip().lower()
                                           for k, v in (row.get("suspects") or {}).items())
    ]


def describe(suspected: dict[str, Any]) -> str:
    """``{"moe_runner_backend": "flashinfer_trtllm"}`` -> ``flashinfer_trtllm MoE``."""
    return describe_values(suspected)


def warning(run: RefutedRun) -> str:
    """``flashinfer_trtllm MoE crashed on SM120 in 2026-11-14-glm5 A4 (arch_mismatch).``"""
    verb = statuses.verb(run.status)
    return f"{describe(run.suspects)} {verb} on {run.arch} in {run.session} {run.attempt} ({run.status})."


def ask(
    runs: list[RefutedRun],
    *,
    yes: bool = False,
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
    ask: Callable[[str], str] | None = None,
) -> bool:
    """Warn about ``runs``; True to go ahead. Prompts only on a terminal, and not with ``yes``."""
    if not runs:
        return True
    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
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
        answer = ask("") if ask else stdin.readline()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _arch_for_launch(environment: Any) -> str | None:
    """The architecture from the runner's environment snapshot (a dict, or an ``Environment``)."""
    if os.environ.get(ENV_ARCH):
        return arch_name(os.environ[ENV_ARCH])
    if environment is not None and not isinstance(environment, dict):
        environment = environment.model_dump(mode="json")
    found = _arch_of_dict(environment)
    if found:
        return found
    probe = ((environment or {}).get("probes") or {}).get("gpus")
    if isinstance(probe, dict) and (probe.get("ok") or "not found" in (probe.get("error") or "")):
        return None  # the runner already asked nvidia-smi: no GPU, or none with a known capability
    return local_arch()


class _Sessions:
    """The sessions directory as :func:`refuted_runs` reads it (root and ids), without the typed store."""

    def __init__(self, override: str | None) -> None:
        self.root = Path(override or os.environ.get("LOGKIT_SESSIONS") or "sessions")

    def session_ids(self) -> list[str]:
        return files.session_ids(self.root)


def check_launch(plan: Any, environment: Any, sessions: str | None, *,
                 stdin: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    """Warn (and ask on a terminal) when ``plan``'s launch repeats a refuted one; True to launch."""
    fingerprint = _fingerprint(getattr(plan, "launch", None))
    if not fingerprint:
        return True
    err = stderr or sys.stderr
    skipped: list[str] = []
    try:
        store = _Sessions(sessions)
        runs = check(fingerprint, _arch_for_launch(environment), store,  # type: ignore[arg-type]
                     cold_limit=COLD_LIMIT, skipped=skipped)
    except Exception as exc:  # noqa: BLE001 - the check must never stop a launch by crashing
        err.write(f"logkit: warning: the refuted-configuration check failed ({exc}); launching\n")
        return True
    if skipped:
        err.write(f"logkit: warning: the refuted-configuration check did not read {', '.join(skipped)} (big, and "
                  "not in its read cache yet); a background process reads it for the next launch\n")
        _warm_in_background(store.root)
    return ask(runs, stdin=stdin, stderr=err)


_WARM = """
import os, sys, time
from logkit.reasoning.refuted import _Sessions, refuted_runs
pid = int(sys.argv[2])
while True:  # the launch appends to its session until it ends: read the session after that
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    except PermissionError:
        pass
    time.sleep(1.0)
refuted_runs(_Sessions(sys.argv[1]))
"""


def _warm_in_background(root: Path) -> None:
    """Fill the ``refuted`` read cache of ``root`` in a detached, niced process, once this logkit has
    ended (the run it checks appends to its session until then); never raises."""
    nice = shutil.which("nice")
    try:
        subprocess.Popen([*([nice, "-n", "10"] if nice else []), sys.executable, "-c", _WARM, str(root),
                          str(os.getpid())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)  # its own group: never one of the launch's survivors
    except OSError:
        pass
