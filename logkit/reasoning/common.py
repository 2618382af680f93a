"""Helpers every reasoning command shares: the clock, provenance, and resolving ids in a session.

Contract:

* :func:`now` is the time a reasoning event is stamped with: ``at`` if given, else ``$LOGKIT_NOW``,
  else the wall clock. A fixed ``$LOGKIT_NOW``/``--at`` makes generated sessions reproducible.
* :func:`open_store` is the store every command writes to, each event redacted before it is written.
* :func:`provenance` turns ``--reconstructed "seed 000: ..."`` into a ``reconstructed`` provenance.
* :func:`check_refs` validates ``A7``, ``H3`` and ``other-session/A4`` references, raising
  :class:`~logkit.errors.NotFound` with the ids that exist.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from ..errors import BadInput, NotFound
from ..events import Attempt, BaseEvent, Hypothesis, Provenance
from ..store import SessionHandle, Store, files

__all__ = ["ENV_NOW", "check_refs", "now", "open_store", "parse_time", "provenance", "split_ids"]

ENV_NOW = "LOGKIT_NOW"
_ID_RE = {"A": files.ATTEMPT_ID_RE, "H": files.HYPOTHESIS_ID_RE}


def open_store(sessions: str | None) -> Store:
    """The store of ``sessions`` / ``$LOGKIT_SESSIONS`` / ./sessions, every event it writes redacted."""
    from ..capture.redact import Redactor

    return Store.from_env(sessions, scrub=Redactor().scrub)


def parse_time(text: str, *, what: str = "--at") -> datetime:
    """An ISO 8601 time (``2026-11-14T09:30:00Z``); naive times are UTC."""
    fix = f"use e.g. {what} 2026-11-14T09:30:00Z"
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except ValueError:
        raise BadInput(f"{what} {text!r} is not an ISO 8601 time", fix=fix) from None
    except OverflowError:  # 0001-01-01T00:00:00+05:00 is before the first UTC instant, 9999-12-31...-05:00 after the last
        raise BadInput(f"{what} {text!r} is outside the range of UTC times (years 1 to 9999)", fix=fix) from None


def now(at: str | None = None) -> datetime:
    """``at``, else ``$LOGKIT_NOW``, else the current UTC time."""
    if at:
        return parse_time(at)
    env = os.environ.get(ENV_NOW)
    if env:
        return parse_time(env, what=f"${ENV_NOW}")
    return datetime.now(UTC)


def provenance(reconstructed: str | None) -> Provenance | None:
    """The provenance of an event reconstructed from a written account, or None for a live one."""
    if reconstructed is None:
        return None
    if not reconstructed.strip():
        raise BadInput("--reconstructed needs the account it follows", fix='--reconstructed "seed 000: msg 5976"')
    return Provenance(source="reconstructed", detail=reconstructed.strip())


def split_ids(values: list[str] | None) -> list[str]:
    """``["A7,A9", "A10"]`` -> ``["A7", "A9", "A10"]`` (comma lists and repeated flags both work)."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _ids(events: list[BaseEvent], prefix: str) -> list[str]:
    """The ``A<n>`` (or ``H<n>``) short ids of a session, in order."""
    kind = Attempt if prefix == "A" else Hypothesis
    return [e.short_id for e in events if isinstance(e, kind)]


# per ref prefix: what it names (singular, plural), where the known ones are listed, an example
_REF_KINDS = {"A": ("attempt", "attempts", "'logkit status'", "an attempt (A7)"),
              "H": ("hypothesis", "hypotheses", "'logkit hypothesis list'", "a hypothesis (H3)")}


def _known(ids: list[str]) -> str:
    return ", ".join(ids[-12:]) if ids else "none yet"


def check_refs(handle: SessionHandle, events: list[BaseEvent], refs: list[str], *, allow: str = "AH") -> None:
    """Refuse a ref (``A7``, ``H3``, ``SESSION/A4``) that names nothing; ``allow``: the prefixes accepted."""
    known = {"A": _ids(events, "A"), "H": _ids(events, "H")}
    for ref in refs:
        if "/" in ref:
            other, _, short = ref.rpartition("/")
            if not (_ID_RE["A"].match(short) or _ID_RE["H"].match(short)):
                raise BadInput(f"{ref!r} is not SESSION/A<n> or SESSION/H<n>", fix="e.g. 2026-11-14-glm5/A4")
            store: Store = handle.store
            pool = _ids(store.handle(other).read().events, short[0])
            if short not in pool:
                raise NotFound(f"session {other!r} has no {short}", fix=f"known there: {_known(pool)}")
            continue
        kind = ref[:1]
        if not (kind and kind in allow and _ID_RE[kind].match(ref)):
            kinds = " or ".join(_REF_KINDS[k][3] for k in allow)
            raise BadInput(f"{ref!r} is not {kinds}", fix="use ids as 'logkit status' prints them")
        if ref not in known[kind]:
            name, plural, see, _ = _REF_KINDS[kind]
            raise NotFound(f"no {name} {ref} in session {handle.id}",
                           fix=f"known {plural}: {_known(known[kind])} (see {see})")
