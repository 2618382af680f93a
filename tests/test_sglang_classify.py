"""The outcome classifier on the corpus of real SGLang logs, and its decision rules."""

from __future__ import annotations

import bisect
import copy
import itertools
import tomllib
from pathlib import Path
from typing import Any

import pytest

from logkit.capture.shapes import SHAPE
from logkit.capture.sglang.outcomes import Classifier, classify_file, classify_text, load_signatures
from logkit.events import OUTCOME_STATUSES

LOGS = Path(__file__).parent / "fixtures" / "logs"
HOLDOUT = LOGS / "holdout"
MANIFEST = tomllib.loads((LOGS / "manifest.toml").read_text())["log"]
HELD = tomllib.loads((HOLDOUT / "manifest.toml").read_text())["log"]
#: the later hold-outs, holdout2 ... holdoutN in order, each (folder, its entries): each was blind on its
#: first measure (bench/bench_classify.py keeps that figure); none gets an accuracy floor here
LATER = [(LOGS / f"holdout{n}", tomllib.loads((LOGS / f"holdout{n}" / "manifest.toml").read_text())["log"])
         for n in sorted(int(p.name[7:]) for p in LOGS.glob("holdout[0-9]*") if (p / "manifest.toml").is_file())]
#: development parts (dev21, dev22, ...): labelled before any run, then developed on; checked like the later parts
LATER += [(p, tomllib.loads((p / "manifest.toml").read_text())["log"])
          for p in sorted(LOGS.glob("dev[0-9]*")) if (p / "manifest.toml").is_file()]


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corpus_log_gets_expected_class(entry: dict) -> None:
    got = classify_file(LOGS / entry["file"])
    if entry.get("known_miss"):
        # A recorded miss stays honest: when it starts passing, the manifest must say so.
        assert got.status != entry["expected"], "known_miss now classified right: remove known_miss"
        return
    assert got.status == entry["expected"], got.label
    if entry["expected"] != "ready":
        assert got.evidence, "a failure must come with the lines that show it"


def test_holdout_accuracy_and_no_failed_launch_called_ready() -> None:
    """The hold-out part is measured as a whole (rows are never tuned log by log on it)."""
    got = [(e, classify_file(HOLDOUT / e["file"])) for e in HELD]
    right = sum(d.status == e["expected"] for e, d in got)
    assert right / len(HELD) >= 0.95, [(e["file"], d.status) for e, d in got if d.status != e["expected"]]
    assert not [e["file"] for e, d in got if d.status == "ready" and e["expected"] != "ready"]


@pytest.mark.parametrize(("part", "entries", "earlier"),
                         [(part, entries, MANIFEST + HELD + [e for _p, es in LATER[:k] for e in es])
                          for k, (part, entries) in enumerate(LATER)],
                         ids=[part.name for part, _e in LATER])
def test_later_holdouts_never_ready_when_failed_never_abandoned(part: Path, entries: list[dict], earlier: list[dict]) -> None:
    """The later parts get no accuracy floor here (a floor would invite tuning on them; their
    figures are bench/bench_classify.py's): only the rules no log may break."""
    got = [(e, classify_file(part / e["file"])) for e in entries]
    assert not [e["file"] for e, d in got if d.status == "ready" and e["expected"] != "ready"]
    assert not [e["file"] for e, d in got if d.status == "abandoned"]
    assert not {e["source"] for e in entries} & {e["source"] for e in earlier}, "new threads only"


@pytest.mark.parametrize(("part", "entries"), [(LOGS, MANIFEST), (HOLDOUT, HELD), *LATER],
                         ids=["training", "holdout", *[part.name for part, _e in LATER]])
def test_corpus_is_real_and_complete(part: Path, entries: list[dict]) -> None:
    files = {p.name for p in part.glob("*.log")}
    assert files == {e["file"] for e in entries}
    for e in entries:
        assert e["source"].startswith(("https://", "local:")), e
        assert e["expected"] in OUTCOME_STATUSES


def test_corpus_size_and_class_coverage() -> None:
    every = MANIFEST + HELD
    assert len(every) >= 80
    assert not {e["file"] for e in MANIFEST} & {e["file"] for e in HELD}
    assert not {e["source"] for e in MANIFEST} & {e["source"] for e in HELD}, "hold-out reports are new reports"
    counts: dict[str, int] = {}
    for e in every:
        counts[e["expected"]] = counts.get(e["expected"], 0) + 1
    # Every class a log alone can show (exit_ok, interrupted and abandoned need the process's exit;
    # inaccurate, the accuracy gate's answers).
    for status in set(OUTCOME_STATUSES) - {"exit_ok", "interrupted", "abandoned", "incomplete", "inaccurate"}:
        assert counts.get(status, 0) >= 4, (status, counts.get(status, 0))


def test_signature_table_rows_are_valid() -> None:
    sigs = load_signatures()
    assert len({s.id for s in sigs}) == len(sigs)
    assert {s.status for s in sigs} <= set(OUTCOME_STATUSES)
    assert all(s.label and s.source and s.source_file for s in sigs)
    # Several independent texts (rows) per failure class, each citing where the text comes from.
    for status in ("arch_mismatch", "missing_kernel", "jit_error", "oom", "nan", "nccl", "hang", "killed",
                   "import_error", "arg_error", "other_crash"):
        assert len([s for s in sigs if s.status == status]) >= 2, status


def test_streaming_in_pieces_equals_whole_file() -> None:
    raw = (LOGS / "nan-sglang-1953.log").read_bytes() + (LOGS / "docs-notebook-026.log").read_bytes()
    whole = classify_text(raw)
    clf = Classifier()
    lines = [ln + b"\n" for ln in raw.split(b"\n")[:-1]]  # \n only: progress bars keep their \r
    for i in range(0, len(lines), 3):
        clf.feed(b"".join(lines[i : i + 3]), i + 1)
    piecewise = clf.decide(finished=False)
    assert (piecewise.status, [e.line for e in piecewise.evidence]) == (whole.status, [e.line for e in whole.evidence])
    assert piecewise.status == "nan" and piecewise.ready  # NaN after the ready line: nan, ready recorded


def test_uvicorn_running_is_not_readiness() -> None:
    text = (LOGS / "nan-sglang-1953.log").read_text()
    head = text.split("[2024-11-08 04:43:59]")[0]
    assert "Uvicorn running" in head
    assert not classify_text(head).ready


def test_uvicorn_startup_is_readiness_only_outside_sglang() -> None:
    """Another server (vLLM, LMDeploy) builds its engine before uvicorn starts: its startup done is
    ready; SGLang warms up after uvicorn starts, so a log with an SGLang line (today's or 0.1's
    ``[gpu_id=N]`` model runner) is not."""
    uvicorn = ("INFO:     Started server process [1]\nINFO:     Waiting for application startup.\n"
               "INFO:     Application startup complete.\n"
               "INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)\n")
    d = classify_text("2026-01-01 00:00:00,000 - lmdeploy - INFO - builder.py:1 - engine built\n" + uvicorn)
    assert (d.status, d.ready, d.ready_line) == ("ready", True, 4)
    for sglang in ("[2026-01-01 00:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=15.61 GB\n",
                   "[gpu_id=0] max_total_num_tokens=328021, max_prefill_tokens=16384, context_len=32768\n"):
        d = classify_text(sglang + uvicorn)
        assert (d.status, d.ready) == ("incomplete", False), sglang
    # vLLM's API server prefixes uvicorn's lines with its process
    assert classify_text("(APIServer pid=1) INFO:     Application startup complete.\n").status == "ready"
    # uvicorn's lines quoted inside prose or another logger's message are not its own
    assert classify_text("the log ends at INFO:     Application startup complete. and nothing after\n").status == "incomplete"


def test_healthy_log_words_are_not_failures() -> None:
    line = "[2025-01-01 00:00:00] Ignore import error when loading sglang.srt.models.mllama4: No module named 'x'\n"
    assert classify_text(line).status == "incomplete"


@pytest.mark.parametrize(
    ("kw", "status"),
    [
        ({"exit_code": 0}, "exit_ok"),
        ({"exit_code": None, "signal": 9}, "killed"),
        ({"exit_code": None, "signal": 15}, "interrupted"),
        ({"exit_code": 1}, "other_crash"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True}, "interrupted"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True, "http_ready": True}, "ready"),
        ({"exit_code": None, "signal": 15, "stopped_by_logkit": True, "hang": "no output for 5s"}, "hang"),
    ],
)
def test_decide_without_signatures(kw: dict, status: str) -> None:
    assert Classifier().decide(**kw).status == status


def test_cause_beats_final_kill() -> None:
    raw = (LOGS / "warmup-sglang-16855.log").read_bytes()
    clf = Classifier()
    clf.feed(raw, 1)
    assert clf.decide(exit_code=None, signal=9).status == "other_crash"
    oom = Classifier()
    oom.feed((LOGS / "oom-sglang-4547.log").read_bytes() + b"Killed\n", 1)
    assert oom.decide(exit_code=137).status == "oom"


def _mangled(text: bytes, needles: tuple[bytes, ...]) -> bytes:
    """``text`` with every occurrence of every needle (compared as shapes) broken by a NUL after its first byte."""
    shaped = text.translate(SHAPE)
    cuts = set()
    for n in needles:
        at = shaped.find(n)
        while at >= 0:
            cuts.add(at + 1)
            at = shaped.find(n, at + 1)
    cut = sorted(cuts)
    return b"\0".join(text[a:b] for a, b in zip([0, *cut], [*cut, len(text)]))


def _blind(p: Path) -> bool:
    """A log of a blind hold-out (holdout13 on): a failure names neither it nor its text."""
    return p.parent.name.startswith("holdout") and p.parent.name[7:].isdigit() and int(p.parent.name[7:]) >= 13


@pytest.mark.slow  # every row's regex over every corpus log (~40 s at 2,862 logs): CI runs it, the fast lane does not
def test_each_rows_needles_are_required_by_its_regex_on_the_corpus() -> None:
    """A row's ``needles`` (signatures.toml) say which lines it reads (:mod:`logkit.capture.sglang.prefilter`):
    on every corpus log, each match of its regex (on the raw bytes, with the regex's own flags) lies on
    lines holding one of them, as the prefilter compares them (as shapes; a needle naming a digit other
    than 0 as written, case ignored: :func:`~logkit.capture.sglang.prefilter.needle_key`), within the lines
    it reads around them when it can match across lines, and the matched lines with them all broken no
    longer match."""
    from logkit.capture.sglang.prefilter import needle_key
    from logkit.capture.sglang.table import compiled

    logs = [(p, p.read_bytes()) for p in sorted(LOGS.rglob("*.log"))]
    checked = set()
    from logkit.capture.sglang.prefilter import reach as reach_of

    for regex, sig, needles, by_lines, _group in compiled()[0]:
        if needles is None:
            continue
        reach = reach_of(regex) if by_lines else None
        keys = [needle_key(n.encode()) for n in sig.needles]
        for p, blob in logs:
            shaped: list[bytes] = []
            raw: list[bytes] = []
            starts: list[int] = []
            for m in regex.finditer(blob):
                if not shaped:
                    shaped = blob.translate(SHAPE).split(b"\n")
                    raw = blob.lower().split(b"\n")
                    starts = list(itertools.accumulate((len(ln) + 1 for ln in shaped), initial=0))
                first = bisect.bisect_right(starts, m.start()) - 1
                last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
                # a row reads `reach` lines either side of a line holding a needle: one of them must be
                # a line from which the whole match is read
                near = range(max(0, last - (reach or 0)), min(len(shaped), first + (reach or 0) + 1))
                lines = blob[starts[first]: starts[last + 1] - 1]
                where = "a blind log" if _blind(p) else f"{p.name}: {lines[:120]!r}"
                assert any(k in (shaped[j] if k == k.translate(SHAPE) else raw[j]) for j in near for k in keys), \
                    f"{sig.id}: a match on {where} is read from no line holding a needle"
                assert regex.search(_mangled(lines, needles)) is None, f"{sig.id}: {where} matches without its needles"
                checked.add(sig.id)
    with_needles = [s.id for s in load_signatures() if s.needles]
    assert len(checked) >= len(with_needles) // 2, f"only {sorted(checked)} of {len(with_needles)} rows seen in the corpus"


def _every_corpus_log() -> list[Path]:
    return [p for part in (LOGS, HOLDOUT, *[f for f, _e in LATER[:3]]) for p in sorted(part.glob("*.log"))]


def _full_scan(self: Classifier, chunk: bytes, norm: bytes, shapes: list[bytes], first_line: int, *, scan: bool = True) -> None:
    return None  # every row and the garbage scan over every line: no line skipped


def _seen(c: Any) -> tuple[Any, ...]:
    return (c.status, c.label, c.signature, [(e.line, e.text) for e in c.evidence], c.ready, c.ready_line)


def _warmed(warm: bytes, size: int) -> tuple[Classifier, int, int]:
    """A classifier fed the pieces :func:`_stream` cuts from ``warm`` whatever follows it (each ends
    at a line end inside ``warm``), and where the stream goes on: (classifier, next line, next byte)."""
    clf = Classifier()
    line = 1
    at = 0
    while at + size < len(warm) and (end := warm.find(b"\n", at + size)) >= 0:
        clf.feed(warm[at:end + 1], line)
        line += warm.count(b"\n", at, end + 1)
        at = end + 1
    return clf, line, at


def _stream(raw: bytes, warm: bytes, size: int, warmed: tuple[Classifier, int, int] | None = None) -> Any:
    """``warm`` (healthy lines, their shapes learned) then ``raw``, fed in line-aligned pieces of ~size;
    ``warmed`` (:func:`_warmed` of the same ``warm`` and ``size``) skips feeding the pieces every log shares:
    the classifier goes on from a copy of its state after them, as if it had been fed them."""
    clf, line, at = (Classifier(), 1, 0) if warmed is None else (copy.deepcopy(warmed[0]), *warmed[1:])
    data = warm + raw
    while at < len(data):
        cut = data.find(b"\n", min(at + size, len(data)))
        cut = len(data) if cut < 0 else cut + 1
        clf.feed(data[at:cut], line)
        line += data.count(b"\n", at, cut)
        at = cut
    return clf.decide(finished=False)


@pytest.mark.slow  # every corpus log four times (~15 s): CI runs it, the fast lane does not
def test_skipping_known_clean_line_shapes_changes_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefilter (``Classifier._lines_to_read``: each row reads only the lines whose shape holds
    one of its needles) is a speed-up only: every corpus log, read whole and streamed after healthy
    lines in small pieces, gets the very same answer, evidence and line numbers as a scan of every
    line by every row. (The healthy lines' pieces, the same before every log, are fed once per mode.)"""
    logs = {p: p.read_bytes() for p in _every_corpus_log()}
    warm = b"".join(ln for raw in logs.values() for ln in raw.splitlines(keepends=True)
                    if b"Decode batch" in ln or b"Prefill batch" in ln or b"INFO:" in ln) * 5
    assert warm.count(b"\n") > 100
    warmed = _warmed(warm, 2048)
    assert warmed[2] > len(warm) - 4096  # all but the last pieces are shared
    fast = {p.name: (_seen(classify_file(p)), _seen(_stream(raw, warm, 2048, warmed))) for p, raw in logs.items()}
    monkeypatch.setattr(Classifier, "_lines_to_read", _full_scan)
    warmed = _warmed(warm, 2048)
    slow = {p.name: (_seen(classify_file(p)), _seen(_stream(raw, warm, 2048, warmed))) for p, raw in logs.items()}
    assert len(fast) >= 330
    assert [n for n in fast if fast[n] != slow[n]] == []


def test_a_stream_from_a_warmed_copy_is_the_stream_fed_whole() -> None:
    """:func:`_stream` from a copy of the warmed state answers as feeding every piece does."""
    raw = (LOGS / "warmup-sglang-16855.log").read_bytes()
    warm = b"[2026-12-06 10:00:00 TP0] Decode batch, #running-req: 1, #token: 99, token usage: 0.01\n" * 300
    assert _seen(_stream(raw, warm, 2048, _warmed(warm, 2048))) == _seen(_stream(raw, warm, 2048))


@pytest.mark.parametrize(("healthy", "bad", "status"), [
    # a number's digits are hidden in its shape: one digit repeated is still read as garbage
    (b"reply: 1234567 tokens\n", b'reply: "7777777"\n', "garbage"),
    # upper case is lowered in a shape: a failure in capitals after lower-case lines like it
    (b"runtimeerror: cuda error: all fine\n", b"RuntimeError: CUDA error: out of memory\n", "oom"),
])
def test_a_learned_shape_never_hides_a_failure(healthy: bytes, bad: bytes, status: str) -> None:
    clf = Classifier()
    clf.feed(healthy * 500, 1)
    assert clf.decide(finished=False).status == "incomplete"
    clf.feed(healthy * 10 + bad + healthy, 501)
    assert clf.decide(finished=False).status == status


def _read(clf: Classifier, chunk: bytes, first_line: int) -> set[tuple[int, int, int]]:
    """The runs any row reads in ``chunk``."""
    from logkit.capture.sglang.table import compiled

    norm = chunk.translate(SHAPE)
    reading = clf._lines_to_read(chunk, norm, norm.split(b"\n"), first_line)
    return {r for regex, _sig, _needles, by_lines, group in compiled()[0] if by_lines for r in reading.runs(group, regex)}


def test_a_needle_with_a_digit_is_read_whatever_shape_was_learned() -> None:
    clf = Classifier()
    clf.feed(b"arch: expected sm80 or sm100 here\n" * 100, 1)  # its shape holds the sm90 row's needle's: never skipped
    line = b"arch: expected sm90 or sm100 here\n"
    assert (2, 2 + len(line), 102) in _read(clf, b"x\n" + line, 101)  # the second line, read by that row
    clf.feed(b"x\n" + line, 101)
    assert clf.decide(finished=False).signature == "expected-sm90-sm100"
    clf.feed(b"plain line 12\n" * 100, 103)
    assert _read(clf, b"plain line 99\n", 203) == set()
