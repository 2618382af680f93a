"""Stage 6, mkdocs: run ``mkdocs build`` (Material) over the generated docs, in this process.

Contract: the configuration is ``mkdocs.yml`` from the working directory when there is one (it
INHERITs ``logkit/data/mkdocs-base.yml``), else that base file. ``docs_dir`` and ``site_dir`` are
overridden by the caller's paths, which must not contain each other (MkDocs refuses that, and so do
we, with a clearer message). Static files logkit ships (the offline search polyfill) are copied
into the docs first. MkDocs' own errors become :class:`~logkit.errors.BadInput`.

The site's address (``site_url``: canonical links, sitemap, ``logkit cite``) is unset unless the
team sets it: ``$LOGKIT_SITE_URL`` (for CI) wins over ``site_url`` in mkdocs.yml. Without one the
site uses relative links only and has no canonical link.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import BadInput

__all__ = ["ENV_SITE_URL", "copy_assets", "default_config", "load_site_config", "run_mkdocs", "site_url", "swap_in"]

#: The environment variable that sets the site's address (CI), over mkdocs.yml's ``site_url``.
ENV_SITE_URL = "LOGKIT_SITE_URL"


def default_config() -> Path:
    """The configuration file to use: ``./mkdocs.yml`` if present, else the shipped base."""
    local = Path("mkdocs.yml")
    if local.is_file():
        return local.resolve()
    return Path(str(resources.files("logkit").joinpath("data/mkdocs-base.yml")))


def check_dirs(docs: Path, out: Path) -> None:
    """Refuse docs and output directories that are files or nested in each other."""
    for flag, path in (("--docs", docs), ("--out", out)):
        if path.exists() and not path.is_dir():
            raise BadInput(f"{flag} {path} is a file, not a directory",
                           fix=f"give {flag} a directory (it is created when missing)")
    d, o = docs.resolve(), out.resolve()
    if d == o or d in o.parents or o in d.parents:
        raise BadInput(
            f"the Markdown directory {docs} and the HTML directory {out} are nested in each other",
            fix="use siblings, e.g. site/docs and site/out (the defaults)",
        )


def copy_assets(docs: Path) -> None:
    """Copy the static files logkit ships (``logkit/assets``) into the docs directory."""
    root = resources.files("logkit").joinpath("assets")
    for sub in ("javascripts", "stylesheets"):
        folder = root.joinpath(sub)
        target = docs / "assets" / sub
        target.mkdir(parents=True, exist_ok=True)
        for item in folder.iterdir():
            dest = target / item.name
            data = item.read_bytes()
            if not dest.exists() or dest.read_bytes() != data:
                dest.write_bytes(data)


#: ``<docs>/`` file naming the secret patterns the published log copies were redacted with
LOGS_STAMP = ".logkit-logs-redacted"


def _patterns_stamp() -> str:
    import hashlib

    from ..capture.redact import _DATA

    return hashlib.sha256((_DATA / "secrets.toml").read_bytes()).hexdigest()[:16]


def _copy_redacted(src: Any, out: Any) -> None:
    """Copy a log's text, redacted again by today's patterns (:func:`.escape.redacted`)."""
    from ..capture.redact import Redactor

    redactor = Redactor()
    rest = b""
    while True:
        block = src.read(1 << 20)
        if not block:
            break
        data = rest + block
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < (8 << 20):
            rest = data  # a very long line: wait for its end (up to 8 MiB)
            continue
        cut = cut or len(data)
        out.write(redactor.stream(data[:cut]))
        rest = data[cut:]
    if rest:
        out.write(redactor.stream(rest))


def publish_logs(sessions: Path, docs: Path, session_ids: list[str]) -> None:
    """Copy each session's raw logs, redacted again, where pages link them (:func:`.paths.log_href`)."""
    # a compressed log is published as its text under the name the events give it, so a link holds
    # whenever it was compressed. A copy as new as its source is left (unless secrets.toml changed:
    # :data:`LOGS_STAMP`), one no session has any more removed.
    from ..abandon import confined_log
    from ..store.files import LOGS_DIR
    from ..logfiles import SUFFIX, open_log

    target_root = docs / LOGS_DIR
    wanted: set[Path] = set()
    # a copy made under other secret patterns is made again (the copies are redacted by today's)
    stamp_file = docs / LOGS_STAMP
    stamp = _patterns_stamp()
    try:
        same_patterns = stamp_file.read_text(encoding="utf-8") == stamp
    except OSError:
        same_patterns = False
    for sid in session_ids:
        folder = sessions / sid / LOGS_DIR
        if not folder.is_dir():
            continue
        for src in folder.iterdir():
            if src.name.startswith(".") or src.is_symlink() or not src.is_file():
                continue  # a reservation or a compression in progress; a link may lead out of the session
            if confined_log(sessions / sid, f"{LOGS_DIR}/{src.name}") is None:
                continue  # never publish a file from outside the session (events and links arrive through git)
            dest = target_root / sid / LOGS_DIR / src.name.removesuffix(SUFFIX)
            wanted.add(dest)
            st = src.stat()
            try:
                if same_patterns and int(dest.stat().st_mtime) == int(st.st_mtime):
                    continue
            except OSError:
                pass
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(f".{dest.name}.tmp")
            with open_log(src) as fh, open(tmp, "wb") as out:
                _copy_redacted(fh, out)
            os.utime(tmp, (st.st_atime, st.st_mtime))
            os.replace(tmp, dest)
    if target_root.is_dir():
        for old in target_root.rglob("*"):
            if old.is_file() and old not in wanted:
                old.unlink()
    if not same_patterns:
        docs.mkdir(parents=True, exist_ok=True)
        stamp_file.write_text(stamp, encoding="utf-8")


def load_site_config(config: Path | None, docs: Path, out: Path, **extra: Any) -> Any:
    """The MkDocs configuration object with our directories."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import ConfigurationError

    path = config or default_config()
    env_url = os.environ.get(ENV_SITE_URL, "").strip()
    if env_url:
        extra.setdefault("site_url", env_url)
    extra.setdefault("hooks", [str(Path(__file__).with_name("offline_hook.py").resolve())])
    try:
        return load_config(config_file=str(path), docs_dir=str(docs.resolve()), site_dir=str(out.resolve()), **extra)
    except ConfigurationError as exc:
        raise BadInput(f"{path}: {exc}", fix="fix the MkDocs configuration named above") from exc


def site_url(config: Path | None = None) -> str | None:
    """``$LOGKIT_SITE_URL``, else ``site_url`` of the configuration, read without building."""
    import yaml

    env_url = os.environ.get(ENV_SITE_URL, "").strip()
    if env_url:
        return env_url
    path = config or default_config()
    seen = 0
    while path is not None and seen < 5:
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise BadInput(f"cannot read {path}: {exc}", fix="fix or remove that mkdocs.yml") from exc
        if data.get("site_url"):
            return str(data["site_url"])
        parent = data.get("INHERIT")
        path = (path.parent / parent) if parent else None
        seen += 1
    return None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"mkdocs: {record.levelname.lower()}: {record.getMessage()}")


def _exchange(new: Path, out: Path) -> None:
    """Put ``new`` where ``out`` is in one step where the kernel can (``renameat2(RENAME_EXCHANGE)``), else two."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        at_fdcwd, rename_exchange = -100, 2
        if libc.renameat2(at_fdcwd, os.fsencode(new), at_fdcwd, os.fsencode(out), rename_exchange) == 0:
            return
    except (AttributeError, OSError):
        pass
    aside = out.with_name(f".{out.name}.{os.getpid()}.old")
    os.rename(out, aside)
    os.rename(new, out)
    os.rename(aside, new)


def swap_in(new: Path, out: Path) -> None:
    """Replace the site ``out`` by the finished site ``new`` (its sibling), then remove the old one."""
    if out.exists():
        _exchange(new, out)
        shutil.rmtree(new, ignore_errors=True)  # now the old site
    else:
        os.rename(new, out)


def run_mkdocs(config: Path | None, docs: Path, out: Path, *, quiet: bool = True) -> list[str]:
    """``mkdocs build --clean`` of ``docs`` into ``out``, as configured; returns MkDocs' warnings."""
    # built beside ``out`` and swapped in when whole: a killed or failed build leaves the old site
    from ..procs import alive

    check_dirs(docs, out)
    new = out.with_name(f".{out.name}.{os.getpid()}.new")
    fix = f"check that {out.parent} is writable and has free space (or give --out another directory)"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for stale in out.parent.glob(f".{out.name}.*.new"):  # left by a killed build
            with contextlib.suppress(ValueError):
                if not alive(int(stale.name.rsplit(".", 2)[-2])):
                    shutil.rmtree(stale, ignore_errors=True)
        messages = _mkdocs(config, docs, new, quiet=quiet)
        swap_in(new, out)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        raise BadInput(f"cannot write the site into {out}: {exc.strerror or exc}"
                       + (f" ({exc.filename})" if exc.filename else ""), fix=fix) from None
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    return messages


def _mkdocs(config: Path | None, docs: Path, out: Path, *, quiet: bool) -> list[str]:
    """``mkdocs build --clean`` of ``docs`` into ``out`` itself."""
    from mkdocs.commands.build import build
    from mkdocs.exceptions import MkDocsException

    cfg = load_site_config(config, docs, out)
    log = logging.getLogger("mkdocs")
    level = log.level
    collect = _Collect()
    log.addHandler(collect)
    if quiet:
        log.setLevel(logging.WARNING)
    try:
        cfg.plugins.on_startup(command="build", dirty=False)
        try:
            build(cfg)
        finally:
            cfg.plugins.on_shutdown()
    except MkDocsException as exc:
        raise BadInput(f"mkdocs build failed: {exc}", fix="see the MkDocs messages above") from exc
    finally:
        log.setLevel(level)
        log.removeHandler(collect)
    if not (out / "index.html").exists():
        raise BadInput(f"mkdocs build wrote no {out / 'index.html'}", fix="see the MkDocs messages above")
    return collect.messages
