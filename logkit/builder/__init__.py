"""The knowledge-base builder: sessions -> frames -> charts -> page contexts -> Markdown -> mkdocs.

Contract: :func:`build` is one linear pipeline of named stages; every stage but the last two is a
pure function of the previous one's output:

1. ``load``     validate every session's few events and read the facts the aggregate pages need
                (:mod:`.load`; a session's many events are validated when a page first reads them);
                bad lines warned about and skipped
2. ``frames``   pandas DataFrames of attempts, outcomes, metrics (:mod:`.frames`)
3. ``charts``   Altair specs per model x GPU (:mod:`.charts`)
4. ``contexts`` one typed dataclass per page (:mod:`.pages_kb`, :mod:`.pages_configs`)
5. ``render``   Jinja2 templates to Markdown in ``docs``, charts to SVG (:mod:`.render`)
6. ``mkdocs``   ``mkdocs build`` with Material into ``out`` (:mod:`.site`)

Stages 4 and 5 run page kind by page kind (session pages one session at a time), so what is held
is one kind's contexts, never every page's. :func:`generate` runs stages 1-5 only (``logkit
serve`` and the bench use it). :func:`build` runs them in a forked child process and MkDocs in
this one, so the two heaps never add up, and renders the charts in a third process while MkDocs
runs.
"""

from __future__ import annotations

import gc
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
    #: the charts :func:`generate` left to its caller (``charts_later``): (path under docs, spec)
    chart_jobs: list[Any] = field(default_factory=list, repr=False)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def generate(sessions: Path, docs: Path, *, strict: bool = False, warn: Callable[[str], None] = _stderr,
             templates: Path | None = None, chart_cache: Path | None = None,
             background: bool = True, charts_later: bool = False) -> BuildResult:
    """Stages 1-5: write the Markdown knowledge base of ``sessions`` into ``docs``.

    With ``background`` (the default) the charts render in a second process while the pages are
    made; either way they are all written when this returns. With ``charts_later`` none is
    rendered: their jobs are in :attr:`BuildResult.chart_jobs` for the caller (:func:`build` renders
    them while MkDocs runs).
    """
    from .frames import make_frames
    from .incremental import content_digests
    from .load import derive_apart, gc_paused, load, trim_heap

    result = BuildResult(docs=docs, out=None)

    def warned(message: str) -> None:
        result.warnings.append(message)
        warn(message)

    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        result.timings[stage] = now - clock
        clock = now

    digests = content_digests(sessions)  # before reading: a file written meanwhile is redone next time
    derive_apart(sessions)
    with gc_paused():
        loaded = load(sessions, strict=strict, warn=warned)
        trim_heap()  # the read cache's entries and the files' bytes are gone
        lap("load")
        frames = make_frames(loaded)
        for session in loaded.sessions.values():
            session.fact_rows = {}  # in the frames' facts now: one copy, not two
        trim_heap()
        lap("frames")
    # The events and frames live until the end: out of the collector's sight, every collection the
    # later stages trigger (Altair, templates) would rescan them (at 500 sessions, 2 s of render).
    gc.freeze()
    try:
        return _pages(result, sessions, docs, loaded, frames, digests, strict=strict, warned=warned,
                      templates=templates, chart_cache=chart_cache, background=background and not charts_later,
                      charts_later=charts_later, lap=lap)
    finally:
        gc.unfreeze()


def _pages(result: BuildResult, sessions: Path, docs: Path, loaded: Any, frames: Any, digests: dict[str, str], *,
           strict: bool, warned: Callable[[str], None], templates: Path | None, chart_cache: Path | None,
           background: bool, charts_later: bool, lap: Callable[[str], None]) -> BuildResult:
    """Stages 3-5 of :func:`generate` over the loaded store and its frames."""
    from .charts import BackgroundCharts, SpecCache, metrics_pages, render_svgs
    from .contexts import DecisionPage, Page
    from .incremental import Manifest, build_key
    from .index import KBIndex
    from .load import gc_paused, trim_heap
    from .pages_configs import config_pages, configs_index, matrix_page, signature_pages, signatures_index
    from .pages_sweeps import sweep_pages
    from .pages_kb import decision_pages, decisions_index, home_page, session_pages, sessions_index
    from .render import Renderer
    from .site import copy_assets

    key = build_key(templates)
    specs = SpecCache(docs, key)
    docs.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(docs, key, digests)
    renderer = Renderer(docs, templates)
    written = 0

    def put(*contexts: Any) -> dict[str, str]:
        """Render and write pages now (nothing holds a page's context after); their Markdown by path."""
        nonlocal written
        texts: dict[str, str] = {}
        renderer.write([(ctx.page, ctx) for ctx in contexts], texts)
        written += len(contexts)
        return texts

    sweeps_index, sweep_pages_, jobs = sweep_pages(loaded)
    charts = None

    def metrics() -> None:
        nonlocal jobs
        metric_pages, metric_index, metric_jobs = metrics_pages(frames, specs)
        specs.save()
        put(metric_index, *metric_pages)
        jobs = [*metric_jobs, *jobs]

    if not charts_later:
        metrics()
        # the SVGs render on the second core while this one makes and renders the pages
        charts = BackgroundCharts(jobs, docs, chart_cache) if background else None
    lap("charts")
    with gc_paused():
        index = KBIndex(loaded, frames)

    # Each kind of page is made, written and let go before the next (the memory is one kind's
    # contexts at a time); --strict collects what it refuses and refuses before MkDocs runs.
    put(home_page(index))
    cfg_pages = config_pages(index)
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
    renderer.write([(Page("tags.md", "Tags", "tags.md.j2"), None)])
    written += 1
    table = index.decisions_digest()
    unresolved: list[tuple[str, str, list[str]]] = []
    kept_decisions = []
    # --strict checks every record page's references: it keeps none
    for ctx, deps, path in decision_pages(index, keep=lambda path: not strict and manifest.decision_unchanged(path, table)):
        if ctx is None:
            kept_decisions.append(path)
            renderer.keep(path)
            continue
        texts = put(ctx)
        if deps is not None:
            manifest.record_decision(path, deps, table, texts[path])
        if isinstance(ctx, DecisionPage) and ctx.unresolved:
            unresolved.append((ctx.row.id, ctx.session_title, list(ctx.unresolved)))
    loaded.resident.release_all()
    trim_heap()
    lap("pages")
    # Session pages last, one session at a time: its many events are read, its pages made, written
    # and recorded, and the events let go (at most a few sessions' at once, whatever the store's size).
    kept = [path for sid in loaded.sessions if manifest.unchanged(sid) for path in manifest.paths(sid)]
    for path in kept:
        renderer.keep(path)
    for fresh in session_pages(index, keep=lambda sid: sid in manifest.pages):
        texts = put(*(ctx for ctx, _deps in fresh))
        for ctx, deps in fresh:
            manifest.record(ctx.id, ctx.page.path, deps, texts[ctx.page.path])
    loaded.resident.release_all()
    if charts_later:
        # last: the charts' data frames and Altair come on top of the smallest heap of the run
        trim_heap()
        metrics()
        lap("metrics")
    if strict:
        from .strict import knowledge_problems, refuse

        refuse(knowledge_problems(sessions, unresolved),
               "the knowledge base has duplicate or dangling ids or stale schemas")
    manifest.save()
    result.pages_kept = len(kept)
    result.decisions_kept = len(kept_decisions)
    renderer.prune()
    copy_assets(docs)
    lap("sessions")
    if charts_later:
        result.chart_jobs = jobs
    elif charts is not None:
        result.charts_rendered = charts.finish(None)
        lap("charts wait")
    else:
        result.charts_rendered = render_svgs(jobs, docs, chart_cache, warned)
        lap("charts render")
    wanted = {docs / src for src, _spec in jobs}
    for old in (docs / "assets" / "charts").glob("*.svg"):
        if old not in wanted:
            old.unlink()  # a chart no page shows any more
    result.pages = written + len(kept) + len(kept_decisions)
    return result


def _generate_apart(sessions: Path, docs: Path, *, strict: bool, warn: Callable[[str], None],
                    chart_cache: Path | None) -> BuildResult:
    """:func:`generate` in a forked child process, which takes its whole heap with it when it exits.

    The events, frames and contexts of a big store weigh far more than MkDocs needs; built in this
    process they would stay in its heap (CPython rarely gives memory back) under MkDocs, adding to
    the peak and to every garbage collection MkDocs makes. The child's warnings are passed on to
    ``warn`` here, its errors raised here. Where ``fork`` is unavailable it runs in this process.
    """
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        return generate(sessions, docs, strict=strict, warn=warn, chart_cache=chart_cache, charts_later=True)
    recv, send = ctx.Pipe(duplex=False)
    # not a daemon: the child starts the chart renderer, a process of its own
    child = ctx.Process(target=_generate_child, args=(send, sessions, docs, strict, chart_cache), name="logkit-pages")
    child.start()
    send.close()
    try:
        outcome, payload, messages = recv.recv()
    except EOFError:
        child.join()
        from ..errors import LogkitError

        raise LogkitError(f"the page generator process died (exit status {child.exitcode})",
                          fix="see the messages above; run the build again") from None
    finally:
        recv.close()
    child.join()
    for message in messages:
        warn(message)
    if outcome == "error":
        raise payload
    return payload


def _generate_child(send: Any, sessions: Path, docs: Path, strict: bool, chart_cache: Path | None) -> None:
    messages: list[str] = []
    try:
        result = generate(sessions, docs, strict=strict, warn=messages.append, chart_cache=chart_cache, charts_later=True)
        send.send(("ok", result, messages))
    except BaseException as exc:  # every failure goes to the parent, which raises it
        from ..errors import LogkitError

        if not isinstance(exc, LogkitError):
            import traceback

            traceback.print_exc()
        try:
            send.send(("error", exc, messages))
        except Exception:  # an exception that does not pickle
            send.send(("error", LogkitError(f"{type(exc).__name__}: {exc}"), messages))
    finally:
        send.close()


def build(sessions: Path, docs: Path, out: Path, *, strict: bool = False, config: Path | None = None,
          warn: Callable[[str], None] = _stderr, chart_cache: Path | None = None) -> BuildResult:
    """The whole pipeline: the static site of ``sessions`` in ``out`` (Markdown kept in ``docs``).

    The charts render in a second process while MkDocs runs (not beside the page generator, whose
    heap is the biggest): a chart not rendered yet stands as a placeholder file, so MkDocs lists it
    and links to it, and is copied into the site when rendered.
    """
    from .charts import BackgroundCharts
    from .site import check_dirs, run_mkdocs

    check_dirs(docs, out)
    result = _generate_apart(sessions, docs, strict=strict, warn=warn, chart_cache=chart_cache)
    start = time.perf_counter()
    charts = BackgroundCharts(result.chart_jobs, docs, chart_cache, placeholders=True)
    result.chart_jobs = []
    # What the earlier stages left alive (caches, interned strings) would be rescanned by every
    # full garbage collection MkDocs triggers: collect once and freeze the survivors.
    gc.collect()
    gc.freeze()
    done = False
    try:
        mkdocs_warnings = run_mkdocs(config, docs, out)
        done = True
    finally:
        gc.unfreeze()
        result.charts_rendered = charts.finish(out if done else None)
    result.warnings += mkdocs_warnings
    if strict:
        from .strict import refuse

        refuse(mkdocs_warnings, "MkDocs warned")
    result.timings["mkdocs"] = time.perf_counter() - start
    result.out = out
    return result
