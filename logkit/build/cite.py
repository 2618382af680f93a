"""``logkit cite DR-0003``: a Markdown link to a decision record.

Contract: the URL is ``<site_url>decisions/DR-0003/`` (stable across rebuilds: a decision's page
is named by its id only); the link text is ``DR-0003: <title>`` from the latest record of that id.
Only the sessions' decision lines are read (no site build). An unknown id raises
:class:`~logkit.errors.NotFound`; without a ``site_url`` the link is relative, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..errors import BadInput, NotFound
from ..events import Decision
from ..store import Store

__all__ = ["cite"]


def cite(sessions: Path, decision_id: str, config: Path | None = None, base: str | None = None,
         warn: Callable[[str], None] = lambda _m: None) -> str:
    """The Markdown link to ``decision_id``."""
    from .site import site_url

    if not re.fullmatch(r"DR-[0-9]{4,}", decision_id):
        raise BadInput(f"{decision_id!r} is not a decision id", fix="decision ids look like DR-0003")
    store = Store(sessions)
    found: Decision | None = None
    known: list[str] = []
    for result in store.read_all().values():
        for event in result.events:
            if isinstance(event, Decision):
                known.append(event.decision_id)
                if event.decision_id == decision_id and (found is None or event.ts >= found.ts):
                    found = event
    if found is None:
        raise NotFound(f"no decision {decision_id} in {sessions}",
                       fix="pick one of: " + (", ".join(sorted(set(known))[-8:]) or "none recorded yet"))
    base = base or site_url(config)
    path = f"decisions/{decision_id}/"
    if base:
        url = base.rstrip("/") + "/" + path
    else:
        warn("warning: no site_url in mkdocs.yml; printing a relative link (set site_url to your site's address)")
        url = path
    title = re.sub(r"([\\`*_\[\]<>|])", r"\\\1", " ".join(found.title.split()))
    return f"[{decision_id}: {title}]({url})"
