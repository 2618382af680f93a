"""The knowledge-base builder: sessions -> frames -> charts -> page contexts -> Markdown -> mkdocs.

Contract: :func:`build` is one linear pipeline of named stages; every stage but the last two is a
pure function of the previous one's output:

1. ``load``     validate every session (:mod:`.load`); bad lines warned about and skipped
2. ``frames``   pandas DataFrames of attempts, outcomes, metrics (:mod:`.frames`)
3. ``charts``   Altair specs per model x GPU (:mod:`.charts`)
4. ``contexts`` one typed dataclass per page (:mod:`.pages_kb`, :mod:`.pages_configs`)
5. ``render``   Jinja2 templates to Markdown in ``docs``, charts to SVG (:mod:`.render`)
6. ``mkdocs``   ``mkdocs build`` with Material into ``out`` (:mod:`.site`)

:func:`generate` runs stages 1-5 only (``logkit serve`` and the bench use it). :func:`build` runs
them in a forked child process and MkDocs in this one, so the two heaps never add up.
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


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def generate(sessions: Path, docs: Path, *, strict: bool = False, warn: Callable[[str], None] = _stderr,
             templates: Path | None = None, chart_cache: Path | None = None,
             background: bool = True) -> BuildResult:
    """Stages 1-5: write the Markdown knowledge base of ``sessions`` into ``docs``.

    With ``background`` (the default) the charts render in a second process while the pages are
    made; either way they are all written when this returns.
    """
    from .frames import make_frames
    from .incremental import content_digests
    from .load import gc_paused, load

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
    with gc_paused():
        loaded = load(sessions, strict=strict, warn=warned)
        lap("load")
        frames = make_frames(loaded)
        lap("frames")
    # The events and frames live until the end: out of the collector's sight, every collection the
    # later stages trigger (Altair, templates) would rescan them (at 500 sessions, 2 s of render).
    gc.freeze()
    try:
        return _pages(result, sessions, docs, loaded, frames, digests, strict=strict, warned=warned,
                      templates=templates, chart_cache=chart_cache, background=background, lap=lap)
    finally:
        gc.unfreeze()


def _pages(result: BuildResult, sessions: Path, docs: Path, loaded: Any, frames: Any, digests: dict[str, str], *,
           strict: bool, warned: Callable[[str], None], templates: Path | None, chart_cache: Path | None,
           background: bool, lap: Callable[[str], None]) -> BuildResult:
    """Stages 3-5 of :func:`generate` over the loaded store and its frames."""
    from .charts import BackgroundCharts, SpecCache, metrics_pages, render_svgs
    from .contexts import Page
    from .incremental import Manifest, build_key
    from .index import KBIndex
    from .load import gc_paused
    from .pages_configs import config_pages, configs_index, matrix_page, signature_pages, signatures_index
    from .pages_sweeps import sweep_pages
    from .pages_kb import decision_pages, decisions_index, home_page, session_pages, sessions_index
    from .render import Renderer
    from .site import copy_assets

    key = build_key(templates)
    specs = SpecCache(docs, key)
    metric_pages, metric_index, jobs = metrics_pages(frames, specs)
    sweeps_index, sweep_pages_, sweep_jobs = sweep_pages(loaded)
    jobs = [*jobs, *sweep_jobs]
    docs.mkdir(parents=True, exist_ok=True)
    specs.save()
    # the SVGs render on the second core while this one makes and renders the pages
    charts = BackgroundCharts(jobs, docs, chart_cache) if background else None
    lap("charts")
    with gc_paused():
        index = KBIndex(loaded, frames)
        cfg_pages = config_pages(index)
        matrix, negatives = matrix_page(index)
        sig_pages = signature_pages(index)
        home = home_page(index)
        pages: list[tuple[Any, Any]] = [(home.page, home)]
        manifest = Manifest(docs, key, digests)
        table = index.decisions_digest()
        # --strict checks every record page's references: it keeps none
        made_decisions, kept_decisions = decision_pages(
            index, keep=lambda path: not strict and manifest.decision_unchanged(path, table))
        for ctx in [
            decisions_index(index), *(ctx for ctx, _deps in made_decisions),
            configs_index(index, cfg_pages), *cfg_pages,
            matrix, *negatives,
            signatures_index(sig_pages, index), *sig_pages,
            metric_index, *metric_pages,
            sessions_index(index),
            sweeps_index, *sweep_pages_,
        ]:
            pages.append((ctx.page, ctx))
    lap("contexts")
    if strict:
        from .strict import knowledge_problems, refuse

        refuse(knowledge_problems(sessions, pages), "the knowledge base has duplicate or dangling ids or stale schemas")
    renderer = Renderer(docs, templates)
    pages.append((Page("tags.md", "Tags", "tags.md.j2"), None))
    texts: dict[str, str] = {}
    renderer.write(pages, texts)
    for path in kept_decisions:
        renderer.keep(path)
    for ctx, deps in made_decisions:
        if deps is not None:
            manifest.record_decision(ctx.page.path, deps, table, texts[ctx.page.path])
    written = len(pages)
    del pages, texts, made_decisions, cfg_pages, sig_pages, negatives, metric_pages, sweep_pages_
    loaded.resident.release_all()
    lap("render")
    # Session pages last, one session at a time: its many events are read, its pages made, written
    # and recorded, and the events let go (at most a few sessions' at once, whatever the store's size).
    kept = [path for sid in loaded.sessions if manifest.unchanged(sid) for path in manifest.paths(sid)]
    for path in kept:
        renderer.keep(path)
    for fresh in session_pages(index, keep=lambda sid: sid in manifest.pages):
        texts = {}
        renderer.write([(ctx.page, ctx) for ctx, _deps in fresh], texts)
        for ctx, deps in fresh:
            manifest.record(ctx.id, ctx.page.path, deps, texts[ctx.page.path])
        written += len(fresh)
    loaded.resident.release_all()
    manifest.save()
    result.pages_kept = len(kept)
    result.decisions_kept = len(kept_decisions)
    renderer.prune()
    copy_assets(docs)
    lap("sessions")
    if charts is not None:
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
        return generate(sessions, docs, strict=strict, warn=warn, chart_cache=chart_cache)
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
        result = generate(sessions, docs, strict=strict, warn=messages.append, chart_cache=chart_cache)
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
    """The whole pipeline: the static site of ``sessions`` in ``out`` (Markdown kept in ``docs``)."""
    from .site import check_dirs, run_mkdocs

    check_dirs(docs, out)
    result = _generate_apart(sessions, docs, strict=strict, warn=warn, chart_cache=chart_cache)
    start = time.perf_counter()
    # What the earlier stages left alive (caches, interned strings) would be rescanned by every
    # full garbage collection MkDocs triggers: collect once and freeze the survivors.
    gc.collect()
    gc.freeze()
    try:
        mkdocs_warnings = run_mkdocs(config, docs, out)
    finally:
        gc.unfreeze()
    result.warnings += mkdocs_warnings
    if strict:
        from .strict import refuse

        refuse(mkdocs_warnings, "MkDocs warned")
    result.timings["mkdocs"] = time.perf_counter() - start
    result.out = out
    return result
