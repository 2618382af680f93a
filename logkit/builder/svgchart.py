"""The common chart kind drawn as SVG in Python: the line chart of a figure against concurrency.

Contract: :func:`draw` takes a chart's Vega-Lite spec (:mod:`.vlspec`, as :mod:`.charts` makes
it) and returns its SVG, or None for any spec that is not the line-chart kind of
:func:`.charts._line` (those are drawn by vl-convert). The spec stays the chart's definition: its
hash names the SVG file and keys the spec cache, and what is drawn is read from it (data, axis
titles, the x ticks asked for, the chart title), never from elsewhere.

The drawing follows what Vega draws for that spec with its default theme (the same layout, scales,
ticks, number formats, colours and fonts), without running Vega: vl-convert spends 50-110 ms a
chart in its JavaScript runtime (~30 ms of it per call, whatever the chart) and holds the GIL
throughout, while this takes about a millisecond. Text is laid out by the reader's browser; only the
legend's width is estimated (the SVG's width, for long series names).

Scales, as Vega makes them: x is log2 with 24 px of padding, its domain widened by the padding and
then rounded out to powers of two; y is linear from zero, its domain made "nice" (d3's rule, 10
ticks), its ticks and labels those of d3 for ceil(height / 40) ticks.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["draw"]

#: Vega's default categorical scheme (tableau10)
PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac")
_FONT = 'font-family="sans-serif"'
_PAD = 5  # Vega's padding around the whole view


def escape(text: str) -> str:
    """``text`` for an SVG text node or attribute (``xml.sax.saxutils`` would import urllib and http)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _num(x: float) -> str:
    """A coordinate as Vega writes one: at most 3 decimals, no trailing zeros."""
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


#: Helvetica's advance widths (thousandths of the font size) of printable ASCII, from space on:
#: what Vega measures text with, here only to size the axis gutter and the legend
_WIDTHS = (278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, *(556,) * 10, 278, 278,
           584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667,
           778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556,
           278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500,
           334, 260, 334, 584)


def _text_width(text: str, size: float, bold: bool = False) -> float:
    """``text``'s width in pixels in Helvetica (bold: about 8 % wider); other characters as an ``m``."""
    units = sum(_WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else 833 for c in text)
    return units * size / 1000 * (1.08 if bold else 1.0)


def _increment(start: float, stop: float, count: int) -> float:
    """d3's ``tickIncrement``: the tick step for about ``count`` ticks (negative: 1/step)."""
    step = (stop - start) / max(0, count)
    power = math.floor(math.log10(step))
    error = step / 10 ** power
    factor = 10 if error >= math.sqrt(50) else 5 if error >= math.sqrt(10) else 2 if error >= math.sqrt(2) else 1
    return factor * 10 ** power if power >= 0 else -(10 ** -power) / factor


def _nice(start: float, stop: float, count: int = 10) -> tuple[float, float]:
    """d3's ``linear.nice(count)``."""
    previous = None
    for _ in range(10):
        step = _increment(start, stop, count)
        if step == previous or step == 0 or not math.isfinite(step):
            break
        if step > 0:
            start, stop = math.floor(start / step) * step, math.ceil(stop / step) * step
        else:
            start, stop = math.ceil(start * step) / step, math.floor(stop * step) / step
        previous = step
    return start, stop


def _ticks(start: float, stop: float, count: int) -> tuple[list[float], int]:
    """d3's ``ticks(start, stop, count)`` and the decimals its ``tickFormat`` gives them."""
    step = _increment(start, stop, count)
    if step > 0:
        values = [i * step for i in range(math.ceil(start / step), math.floor(stop / step) + 1)]
        return values, max(0, -math.floor(math.log10(step)))
    inverse = -step
    values = [i / inverse for i in range(math.ceil(start * inverse), math.floor(stop * inverse) + 1)]
    return values, max(0, math.ceil(math.log10(inverse)))


def _is_line(spec: dict[str, Any]) -> bool:
    layers = spec.get("layer")
    if not (isinstance(layers, list) and len(layers) == 2 and isinstance(spec.get("data"), dict)):
        return False
    line, point = layers
    if line.get("mark") != {"type": "line"} or point.get("mark", {}).get("type") != "point" or "data" in line or "data" in point:
        return False
    enc = line.get("encoding", {})
    x, y = enc.get("x", {}), enc.get("y", {})
    return (set(enc) == {"color", "detail", "x", "y"} and x.get("scale", {}).get("type") == "log"
            and x.get("scale", {}).get("base") == 2 and y.get("scale", {}).get("zero") is True
            and point.get("encoding", {}).get("x") == x and point.get("encoding", {}).get("y") == y)


def draw(spec: dict[str, Any]) -> str | None:
    """The SVG of ``spec`` when it is the line-chart kind, else None (vl-convert draws it)."""
    if not _is_line(spec):
        return None
    line, point = spec["layer"]
    enc = line["encoding"]
    xf, yf, cf, df = (enc[k]["field"] for k in ("x", "y", "color", "detail"))
    rows = [r for r in spec.get("datasets", {}).get(spec["data"]["name"], [])
            if isinstance(r.get(xf), (int, float)) and r[xf] > 0 and isinstance(r.get(yf), (int, float))
            and math.isfinite(r[yf])]
    if not rows:
        return None
    width, height = float(spec.get("width", 300)), float(spec.get("height", 300))
    title = line.get("title") or spec.get("title") or ""
    size = float(point["mark"].get("size", 30))

    # x: log2, widened by its padding in pixels, then rounded out to powers of two
    pad = float(enc["x"]["scale"].get("padding", 0))
    lo, hi = (math.log2(v) for v in (min(r[xf] for r in rows), max(r[xf] for r in rows)))
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    grow = (hi - lo) * (width / (width - 2 * pad) - 1) / 2 if width > 2 * pad else 0
    lo, hi = math.floor(lo - grow), math.ceil(hi + grow)

    def sx(v: float) -> float:
        return (math.log2(v) - lo) / (hi - lo) * width

    xticks = [float(v) for v in enc["x"].get("axis", {}).get("values") or [2.0 ** k for k in range(lo, hi + 1)]]
    xticks = [v for v in xticks if v > 0 and lo <= math.log2(v) <= hi]

    # y: linear from zero, nice
    top = max(max(r[yf] for r in rows), 0.0)
    bottom = min(min(r[yf] for r in rows), 0.0)
    if top == bottom:
        top = bottom + 1
    y0, y1 = _nice(bottom, top)
    yticks, decimals = _ticks(y0, y1, math.ceil(height / 40))

    def sy(v: float) -> float:
        return height - (v - y0) / (y1 - y0) * height

    ylabels = [f"{v:,.{decimals}f}" for v in yticks]
    xlabels = [format(v, ".12g") for v in xticks]

    # the layout Vega gives: the y title left of the widest label, the title above, the legend below
    label_w = max(_text_width(t, 10) for t in ylabels)
    ytitle_x = -(5 + 2 + label_w + 4)
    left = math.ceil(_PAD - ytitle_x + 11)
    top_margin = _PAD + 22 if title else _PAD
    series = sorted({str(r[cf]) for r in rows})
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    legend_y = height + 32 + 18
    legend_title = enc["color"].get("title") or cf
    legend_w = max([_text_width(legend_title, 11, True)] + [16 + _text_width(s, 10) for s in series])
    legend_h = 16 + 16 * len(series) - 3.5
    total_w = math.ceil(left + max(width, legend_w) + _PAD)
    total_h = math.ceil(top_margin + legend_y + legend_h + _PAD)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="marks" width="{total_w}" height="{total_h}" '
           f'viewBox="0 0 {total_w} {total_h}" role="img" aria-label="{escape(str(title))}">',
           f'<rect width="{total_w}" height="{total_h}" fill="white"/>',
           f'<g fill="none" stroke-miterlimit="10" transform="translate({left},{top_margin})">',
           f'<path d="M0.5,0.5h{_num(width)}v{_num(height)}h-{_num(width)}Z" stroke="#ddd"/>']
    # grid, then axes (ticks, labels, domain line, title)
    out.append('<g stroke="#ddd" stroke-width="1">')
    out += [f'<line x1="{_num(sx(v) + .5)}" y1="0.5" x2="{_num(sx(v) + .5)}" y2="{_num(height + .5)}"/>' for v in xticks]
    out += [f'<line x1="0.5" y1="{_num(sy(v) + .5)}" x2="{_num(width + .5)}" y2="{_num(sy(v) + .5)}"/>' for v in yticks]
    out.append('</g><g stroke="#888" stroke-width="1">')
    out += [f'<line x1="{_num(sx(v) + .5)}" y1="{_num(height + .5)}" x2="{_num(sx(v) + .5)}" y2="{_num(height + 5.5)}"/>'
            for v in xticks]
    out += [f'<line x1="0.5" y1="{_num(sy(v) + .5)}" x2="-4.5" y2="{_num(sy(v) + .5)}"/>' for v in yticks]
    out.append(f'<line x1="0.5" y1="{_num(height + .5)}" x2="{_num(width + .5)}" y2="{_num(height + .5)}"/>'
               f'<line x1="0.5" y1="0.5" x2="0.5" y2="{_num(height + .5)}"/></g>')
    out.append(f'<g {_FONT} font-size="10px" fill="#000" stroke="none">')
    out += [f'<text text-anchor="middle" x="{_num(sx(v) + .5)}" y="{_num(height + 15.5)}">{escape(t)}</text>'
            for v, t in zip(xticks, xlabels, strict=True)]
    out += [f'<text text-anchor="end" x="-6.5" y="{_num(sy(v) + 3.5)}">{escape(t)}</text>'
            for v, t in zip(yticks, ylabels, strict=True)]
    out.append('</g>')
    out.append(f'<g {_FONT} font-size="11px" font-weight="bold" fill="#000" stroke="none">'
               f'<text text-anchor="middle" x="{_num(width / 2 + .5)}" y="{_num(height + 30.5)}">'
               f'{escape(str(enc["x"].get("title") or xf))}</text>'
               f'<text text-anchor="middle" transform="translate({_num(ytitle_x + .5)},{_num(height / 2 + .5)}) rotate(-90) '
               f'translate(0,-2)">{escape(str(enc["y"].get("title") or yf))}</text></g>')
    # the lines, one per segment (its points in x order), then the points over them
    segments: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        segments.setdefault(str(r[df]), []).append(r)
    for seg in segments.values():
        if len(seg) < 2:
            continue
        seg.sort(key=lambda r: r[xf])
        d = "L".join(f"{_num(sx(r[xf]))},{_num(sy(r[yf]))}" for r in seg)
        out.append(f'<path d="M{d}" stroke="{colour[str(seg[0][cf])]}" stroke-width="2"/>')
    radius = _num(math.sqrt(size) / 2)
    for r in rows:
        tip = escape(f"{r[cf]}: {r[yf]:,.1f} at {format(r[xf], '.12g')}")
        out.append(f'<circle cx="{_num(sx(r[xf]))}" cy="{_num(sy(r[yf]))}" r="{radius}" fill="{colour[str(r[cf])]}" '
                   f'opacity="0.7"><title>{tip}</title></circle>')
    # the legend under the chart: its title, then one series a line
    out.append(f'<g transform="translate(0,{_num(legend_y)})">'
               f'<text x="0" y="9" {_FONT} font-size="11px" font-weight="bold" fill="#000" stroke="none">'
               f'{escape(str(legend_title))}</text>')
    for i, name in enumerate(series):
        y = 16 + 16 * i
        out.append(f'<circle cx="6" cy="{y + 6}" r="5" fill="{colour[name]}" stroke="{colour[name]}" stroke-width="1.5" '
                   f'opacity="0.7"/><text x="16" y="{y + 9}" {_FONT} font-size="10px" fill="#000" stroke="none">'
                   f'{escape(name)}</text>')
    out.append('</g>')
    # the title above the chart
    if title:
        out.append(f'<text text-anchor="middle" x="{_num(width / 2)}" y="-12" {_FONT} font-size="13px" '
                   f'font-weight="bold" fill="#000" stroke="none">{escape(str(title))}</text>')
    out.append('</g></svg>')
    return "".join(out)
