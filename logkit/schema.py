"""JSON Schema of every event kind, generated from :mod:`logkit.events`.

``schemas/<kind>.schema.json`` in the repository are these files; ``logkit schema --write``
regenerates them and a test fails when they are stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import BadInput
from .events import EVENT_TYPES, SCHEMA_VERSION, event_adapter

__all__ = ["json_schemas", "render", "stale", "write"]


def json_schemas() -> dict[str, dict[str, Any]]:
    """``{file name: schema}`` for each kind plus ``event.schema.json`` (the union)."""
    out: dict[str, dict[str, Any]] = {}
    for kind, cls in sorted(EVENT_TYPES.items()):
        schema = cls.model_json_schema()
        schema["$id"] = f"https://logkit.invalid/schemas/v{SCHEMA_VERSION}/{kind}.schema.json"
        out[f"{kind}.schema.json"] = schema
    union = event_adapter().json_schema()
    union["title"] = "logkit event"
    union["$id"] = f"https://logkit.invalid/schemas/v{SCHEMA_VERSION}/event.schema.json"
    out["event.schema.json"] = union
    return out


def render(schema: dict[str, Any]) -> str:
    """The stable text form of a schema as stored on disk."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write(directory: Path) -> list[Path]:
    """Write every schema file into ``directory``; remove files of kinds that no longer exist."""
    wanted = json_schemas()
    written = []
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, schema in wanted.items():
            path = directory / name
            path.write_text(render(schema))
            written.append(path)
        for old in directory.glob("*.schema.json"):
            if old.name not in wanted:
                old.unlink()
    except OSError as exc:
        raise BadInput(f"cannot write the schemas into {directory}: {exc.strerror or exc}",
                       fix="give a directory that can be created and written (logkit schema --write schemas)") from None
    return written


def stale(directory: Path) -> list[str]:
    """Names of schema files in ``directory`` that are missing, outdated or extra."""
    wanted = json_schemas()
    problems = []
    for name, schema in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text() != render(schema):
            problems.append(name)
    for old in directory.glob("*.schema.json"):
        if old.name not in wanted:
            problems.append(old.name)
    return sorted(problems)
