"""Vega-Lite specs as plain dicts, the ones Altair 5's ``to_dict(validate=False)`` gives for the
site's few chart kinds, without Altair's object model.

Contract: :func:`chart` and :func:`layer` return the dict Altair would (same keys, same named
datasets: ``data-`` and the first 32 hex digits of the SHA-256 of the rows' JSON, as
``altair.vegalite.v5.api._dataset_name`` names them), but for ``$schema``, which the builder drops.
So a chart's file name (a hash of its spec) is the one an Altair-made spec had: an unchanged chart
keeps its SVG file and the chart cache's entry. ``tests/test_build_charts.py`` holds each kind against
Altair. Building a spec this way costs well under a millisecond; through Altair it cost 20-50 ms
a chart (its schema objects, a copy and a sanitising pass over each DataFrame), and importing Altair
another second and ~23 MB a build.

Data are rows (dicts, each with the columns in one order), as Altair writes a DataFrame's: NaN
and infinities become ``null``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

__all__ = ["VIEW", "chart", "field", "layer", "records"]

#: Altair's default top-level config
VIEW = {"view": {"continuousWidth": 300, "continuousHeight": 300}}

_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}


def _view() -> dict[str, Any]:
    return {"view": dict(VIEW["view"])}


def records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` as Altair's ``to_values`` gives a DataFrame's rows: NaN and infinities ``null``."""
    return [{k: None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v for k, v in row.items()}
            for row in rows]


def _name(rows: list[dict[str, Any]]) -> str:
    if rows == [{}]:
        return "empty"
    return "data-" + hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:32]


def field(shorthand: str, **props: Any) -> dict[str, Any]:
    """An encoding channel, ``"name:Q"`` and its properties, keys in Altair's (sorted) order."""
    name, _, kind = shorthand.partition(":")
    channel = {"field": name, **props, "type": _TYPES[kind]}
    return dict(sorted(channel.items()))


def _encoding(channels: dict[str, dict[str, Any] | list[dict[str, Any]]]) -> dict[str, Any]:
    return dict(sorted(channels.items()))


def _data(df: list[dict[str, Any]], datasets: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    rows = records(df)
    name = _name(rows)
    datasets[name] = rows
    return {"name": name}


def chart(df: list[dict[str, Any]], mark: dict[str, Any], encoding: dict[str, Any], **props: Any) -> dict[str, Any]:
    """One chart of the rows ``df`` (Altair's ``Chart(df, **props).mark_*(...).encode(...)``)."""
    datasets: dict[str, list[dict[str, Any]]] = {}
    spec: dict[str, Any] = {"config": _view(), "data": _data(df, datasets), "mark": mark, "encoding": _encoding(encoding)}
    spec.update(sorted(props.items()))
    spec["datasets"] = datasets
    return spec


def layer(layers: list[tuple[list[dict[str, Any]] | None, dict[str, Any], dict[str, Any], dict[str, Any]]],
          data: list[dict[str, Any]] | None = None, **props: Any) -> dict[str, Any]:
    """Layered charts: each ``(its data or None, mark, encoding, its properties)``; ``data`` shared
    by the layers that have none (Altair's ``alt.layer(...)`` of charts, ``props`` its ``properties``)."""
    datasets: dict[str, list[dict[str, Any]]] = {}
    shared = _data(data, datasets) if data is not None else None
    parts = []
    for df, mark, encoding, own in layers:
        part: dict[str, Any] = {"data": _data(df, datasets)} if df is not None else {}
        part.update({"mark": mark, "encoding": _encoding(encoding)})
        part.update(sorted(own.items()))
        parts.append(part)
    spec: dict[str, Any] = {"config": _view(), "layer": parts}
    if shared is not None:
        spec["data"] = shared
    spec.update(sorted(props.items()))
    spec["datasets"] = datasets
    return spec
