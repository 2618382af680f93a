"""The classifier's prefilter (logkit/capture/sglang/prefilter.py): which rows read a chunk's lines in
place, and the same-digit runs a line shape hides."""

from __future__ import annotations

import random
import re

import pytest

from logkit.capture.shapes import SHAPE
from logkit.capture.sglang.prefilter import CONTEXT, SERVER_LINES, digit_runs, reach


@pytest.mark.parametrize(("pattern", "lines"), [
    (rb"CUDA error: out of memory", 0),
    (rb"(?i)(?:^|(?<=\r))[^\r\n]{1,2000}", 0),
    (rb"(?m)^Traceback[^\n]*$", 0),  # `$` under MULTILINE: the line's end
    (rb"a.b", 0),  # `.` stops at a line break
    (rb"(?<![\w.])x\b", 0),
    (rb"foo\s+bar", CONTEXT),  # \s holds a line break
    (rb"foo[^x]bar", 1),  # one character that may be a line break: the next line at most
    (rb"(?s)a.b", 1),
    (rb"line \d+\r?\n +raise", 1),
    (rb"(?m)^a[^\n]*(?=\n[^\n]*b)", 1),  # a lookahead reads the next line
    (rb"a\nb\nc", 2),
    (rb"a\nb\nc\nd", CONTEXT),  # more than CONTEXT
    (rb"(a\n?)x\1", CONTEXT),  # a group's text again: what it holds is not counted
    (rb"done$", CONTEXT),  # `$` without MULTILINE: also before a last line break
    (rb"done\Z", CONTEXT),
    (rb"x*", CONTEXT),  # can match nothing
])
def test_reach_reads_a_regex_for_line_breaks(pattern: bytes, lines: int) -> None:
    assert reach(re.compile(pattern)) == lines


def test_a_line_local_regex_finds_in_place_what_the_whole_text_holds() -> None:
    """``finditer(text, lo, hi)`` over a line sees the text around it: lookbehinds and ``^`` as in a
    scan of the whole text."""
    regex = re.compile(rb"(?m)(?<![\w.])error: \w+|^ab\b")
    text = b"x.error: no\nerror: yes\nab error: also\n"
    whole = [m.span() for m in regex.finditer(text)]
    lines = [m.span() for lo, hi in ((0, 12), (12, 23), (23, 38)) for m in regex.finditer(text, lo, hi)]
    assert whole == lines and len(whole) == 3


def test_digit_runs_are_the_lines_with_one_digit_six_times() -> None:
    same = re.compile(rb"([1-9])\1{5}")
    rng = random.Random(20)
    for _ in range(3000):
        text = bytes(rng.choice(b"01234567899999 a:\n") for _ in range(rng.randint(1, 90)))
        got = digit_runs(text, text.translate(SHAPE))
        assert {text.rfind(b"\n", 0, at) for at in got} == {text.rfind(b"\n", 0, m.start()) for m in same.finditer(text)}
        assert all(same.match(text, at) for at in got)


# --- the garbage scan's kinds of line: judged once, on the shape ----------------------------------

#: Triton's gRPC start-up lines (tests/fixtures/logs/dev21): a 20-letter run, a garbage candidate
_TRITON = "I0304 23:44:{s:02d}.{us:06d} 1 grpc_server.cc:102] Ready for RPC 'CudaSharedMemoryRegister', 0\n"


def _healthy(n: int) -> bytes:
    return "".join(_TRITON.format(s=i % 60, us=(i * 7919) % 1000000) for i in range(n)).encode()


def test_a_healthy_line_with_a_candidate_run_is_judged_once() -> None:
    """The kind of a line holding a candidate run but no garbage (whatever its digits and case) is
    scanned when first seen, judged once when it comes back, then known clean: a chunk of such lines
    is read by nothing."""
    from logkit.capture.sglang import outcomes
    from logkit.capture.sglang.smoke import GarbageScanner

    kinds = outcomes._line_kinds()
    judged: list[bytes] = []
    judge = kinds.judge
    kinds.judge = lambda shape: judged.append(shape) or judge(shape)  # type: ignore[assignment, misc, func-returns-value]
    chunk = _healthy(300)
    assert GarbageScanner().candidates(chunk)  # each line holds a candidate run
    norm = chunk.translate(SHAPE)
    assert kinds.read(chunk, norm, norm.split(b"\n"), 1).garbage == list(range(300))  # first sight: scanned
    for first in (301, 601):  # back: judged once, then clean
        assert kinds.read(chunk, norm, norm.split(b"\n"), first).garbage == []
    assert len(judged) == 1
    assert kinds.clean.issuperset(chunk.translate(SHAPE).split(b"\n"))
    clf = outcomes.Classifier()
    for first in range(1, 3000, 300):
        clf.feed(chunk, first)
    assert clf.decide(finished=False).status == "ready"  # Triton serving gRPC, no garbage


@pytest.mark.parametrize("bad", [
    "Answer: TheTheTheTheTheTheTheThe",
    "I0304 23:44:28.443219 1 grpc_server.cc:102] Ready for RPC 'SystemSharedMemoryRegister', '777777'",
    "I0304 23:44:28.443219 1 grpc_server.cc:102] Ready for RPC 'ToToToToToToToToToToToToToTo', 0",
    "reply: the the the the the the the the the the the the",
    "reply: parsing parsing and and environment environment variables variables now now here here",
    "Assistant: ... embarked Sol existed trainer Tunisia replacing Wash Bac knowing franchise Premier "
    "sun lacked Tight circulating survived polishing policy redund Blocks visibly gorgeous freeway",
])
def test_garbage_among_repeated_healthy_lines_is_still_caught(bad: str) -> None:
    """Garbage after the healthy kinds were judged clean (a line of a clean kind's shape, or of another)."""
    from logkit.capture.sglang.outcomes import Classifier

    clf = Classifier()
    chunk = _healthy(300)
    for first in range(1, 3000, 300):
        clf.feed(chunk, first)
    assert clf.decide(finished=False).status == "ready"
    clf.feed(_healthy(10) + bad.encode() + b"\n" + _healthy(10), 3001)
    got = clf.decide(finished=False)
    assert got.status == "garbage" and 3011 in [e.line for e in got.evidence]


def _variants(rng: random.Random, shape: str) -> list[str]:
    """Lines of the shape ``shape``: each letter in either case, each ``0`` any digit (some alike)."""
    out = []
    for _ in range(6):
        digits = rng.choice(["0123456789", "1", "7", "12"])
        out.append("".join(rng.choice(digits) if c == "0" else c.upper() if c.isalpha() and rng.random() < 0.5 else c
                           for c in shape))
    return out


_PIECES = [
    "I0304", "23:44:28.443219", "1", "grpc_server.cc:102]", "Ready", "for", "RPC", "'SystemSharedMemoryStatus',", "0",
    "abab" * 4, "ToTo" * 4, "xyz" * 7, "'" + "0" * 7 + "'", "0" * 7, "#token:", "000000,", "id=000000", "a0" * 6,
    "0-" * 7, "the", "the the the the the the", "word word", "and and", "nan,", "<|im_end|>", "<unk>", "----------",
    "==========", "!!!!!!", "0x00000000", "Sol", "Tunisia", "embarked", "franchise", "visibly", "policy", "the,",
    "ThisIsAVeryLongIdentifierName", "INFO", "Decode", "batch,", "#running-req:", "000,", "tokens/s",
]


def test_property_a_shape_judged_clean_holds_no_garbage() -> None:
    """``may_degenerate`` is False only for shapes no line of which is degenerate: lines made of
    pieces, each in several cases and with any digits, against :func:`degenerate_line` on each."""
    from logkit.capture.sglang.smoke import degenerate_line, may_degenerate

    rng = random.Random(23)
    garbage = judged_clean = 0
    for _ in range(3000):
        line = " ".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 14)))
        shape = line.encode().translate(SHAPE).decode()
        bad = [v for v in [line, *_variants(rng, shape)] if degenerate_line(v) is not None]
        garbage += bool(bad)
        if not may_degenerate(shape):
            judged_clean += 1
            assert bad == [], (shape, bad)
    assert judged_clean > 300 and garbage > 1000


# --- needles that name their digits -----------------------------------------------------------------


def test_a_needle_naming_a_digit_is_read_only_where_the_line_holds_that_digit() -> None:
    """A needle whose digits are all 0 takes any digit (a shape); one holding another digit names its
    digits: the lines of a shape holding it are each looked at, case ignored."""
    from logkit.capture.sglang.prefilter import LineKinds, needle_key

    kinds = LineKinds({needle_key(b"Running: 1"): (0,), needle_key(b"e0000 00:00"): (1,)}, None)
    lines = [b"INFO Running: 0 reqs", b"INFO running: 1 reqs", b"INFO RUNNING: 7 reqs", b"E0303 11:40 x", b"INFO Running: 1 reqs"]
    chunk = b"\n".join(lines * 50) + b"\n"
    norm = chunk.translate(SHAPE)
    for first in (1, 252):  # learnt, then remembered
        reading = kinds.read(chunk, norm, norm.split(b"\n"), first)
        got = {g: sorted(i for key in keys for i in reading.lines[key][1]) for g, keys in reading.groups.items()}
        assert got == {0: sorted(k * 5 + j for k in range(50) for j in (1, 4)), 1: [k * 5 + 3 for k in range(50)]}
    assert kinds.read(b"INFO Running: 0 reqs\n" * 9, b"info running: 0 reqs\n" * 9, [b"info running: 0 reqs"] * 9 + [b""], 1).clean


def test_a_stalled_vllm_engine_after_idle_statistics_is_a_hang() -> None:
    """vLLM's idle statistics (Running: 0) are read by no row; two stalled intervals after hundreds of
    them are still the stall row's evidence."""
    from logkit.capture.sglang.outcomes import Classifier

    line = ("INFO 08-21 14:{m:02d}:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: 0.0 tokens/s, Running: {r} reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\n")
    idle = "".join(line.format(m=i // 60 % 60, s=i % 60, r=0) for i in range(600)).encode()
    clf = Classifier()
    clf.feed(idle, 1)
    assert clf._kinds is not None and not clf._lines_to_read(idle, idle.translate(SHAPE), idle.translate(SHAPE).split(b"\n"), 1).lines
    clf.feed(idle[:2000], 601)
    stalled = (line.format(m=1, s=1, r=3) + line.format(m=1, s=11, r=3)).encode()
    first = 601 + idle[:2000].count(b"\n")
    clf.feed(stalled, first)
    assert [h.line for h in clf.hits.get("vllm-stalled-statistics", [])] == [first]
    assert clf.decide(exit_code=1).status == "hang"  # weak evidence: it counts once the run ended badly


# --- the generic layer's failure-line gate --------------------------------------------------------------


@pytest.mark.slow  # every family over every corpus log: CI's full run
def test_the_generic_families_share_one_failure_line_gate_that_every_match_passes() -> None:
    """Each failure-line family of the generic layer carries the layer's failure-line shapes as its gate,
    and on every corpus log each line a family matches is a line the gate matches (so reading only
    those lines loses no match)."""
    from pathlib import Path

    from logkit.capture.sglang.table import generic_rows

    families = [s for s in generic_rows() if not s.id.endswith("-line")]
    assert len(families) >= 10 and len({s.gate for s in families}) == 1 and families[0].gate
    gate = re.compile(families[0].gate.encode())
    logs = sorted((Path(__file__).parent / "fixtures" / "logs").rglob("*.log"))
    matched = 0
    for sig in families:
        regex = re.compile(sig.pattern.encode())
        for path in logs:
            blob = path.read_bytes()
            for m in regex.finditer(blob):
                start = blob.rfind(b"\n", 0, m.start()) + 1
                end = blob.find(b"\n", m.start())
                assert gate.search(blob, start, len(blob) if end < 0 else end), (sig.id, path.name)
                matched += 1
    assert matched > 500  # the corpus shows the families at work


def test_a_line_holding_a_needle_but_no_failure_shape_is_read_by_no_family() -> None:
    """A healthy line that holds the layer's needles ("default", "errors=0") but no failure line's shape
    is tried by the gate once, by no family; a failure line among them is still every family's."""
    from logkit.capture.sglang.outcomes import Classifier

    healthy = ("2026-12-07T10:00:{s:02d}Z INFO generate{{parameters=GenerateParameters {{ default_return_full_text: "
               "true, errors_seen: 0 }}}}: Success\n")
    chunk = "".join(healthy.format(s=i % 60) for i in range(400)).encode()
    clf = Classifier()
    norm = chunk.translate(SHAPE)
    reading = clf._lines_to_read(chunk, norm, norm.split(b"\n"), 1)
    assert reading.lines  # the needles are there: the generic group reads these lines without its gate
    from logkit.capture.sglang.table import compiled

    family = next(r for r in compiled()[0] if r[1].id == "generic-arch")
    assert reading.runs(family[4], family[0]) and not reading.runs(family[4], family[0], family[1].gate, chunk)
    clf.feed(chunk, 1)
    assert not [k for k in clf.hits if k.startswith("generic-")]
    bad = b"RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    clf.feed(chunk[:2000] + bad, 401)
    line = 401 + chunk[:2000].count(b"\n")
    assert [h.line for h in clf.hits.get("generic-arch", [])] == [line]


# --- the needle contract, on texts made from each row's regex ---------------------------------------------


def _needle_rows() -> list:
    from logkit.capture.sglang.table import compiled

    return [pytest.param(regex, sig, id=sig.id) for regex, sig, needles, _by_lines, _g in compiled()[0] if needles is not None]


@pytest.mark.slow
@pytest.mark.parametrize(("regex", "sig"), _needle_rows())
def test_every_text_a_row_matches_holds_one_of_its_needles(regex: re.Pattern[bytes], sig) -> None:
    """The prefilter's contract (signatures.toml, sglang.toml's families): every match of a row's regex lies
    on a line holding one of its needles (and matched by its gate, when it has one), as the prefilter compares them (a shape; a needle naming a digit
    other than 0 as written, case ignored), or within the lines it reads around them (:func:`reach`).
    Checked on texts hypothesis makes from the regex itself, so a form the pattern takes that no needle
    names ('stop responding' beside 'stops responding', 'out-of memory') fails here rather than on a log
    nobody has yet. ASCII text for an ASCII pattern (the classifier's regexes are bytes: ``\\d`` and ``\\s``
    are ASCII), the pattern's own bytes otherwise."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from logkit.capture.sglang.prefilter import needle_key

    keys = [needle_key(n.encode()) for n in sig.needles]
    around = reach(regex)
    gate = re.compile(sig.gate.encode()) if sig.gate and not around else None
    seen = []
    if sig.pattern.isascii():
        texts = st.from_regex(sig.pattern, fullmatch=False, alphabet=st.characters(codec="ascii")).map(str.encode)
    else:
        texts = st.from_regex(regex.pattern, fullmatch=False)

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(texts)
    def check(data: bytes) -> None:
        m = regex.search(data)
        if m is None:  # a word boundary or lookaround hypothesis did not honour at the text's edge: on a line of its own
            data = b"\n" + data + b"\n"
            m = regex.search(data)
        if m is None:
            return
        seen.append(1)
        lo, hi = m.start(), m.end()
        for _ in range(around + 1):  # the match's lines, and those the row reads around a needle's line
            lo = data.rfind(b"\n", 0, max(0, lo - 1)) + 1 if lo else 0
            end = data.find(b"\n", hi + (1 if _ else 0))
            hi = len(data) if end < 0 else end
        lines = data[lo:hi]
        shape, lower = lines.translate(SHAPE), lines.lower()
        assert any(key in (shape if key == key.translate(SHAPE) else lower) for key in keys), (sig.id, m.group(0)[:200])
        if gate is not None:  # a row's gate is tried on each line alone: it holds on the match's line
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.start())
            assert gate.search(data, start, len(data) if end < 0 else end), (sig.id, "gate", m.group(0)[:200])

    check()
    assert seen, f"{sig.id}: hypothesis made no text its regex matches"


def _server_patterns() -> list:
    from logkit.capture.sglang.table import data

    cfg = data("sglang.toml")
    return [pytest.param(p, id=p[:40]) for p in [*cfg["server_patterns"], re.escape(cfg["ready_pattern"])]]


@pytest.mark.slow
@pytest.mark.parametrize("pattern", _server_patterns())
def test_every_server_line_holds_one_of_the_server_needles(pattern: str) -> None:
    """Only the lines holding one of ``server_needles`` (sglang.toml, as shapes) are searched for an SGLang
    server's own lines: every text a server pattern matches holds one (texts made from the pattern)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from logkit.capture.sglang.prefilter import needle_key
    from logkit.capture.sglang.table import server_regexes

    keys = [needle_key(n).translate(SHAPE) for n in server_regexes()[3]]
    regex = re.compile(pattern.encode())

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, fullmatch=True, alphabet=st.characters(codec="ascii")).map(str.encode))
    def check(data: bytes) -> None:
        assert regex.fullmatch(data)
        assert any(key in data.translate(SHAPE) for key in keys), data

    check()


def test_a_server_line_after_another_engines_chunks_is_found_where_it_is() -> None:
    """A log of another engine's lines holds no server needle: no chunk of it is searched for a server
    line, and the first SGLang line after megabytes of them is still found, at its line."""
    from logkit.capture.sglang.outcomes import Classifier

    other = b"".join(b'INFO:     10.0.0.%d:5%04d - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' % (i % 250, i)
                     for i in range(20000))
    clf = Classifier()
    clf.feed(other, 1)
    assert clf.server_line is None
    reading = clf._lines_to_read(other, other.translate(SHAPE), other.translate(SHAPE).split(b"\n"), 1)
    assert SERVER_LINES not in reading.groups  # nothing in it to search
    late = other[:5000] + b"[2026-12-06 10:00:00 DP1 TP3] Decode batch. #running-req: 1, #token: 9\n"
    clf.feed(late, 20001)
    assert clf.server_line == 20001 + other[:5000].count(b"\n")


# --- a request's input, echoed by a server's request log, is evidence of nothing --------------------------

_SALAD = " ".join(["Xylo", "quarz", "Blen", "murk", "Tova", "snib", "Prek", "wunt"] * 4)  # word salad: garbage if output
_VLLM_REQUEST = ("INFO 12-06 10:00:{s:02d} [logger.py:39] Received request chatcmpl-{i:032x}: prompt: '<|im_start|>user\\n{p}"
                 "<|im_end|>\\n', params: SamplingParams(n=1, temperature=0.7), prompt_token_ids: None, lora_request: None.\n")


def test_without_inputs_cuts_each_echoed_input_and_keeps_every_line() -> None:
    from logkit.capture.sglang.prefilter import without_inputs
    from logkit.capture.sglang.table import input_spans

    text = (b"a\n" + _VLLM_REQUEST.format(s=1, i=7, p="CUDA out of memory").encode()
            + b"[t] Finish: obj=GenerateReqInput(text='q'), out={'text': 'fine'}\n[t] Receive: obj=GenerateReqInput(text='x')\nz")
    cut = without_inputs(text, input_spans()[1])
    assert cut.count(b"\n") == text.count(b"\n")
    assert cut.splitlines() == [b"a", b"INFO 12-06 10:00:01 [logger.py:39] ", b"[t] , out={'text': 'fine'}", b"[t] ", b"z"]
    plain = b"no request here\n"
    assert without_inputs(plain, input_spans()[1]) is plain
    # an input that names another span's start: each span still ends where its own does
    twice = b"[t] Finish: obj=GenerateReqInput(text='Receive: obj=x'), out={'text': 'ok'}\n"
    assert without_inputs(twice, input_spans()[1]) == b"[t] , out={'text': 'ok'}\n"


def test_an_echoed_input_after_known_clean_chunks_is_still_cut() -> None:
    """A chunk whose lines are all known clean is not searched for a request's input (a clean line holds
    none of the inputs' literals: they are needles); a request line in a later chunk still is, and is cut."""
    from logkit.capture.sglang.outcomes import Classifier

    served = b'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' * 200
    clf = Classifier()
    clf.feed(served, 1)
    clf.feed(served, 201)
    assert clf._kinds is not None and clf._kinds.clean.issuperset(served.translate(SHAPE).split(b"\n"))
    quoting = _VLLM_REQUEST.format(s=1, i=1, p="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    clf.feed(served + quoting.encode(), 401)
    assert clf.decide(finished=False).status == "ready"


def test_a_prompt_quoting_an_error_or_reading_as_garbage_is_no_evidence() -> None:
    """A healthy vLLM server logging its requests: a user's prompt that quotes an OOM, a benchmark's random
    prompt, and SGLang's logged request input stay a served run; SGLang's logged reply is still read."""
    from logkit.capture.sglang.outcomes import classify_text

    served = 'INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    quoting = _VLLM_REQUEST.format(s=1, i=1, p="Why do I get torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB?")
    assert classify_text(quoting + served).status == "ready"
    assert classify_text("".join(_VLLM_REQUEST.format(s=i, i=i, p=_SALAD) for i in range(20)) + served).status == "ready"
    ready = "[2026-12-06 10:00:00] The server is fired up and ready to roll!\n"
    assert classify_text(ready + f"[2026-12-06 10:00:01] Receive: obj=GenerateReqInput(text='{_SALAD}')\n").status == "ready"
    reply = "[2026-12-06 10:00:01] Finish: obj=GenerateReqInput(text='hi'), out={'text': '" + "!" * 40 + "', 'meta_info': {}}\n"
    assert classify_text(ready + reply).status == "garbage"
    # the request line itself still shows the server serving; the same words outside a request's echo still count
    assert classify_text(_VLLM_REQUEST.format(s=1, i=2, p="hi")).status == "ready"
    assert classify_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n").status == "oom"


def test_once_the_server_line_is_found_a_servers_batch_lines_are_read_by_nothing() -> None:
    """The server needles (``Decode batch``, `` TP0``) make an SGLang server's batch lines worth a look only
    until its first own line is found; then their kinds are clean and a chunk of them is read by no row."""
    from logkit.capture.sglang.outcomes import Classifier

    batch = b"".join(b"[2026-12-06 10:00:%02d TP%d] Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, "
                     b"gen throughput (token/s): %d.00, #queue-req: 0\n" % (i % 60, i % 8, i % 90 + 1, i * 37, i % 100, i % 999)
                     for i in range(3000))
    clf = Classifier()
    clf.feed(batch, 1)
    assert clf.server_line == 1
    shapes = batch.translate(SHAPE).split(b"\n")
    reading = clf._lines_to_read(batch, batch.translate(SHAPE), shapes, 3001)
    assert reading.clean and not reading.lines
    assert all(SERVER_LINES not in owners for owners in clf._kinds.needles.values())  # type: ignore[union-attr]
