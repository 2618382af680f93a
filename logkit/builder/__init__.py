"""The knowledge-base builder: sessions -> frames -> charts -> page contexts -> Markdown -> mkdocs.

Contract: :func:`build` is one linear function of named stages, in one process; every stage but
the writes is a pure function of the previous one's output:

1. ``load``     ONE snapshot of the refreshed index for the whole build (:mod:`.load`): attempt and
                metric rows, each session's few events; bad lines warned about and skipped
2. ``frames``   the facts of every attempt, the metric rows joined to their launches (:mod:`.frames`)
3. ``charts``   Vega-Lite specs per model x GPU, kept by a digest of their data (:mod:`.charts`)
4. ``pages``    one typed context per aggregate page (:mod:`.pages_kb`, :mod:`.pages_configs`,
                :mod:`.pages_signatures`, :mod:`.pages_sweeps`), rendered to Markdown (:mod:`.render`)
                kind by kind, so one kind's contexts are held at a time
5. ``sessions`` session pages one session at a time (its many events read, then let go), and
                decision records; both kept when their inputs did not change (:mod:`.incremental`)
6. ``svg``      the charts' SVG files, drawn from their specs in this process (:mod:`.svgchart`)
7. ``mkdocs``   ``mkdocs build`` with Material beside ``out``, swapped in when whole (:mod:`.site`)

:func:`generate` runs stages 1-6 (``logkit serve`` and the tests use it); :func:`build` runs it,
then MkDocs. Neither starts a process, so either may be called from a plain script.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BuildResult", "build", "generate"]


@dataclass
class BuildResult:
    """What a build did."""

    docs: Path
    out: Path | None
    pages: int = 0
    charts_rendered: int = 0
    #: session pages kept from the previous build (their inputs did not change)
    pages_kept: int = 0
    #: decision record pages kept from the previous build (the same rule)
    decisions_kept: int = 0
    warnings: list[str] = field(default_factory=list)
    #: stage name -> seconds
    timings: dict[str, float] = field(default_factory=dict)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


class _Stages:
    """The build's bookkeeping: its result, the warnings it passes on, the time of each stage."""

    def __init__(self, result: BuildResult, warn: Callable[[str], None], progress: Any = None) -> None:
        self.result = result
        self._warn = warn
        self._clock = time.perf_counter()
        #: :mod:`.progress`'s view of the stages (None: quiet)
        self.progress = progress
        if progress is not None:
            progress.started("load")

    def warn(self, message: str) -> None:
        self.result.warnings.append(message)
        self._warn(message)

    def done(self, stage: str, detail: str = "", then: str | None = None) -> None:
        """Stage ``stage`` ended (``detail``: its counts, for the progress); ``then`` starts."""
        now = time.perf_counter()
        self.result.timings[stage] = now - self._clock
        self._clock = now
        if self.progress is not None:
            self.progress.done(stage, detail)
            if then is not None:
                self.progress.started(then)


def generate(sessions: Path, docs: Path, *, strict: bool = False, warn: Callable[[str], None] = _stderr,
             templates: Path | None = None, chart_cache: Path | None = None, progress: Any = None) -> BuildResult:
    """Stages 1-6: the Markdown knowledge base of ``sessions``, charts included, into ``docs``."""
    from ..store.index import current

    sessions, docs = Path(sessions), Path(docs)  # a script may pass strings
    result = BuildResult(docs=docs, out=None)
    stages = _Stages(result, warn, progress)

    with current(sessions) as snap:
        return _generate(sessions, docs, snap, stages, strict=strict, templates=templates, chart_cache=chart_cache)


def _generate(sessions: Path, docs: Path, snap: Any, stages: _Stages, *, strict: bool, templates: Path | None,
              chart_cache: Path | None) -> BuildResult:
    """:func:`generate` inside one snapshot of the index."""
    from .charts import SpecCache, metrics_pages, prune_svgs, render_svgs
    from .contexts import DecisionPage, Page
    from .frames import make_frames
    from .incremental import Manifest, build_key
    from .index import KBIndex
    from .load import load
    from .pages_configs import config_pages, configs_index, matrix_page
    from .pages_signatures import signature_pages, signatures_index
    from .pages_kb import decision_pages, decisions_index, home_page, session_pages, sessions_index
    from .pages_sweeps import sweep_pages
    from .render import Renderer
    from .site import copy_assets, publish_logs

    result = stages.result
    loaded = load(sessions, strict=strict, warn=stages.warn, snapshot=snap)
    stages.done("load", f"{len(loaded.sessions)} sessions", then="frames")
    frames = make_frames(loaded)
    stages.done("frames", f"{len(frames.facts)} attempts, {len(frames.metrics)} metrics", then="charts")

    # 3. charts: the metrics pages and the chart specs they show
    key = build_key(templates)
    docs.mkdir(parents=True, exist_ok=True)
    specs = SpecCache(docs, key)
    metric_pages, metric_index, chart_jobs = metrics_pages(frames, specs)
    specs.save()
    sweeps_index, sweep_pages_, sweep_jobs = sweep_pages(loaded)
    chart_jobs += sweep_jobs
    stages.done("charts", f"{len(chart_jobs)} charts on {len(metric_pages)} metrics and {len(sweep_pages_)} sweep pages",
                then="pages")

    # 4. the aggregate pages, kind by kind: each kind's contexts are made, written and let go
    renderer = Renderer(docs, templates)
    written = 0

    def put(*contexts: Any) -> dict[str, str]:
        """Render and write pages now; their Markdown by path."""
        nonlocal written
        texts: dict[str, str] = {}
        renderer.write([(ctx.page, ctx) for ctx in contexts], texts)
        written += len(contexts)
        return texts

    index = KBIndex(loaded, frames)
    put(metric_index, *metric_pages)
    del metric_pages
    put(home_page(index))
    cfg_pages = config_pages(index, metrics={row[3] for row in metric_index.rows})
    put(configs_index(index, cfg_pages), *cfg_pages)
    del cfg_pages
    matrix, negatives = matrix_page(index)
    put(matrix, *negatives)
    del matrix, negatives
    sig_pages = signature_pages(index)
    put(signatures_index(sig_pages, index), *sig_pages)
    del sig_pages
    put(sweeps_index, *sweep_pages_)
    del sweep_pages_
    put(sessions_index(index), decisions_index(index))
    # the tags page lists every page by tag: its text is the other pages' titles, and one search
    # entry per tag grows with the knowledge base (past Zensical's field limit)
    renderer.write([(Page("tags.md", "Tags", "tags.md.j2", no_search=True), None)])
    written += 1
    stages.done("pages", f"{written} pages", then="sessions")

    # 5. decision records and session pages, session by session (a session's records, then its
    #    pages, while its events are in memory: both read them); unchanged ones kept
    manifest = Manifest(docs, key, loaded.digests)
    table = index.decisions_digest()
    unresolved: list[tuple[str, str, list[str]]] = []
    decisions_kept = 0
    kept = [path for sid in loaded.sessions if manifest.unchanged(sid) for path in manifest.paths(sid)]
    for path in kept:
        renderer.keep(path)
    # both in session order (decision_pages: its records by session, then the moved ids' pages)
    fresh_sessions = session_pages(index, keep=lambda sid: sid in manifest.pages)
    fresh = next(fresh_sessions, None)

    def sessions_before(sid: str | None) -> None:
        """Write the pages of every session before ``sid`` (None: of every session left)."""
        nonlocal fresh
        while fresh is not None and (sid is None or not fresh or fresh[0][0].id < sid):
            texts = put(*(ctx for ctx, _deps in fresh))
            for ctx, deps in fresh:
                manifest.record(ctx.id, ctx.page.path, deps, texts[ctx.page.path])
            fresh = next(fresh_sessions, None)

    # --strict checks every record page's references: it keeps none
    for ctx, deps, path in decision_pages(index, keep=lambda path: not strict and manifest.decision_unchanged(path, table)):
        if ctx is None:
            decisions_kept += 1
            renderer.keep(path)
            continue
        if isinstance(ctx, DecisionPage):
            sessions_before(ctx.row.session)
        texts = put(ctx)
        if deps is not None:
            manifest.record_decision(path, deps, table, texts[path])
        if isinstance(ctx, DecisionPage) and ctx.unresolved:
            unresolved.append((ctx.row.id, ctx.session_title, list(ctx.unresolved)))
    sessions_before(None)
    loaded.resident.release_all()
    if strict:
        from .strict import knowledge_problems, refuse

        refuse(knowledge_problems(sessions, unresolved),
               "the knowledge base has duplicate or dangling ids or stale schemas")
    manifest.save()
    renderer.prune()
    copy_assets(docs)
    publish_logs(sessions, docs, list(loaded.sessions))
    result.pages_kept, result.decisions_kept = len(kept), decisions_kept
    result.pages = written + len(kept) + decisions_kept
    stages.done("sessions", f"{len(loaded.sessions)} sessions, {decisions_kept + len(kept)} pages kept from the last build",
                then="svg")

    # 6. the charts' SVG files
    result.charts_rendered = render_svgs(chart_jobs, docs, chart_cache, stages.warn)
    prune_svgs(chart_jobs, docs)
    stages.done("svg", f"{result.charts_rendered} of {len(chart_jobs)} charts rendered (the rest unchanged)")
    return result


def build(sessions: Path, docs: Path, out: Path, *, strict: bool = False, config: Path | None = None,
          warn: Callable[[str], None] = _stderr, chart_cache: Path | None = None, progress: Any = None) -> BuildResult:
    """The whole pipeline: the static site of ``sessions`` in ``out`` (Markdown kept in ``docs``)."""
    from .site import check_dirs, run_mkdocs

    sessions, docs, out = Path(sessions), Path(docs), Path(out)  # a script may pass strings
    config = Path(config) if config is not None else None
    check_dirs(docs, out)
    try:
        result = generate(sessions, docs, strict=strict, warn=warn, chart_cache=chart_cache, progress=progress)
    except OSError as exc:  # a read-only or full filesystem under --docs
        from ..errors import BadInput

        where = f" ({exc.filename})" if exc.filename else ""
        raise BadInput(f"cannot write the Markdown into {docs}: {exc.strerror or exc}{where}",
                       fix=f"check that {docs} is writable and has free space (or give --docs another directory)") from None
    start = time.perf_counter()
    if progress is not None:
        progress.started("mkdocs")
    mkdocs_warnings = run_mkdocs(config, docs, out)
    for message in mkdocs_warnings:  # every warning is said, not only counted
        warn(f"logkit: {message}")
    if progress is not None:
        progress.done("mkdocs", f"{result.pages} pages into {out}")
    result.warnings += mkdocs_warnings
    if strict:
        from .strict import refuse

        refuse(mkdocs_warnings, "MkDocs warned")
    result.timings["mkdocs"] = time.perf_counter() - start
    result.out = out
    return result
