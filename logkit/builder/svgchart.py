"""The site's charts drawn as SVG in Python, from their Vega-Lite specs: no Vega, no vl-convert.

Contract: :func:`draw` takes a chart's Vega-Lite spec (:mod:`.vlspec`) and returns its SVG, or None
for a spec that is none of the kinds the builder makes (those go to vl-convert): *line* (a figure
against concurrency, :func:`.charts._line`), *bars* and *grouped bars* (:func:`.charts._best_chart`,
:func:`.charts._per_item`) and *sweep* (points over a dashed Pareto front, :func:`.pages_sweeps._chart`).
What is drawn is read from the spec alone, whose hash names the SVG file. The drawing follows what
Vega draws for these specs with its default theme (``tests/test_build_charts.py`` holds each kind
against vl-convert's drawing) in under a millisecond, where vl-convert spends 50-110 ms a chart and
~120 MB. Text widths are estimated (Helvetica's metrics) only to lay out axes, legends and size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .escape import html_text as escape  # redacted again, as every page's text is

__all__ = ["draw"]

#: Vega's default categorical scheme (tableau10)
PALETTE = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac")
_FONT = 'font-family="sans-serif"'
_PAD = 5  # Vega's padding around the whole view
_STEP = 20  # Vega-Lite's default band step (px per bar)

Row = dict[str, Any]
#: a legend: its title (or ""), its entries (label, its symbol's SVG given the symbol's centre), whether
#: vertical, and the entries' height and pitch
Legend = tuple[str, list[tuple[str, Callable[[float, float], str]]], bool, float, float]


def _num(x: float) -> str:
    """A coordinate as Vega writes one: at most 3 decimals, no trailing zeros."""
    return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


#: Helvetica's advance widths (thousandths of the font size) of printable ASCII, from space on:
#: what Vega measures text with, here only to lay out the axes, legends and the SVG's size
_WIDTHS = (278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, *(556,) * 10, 278, 278,
           584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667,
           778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556,
           278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500,
           334, 260, 334, 584)


def _text_width(text: str, size: float, bold: bool = False) -> float:
    """``text``'s width in pixels in Helvetica (bold: 12 % wider, as Vega lays a bold title out); others as an ``m``."""
    units = sum(_WIDTHS[ord(c) - 32] if 32 <= ord(c) < 127 else 833 for c in text)
    return units * size / 1000 * (1.12 if bold else 1.0)


def _truncate(text: str, limit: float) -> tuple[str, float]:
    """``text`` cut to ``limit`` px (0: none) with an ellipsis as Vega cuts labels, and its laid-out width."""
    width = _text_width(text, 10)
    if not limit or width <= limit:
        return text, width
    while text and _text_width(text + "…", 10) > limit:
        text = text[:-1]
    return text + "…", limit


# -- scales -------------------------------------------------------------------------------------------

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


def _linear(values: list[float], length: float, zero: bool, flip: bool = False,
            ) -> tuple[Callable[[float], float], list[tuple[float, str]]]:
    """Vega's linear scale of ``values`` onto ``length`` px (``flip``: upwards) and its (position, label) ticks."""
    lo, hi = min(values), max(values)
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:  # one value: d3 maps it to the middle of the range, its only tick (formatted with no decimals)
        def mid(v: float) -> float:
            return length / 2
        return mid, [(length / 2, f"{lo:,.0f}")]
    d0, d1 = _nice(lo, hi)

    def scale(v: float) -> float:
        at = (v - d0) / (d1 - d0) * length
        return length - at if flip else at

    ticks, decimals = _ticks(d0, d1, math.ceil(length / 40))
    return scale, [(scale(v), f"{v:,.{decimals}f}") for v in ticks]


# -- the canvas: what is drawn, and the bounds Vega lays the view out by --------------------------------

class _Canvas:
    """The plot area (origin at its top left) and what is drawn around it, which widens its bounds
    (Vega's ``autosize: pad``: the SVG is those bounds plus the padding)."""

    def __init__(self, width: float, height: float) -> None:
        self.w, self.h = width, height
        self.out = [f'<path d="M0.5,0.5h{_num(width)}v{_num(height)}h-{_num(width)}Z" stroke="#ddd"/>']
        self.x1, self.y1, self.x2, self.y2 = 0.0, 0.0, width, height

    def grow(self, x1: float, y1: float, x2: float, y2: float) -> None:
        self.x1, self.y1 = min(self.x1, x1), min(self.y1, y1)
        self.x2, self.y2 = max(self.x2, x2), max(self.y2, y2)

    def svg(self, title: str) -> str:
        """The whole SVG, with ``title`` above the plot (over the bounds' top)."""
        if title:
            top = self.y1 - 17  # Vega's title offset (4) and font size (13)
            tw = _text_width(title, 13, True)
            self.out.append(f'<text text-anchor="middle" x="{_num(self.w / 2)}" y="{_num(top + 10)}" {_FONT} '
                            f'font-size="13px" font-weight="bold" fill="#000" stroke="none">{escape(title)}</text>')
            self.grow(self.w / 2 - tw / 2, top, self.w / 2 + tw / 2, top)
        left, top = math.ceil(_PAD - self.x1), math.ceil(_PAD - self.y1)
        width, height = math.ceil(left + self.x2 + _PAD), math.ceil(top + self.y2 + _PAD)
        return "".join([f'<svg xmlns="http://www.w3.org/2000/svg" class="marks" width="{width}" height="{height}" '
                        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
                        f'<rect width="{width}" height="{height}" fill="white"/>',
                        f'<g fill="none" stroke-miterlimit="10" transform="translate({left},{top})">',
                        *self.out, '</g></svg>'])


def _thin(labels: list[tuple[float, float, str, str, float]], greedy: bool) -> list[tuple[float, float, str, str, float]]:
    """Vega's label overlap removal on an x axis, labels as (x1, x2, anchor, text, x): parity or greedy."""
    if greedy:
        kept = labels[:1]
        for label in labels[1:]:
            if label[0] >= kept[-1][1]:
                kept.append(label)
        return kept
    while len(labels) >= 3 and any(b[0] < a[1] for a, b in zip(labels, labels[1:])):
        labels = labels[::2]
    return labels


def _axes(c: _Canvas, x: tuple[list[tuple[float, str]], str, bool], y: tuple[list[tuple[float, str]], str, bool],
          *, greedy: bool = False, y_limit: float = 0) -> None:
    """The bottom x and left y axes, each (ticks as (position, label), title, grid lines), as Vega draws them."""
    (xt, xtitle, xgrid), (yt, ytitle, ygrid) = x, y
    h, w = c.h, c.w
    out = c.out
    out.append('<g stroke="#ddd" stroke-width="1">')
    out += [f'<line x1="{_num(p + .5)}" y1="0.5" x2="{_num(p + .5)}" y2="{_num(h + .5)}"/>' for p, _t in xt if xgrid]
    out += [f'<line x1="0.5" y1="{_num(p + .5)}" x2="{_num(w + .5)}" y2="{_num(p + .5)}"/>' for p, _t in yt if ygrid]
    out.append('</g><g stroke="#888" stroke-width="1">')
    out += [f'<line x1="{_num(p + .5)}" y1="{_num(h + .5)}" x2="{_num(p + .5)}" y2="{_num(h + 5.5)}"/>' for p, _t in xt]
    out += [f'<line x1="0.5" y1="{_num(p + .5)}" x2="-4.5" y2="{_num(p + .5)}"/>' for p, _t in yt]
    out.append(f'<line x1="0.5" y1="{_num(h + .5)}" x2="{_num(w + .5)}" y2="{_num(h + .5)}"/>'
               f'<line x1="0.5" y1="0.5" x2="0.5" y2="{_num(h + .5)}"/></g>')
    if xt:
        c.grow(0, 0, max(p for p, _t in xt) + 1, 0)  # a tick's stroke
    labels = []
    for p, text in xt:
        tw = _text_width(text, 10)
        anchor = "start" if p < .5 else "end" if p > w - .5 else "middle"
        x1 = p if anchor == "start" else p - tw if anchor == "end" else p - tw / 2
        labels.append((x1 + .5, x1 + tw + .5, anchor, text, p + .5))
    labels = _thin(labels, greedy)
    ylabels = [(p, *_truncate(t, y_limit)) for p, t in yt]
    out.append(f'<g {_FONT} font-size="10px" fill="#000" stroke="none">')
    out += [f'<text text-anchor="{anchor}" x="{_num(at)}" y="{_num(h + 15.5)}">{escape(t)}</text>'
            for _x1, _x2, anchor, t, at in labels]
    out += [f'<text text-anchor="end" x="-6.5" y="{_num(p + 3.5)}">{escape(t)}</text>' for p, t, _w in ylabels]
    out.append('</g>')
    for x1, x2, *_rest in labels:
        c.grow(x1, h, x2, h + 17)
    label_w = max((tw for _p, _t, tw in ylabels), default=0)
    for p, _t, _w in ylabels:
        c.grow(-7.5 - label_w, p - 5, 0, p + 5)
    c.grow(0, 0, 0, h + (32 if xtitle else 17))
    out.append(f'<g {_FONT} font-size="11px" font-weight="bold" fill="#000" stroke="none">')
    if xtitle:
        out.append(f'<text text-anchor="middle" x="{_num(w / 2 + .5)}" y="{_num(h + 30.5)}">{escape(xtitle)}</text>')
    if ytitle:
        at = -(min(5 + 2 + label_w, 200) + 4)  # tick, label padding, the widest label (Vega's maxExtent), padding
        tw = _text_width(ytitle, 11, True)
        out.append(f'<text text-anchor="middle" transform="translate({_num(at + .5)},{_num(h / 2 + .5)}) rotate(-90) '
                   f'translate(0,-2)">{escape(ytitle)}</text>')
        c.grow(at - 11, h / 2 - tw / 2, 0, h / 2 + tw / 2)
    out.append('</g>')


def _legends(c: _Canvas, legends: list[Legend]) -> None:
    """Legends under the chart, left to right: a bold title (if any), then its entries (symbol, label)."""
    x, y = 0.0, c.y2 + 18  # Vega's legend offset under the x axis
    for title, entries, vertical, entry_h, pitch in legends:
        top = 16 if title else 0
        c.out.append(f'<g transform="translate({_num(x)},{_num(y)})">')
        if title:
            c.out.append(f'<text x="0" y="9" {_FONT} font-size="11px" font-weight="bold" fill="#000" stroke="none">'
                         f'{escape(title)}</text>')
        ex, ey = 0.0, float(top)
        width = _text_width(title, 11, True)
        for label, symbol in entries:
            c.out.append(f'{symbol(ex + 6, ey + 6)}<text x="{_num(ex + 16)}" y="{_num(ey + 9)}" {_FONT} font-size="10px" '
                         f'fill="#000" stroke="none">{escape(label)}</text>')
            entry_w = 16 + _text_width(label, 10)
            width = max(width, ex + entry_w)
            if vertical:
                ey += pitch
            else:
                ex += entry_w + 10  # Vega's column padding
        c.out.append('</g>')
        c.grow(x, y, x + width, y + (ey - pitch + entry_h if vertical else top + entry_h))
        x += math.ceil(width) + 8


def _symbol(shape: str, x: float, y: float, half: float, fill: str, extra: str = "", tip: str = "") -> str:
    """A point's symbol centred on (x, y), ``half`` its radius or half its side: Vega's circle or square."""
    if shape == "square":
        tag, at = "rect", (f'x="{_num(x - half)}" y="{_num(y - half)}" width="{_num(2 * half)}" '
                           f'height="{_num(2 * half)}"')
    else:
        tag, at = "circle", f'cx="{_num(x)}" cy="{_num(y)}" r="{_num(half)}"'
    element = f'<{tag} {at} fill="{fill}"{extra}'
    return f"{element}><title>{tip}</title></{tag}>" if tip else element + "/>"


def _legend_symbol(shape: str, fill: str, extra: str = "") -> Callable[[float, float], str]:
    """A legend entry's symbol: Vega's, 10 px across."""
    return lambda x, y: _symbol(shape, x, y, 5, fill, extra)


# -- the kinds ----------------------------------------------------------------------------------------

def _data(spec: dict[str, Any], part: dict[str, Any]) -> list[Row]:
    ref = part.get("data") or spec.get("data") or {}
    rows = spec.get("datasets", {}).get(ref.get("name"), [])
    return rows if isinstance(rows, list) else []


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _title(part: dict[str, Any], field: str) -> str:
    title = part.get("title", field)
    return "" if title is None else str(title)


def _colours(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


def _line(spec: dict[str, Any]) -> str | None:
    """The line chart of a figure against concurrency (:func:`.charts._line`)."""
    line, point = spec["layer"]
    enc = line["encoding"]
    xf, yf, cf, df = (enc[k]["field"] for k in ("x", "y", "color", "detail"))
    rows = [r for r in _data(spec, line) if _number(r.get(xf)) and r[xf] > 0 and _number(r.get(yf))]
    if not rows:
        return None
    width, height = float(spec.get("width", 300)), float(spec.get("height", 300))
    c = _Canvas(width, height)
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
    sy, yticks = _linear([r[yf] for r in rows], height, zero=True, flip=True)
    _axes(c, ([(sx(v), format(v, ".12g")) for v in xticks], _title(enc["x"], xf), True),
          (yticks, _title(enc["y"], yf), True), greedy=True)
    series = sorted({str(r[cf]) for r in rows})
    colour = _colours(series)
    # the lines, one per segment (its points in x order), then the points over them
    segments: dict[str, list[Row]] = {}
    for r in rows:
        segments.setdefault(str(r[df]), []).append(r)
    for seg in segments.values():
        if len(seg) < 2:
            continue
        seg.sort(key=lambda r: r[xf])
        d = "L".join(f"{_num(sx(r[xf]))},{_num(sy(r[yf]))}" for r in seg)
        c.out.append(f'<path d="M{d}" stroke="{colour[str(seg[0][cf])]}" stroke-width="2"/>')
    radius = math.sqrt(float(point["mark"].get("size", 30))) / 2
    for r in rows:
        tip = escape(f"{r[cf]}: {r[yf]:,.1f} at {format(r[xf], '.12g')}")
        c.out.append(_symbol("circle", sx(r[xf]), sy(r[yf]), radius, colour[str(r[cf])], ' opacity="0.7"', tip))
    _legends(c, [(_title(enc["color"], cf), [(s, _legend_symbol("circle", colour[s], f' stroke="{colour[s]}" '
                                                                'stroke-width="1.5" opacity="0.7"')) for s in series],
                  True, 12.5, 16)])
    return c.svg(str(line.get("title") or spec.get("title") or ""))


def _bars(spec: dict[str, Any]) -> str | None:
    """Horizontal bars from zero, a band per y value (grouped by ``yOffset``, coloured by ``color``)."""
    enc = spec["encoding"]
    xf, yf = enc["x"]["field"], enc["y"]["field"]
    of = enc.get("yOffset", {}).get("field")
    cf = enc.get("color", {}).get("field")
    everything = _data(spec, spec)
    rows = [r for r in everything if _number(r.get(xf))]  # no bar without an x; its band stays
    if not rows:
        return None
    order = list(dict.fromkeys(str(r.get(yf)) for r in everything))
    if enc["y"].get("sort") == "-x":  # by each band's sum of x, largest first (Python's sort is stable, as JS's)
        sums = {band: sum(r[xf] for r in rows if str(r.get(yf)) == band) for band in order}
        order.sort(key=lambda band: -sums[band])
    elif enc["y"].get("sort", "ascending") is not None:
        order.sort()
    offsets = sorted({str(r.get(of)) for r in everything}) if of else []
    # Vega-Lite's band scale sized by its step: a band per y value, ``step`` apart, starting ``outer``
    # steps in, ``1 - inner`` of a step wide; with offsets a band holds one default step per offset
    inner, outer = (0.2, 0.2) if of else (0.1, 0.05)
    step = _STEP * len(offsets) / (1 - inner) if of else _STEP
    start, band, height = step * outer, step * (1 - inner), step * (len(order) - inner + 2 * outer)
    width = float(spec.get("width", 300))
    c = _Canvas(width, height)
    sx, xticks = _linear([r[xf] for r in rows], width, zero=True)
    y_axis = enc["y"].get("axis") or {}
    _axes(c, (xticks, _title(enc["x"], xf), True),
          ([(start + step * i + band / 2, t) for i, t in enumerate(order)], _title(enc["y"], yf), False),
          y_limit=float(y_axis.get("labelLimit", 180)))
    colour = _colours([str(r.get(cf)) for r in everything]) if cf else {}
    x0 = sx(0.0)
    rank = {name: i for i, name in enumerate(order)}
    slot = {name: i for i, name in enumerate(offsets)}
    h = band / len(offsets) if of else band
    for r in rows:
        y = start + step * rank[str(r.get(yf))] + (h * slot[str(r.get(of))] if of else 0)
        x1, x2 = sorted((x0, sx(r[xf])))
        tip = escape(f"{r.get(yf)}{f' · {r.get(of)}' if of and of != yf else ''}: {r[xf]:,.1f}")
        c.out.append(f'<path d="M{_num(x1)},{_num(y)}h{_num(x2 - x1)}v{_num(h)}h-{_num(x2 - x1)}Z" '
                     f'fill="{colour.get(str(r.get(cf)), PALETTE[0])}"><title>{tip}</title></path>')
    if cf:
        legend = enc["color"].get("legend") or {}
        _legends(c, [(_title(enc["color"], cf), [(s, _legend_symbol("square", colour[s])) for s in colour],
                      legend.get("direction", "vertical") == "vertical", 11, 13)])
    return c.svg(str(spec.get("title") or ""))


def _sweep(spec: dict[str, Any]) -> str | None:
    """Points coloured and shaped by two fields over a dashed line (the Pareto front, :func:`.pages_sweeps._chart`)."""
    line, point = spec["layer"]
    enc = point["encoding"]
    xf, yf, cf, shf = (enc[k]["field"] for k in ("x", "y", "color", "shape"))
    rows = [r for r in _data(spec, point) if _number(r.get(xf)) and _number(r.get(yf))]
    path = [r for r in _data(spec, line) if _number(r.get(xf)) and _number(r.get(yf))]
    shapes = sorted({str(r.get(shf)) for r in rows})
    if not rows or len(shapes) > 2:  # Vega's shapes after a circle and a square are not drawn here
        return None
    width, height = float(spec.get("width", 300)), float(spec.get("height", 300))
    c = _Canvas(width, height)
    # x as the line's scale has it (a line's x does not start at zero), y from zero; both over both layers
    sx, xticks = _linear([r[xf] for r in rows + path], width, zero=False)
    sy, yticks = _linear([r[yf] for r in rows + path], height, zero=True, flip=True)
    _axes(c, (xticks, _title(enc["x"], xf), True), (yticks, _title(enc["y"], yf), True))
    if len(path) >= 2:
        path.sort(key=lambda r: r[line["encoding"]["order"]["field"]])
        d = "L".join(f"{_num(sx(r[xf]))},{_num(sy(r[yf]))}" for r in path)
        dash = ",".join(str(v) for v in line["mark"].get("strokeDash", []))
        c.out.append(f'<path d="M{d}" stroke="{escape(str(line["mark"].get("color", PALETTE[0])))}" stroke-width="2"'
                     f'{f" stroke-dasharray={chr(34)}{dash}{chr(34)}" if dash else ""}/>')
    colour = _colours([str(r.get(cf)) for r in rows])
    size = math.sqrt(float(point["mark"].get("size", 30)))
    symbol = dict(zip(shapes, ("circle", "square")))
    for r in rows:
        x, y = sx(r[xf]), sy(r[yf])
        tip = escape("; ".join(f"{t['field']}: {r.get(t['field'])}" for t in enc.get("tooltip", []) if "field" in t))
        c.out.append(_symbol(symbol[str(r.get(shf))], x, y, size / 2, colour[str(r.get(cf))], ' opacity="0.7"', tip))
        c.grow(x - size / 2, y - size / 2, x + size / 2, y + size / 2)
    _legends(c, [(_title(enc["color"], cf), [(s, _legend_symbol("circle", colour[s], ' opacity="0.7"')) for s in colour],
                  (enc["color"].get("legend") or {}).get("direction") == "vertical", 11, 13),
                 (_title(enc["shape"], shf), [(s, _legend_symbol(symbol[s], "black", ' fill-opacity="0.7" opacity="0.7"'))
                                               for s in shapes],
                  (enc["shape"].get("legend") or {}).get("direction") == "vertical", 12.5, 14.5)])
    return c.svg(str(spec.get("title") or ""))


def _kind(spec: dict[str, Any]) -> Callable[[dict[str, Any]], str | None] | None:
    """The drawing function of ``spec``'s kind, or None for a spec of another kind."""
    layers = spec.get("layer")
    if isinstance(layers, list) and len(layers) == 2 and all(isinstance(p, dict) for p in layers):
        first, second = layers
        marks = (first.get("mark", {}).get("type"), second.get("mark", {}).get("type"))
        e1, e2 = first.get("encoding", {}), second.get("encoding", {})
        x, y = e1.get("x", {}), e1.get("y", {})
        if marks != ("line", "point") or e2.get("x") != x or e2.get("y") != y:
            return None
        if (set(e1) == {"color", "detail", "x", "y"} and first["mark"] == {"type": "line"} and "data" not in first
                and "data" not in second and isinstance(spec.get("data"), dict)
                and x.get("scale", {}).get("type") == "log" and x.get("scale", {}).get("base") == 2
                and y.get("scale", {}).get("zero") is True):
            return _line
        if (set(e1) == {"order", "x", "y"} and {"color", "shape", "x", "y"} <= set(e2) <= {"color", "shape", "x", "y", "tooltip"}
                and "scale" not in x and "scale" not in y and all(e2[k].get("type") == "nominal" for k in ("color", "shape"))
                and "data" in first and "data" in second):
            return _sweep
        return None
    enc = spec.get("encoding", {})
    if spec.get("mark") == {"type": "bar"} and isinstance(spec.get("data"), dict) and \
            set(enc) in ({"x", "y"}, {"color", "x", "y", "yOffset"}):
        x, y = enc["x"], enc["y"]
        if x.get("type") == "quantitative" and x.get("scale") == {"nice": True, "zero": True} and y.get("type") == "nominal" \
                and y.get("sort", "ascending") in ("-x", None, "ascending") and "height" not in spec \
                and ("color" not in enc or enc["color"].get("field") == enc["yOffset"].get("field")):
            return _bars
    return None


def draw(spec: dict[str, Any]) -> str | None:
    """The SVG of ``spec`` when it is one of the builder's kinds, else None (vl-convert draws it)."""
    kind = _kind(spec)
    return kind(spec) if kind is not None else None
