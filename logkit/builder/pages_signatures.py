"""Stage 4c, contexts of the failure-signature pages: one page per signature with its latest hits,
what cleared it (the next working launch of the same session and what changed), and the index with
the failures no signature explains grouped by their normalised error line.

Contract: pure functions of :class:`KBIndex`, as :mod:`.pages_configs`' (whose launches and
excerpts they share).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from ..errorlines import error_template
from .contexts import AttemptRef, Page
from .contexts_kb import DiffRow, SignaturePage, SignatureRow, SignaturesIndex, UnexplainedRow
from .frames import AttemptFacts
from .index import KBIndex
from .pages_configs import excerpt, launches, versions_text
from .pages_kb import diff_settings
from .paths import attempt_ref, signature_path

__all__ = ["signature_pages", "signatures_index", "unexplained_failures"]

#: a signature page lists at most this many of its latest hits (the sessions hold the rest)
SIGNATURE_HITS = 100


def signature_pages(index: KBIndex) -> list[SignaturePage]:
    """One page per failure signature."""
    by_sig: dict[str, list[AttemptFacts]] = defaultdict(list)
    for f in sorted(index.frames.facts.values(), key=lambda f: (f.started, f.ref)):
        if f.signature and f.category not in ("works",):
            by_sig[f.signature].append(f)
    # per session, its working launches in order and the running maximum of their start times: the
    # first working launch that started after a hit is found by bisection (a scan per hit was
    # quadratic in the launches of one big session)
    works_by_session: dict[str, tuple[list[AttemptFacts], list[Any]]] = {}
    for f in launches(index):
        if f.category == "works":
            works, peaks = works_by_session.setdefault(f.session, ([], []))
            works.append(f)
            peaks.append(max(peaks[-1], f.started) if peaks else f.started)
    pages = []
    for sig in sorted(by_sig):
        hits = by_sig[sig]
        cleared: list[tuple[AttemptRef, AttemptRef, list[DiffRow]]] = []
        for h in hits:
            works, peaks = works_by_session.get(h.session, ([], []))
            at = bisect.bisect_right(peaks, h.started)
            if at < len(works):
                fix = works[at]
                old = {**h.fingerprint}
                cleared.append((attempt_ref(h), attempt_ref(fix), diff_settings(old, fix.fingerprint)))
        first = next((h for h in hits if (h.outcome or {}).get("evidence")), hits[0])
        shown = hits[-SIGNATURE_HITS:]
        pages.append(SignaturePage(
            page=Page(signature_path(sig), f"Signature {sig}", "signature.md.j2"),
            signature=sig,
            label=hits[-1].label,
            hits=[(attempt_ref(h), ", ".join(f"{k}={v}" for k, v in sorted(h.backends.items())),
                   h.gpu_label or "", h.arch or "", versions_text(h)) for h in shown],
            total=len(hits),
            archs=sorted({h.arch for h in hits if h.arch}),
            excerpt=excerpt(first.outcome),
            excerpt_from=attempt_ref(first),
            cleared=cleared[-SIGNATURE_HITS:],
            cleared_total=len(cleared),
        ))
    return pages


def unexplained_failures(index: KBIndex) -> list[UnexplainedRow]:
    """``other_crash`` outcomes (nothing explains them) grouped by their normalised error line."""
    groups: dict[str, list[AttemptFacts]] = defaultdict(list)
    for f in sorted(index.frames.facts.values(), key=lambda f: (f.started, f.ref)):
        if f.status == "other_crash":
            text = f.label or next((e["text"] for e in (f.outcome or {}).get("evidence", []) if e["text"].strip()), "")
            if text:
                groups[error_template(text)].append(f)
    rows = [UnexplainedRow(t, len(fs), [attempt_ref(f) for f in fs[-SIGNATURE_HITS:]]) for t, fs in groups.items()]
    rows.sort(key=lambda r: (-r.count, r.template))
    return rows


def signatures_index(pages: list[SignaturePage], index: KBIndex) -> SignaturesIndex:
    """The table of signatures, most hit first, and the unexplained failures grouped by template."""
    rows = [SignatureRow(p.signature, p.label, p.total, ", ".join(p.archs), p.cleared_total, p.page.path)
            for p in pages]
    rows.sort(key=lambda r: (-r.count, r.signature))
    return SignaturesIndex(page=Page("signatures/index.md", "Failure signatures", "signatures_index.md.j2"), rows=rows,
                           unexplained=unexplained_failures(index))
