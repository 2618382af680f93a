"""The generic layer's development figure: the non-blind corpus classified as if no specific row
had ever been written for it.

Each log of the non-blind parts (training, ``holdout/`` ... ``holdout12/``; never ``holdout13/`` or
``holdout14/``, the blind measure) is classified twice: with every row (the normal figure) and with
only the rows marked ``generic = true`` in ``logkit/data/signatures.toml`` (every specific row
disabled: a row whose evidence decided a log is then gone, so the log looks unseen). The ready line
and the serving evidence stay (they are not rows). Prints both per part and the generic-only figure
per expected class; ``--dump FILE`` writes every log's two classes as JSON, ``--compare FILE`` lists
the logs whose class changed against such a dump; ``--speed`` times the healthy serving lines.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_generic.py [--dump out.json] [--compare before.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from logkit.capture.sglang import outcomes, table  # noqa: E402

#: The non-blind parts only: holdout13/ and holdout14/ are the blind measure and never read here.
PARTS = ["", "holdout"] + [f"holdout{i}" for i in range(2, 13)]

_ALL = table.load_signatures


def use_rows(generic_only: bool) -> None:
    """Classify with every row, or with the generic rows only (the caches rebuilt)."""
    rows = _ALL()
    chosen = tuple(s for s in rows if s.generic) if generic_only else rows
    table.load_signatures = lambda: chosen  # type: ignore[assignment]
    table.compiled.cache_clear()
    table.extras.cache_clear()


def corpus(logs: Path) -> list[tuple[str, str, Path]]:
    out = []
    for folder in PARTS:
        manifest = logs / folder / "manifest.toml"
        for e in tomllib.loads(manifest.read_text())["log"]:
            out.append((folder or "training", e["expected"], manifest.parent / e["file"]))
    return out


def speed(data: bytes) -> float:
    """MiB/s of the classifier fed ``data`` in line-aligned 1 MiB pieces (as bench_classify)."""
    pieces, at = [], 0
    while at < len(data):
        cut = data.find(b"\n", min(at + (1 << 20), len(data)))
        cut = len(data) if cut < 0 else cut + 1
        pieces.append(data[at:cut])
        at = cut
    t0 = time.perf_counter()
    clf = outcomes.Classifier()
    line = 1
    for piece in pieces:
        clf.feed(piece, line)
        line += piece.count(b"\n")
    took = time.perf_counter() - t0
    assert clf.decide(finished=False).status == "ready"
    return len(data) / (1 << 20) / took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", default=str(ROOT / "tests/fixtures/logs"))
    ap.add_argument("--dump")
    ap.add_argument("--compare")
    ap.add_argument("--speed", action="store_true")
    args = ap.parse_args()
    entries = corpus(Path(args.logs))
    got: dict[str, dict[str, str]] = {}
    for mode in ("all", "generic"):
        use_rows(mode == "generic")
        for part, _exp, path in entries:
            key = str(path.relative_to(Path(args.logs)))
            got.setdefault(key, {})[mode] = outcomes.classify_file(path).status
    use_rows(False)
    per_part: dict[str, Counter[str]] = {}
    per_class: dict[str, Counter[str]] = {}
    generic_confusion: Counter[tuple[str, str]] = Counter()
    false_ready = Counter[str]()
    for part, exp, path in entries:
        g = got[str(path.relative_to(Path(args.logs)))]
        c = per_part.setdefault(part, Counter())
        c["n"] += 1
        c["all"] += g["all"] == exp
        c["generic"] += g["generic"] == exp
        k = per_class.setdefault(exp, Counter())
        k["n"] += 1
        k["all"] += g["all"] == exp
        k["generic"] += g["generic"] == exp
        generic_confusion[(exp, g["generic"])] += 1
        for mode in ("all", "generic"):
            false_ready[mode] += g[mode] == "ready" and exp != "ready"
    tot = Counter[str]()
    print(f"{'part':<11} {'n':>4} {'all rows':>9} {'generic only':>13}")
    for part, c in per_part.items():
        tot.update(c)
        print(f"{part:<11} {c['n']:>4} {c['all']:>9} {c['generic']:>13}")
    print(f"{'total':<11} {tot['n']:>4} {tot['all']:>9} ({100 * tot['all'] / tot['n']:.1f}%) "
          f"{tot['generic']:>5} ({100 * tot['generic'] / tot['n']:.1f}%)")
    print(f"failed logs called ready: all rows {false_ready['all']}, generic only {false_ready['generic']}")
    print("\nper expected class (generic only / all rows):")
    for cls, k in sorted(per_class.items()):
        wrong = Counter({b: v for (a, b), v in generic_confusion.items() if a == cls and b != cls})
        print(f"  {cls:<15} {k['generic']:>3}/{k['n']:<3} (all rows {k['all']}/{k['n']})  generic misses: "
              + ", ".join(f"{b} {v}" for b, v in wrong.most_common()))
    if args.dump:
        Path(args.dump).write_text(json.dumps(got, indent=0, sort_keys=True))
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        exp_of = {str(p.relative_to(Path(args.logs))): e for _part, e, p in entries}
        for mode in ("all", "generic"):
            changed = [(k, before[k][mode], got[k][mode]) for k in got if k in before and before[k][mode] != got[k][mode]]
            fixed = sum(b != exp_of[k] and a == exp_of[k] for k, b, a in changed)
            broke = sum(b == exp_of[k] and a != exp_of[k] for k, b, a in changed)
            print(f"\nchanged with {mode} rows: {len(changed)} (fixed {fixed}, broke {broke})")
            for k, b, a in changed:
                print(f"  {k}: {b} -> {a} (expected {exp_of[k]})")
    if args.speed:
        serving = table.extras()[0]
        blobs = [p.read_bytes() for _part, _e, p in entries]
        runtime = b"".join(ln.rstrip(b"\r\n") + b"\n" for blob in blobs for ln in blob.splitlines(keepends=True)
                           if serving.search(ln))
        data = (runtime * ((32 << 20) // max(1, len(runtime)) + 1))[: 32 << 20]
        print("\nhealthy serving lines (non-blind corpus's), 32 MiB: "
              + ", ".join(f"{speed(data):.0f}" for _ in range(3)) + " MiB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
