"""``logkit cite DR-7K3FQ``: a Markdown link to a decision record.

Contract: the URL is ``<site_url>decisions/DR-7K3FQ/`` (a decision's page is named by its permanent
id only, so the link never breaks); the link text is ``DR-7K3FQ: <title>`` from the latest record
of that id. Only the sessions' decision lines and the ledger are read (no site build). Any id ever
printed resolves (:func:`logkit.reasoning.decisions.resolve`): an id, a longer form of it, or an
id that moved (the link then goes to the record's current id, and a note says so). An unknown id
raises :class:`~logkit.errors.NotFound`. A record a later one supersedes is linked as asked, and a note
names what replaced it (as ``decision list`` and the record's page say). ``site_url`` comes from ``$LOGKIT_SITE_URL``, else the
``site_url`` of mkdocs.yml; without one the link is relative and a note says how to set it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..store import Store

__all__ = ["cite"]


def cite(sessions: Path, decision_id: str, config: Path | None = None, base: str | None = None,
         warn: Callable[[str], None] = lambda _m: None) -> str:
    """The Markdown link to the decision ``decision_id`` names."""
    from ..reasoning.decisions import resolve
    from .site import site_url

    found = resolve(Store(sessions), decision_id)
    record = found.decision
    if found.how == "moved":
        warn(f"logkit: note: {found.cited} moved to {record.decision_id}; linking to {record.decision_id} "
             f"(the site's {found.cited} page redirects there)")
    if found.superseded_by:
        warn(f"logkit: note: {record.decision_id} is superseded by {', '.join(found.superseded_by)} (its page says so); "
             f"cite {found.superseded_by[-1]} for the decision that replaced it")
    for other in found.others:
        warn(f"logkit: note: {found.cited} also names {other.decision_id} in {other.session} ({other.title!r}); "
             f"the site's {found.cited} page lists both")
    shown = found.cited if found.how == "id" else record.decision_id
    base = base or site_url(config)
    path = f"decisions/{shown}/"
    if base:
        url = base.rstrip("/") + "/" + path
    else:
        warn("logkit: note: no site address set, so this link is relative. Set it with "
             "LOGKIT_SITE_URL=https://kb.example.com/ or 'site_url: https://kb.example.com/' in mkdocs.yml "
             "(or pass --site-url)")
        url = path
    title = re.sub(r"([\\`*_\[\]<>|])", r"\\\1", " ".join(record.title.split()))
    return f"[{shown}: {title}]({url})"
