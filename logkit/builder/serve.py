"""``logkit serve``: mkdocs live reload over the generated docs, regenerated when sessions change.

Contract: the Markdown is generated once, then ``mkdocs serve`` runs over a small configuration
(written next to the docs) that INHERITs the real one, watches the sessions directory and adds
:mod:`logkit.builder.serve_hook`, whose ``on_pre_build`` regenerates the Markdown before each
rebuild. Unchanged pages are not rewritten, so a rebuild does not trigger another.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from ..errors import BadInput

from . import generate
from .site import default_config

__all__ = ["serve"]


def check_addr(addr: str) -> None:
    """:class:`BadInput` unless ``addr`` is a ``HOST:PORT`` that can be bound now (before the slow generation)."""
    host, sep, port = addr.rpartition(":")
    fix = "--addr 127.0.0.1:8000 (a port from 1 to 65535 that nothing else listens on)"
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise BadInput(f"--addr {addr!r} is not HOST:PORT with a port from 1 to 65535", fix=fix)
    try:
        with socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host.strip("[]"), int(port)))
    except OSError as exc:
        raise BadInput(f"cannot serve on {addr}: {exc.strerror or exc}", fix=fix) from None


def serve(sessions: Path, docs: Path, config: Path | None, addr: str) -> None:
    """Serve the knowledge base with live reload until interrupted."""
    from mkdocs.commands.serve import serve as mk_serve

    check_addr(addr)
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
