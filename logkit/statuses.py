"""The outcome-status table (:file:`logkit/data/statuses.toml`): one taxonomy, one exit mapping.

Contract:

* Each row is an outcome status (:data:`logkit.events.OutcomeStatus` is the table's names, in its
  order): its ``class`` (works, failure, stopped), its matrix ``category`` (works, crash, garbage,
  oom, inaccurate, ignore) and, for a refuting status, the ``verb`` warnings use. A status refutes a
  backend exactly when its category is crash, garbage, oom or inaccurate.
* :func:`is_failure` is the one answer to "is this outcome a failure?" (class ``failure``; no
  status and an unknown one are not): no module keeps its own set.
* :func:`from_exit` is the one mapping from how a process ended (exit code, signal, stopped by
  logkit) to a status and a label, by the table's ``[[exit]]`` rules.
* Stdlib only, cheap on the ``logkit run`` path. A broken table raises
  :class:`~logkit.errors.BadInput` naming the file, the row and the fix.
"""

from __future__ import annotations

import functools
import signal as _signal
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from .errors import BadInput

__all__ = [
    "CATEGORIES", "CLASSES", "REFUTING_CATEGORIES", "StatusRow", "category", "from_exit", "is_failure",
    "names", "of_class", "refuting", "row", "signal_name", "table", "verb",
]

DATA = Path(__file__).resolve().parent / "data" / "statuses.toml"
CLASSES = ("works", "failure", "stopped")
CATEGORIES = ("works", "crash", "garbage", "oom", "inaccurate", "ignore")
REFUTING_CATEGORIES = ("crash", "garbage", "oom", "inaccurate")
_WHERE = "logkit/data/statuses.toml"


class StatusRow(NamedTuple):
    """One status of the table."""

    name: str
    klass: str
    category: str
    verb: str | None

    @property
    def refutes(self) -> bool:
        """Does an attempt ending in this status count against its backends?"""
        return self.category in REFUTING_CATEGORIES


class _ExitRule(NamedTuple):
    stopped_by_logkit: bool | None
    signals: frozenset[int]
    any_signal: bool
    exit_codes: frozenset[int] | None
    status: str
    label: str


class _Table(NamedTuple):
    rows: dict[str, StatusRow]
    rules: tuple[_ExitRule, ...]
    #: the signals some rule names: a shell's exit status 128+N is read as signal N
    shell_signals: frozenset[int]


def _signum(name: Any, where: str) -> int:
    try:
        return int(_signal.Signals[str(name)])
    except KeyError:
        raise BadInput(f"{_WHERE}: {where}: unknown signal {name!r}", fix="use a name such as SIGKILL, or \"*\"") from None


def _load(text: str) -> _Table:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{_WHERE}: {exc}", fix="fix the TOML syntax at that line") from exc
    rows: dict[str, StatusRow] = {}
    for name, raw in data.get("status", {}).items():
        klass, cat, verb = raw.get("class"), raw.get("category"), raw.get("verb")
        if klass not in CLASSES:
            raise BadInput(f"{_WHERE}: [status.{name}]: class {klass!r}", fix=f"use one of {', '.join(CLASSES)}")
        if cat not in CATEGORIES:
            raise BadInput(f"{_WHERE}: [status.{name}]: category {cat!r}", fix=f"use one of {', '.join(CATEGORIES)}")
        if (cat == "works") != (klass == "works"):
            raise BadInput(f"{_WHERE}: [status.{name}]: class {klass!r} with category {cat!r}",
                           fix="a status is in the works category exactly when its class is works")
        if cat in REFUTING_CATEGORIES and not verb:
            raise BadInput(f"{_WHERE}: [status.{name}]: a refuting status needs a verb",
                           fix='add verb = "crashed" (how a warning reads)')
        rows[name] = StatusRow(name, klass, cat, verb)
    rules: list[_ExitRule] = []
    for i, raw in enumerate(data.get("exit", []), 1):
        where = f"[[exit]] #{i}"
        if raw.get("status") not in rows:
            raise BadInput(f"{_WHERE}: {where}: status {raw.get('status')!r} has no [status.*] row",
                           fix="name a status of the table")
        sigs = [s for s in raw.get("signals", []) if s != "*"]
        codes = raw.get("exit_codes")
        rules.append(_ExitRule(raw.get("stopped_by_logkit"), frozenset(_signum(s, where) for s in sigs),
                               "*" in raw.get("signals", []), frozenset(codes) if codes is not None else None,
                               raw["status"], raw.get("label", raw["status"])))
    if not rules or any(r.signals or r.any_signal or r.exit_codes is not None or r.stopped_by_logkit
                        for r in rules[-1:]):
        raise BadInput(f"{_WHERE}: the last [[exit]] rule must match anything",
                       fix='end with a rule that has only status and label (status = "other_crash")')
    return _Table(rows, tuple(rules), frozenset(s for r in rules for s in r.signals))


@functools.cache
def table() -> _Table:
    """The parsed table, read once."""
    return _load(DATA.read_text(encoding="utf-8"))


def names() -> tuple[str, ...]:
    """Every status, in the table's order."""
    return tuple(table().rows)


def row(status: str) -> StatusRow:
    """The row of ``status`` (:class:`~logkit.errors.BadInput` for an unknown one)."""
    try:
        return table().rows[status]
    except KeyError:
        raise BadInput(f"unknown outcome status {status!r}", fix="one of: " + ", ".join(names())) from None


def category(status: str | None) -> str | None:
    """The matrix category of ``status``; None for an unknown status or one the matrix ignores."""
    r = table().rows.get(status or "")
    return r.category if r is not None and r.category != "ignore" else None


def refuting() -> tuple[str, ...]:
    """The statuses that count against an attempt's backends."""
    return tuple(n for n, r in table().rows.items() if r.refutes)


def of_class(klass: str) -> tuple[str, ...]:
    """The statuses of one class (``works``, ``failure``, ``stopped``)."""
    return tuple(n for n, r in table().rows.items() if r.klass == klass)


def is_failure(status: str | None) -> bool:
    """Whether ``status`` is a failure (class ``failure``); None and unknown statuses are not."""
    r = table().rows.get(status or "")
    return r is not None and r.klass == "failure"


def verb(status: str, default: str = "was refuted") -> str:
    """How a refuting status reads in a warning (``crashed``, ``ran out of memory``)."""
    r = table().rows.get(status)
    return (r.verb if r is not None else None) or default


def from_exit(exit_code: int | None, signal: int | None, *, stopped_by_logkit: bool = False,
              reason: str | None = None) -> tuple[str, str]:
    """(status, label) for how a process ended (``exit_code``: -N or 128+N for a signal; ``reason``: logkit's stop)."""
    t = table()
    if signal is None and exit_code is not None:
        if exit_code < 0:
            signal, exit_code = -exit_code, None
        elif exit_code - 128 in t.shell_signals:
            signal = exit_code - 128
    for rule in t.rules:
        if rule.stopped_by_logkit is not None and rule.stopped_by_logkit != stopped_by_logkit:
            continue
        if (rule.signals or rule.any_signal) and not (
                signal is not None and (rule.any_signal or signal in rule.signals)):
            continue
        if rule.exit_codes is not None and (signal is not None or exit_code not in rule.exit_codes):
            continue
        label = rule.label.format(signal=signal_name(signal), code=exit_code, reason=reason or "stopped")
        return rule.status, label
    raise AssertionError("unreachable: the last exit rule matches anything")  # _load checks it


def signal_name(sig: int | None) -> str:
    """``SIGTERM`` for 15, ``signal 99`` for a number that names none, ``""`` for None."""
    if sig is None:
        return ""
    try:
        return _signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
