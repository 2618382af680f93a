"""Stable page paths and anchors: the site's URLs are a function of ids, never of titles.

Contract: a decision is always ``decisions/<DR-id>/``, a session ``sessions/<session-id>/``, an
attempt the anchor ``#A7`` on its session page, a hypothesis ``#H3``. A session's story is split
into parts of :data:`PART_ATTEMPTS` attempts by attempt *number* (``A1``-``A200`` on the session
page, ``A201``-``A400`` on ``sessions/<id>/part-2/``, ...), so an attempt's URL is a function of its
id alone and never moves as the session grows; a session of at most that many attempts is one page. Pages keyed by values
(model, GPU, backend) use :func:`slug` plus a short hash of the exact value, so two values that
slug alike never share a URL and rebuilds give the same URL.
"""

from __future__ import annotations

import hashlib
import re

from .contexts import AttemptRef
from .frames import AttemptFacts

__all__ = [
    "PART_ATTEMPTS", "attempt_href", "attempt_part", "attempt_ref", "config_href", "config_path", "decision_href",
    "key_slug", "log_href", "metrics_path", "negative_path", "session_href", "session_part_href", "signature_path", "slug",
]


def slug(text: str, limit: int = 48) -> str:
    """Lowercase, hyphenated, URL-safe."""
    s = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return s[:limit].rstrip("-") or "x"


def key_slug(*parts: str | None) -> str:
    """A readable, collision-free slug of several values."""
    raw = "\x1f".join(p or "" for p in parts)
    digest = hashlib.sha1(raw.encode()).hexdigest()[:6]
    return "-".join(slug(p or "unknown", 32) for p in parts) + "-" + digest


def session_href(session_id: str) -> str:
    """The session page."""
    return f"sessions/{session_id}/index.md"


#: attempts per part of a session page (a page of thousands of attempts costs MkDocs quadratic time)
PART_ATTEMPTS = 200


def attempt_part(short_id: str) -> int:
    """The part of its session's story that shows attempt ``short_id`` (1: the session page)."""
    digits = short_id[1:]
    if not digits.isdigit() or len(digits) > 18:
        return 1
    return max(1, (int(digits) - 1) // PART_ATTEMPTS + 1)


def session_part_href(session_id: str, part: int) -> str:
    """Part ``part`` of a session's story (part 1 is the session page itself)."""
    return session_href(session_id) if part <= 1 else f"sessions/{session_id}/part-{part}/index.md"


def attempt_href(session_id: str, short_id: str) -> str:
    """An attempt's anchor on the part of its session page that shows it."""
    return f"{session_part_href(session_id, attempt_part(short_id))}#{short_id}"


def log_href(session_id: str, file: str) -> str:
    """An attempt's raw log as the site publishes it (``file`` as the events name it: ``logs/A7.log``)."""
    return f"logs/{session_id}/{file}"


def decision_href(decision_id: str) -> str:
    """A decision record."""
    return f"decisions/{decision_id}/index.md"


def attempt_ref(facts: AttemptFacts) -> AttemptRef:
    """The link-and-gist of one attempt (from its facts alone: no event is read)."""
    status = facts.status if facts.status is not None else "running"
    if facts.smoke_failed and status == "ready":
        status = "ready, smoke failed"
    return AttemptRef(
        ref=facts.ref,
        href=attempt_href(facts.session, facts.short_id),
        status=status,
        label=facts.label,
        started=facts.started,
        name=facts.name,
    )


def config_path(model: str | None, gpu: str | None, sglang: str | None) -> str:
    """The working-configuration page of a model x GPU x SGLang version."""
    return f"configs/{key_slug(model, gpu, sglang)}/index.md"


def config_href(facts: AttemptFacts) -> str:
    """A configuration's anchor on its page."""
    return config_path(facts.model, facts.gpu_label, facts.versions.get("sglang")) + f"#cfg-{facts.fp_hash}"


def metrics_path(model: str | None, gpu: str | None) -> str:
    """The metrics page of a model x GPU."""
    return f"metrics/{key_slug(model, gpu)}/index.md"


def signature_path(signature: str) -> str:
    """A failure signature's page."""
    return f"signatures/{key_slug(signature)}/index.md"


def negative_path(axis: str, value: str, arch: str, model: str | None) -> str:
    """A negative result: one backend value on one architecture for one model."""
    return f"backends/{key_slug(axis, value, arch, model)}/index.md"
