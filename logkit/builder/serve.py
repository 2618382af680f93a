"""``logkit serve``: mkdocs live reload over the generated docs, regenerated when sessions change.

Contract: the Markdown is generated once, then ``mkdocs serve`` runs over a small configuration
(written next to the docs) that INHERITs the real one, watches the sessions directory and adds
:mod:`logkit.builder.serve_hook`, whose ``on_pre_build`` regenerates the Markdown before each
rebuild. Unchanged pages are not rewritten, so a rebuild does not trigger another.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import generate
from .site import default_config

__all__ = ["serve"]


def serve(sessions: Path, docs: Path, config: Path | None, addr: str) -> None:
    """Serve the knowledge base with live reload until interrupted."""
    from mkdocs.commands.serve import serve as mk_serve

    generate(sessions, docs)
    base = (config or default_config()).resolve()
    hook = Path(__file__).with_name("serve_hook.py").resolve()
    conf = docs.resolve().parent / ".logkit-serve.yml"
    conf.write_text(
        f"INHERIT: {json.dumps(str(base))}\n"
        f"docs_dir: {json.dumps(str(docs.resolve()))}\n"
        f"hooks:\n  - {json.dumps(str(hook))}\n  - {json.dumps(str(hook.with_name('offline_hook.py')))}\n"
        f"watch:\n  - {json.dumps(str(Path(sessions).resolve()))}\n",
        encoding="utf-8",
    )
    os.environ["LOGKIT_SERVE_SESSIONS"] = str(Path(sessions).resolve())
    os.environ["LOGKIT_SERVE_DOCS"] = str(docs.resolve())
    print(f"logkit: serving {sessions} at http://{addr}/ (live reload; Ctrl-C stops)", flush=True)
    mk_serve(config_file=str(conf), livereload=True, dev_addr=addr)
