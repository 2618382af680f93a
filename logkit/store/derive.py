"""The derived rows of the index: one function per table row, each fact from its owner.

Contract:

* :func:`attempt_row` is the one place an attempt's derived facts are computed (its role, command,
  model, GPU and architecture, package versions, configuration and fingerprint, backend axes, the
  hypotheses it tested, its sweep cell, its outcome's status, category and signature, the
  ``--hang-timeout`` that stopped it). It reads the attempt's events as stored (plain dicts at the
  current schema), and asks each fact's owner (``docs/knowledge-model.md``): the launch
  configuration, fingerprint, backend axes and model :mod:`logkit.launch.flags`; the architecture
  :mod:`logkit.gpu`; the category
  :mod:`logkit.statuses`. Change what it derives and bump :data:`DERIVATION`: every index is rebuilt.
* :func:`attempt_values` adds an attempt's backend axes as rows (what the pre-launch check looks up).
* :func:`metric_row` is a metric's row: the figure and the workload it was measured at.
* :data:`ATTEMPT_KINDS` are the kinds whose events feed an attempt's row (a new one of them re-derives it).
"""

from __future__ import annotations

import json
import marshal
import re
import shlex
from functools import cache
from typing import Any

__all__ = ["ATTEMPT_COLUMNS", "ATTEMPT_KINDS", "DERIVATION", "METRIC_COLUMNS", "attempt_row", "attempt_values", "knowledge",
           "light", "metric_row"]

#: Bump when a derived column changes meaning: indexes built before are rebuilt.
DERIVATION = 6

ATTEMPT_KINDS = frozenset({"attempt", "environment", "launch_config", "server_info", "smoke", "outcome", "sweep_cell"})

#: The columns of ``attempts``, in order (documented in :mod:`logkit.store.index`).
ATTEMPT_COLUMNS = (
    "session", "short_id", "line", "role", "label", "started", "ended", "command", "model", "gpu", "gpu_count",
    "arch", "sglang", "flashinfer", "torch", "fingerprint", "config", "backends", "tests", "sweep", "cell",
    "status", "category", "signature", "hang_timeout", "smoke_ok", "recorder_pid", "recorder_host", "outcome_label",
    # the site's facts: the configuration (JSON) and its key, every version the site shows (JSON),
    # the provenance source
    "configuration", "config_key", "versions", "source",
    # the matrix category (reasoning.matrix.category): None for an attempt that says nothing of a cell
    "matrix",
)

METRIC_COLUMNS = (
    "session", "line", "name", "value", "unit", "attempt", "server_attempt", "ts",
    "concurrency", "dataset", "input_len", "output_len", "labels", "item",
)

@cache
def knowledge() -> dict[str, Any]:
    """``logkit/data/knowledge.toml``, the one loader of it: the versions and metric labels the index derives,
    the tables the site reads (:func:`logkit.builder.load.tables`). Shared and cached: never modify it."""
    import tomllib
    from importlib import resources

    with resources.files("logkit").joinpath("data/knowledge.toml").open("rb") as fh:
        return tomllib.load(fh)


def versions(environment: dict[str, Any], launch: dict[str, Any] | None) -> dict[str, str]:
    """The versions an attempt ran with (``knowledge.toml`` ``[versions]``, launch's SGLang, CUDA, driver)."""
    packages = environment.get("packages") or {}
    found = {}
    for name, keys in knowledge()["versions"].items():
        for key in keys:  # a loop, not a generator per name: this runs for every attempt the index ingests
            value = packages.get(key)
            if value:
                found[name] = str(value)
                break
    if "sglang" not in found and (launch or {}).get("sglang_version"):
        found["sglang"] = str(launch["sglang_version"])  # type: ignore[index]
    if environment.get("torch_cuda"):
        found["cuda"] = str(environment["torch_cuda"])
    gpus = [g for g in environment.get("gpus") or [] if isinstance(g, dict)]
    if gpus and gpus[0].get("driver"):
        found["driver"] = str(gpus[0]["driver"])
    return found


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode  # one encoder, not one per value


def _dumps(value: Any) -> str | None:
    return _ENCODE(value) if value else None


#: what :func:`shlex.quote` leaves unquoted (its own test): such a word is its own quoting
_UNSAFE = re.compile(r"[^\w@%+=:,./-]", re.ASCII).search
#: the same test over words joined by spaces
_UNSAFE_JOINED = re.compile(r"[^\w@%+=:,./ -]", re.ASCII).search


def _command(argv: list[Any]) -> str:
    """:func:`shlex.join` of ``argv``; a command of safe words is told by one search of the joined text."""
    try:
        text = " ".join(argv)
    except TypeError:  # a word that is not text
        argv = [str(a) for a in argv]
        text = " ".join(argv)
    if all(argv) and not _UNSAFE_JOINED(text) and text.count(" ") == len(argv) - 1:
        return text
    quote = shlex.quote
    return " ".join([w if w and not _UNSAFE(w) else quote(w) for w in argv])


@cache
def _owners() -> tuple[Any, ...]:
    """The owners :func:`attempt_row` asks (imported when a row is first derived, not when the index opens)."""
    from .. import statuses
    from ..launch import flags
    from ..gpu import arch_of  # the one parser of an architecture
    from ..reasoning.matrix import category_of, hang_limit  # the cell rule; the one reading of the hang stop's label

    return statuses, flags, category_of, hang_limit, arch_of


def attempt_row(session: str, short_id: str, events: list[tuple[int, dict[str, Any]]]) -> dict[str, Any] | None:
    """The ``attempts`` row of ``session``/``short_id`` from its ``(line, dict)`` events; None for an orphan."""
    found = attempt_values(session, short_id, events)
    return None if found is None else dict(zip(ATTEMPT_COLUMNS, found[0]))


#: Entries a :func:`attempt_values` memo holds before it starts again (a bound on its memory, not a tuning knob).
MEMO_ENTRIES = 4096


def _remembered(memo: dict[Any, Any] | None, kind: str, inputs: tuple[Any, ...], make: Any) -> Any:
    """``make(*inputs)``, from ``memo`` when seen (keyed by the type-tagged :func:`marshal.dumps`)."""
    if memo is None:
        return make(*inputs)
    try:
        key = (kind, marshal.dumps(inputs))
    except ValueError:  # a value marshal refuses (none that JSON makes), or nested too deep
        return make(*inputs)
    found = memo.get(key)
    if found is None:
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        found = memo[key] = make(*inputs)
    return found


def _remembered_command(memo: dict[Any, Any], argv: list[Any]) -> str:
    """:func:`_command` of ``argv``, from ``memo`` when seen before (a tuple of text is its own exact key)."""
    try:
        key = ("argv", tuple(argv))
        found = memo.get(key)
    except TypeError:  # a word that is not hashable (not text)
        return _command(argv)
    if found is None:
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        found = memo[key] = _command(argv)
    return found


def _launch_facts(launch: dict[str, Any], resolved: dict[str, Any] | None) -> tuple[Any, ...]:
    """(model, fingerprint, config, axes, axes JSON, configuration, config key) of a launch and its resolved values."""
    _statuses, flags, _category_of, _hang_limit, _arch_of = _owners()
    configuration = flags.configuration(launch)
    axes = flags.backend_axes(launch, resolved)
    return (flags.model_of(launch), _dumps(launch.get("fingerprint")), _dumps(flags.chosen(launch)), _axis_values(axes),
            _dumps(axes), _dumps(configuration), flags.config_key(launch, configuration))


def _environment_facts(environment: dict[str, Any], launch_sglang: Any) -> tuple[Any, ...]:
    """(GPU name, GPU count, arch, sglang, flashinfer, torch, versions JSON) of an environment."""
    arch_of = _owners()[4]
    gpus = [g for g in environment.get("gpus") or () if isinstance(g, dict)]
    shown = versions(environment, {"sglang_version": launch_sglang})
    return (gpus[0].get("name") if gpus else None, len(gpus), arch_of(environment), shown.get("sglang"),
            shown.get("flashinfer"), shown.get("torch"),
            json.dumps(shown) if shown else None)  # in the table's order: the pages list them so


def attempt_values(session: str, short_id: str, events: list[tuple[int, dict[str, Any]]],
                   memo: dict[Any, Any] | None = None) -> tuple[tuple[Any, ...], list[tuple[Any, ...]]] | None:
    """:func:`attempt_row` as a tuple, and its backend rows; None for an orphan; ``memo``: kept across one ingest."""
    attempt: dict[str, Any] | None = None
    line = 0
    environment = launch = resolved = outcome = cell = role = None
    smokes: list[bool] = []
    for number, event in events:
        kind = event.get("kind")
        if kind == "attempt":
            attempt, line = event, number
            environment = environment or event.get("environment")
            launch = launch or event.get("launch")
        elif kind == "environment":
            environment = event.get("environment") or environment  # probed after the start: better
        elif kind == "launch_config":
            launch = event.get("launch") or launch
            role = event.get("role") or role  # a command whose output showed an SGLang server: a launch
        elif kind == "server_info":
            resolved = event.get("resolved") or resolved
        elif kind == "smoke":
            smokes.append(bool(event.get("ok")))
        elif kind == "outcome":
            outcome = event
        elif kind == "sweep_cell":
            cell = event
    if attempt is None:
        return None
    statuses, _flags, category_of, hang_limit, _arch_of = _owners()
    environment = environment or {}
    launch = launch or {}
    outcome = outcome or {}
    cell = cell or {}
    model, fingerprint, config, axes, backends, configuration, config_key = _remembered(
        memo, "launch", (launch, resolved), _launch_facts)
    gpu, gpu_count, arch, sglang, flashinfer, torch, shown = _remembered(
        memo, "environment", (environment, launch.get("sglang_version")), _environment_facts)
    status = outcome.get("status")
    label = outcome.get("label")
    argv = attempt.get("argv") or []
    hang = hang_limit(label) if status == "hang" else None
    smoke_ok = None if not smokes else all(smokes)
    role = role or attempt.get("role")
    model = attempt.get("model") or model
    started = attempt.get("started")
    matrix = category_of(role or "command", status, smoke_ok is False, hang)
    row = (  # ATTEMPT_COLUMNS, in order
        session, short_id, line, role, attempt.get("label"), started, outcome.get("ended"),
        _command(argv) if memo is None else _remembered_command(memo, argv),
        model, gpu, gpu_count, arch, sglang, flashinfer, torch, fingerprint, config, backends,
        _dumps(attempt.get("tests")), cell.get("sweep"), cell.get("cell"), status,
        statuses.category(status) if status else None, outcome.get("signature"), hang, smoke_ok,
        attempt.get("recorder_pid"), attempt.get("recorder_host"), label, configuration, config_key, shown,
        (attempt.get("provenance") or {}).get("source") or "captured", matrix,
    )
    return row, _backends(session, short_id, arch, matrix, model, sglang, flashinfer, started, axes)


def _axis_values(chosen: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each backend axis with its value as the cells compare it (stripped, lower case)."""
    return tuple((axis, str(value).strip().lower()) for axis, value in chosen.items())


def _backends(session: str, short: str, arch: Any, matrix: Any, model: Any, sglang: Any, flashinfer: Any,
              started: Any, axes: tuple[tuple[str, str], ...]) -> list[tuple[Any, ...]]:
    """The ``attempt_backends`` rows (values as :meth:`Snapshot.cell_counts` compares them; num orders the cell)."""
    num = int(short[1:]) if short[1:].isdigit() else 0
    tail = (matrix, model, sglang, flashinfer, started or "", num)
    return [(session, short, axis, value, arch, *tail) for axis, value in axes]


# (the models' fields read from their __dict__: a pydantic model's attribute goes through its __getattr__ hook)
def _env(env: Any) -> dict[str, Any] | None:
    if env is None:
        return None
    env = env.__dict__
    return {"gpus": [{"name": g["name"], "compute_cap": g["compute_cap"], "driver": g["driver"]}
                     for g in [gpu.__dict__ for gpu in env["gpus"]]],
            "device_capability": env["device_capability"], "packages": env["packages"], "torch_cuda": env["torch_cuda"]}


def _launch(launch: Any) -> dict[str, Any] | None:
    if launch is None:
        return None
    launch = launch.__dict__
    return {"parser": launch["parser"], "fingerprint": launch["fingerprint"], "non_default": launch["non_default"],
            "args": launch["args"], "sglang_version": launch["sglang_version"]}


#: Per kind, the plain fields :func:`attempt_values` reads of an event (besides ``kind``, ``started``,
#: ``ended``, ``environment``, ``launch`` and ``provenance``, which :func:`light` turns into their
#: stored shape): what :func:`light` copies. A field read there and missing here would differ between
#: a build from nothing and an append (``tests/test_store_index.py`` compares the two).
_READ = {
    "attempt": ("short_id", "argv", "role", "label", "model", "tests", "recorder_pid", "recorder_host"),
    "environment": ("attempt",),
    "launch_config": ("attempt", "role"),
    "server_info": ("attempt", "resolved"),
    "smoke": ("attempt", "ok"),
    "outcome": ("attempt", "status", "label", "signature"),
    "sweep_cell": ("sweep", "cell", "attempts"),
}


def light(event: Any, ts: str | None = None) -> dict[str, Any]:
    """What :func:`attempt_row` reads of a validated event, as the stored dict (``ts``: its isoformat, if made)."""
    fields = event.__dict__
    kind = fields["kind"]
    out = {"kind": kind}
    for key in _READ[kind]:
        out[key] = fields[key]
    if fields.get("provenance") is not None:
        out["provenance"] = {"source": fields["provenance"].source}
    stamp = fields["ts"]
    for key in ("started", "ended"):
        when = fields.get(key)
        if when is not None:
            # the same tzinfo and the same fields: the same text (a started is most often its ts)
            same = ts is not None and when.tzinfo is stamp.tzinfo and when == stamp
            out[key] = (ts if same else when.isoformat()).replace("+00:00", "Z")
    if "environment" in fields:
        out["environment"] = _env(fields["environment"])
    if "launch" in fields:
        out["launch"] = _launch(fields["launch"])
    return out


def metric_row(session: str, line: int, metric: Any, ts: str | None = None,
               memo: dict[Any, Any] | None = None) -> tuple[Any, ...]:
    """The ``metrics`` row of a validated metric, in :data:`METRIC_COLUMNS` order (``ts``, ``memo``: as above)."""
    fields = metric.__dict__
    return (session, line, fields["name"], fields["value"], fields["unit"], fields["attempt"], fields["server_attempt"],
            fields["ts"].isoformat() if ts is None else ts,
            *_remembered(memo, "labels", (fields["labels"] or {},), _label_columns))


def _label_columns(labels: dict[str, Any]) -> tuple[Any, ...]:
    """The columns of a metric row made of its labels: the workload's four, the labels' JSON, the item."""
    workload, concurrency_keys, item_keys = _metric_owners()
    work = workload(labels, _first_number(labels, concurrency_keys))
    item = None
    for key in item_keys:
        value = labels.get(key)
        if value is not None and str(value).strip():
            item = str(value)
            break
    return (*[v if v is None or isinstance(v, (int, float, str)) else json.dumps(v) for v in work], _dumps(labels), item)


@cache
def _metric_owners() -> tuple[Any, ...]:
    """What :func:`metric_row` asks: the workload's owner, ``knowledge.toml``'s concurrency and item labels."""
    from ..launch.flags import workload

    table = knowledge()["metrics"]
    return workload, tuple(table["concurrency_labels"]), tuple(table.get("item_labels", []))


def _first_number(labels: dict[str, Any], keys: list[str]) -> float | None:
    """The first of ``keys`` the labels hold, as a number (None when it is not one)."""
    for key in keys:
        if labels.get(key) is not None:
            try:
                return float(labels[key])
            except (TypeError, ValueError):
                return None
    return None
