"""Stage 4b, contexts of the working-configuration, compatibility-matrix and negative-result pages.

Contract: pure functions of :class:`KBIndex`; only ``launch`` attempts with a configuration count.
A configuration is one launch fingerprint that worked for a model x GPU x SGLang version; it is
*stale* when a later launch of it on the same GPU failed in a way the matrix holds against it
(:func:`logkit.reasoning.matrix.category`). A matrix cell (backend axis=value x architecture x
model) is :mod:`logkit.reasoning.matrix`'s cell of all its attributable attempts; a ``works`` cell
reads ``slow`` only when :func:`logkit.reasoning.matrix.compare` finds its runs slower than a
working launch of the same model and GPU differing in that one value alone (``tied`` where the
intervals overlap), with both figures. Failing and slow cells get a negative-result page. Figures
are compared only at one workload (:func:`logkit.launch.flags.workload`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

from ..launch.flags import describe, workload_text
from ..launch.flags import workload_order as _work_order
from ..reasoning import matrix
from ..stats import figure
from .contexts_kb import (
    CellCtx, ConfigCtx, ConfigPage, ConfigRow, ConfigsIndex, MatrixPage, MatrixRow, MatrixTable, NegativePage,
)
from .contexts import HypRef, Line, Page
from .frames import AttemptFacts
from .index import KBIndex
from .load import Workload, tables
from .render import figure_text
from .paths import attempt_ref, config_href, config_path, decision_href, metrics_path, negative_path

__all__ = ["cell_works", "config_pages", "configs_index", "excerpt", "launches", "matrix_page", "matrix_row", "site_cells",
           "versions_text", "working_config"]


def working_config(f: AttemptFacts) -> bool:
    """Whether ``f`` is a launch a configuration page shows (one whose figures the home page may call best)."""
    return f.role == "launch" and bool(f.fp_hash) and f.category == "works"


def launches(index: KBIndex) -> list[AttemptFacts]:
    """The launches with a configuration, by start time (made once per index)."""
    return index.once("launches", lambda: sorted(
        (f for f in index.frames.facts.values() if f.role == "launch" and f.fp_hash), key=lambda f: (f.started, f.ref)))


#: every run's throughput per launch reference, per workload (``logkit run --repeat``: several)
Runs = dict[str, dict[Workload, list[float]]]


def _runs(index: KBIndex) -> Runs:
    """Every run's throughput (the first name of the table measured) by launch reference and workload."""
    for name in tables()["metrics"]["throughput"]:
        runs: Runs = {}
        for ref, rows in index.metrics_by_server.items():
            for metric, value, _unit, work, _item in rows:
                if metric == name:
                    runs.setdefault(ref, {}).setdefault(work, []).append(value)
        if runs:
            return runs
    return {}


def _best_text(runs: Runs, configs: list[list[str]]) -> str:
    """``172.0 at concurrency 1; ...``: per workload, the best configuration's figure (the median of its runs)."""
    top: dict[Workload, float] = {}
    for refs in configs:
        pooled: dict[Workload, list[float]] = {}
        for ref in refs:
            for work, values in runs.get(ref, {}).items():
                pooled.setdefault(work, []).extend(values)
        for work, values in pooled.items():
            top[work] = max(figure(values), top.get(work, float("-inf")))
    return "; ".join(f"{figure_text(top[w])} at {workload_text(w)}" for w in sorted(top, key=_work_order))


def _metric_table(index: KBIndex, refs: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The throughput / TTFT / ITL figure per workload: one run's value, or several runs' median and
    spread (:func:`logkit.sweep.state.point_text`)."""
    from ..sweep.state import point_text

    runs: dict[tuple[tuple[Workload, str], str], list[float]] = {}  # (workload, prompt), name
    for ref in refs:
        for name, value, _unit, work, item in index.metrics_by_server.get(ref, []):
            runs.setdefault(((work, item or ""), name), []).append(value)
    if not runs:
        return [], []
    present = {n for _w, n in runs}
    names = [n for group in ("throughput", "ttft", "itl") for n in tables()["metrics"][group][:1] if n in present]
    if not names:
        return [], []

    def cell(values: list[float] | None) -> str:
        if not values:
            return ""
        return figure_text(values[0]) if len(values) == 1 else point_text(figure(values), values)

    works = sorted({w for w, _n in runs}, key=lambda wi: (_work_order(wi[0]), wi[1]))
    return names, [(workload_text(w) + (f", prompt {item}" if item else ""), [cell(runs.get(((w, item), n))) for n in names])
                   for w, item in works]


def config_pages(index: KBIndex, metrics: set[str] | None = None) -> list[ConfigPage]:
    """One page per model x GPU x SGLang version with working launches, linking charts only where
    ``metrics`` (the metrics pages written) has them: a dead link fails ``build --strict``."""
    groups: dict[tuple, list[AttemptFacts]] = defaultdict(list)
    failures: dict[tuple, list[AttemptFacts]] = defaultdict(list)
    for f in launches(index):
        if working_config(f):
            groups[(f.model, f.gpu_label, f.versions.get("sglang"))].append(f)
        elif matrix.category(matrix_row(f)) is not None:  # what refutes a cell makes it stale: one rule
            failures[(f.fp_hash, f.gpu_label)].append(f)
    full_args = _launch_args([items[-1] for works in groups.values() for items in _by_fp(works).values()])
    pages = []
    for (model, gpu, sglang), works in sorted(groups.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        by_fp = _by_fp(works)
        configs = []
        for fp, items in by_fp.items():
            last = items[-1]
            later_fail = [g for g in failures.get((fp, gpu), []) if g.started > last.started]
            holds: dict[str, list[str]] = {}
            for f in items:
                for k, v in f.versions.items():
                    if v not in holds.setdefault(k, []):
                        holds[k].append(v)
            names, rows = _metric_table(index, [f.ref for f in items])
            full = full_args[last.ref]
            configs.append(ConfigCtx(
                full=[(k, _s(v)) for k, v in sorted(full.items()) if k not in last.fingerprint and v is not None],
                anchor=f"cfg-{fp}", backends=sorted(last.backends.items()), command=last.command, holds_for=holds,
                metric_names=names, metric_rows=rows,
                last_verified=(last.ended if last.status is not None else last.started),
                attempts=[attempt_ref(f) for f in items],
                stale_by=attempt_ref(later_fail[-1]) if later_fail else None,
            ))
        configs.sort(key=lambda c: (c.stale_by is not None, -c.last_verified.timestamp()))
        _headings(configs, {f"cfg-{fp}": items[-1].fingerprint for fp, items in by_fp.items()})
        arch = works[-1].arch or "unknown"
        title = f"{model or 'unknown model'} on {gpu or 'unknown GPU'}" + (f" (SGLang {sglang})" if sglang else "")
        pages.append(ConfigPage(
            page=Page(config_path(model, gpu, sglang), title, "config.md.j2", tags=[arch]),
            model=model or "unknown model", gpu=gpu or "unknown GPU", arch=arch, sglang=sglang or "unknown",
            configs=configs,
            metrics_href=metrics_path(model, gpu) if metrics is None or metrics_path(model, gpu) in metrics else None,
        ))
    return pages


def _by_fp(works: list[AttemptFacts]) -> dict[str, list[AttemptFacts]]:
    by_fp: dict[str, list[AttemptFacts]] = defaultdict(list)
    for f in works:
        by_fp[f.fp_hash or ""].append(f)
    return by_fp


def _launch_args(launches: list[AttemptFacts]) -> dict[str, dict[str, Any]]:
    """Each launch's full parsed arguments by reference, session by session (:meth:`.load.SessionData.launches`)."""
    args: dict[str, dict[str, Any]] = {}
    by_session: dict[str, list[AttemptFacts]] = defaultdict(list)
    for f in launches:
        by_session[f.session].append(f)
    for sid in sorted(by_session):
        facts = by_session[sid]
        assert facts[0].data is not None
        attempts = facts[0].data.launches([f.short_id for f in facts])
        for f in facts:
            args[f.ref] = (attempts[f.short_id].get("launch") or {}).get("args", {})
    return args


def _headings(configs: list[ConfigCtx], chosen: dict[str, dict[str, object]]) -> None:
    """Give each configuration its heading: its backend values by axis, and the chosen values that
    tell it from another of the page with the same ones (``mem_fraction_static=0.92``)."""
    same: dict[str, list[ConfigCtx]] = defaultdict(list)
    for c in configs:
        same[describe(dict(c.backends)) or "configuration"].append(c)  # each value with its axis
    for base, group in same.items():
        if len(group) == 1:
            group[0].heading = base if group[0].backends else f"configuration {group[0].anchor}"
            continue
        backend_keys = {k for c in group for k, _v in c.backends}
        keys = sorted({k for c in group for k in chosen[c.anchor]} - backend_keys)
        differ = [k for k in keys if len({_s(chosen[c.anchor].get(k)) if k in chosen[c.anchor] else None
                                          for c in group}) > 1]
        for c in group:
            fp = chosen[c.anchor]
            parts = [f"{k}={_s(fp[k])}" if k in fp else f"{k} not set" for k in differ]
            c.heading = " · ".join([base, *parts]) if parts else f"{base} · {c.anchor}"


def configs_index(index: KBIndex, pages: list[ConfigPage]) -> ConfigsIndex:
    """The table of configuration pages."""
    runs = _runs(index)
    rows = []
    for p in pages:
        configs = [[a.ref for a in c.attempts] for c in p.configs]
        rows.append(ConfigRow(p.model, p.gpu, p.arch, p.sglang, len(p.configs),
                              sum(1 for c in p.configs if c.stale_by), _best_text(runs, configs), p.page.path))
    return ConfigsIndex(page=Page("configs/index.md", "Working configurations", "configs_index.md.j2"), rows=rows)


def _s(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def versions_text(f: AttemptFacts) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(f.versions.items()))


def _canon(value: object) -> object:
    """A hashable stand-in for a chosen value that is equal where the values compare equal (1 == 1.0)."""
    if isinstance(value, (int, float)):
        return float(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _rest_key(f: AttemptFacts, axis: str) -> tuple:
    return tuple(sorted((k, _canon(v)) for k, v in f.fingerprint.items() if k != axis))


def _against(f: AttemptFacts, axis: str, value: str, peers: dict[tuple, list[AttemptFacts]],
             runs: Runs) -> tuple[matrix.Comparison, AttemptFacts, Workload] | None:
    """``f``'s runs compared with the fastest working launch of ``peers`` (:func:`_peers`) differing
    in ``axis`` alone, at the first workload both were measured at; None without one."""
    for work, mine in sorted(runs.get(f.ref, {}).items(), key=lambda kv: _work_order(kv[0])):
        if not mine:
            continue
        for g in peers.get((_rest_key(f, axis), work), []):  # fastest first: the first other value is the best
            if g is f or g.backends.get(axis) in (None, value):
                continue
            return (matrix.compare(mine, runs[g.ref][work]), g, work)
    return None


def _peers(works: list[AttemptFacts], axis: str, runs: Runs) -> dict[tuple, list[AttemptFacts]]:
    """The measured launches of ``works`` by (:func:`_rest_key`, workload), fastest first."""
    out: dict[tuple, list[AttemptFacts]] = defaultdict(list)
    for g in works:
        for work, values in runs.get(g.ref, {}).items():
            if values:
                out[(_rest_key(g, axis), work)].append(g)
    for (_rest, work), peers in out.items():
        peers.sort(key=lambda g, w=work: -figure(runs[g.ref][w]))
    return out


def matrix_row(f: AttemptFacts) -> matrix.Row:
    """An attempt's facts as a row of :mod:`logkit.reasoning.matrix`."""
    return matrix.Row(
        session=f.session, attempt=f.short_id, role=f.role, started=f.started.isoformat(), status=f.status,
        model=f.model, arch=f.arch, sglang=f.versions.get("sglang"), flashinfer=f.versions.get("flashinfer"),
        backends=f.backends, hang_timeout=matrix.hang_limit(f.label) if f.status == "hang" else None,
        smoke_failed=f.smoke_failed, label=f.label)


def site_cells(index: KBIndex) -> dict[tuple, tuple[matrix.Cell, list[AttemptFacts]]]:
    """The matrix cells by (model, axis, value, arch or ``unknown``), each with its attempts' facts;
    of several SGLang/flashinfer versions, the one tested last (computed once per index)."""
    return index.once("site_cells", lambda: _site_cells(index))


def _site_cells(index: KBIndex) -> dict[tuple, tuple[matrix.Cell, list[AttemptFacts]]]:
    by_ref = {f.ref: f for f in launches(index)}
    found: dict[tuple, tuple[matrix.Cell, list[AttemptFacts]]] = {}
    for cell in matrix.cells(matrix_row(f) for f in by_ref.values()).values():
        key = (cell.model, cell.axis, cell.value, cell.arch or "unknown")
        have = found.get(key)
        if have is None or (cell.latest.started, cell.latest.ref) > (have[0].latest.started, have[0].latest.ref):
            found[key] = (cell, [by_ref[r.ref] for r in cell.rows])
    return found


def matrix_page(index: KBIndex) -> tuple[MatrixPage, list[NegativePage]]:
    """The compatibility matrix and the negative-result page of every refuted, conflicting or slow cell."""
    icons = tables()["matrix"]["icons"]
    runs = _runs(index)
    found = site_cells(index)
    works: dict[tuple, list[AttemptFacts]] = defaultdict(list)
    for (_m, _a, _v, _arch), (_cell, hits) in found.items():
        for f in hits:
            if f.category == "works" and f not in works[(f.model, f.gpu_label)]:
                works[(f.model, f.gpu_label)].append(f)
    archs: dict[str | None, set[str]] = defaultdict(set)
    for (model, _a, _v, arch) in found:
        archs[model].add(arch)
    peers: dict[tuple, dict[tuple, list[AttemptFacts]]] = {}
    tables_out: list[MatrixTable] = []
    negatives: list[NegativePage] = []
    neg_list: list[tuple[str, str, str]] = []
    for model in sorted(archs, key=str):
        model_archs = sorted(archs[model])
        axes = sorted({(a, v) for (m, a, v, _arch) in found if m == model})
        rows = []
        for axis, value in axes:
            row_cells = []
            for arch in model_archs:
                got = found.get((model, axis, value, arch))
                if not got:
                    row_cells.append(CellCtx("untested", icons["untested"]))
                    continue
                cell, hits = got
                last = hits[-1]
                shown = cell.refuted_class if cell.state == "refuted" else cell.state
                compared = None
                if shown == "works":
                    # slow only against a launch that differs in this one value, the others equal,
                    # and only where the intervals do not overlap (matrix.compare); tied otherwise
                    against = []
                    for h in hits:
                        pkey = (model, h.gpu_label, axis)
                        if pkey not in peers:
                            peers[pkey] = _peers(works[(model, h.gpu_label)], axis, runs)
                        if c := _against(h, axis, value, peers[pkey], runs):
                            against.append(c)
                    slower = [c for c in against if c[0].verdict == "slower"]
                    tied = [c for c in against if c[0].verdict == "tied"]
                    if slower and len(slower) == len([h for h in hits if runs.get(h.ref)]):
                        comp, peer, work = max(slower, key=lambda c: c[0].mine.median)
                        shown = "slow"
                    elif tied:  # a tie is shown as one, with both figures; "faster" is the other cell's news
                        comp, peer, work = max(tied, key=lambda c: c[0].mine.median)
                    if shown == "slow" or tied:
                        compared = (f"{comp.text()}, against {axis}={peer.backends.get(axis)} "
                                    f"({peer.ref}) at {workload_text(work)}, every other chosen value equal")
                counts = ", ".join(f"{n} {k}" for k, n in sorted(cell.counts.items()))
                detail = "; ".join(x for x in (compared, counts, last.label, versions_text(last),
                                               f"{last.started:%Y-%m-%d}") if x)
                if shown == "works":
                    href = config_href(cell_works(hits))
                else:
                    neg = _negative(index, model, axis, value, arch, shown, hits, compared)
                    negatives.append(neg)
                    neg_list.append((f"{axis}={value} on {arch} ({model or 'unknown model'})", shown, neg.page.path))
                    href = neg.page.path
                row_cells.append(CellCtx(shown, icons.get(shown, shown), href, detail))
            rows.append(MatrixRow(axis, value, row_cells))
        tables_out.append(MatrixTable(model or "unknown model", model_archs, rows))
    return MatrixPage(page=Page("backends/index.md", "Refuted backends", "matrix.md.j2"), tables=tables_out,
                      legend=list(icons.items()), negatives=neg_list), negatives


def cell_works(hits: list[AttemptFacts]) -> AttemptFacts:
    """The latest working attempt of a cell's attempts (the last one without)."""
    return next((h for h in reversed(hits) if h.category == "works"), hits[-1])


def _negative(index: KBIndex, model: str | None, axis: str, value: str, arch: str, category: str,
              hits: list[AttemptFacts], compared: str | None) -> NegativePage:
    failed = [h for h in hits if h.category not in ("works", None)] or hits
    last = failed[-1]
    # the log excerpt: the last failed attempt's outcome with one, read alone (this page shows no other event)
    shown, shown_outcome = next(((h, o) for h in reversed(failed) if (o := h.outcome_alone()) and o.get("evidence")),
                                (None, None))
    refs = {h.ref for h in hits}
    refuted_on: dict[str, list[str]] = {}
    for h in failed:
        for k, v in h.versions.items():
            if v not in refuted_on.setdefault(k, []):
                refuted_on[k].append(v)
    hyps: list[HypRef] = []
    options: list[tuple[str, str, str, str]] = []
    # the value named as a word: "flashinfer" is not named by "flashinfer_cutedsl"
    named = re.compile(rf"(?<![\w.-]){re.escape(value)}(?![\w-])").search
    for sid in sorted({h.session for h in hits}):
        for h in _session_hypotheses(index, sid):
            if {e.ref for e in h.evidence} & refs or named(h.text):
                hyps.append(h)
    for did, opt, opt_refs in _decision_options(index):
        if not opt.chosen and (opt_refs & refs or named(opt.name)):  # a chosen option rejected nothing
            options.append((did, decision_href(did), opt.name, opt.why_not or ""))
    said = "failed on" if category == "conflicting" else "refuted on"  # a conflicting cell is not refuted
    retry = [f"a release newer than {k} {max(v)} ({said} {', '.join(v)})" for k, v in sorted(refuted_on.items())
             if k in ("sglang", "flashinfer", "sgl-kernel", "torch", "cuda")]
    retry += [f"{h.id}: {h.because}" for h in hyps if h.because and h.verdict != "confirmed"]
    signatures = sorted({(h.signature or h.status, h.label or "") for h in failed if h.status is not None})
    worked = sorted({f"{f.arch} ({f.gpu_label})" for (m, a, v, _arch), (_c, fs) in site_cells(index).items()
                     if m == model and a == axis and v == value for f in fs
                     if f.category == "works" and f.arch and f.arch != arch})  # elsewhere: other architectures
    title = f"{axis}={value} on {arch}: {category} ({model or 'unknown model'})"
    if category == "conflicting":  # the cell's state (a refuted cell shows its class, a working one works or slow)
        retry.insert(0, f"conflicting evidence: it also worked in {cell_works(hits).ref}; compare the two launches")
    return NegativePage(
        page=Page(negative_path(axis, value, arch, model), title, "negative.md.j2", tags=[arch, category]),
        axis=axis, value=value, arch=arch, model=model or "unknown model", category=category,
        tried=[(attempt_ref(h), h.command) for h in hits],
        signatures=signatures,
        excerpt=excerpt(shown_outcome),
        excerpt_from=attempt_ref(shown) if shown is not None else None,
        reproduce=last.command,
        refuted_on=refuted_on,
        hypotheses=hyps,
        options=options,
        retry_when=retry,
        worked_elsewhere=worked,
        compared=compared,
    )


def excerpt(outcome: dict[str, Any] | None, tail: bool = False, limit: int = 12) -> list[Line]:
    """An outcome's first evidence lines, else (with ``tail``) the last lines of its log."""
    picked = (outcome or {}).get("evidence") or ((outcome or {}).get("tail", [])[-limit:] if tail else [])
    return [Line(e["line"], e["text"]) for e in picked[:limit]]


def _session_hypotheses(index: KBIndex, sid: str) -> list[HypRef]:
    """Every hypothesis of a session with its verdict (computed once per session)."""
    hyps = index.loaded.sessions[sid].hypotheses
    return index.once(f"hypotheses/{sid}", lambda: [h for hid in hyps if (h := index.hypothesis(hid, sid)) is not None])


def _decision_options(index: KBIndex) -> list[tuple[str, object, set[str]]]:
    """(decision id, option, the attempt references it cites), computed once."""
    return index.once("options", lambda: [
        (did, opt, {f.ref for r in opt.attempts if (f := index.attempt(r, sid)) is not None})
        for did, (d, sid) in sorted(index.decisions.items()) for opt in d.options])
