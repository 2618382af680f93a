"""Vega-Lite specs as plain dicts, the ones Altair 5's ``to_dict(validate=False)`` gives for the
site's few chart kinds, without Altair's object model.

Contract: :func:`chart` and :func:`layer` return the dict Altair would (same keys, same named
datasets: ``data-`` and the first 32 hex digits of the SHA-256 of the rows' JSON), but for
``$schema``. So a chart's file name (a hash of its spec) is the one an Altair-made spec had
(``tests/test_build_charts.py`` holds each kind against Altair), at well under a millisecond a spec
where Altair took 20-50 ms and its import a second. Data are rows (dicts, each with the columns in
one order), NaN and infinities written ``null`` as Altair writes a DataFrame's.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

__all__ = ["chart", "field", "layer", "records"]

Rows = list[dict[str, Any]]

_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}


def _config() -> dict[str, Any]:
    return {"view": {"continuousWidth": 300, "continuousHeight": 300}}  # Altair's default top-level config


def records(rows: Rows) -> Rows:
    """``rows`` as Altair's ``to_values`` gives a DataFrame's rows: NaN and infinities ``null``."""
    return [{k: None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v for k, v in row.items()}
            for row in rows]


def field(shorthand: str, **props: Any) -> dict[str, Any]:
    """An encoding channel, ``"name:Q"`` and its properties, keys in Altair's (sorted) order."""
    name, _, kind = shorthand.partition(":")
    return dict(sorted({"field": name, **props, "type": _TYPES[kind]}.items()))


def _data(df: Rows, datasets: dict[str, Rows]) -> dict[str, str]:
    rows = records(df)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:32]
    name = "empty" if rows == [{}] else f"data-{digest}"
    datasets[name] = rows
    return {"name": name}


def chart(df: Rows, mark: dict[str, Any], encoding: dict[str, Any], **props: Any) -> dict[str, Any]:
    """One chart of the rows ``df`` (Altair's ``Chart(df, **props).mark_*(...).encode(...)``)."""
    datasets: dict[str, Rows] = {}
    spec: dict[str, Any] = {"config": _config(), "data": _data(df, datasets), "mark": mark,
                            "encoding": dict(sorted(encoding.items()))}
    spec.update(sorted(props.items()))
    spec["datasets"] = datasets
    return spec


def layer(layers: list[tuple[Rows | None, dict[str, Any], dict[str, Any], dict[str, Any]]],
          data: Rows | None = None, **props: Any) -> dict[str, Any]:
    """Altair's ``alt.layer``: each ``(data or None for the shared ``data``, mark, encoding, properties)``."""
    datasets: dict[str, Rows] = {}
    shared = _data(data, datasets) if data is not None else None
    parts = []
    for df, mark, encoding, own in layers:
        part: dict[str, Any] = {"data": _data(df, datasets)} if df is not None else {}
        part.update({"mark": mark, "encoding": dict(sorted(encoding.items()))})
        part.update(sorted(own.items()))
        parts.append(part)
    spec: dict[str, Any] = {"config": _config(), "layer": parts}
    if shared is not None:
        spec["data"] = shared
    spec.update(sorted(props.items()))
    spec["datasets"] = datasets
    return spec
