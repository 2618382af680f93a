"""``logkit build --strict``: what stops a broken knowledge base from being published.

Contract: :func:`knowledge_problems` lists, as ``where: what`` lines, every decision id that names
two sessions' records or disagrees with the ledger (:func:`logkit.reasoning.decisions.check`),
every id a decision cites that names nothing (a dangling attempt, hypothesis or ``supersedes``),
and stale JSON Schema files in ``./schemas`` when the working directory has them. Lines that do not
validate already stop a strict load (:mod:`.load`); :func:`refuse` raises one
:class:`~logkit.errors.BadInput` naming them all. MkDocs' warnings are checked after MkDocs ran.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import BadInput

__all__ = ["knowledge_problems", "refuse"]


def knowledge_problems(sessions: Path, unresolved: Iterable[tuple[str, str, list[str]]],
                       schemas: Path = Path("schemas")) -> list[str]:
    """Duplicate or dangling ids and stale schemas, one line each (``unresolved``: (id, title, refs) per record page)."""
    from ..reasoning.decisions import check
    from ..store import Store

    found = [f"{p.where}: {p.message} (fix: {p.fix})" for p in check(Store(sessions))]
    for did, title, refs in unresolved:
        found.append(f"{did} ({title}): cites {', '.join(refs)}, which no session "
                     "records (fix: correct the reference, or copy the cited session in)")
    if schemas.is_dir() and any(schemas.glob("*.schema.json")):
        from ..schema import stale

        names = stale(schemas)
        if names:
            found.append(f"{schemas}: stale schema files {', '.join(names)} (fix: logkit schema --write {schemas})")
    return found


def refuse(problems: list[str], what: str) -> None:
    """Raise one error listing ``problems``; nothing if there are none."""
    if problems:
        raise BadInput(f"--strict: {what}:\n" + "\n".join(f"  {p}" for p in problems),
                       fix="fix the problems named above, or build without --strict to publish anyway")
