"""What a rebuild may keep: session and decision pages whose inputs have not changed since the last build.

Contract: a session page is a function of its session and of the sessions its references name (a
name that did not resolve counts too, so the page is redone once it does); a decision page also of
what it shows of other decisions (:meth:`~logkit.builder.index.KBIndex.decisions_digest`).
:class:`Manifest` (``<docs>/.logkit-pages.json``) records per page what the index knows of each of
those ``events.jsonl`` files (:attr:`logkit.builder.load.Loaded.digests`: nothing is read to know
it) and the sha256 of the Markdown written. A page is kept when the build key (logkit's version,
the builder's code, its templates and a user's overrides, the knowledge tables) is the same, every
dependency has the same content and the file on disk is the one written; an unreadable or foreign
manifest keeps nothing. Aggregate and alias pages are always rendered; MkDocs always runs in full.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["MANIFEST", "Manifest", "build_key", "read_state", "write_state"]

MANIFEST = ".logkit-pages.json"
_FORMAT = 3


def read_state(path: Path, fmt: int, key: str) -> dict[str, Any] | None:
    """A build's state file of format ``fmt`` made under build key ``key``; None for any other."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("format") == fmt and data.get("key") == key else None


def write_state(path: Path, data: dict[str, Any]) -> None:
    """Write a state file atomically, best effort (without it the next build does the work again)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, separators=(",", ":"), default=str), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def build_key(templates: Path | None) -> str:
    """A digest of everything besides the sessions that shapes a page."""
    from .. import __version__

    h = hashlib.sha256(__version__.encode())
    package = resources.files("logkit")
    folders = [Path(str(package.joinpath("builder"))), Path(str(package.joinpath("templates"))),
               Path(str(package.joinpath("data")))]
    if templates is not None:
        folders.append(templates)
    for folder in folders:
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and path.suffix in (".py", ".j2", ".toml", ".yml"):
                h.update(str(path.relative_to(folder)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()


class Manifest:
    """The session pages of the last build and what each was made from."""

    def __init__(self, docs: Path, key: str, digests: dict[str, str]) -> None:
        self.path = docs / MANIFEST
        self.docs = docs
        self.key = key
        self.digests = digests
        self.pages: dict[str, dict[str, Any]] = {}
        self._old: dict[str, dict[str, Any]] = {}
        #: decision page path -> {"deps": {session: sha256}, "table": decisions digest, "sha256": of the Markdown}
        self.decisions: dict[str, dict[str, Any]] = {}
        self._old_decisions: dict[str, dict[str, Any]] = {}
        self._recorded: set[str] = set()  # sessions recorded in this build (their later parts join them)
        data = read_state(self.path, _FORMAT, key)
        if data is not None and isinstance(data.get("pages"), dict):
            self._old = {k: v for k, v in data["pages"].items() if _well_formed(v)}
            old = data.get("decisions")
            if isinstance(old, dict):
                self._old_decisions = {k: v for k, v in old.items() if _safe(k) and _well_formed_decision(v)}

    def unchanged(self, session_id: str) -> str | None:
        """The page path of ``session_id`` if it can be kept as it is, else None."""
        old = self._old.get(session_id)
        if old is None or session_id not in self.digests or not self._same_deps(old["deps"]):
            return None
        # the session page, then the other pages of a split session
        if not all(self._same_file(path, digest) for path, digest in [(old["path"], old["sha256"]),
                                                                      *old.get("parts", {}).items()]):
            return None
        self.pages[session_id] = old
        return str(old["path"])

    def paths(self, session_id: str) -> list[str]:
        """Every page of ``session_id`` recorded (its session page first, then its other parts)."""
        entry = self.pages.get(session_id) or {}
        return [entry["path"], *entry.get("parts", {})] if entry else []

    def record(self, session_id: str, path: str, deps: set[str], text: str) -> None:
        """Note a page just rendered for ``session_id`` (its session page first, then its other parts) and its deps."""
        deps = deps | {session_id}
        entry = self.pages.get(session_id)
        if entry is not None and session_id in self._recorded and entry["path"] != path:
            entry.setdefault("parts", {})[path] = hashlib.sha256(text.encode("utf-8")).hexdigest()
            return
        self._recorded.add(session_id)
        self.pages[session_id] = {
            "path": path,
            "deps": {d: self.digests.get(d) for d in sorted(deps)},
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        }

    def decision_unchanged(self, path: str, table: str) -> bool:
        """Whether the decision page at ``path`` can be kept (see the module contract)."""
        old = self._old_decisions.get(path)
        if old is None or old["table"] != table or not self._same_deps(old["deps"]) \
                or not self._same_file(path, old["sha256"]):
            return False
        self.decisions[path] = old
        return True

    def _same_deps(self, deps: dict[str, Any]) -> bool:
        """Every session a page read still has the content it had then."""
        return all(self.digests.get(dep) == digest for dep, digest in deps.items())

    def _same_file(self, path: str, digest: str) -> bool:
        """The Markdown at ``path`` is still the one written (not edited by hand, not gone)."""
        try:
            return hashlib.sha256((self.docs / path).read_bytes()).hexdigest() == digest
        except OSError:
            return False

    def record_decision(self, path: str, deps: set[str], table: str, text: str) -> None:
        """Note a decision page just rendered, the sessions it read and the decision table it showed."""
        self.decisions[path] = {"deps": {d: self.digests.get(d) for d in sorted(deps)}, "table": table,
                                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}

    def save(self) -> None:
        """Write the manifest."""
        write_state(self.path, {"format": _FORMAT, "key": self.key, "pages": self.pages, "decisions": self.decisions})


def _well_formed(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    parts = entry.get("parts", {})
    return (isinstance(entry.get("path"), str) and isinstance(entry.get("sha256"), str)
            and isinstance(entry.get("deps"), dict) and _safe(entry["path"]) and isinstance(parts, dict)
            and all(_safe(p) and isinstance(d, str) for p, d in parts.items()))


def _well_formed_decision(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and isinstance(entry.get("table"), str)
            and isinstance(entry.get("deps"), dict))


def _safe(path: str) -> bool:
    return isinstance(path, str) and not path.startswith(("/", "..")) and ".." not in path.split("/")
