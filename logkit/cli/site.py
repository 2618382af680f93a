"""``logkit build``, ``logkit serve`` and ``logkit cite``: the knowledge-base site."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import command, store

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the site commands."""
    p = command(sub, "build", cmd_build, help="build the knowledge-base site from the sessions",
                description="Render every session into Markdown (site/docs/) and run mkdocs build (site/out/). "
                            "The site opens offline: site/out/index.html.")
    p.add_argument("--out", metavar="DIR", default="site/out", help="HTML output directory (default site/out)")
    p.add_argument("--docs", metavar="DIR", default="site/docs",
                   help="generated Markdown directory (default site/docs; must not be inside --out)")
    p.add_argument("--config", metavar="FILE", help="mkdocs.yml to use (default ./mkdocs.yml, else logkit's own)")
    p.add_argument("--strict", action="store_true",
                   help="publish nothing unless everything is right: fail on a session line that does not validate, "
                        "a decision id used twice, an id cited that names nothing, stale schemas, or a MkDocs warning")

    p = command(sub, "serve", cmd_serve, help="preview the site with live reload",
                description="Build the Markdown, then serve it with mkdocs live reload; edits to the "
                            "sessions rebuild the pages.")
    p.add_argument("--docs", metavar="DIR", default="site/docs", help="generated Markdown directory")
    p.add_argument("--config", metavar="FILE", help="mkdocs.yml to use")
    p.add_argument("--addr", default="127.0.0.1:8000", help="address to serve on (default 127.0.0.1:8000)")

    p = command(sub, "cite", cmd_cite, help="print a Markdown link to a decision record",
                description="Print a Markdown link to a decision, built from the site's address: $LOGKIT_SITE_URL, "
                            "else site_url in mkdocs.yml, else a relative link.")
    p.add_argument("decision_id", help="e.g. DR-7K3FQ (any id ever printed, older DR-0003 ones too)")
    p.add_argument("--config", metavar="FILE", help="mkdocs.yml to read site_url from")
    p.add_argument("--site-url", help="use this base URL instead of site_url")


def _existing(args: argparse.Namespace) -> Any:
    """The store, which must exist: an empty site from a mistyped path would look like a real one."""
    from ..errors import NotFound

    st = store(args)
    if not st.root.is_dir():
        raise NotFound(f"no sessions directory {st.root}",
                       fix="pass --sessions DIR (or set LOGKIT_SESSIONS), or record one: logkit session start TITLE")
    return st


def cmd_build(args: argparse.Namespace) -> int:
    import contextlib

    from ..builder import build
    from ..builder.progress import make

    st = _existing(args)
    progress = make()  # live stages on a terminal; quiet without one
    with progress if progress is not None else contextlib.nullcontext():
        result = build(st.root, Path(args.docs), Path(args.out), strict=args.strict,
                       config=Path(args.config) if args.config else None, chart_cache=Path(".cache/logkit-charts"),
                       progress=progress)
    took = sum(result.timings.values())
    skipped = f", {len(result.warnings)} warning(s)" if result.warnings else ""
    print(f"built {result.pages} pages from {st.root} in {took:.1f}s{skipped}: {Path(args.out) / 'index.html'}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from ..builder.serve import serve

    serve(_existing(args).root, Path(args.docs), Path(args.config) if args.config else None, args.addr)
    return 0


def cmd_cite(args: argparse.Namespace) -> int:
    from ..builder.cite import cite

    print(cite(store(args).root, args.decision_id, Path(args.config) if args.config else None, args.site_url,
               warn=lambda m: print(m, file=sys.stderr)))
    return 0
