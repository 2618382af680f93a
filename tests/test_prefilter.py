"""The classifier's prefilter (logkit/capture/sglang/prefilter.py): which rows read a chunk's lines in
place, and the same-digit runs a line shape hides."""

from __future__ import annotations

import random
import re

import pytest

from logkit.capture.shapes import SHAPE
from logkit.capture.sglang.prefilter import CONTEXT, digit_runs, reach


@pytest.mark.parametrize(("pattern", "lines"), [
    (rb"CUDA error: out of memory", 0),
    (rb"(?i)(?:^|(?<=\r))[^\r\n]{1,2000}", 0),
    (rb"(?m)^Traceback[^\n]*$", 0),  # `$` under MULTILINE: the line's end
    (rb"a.b", 0),  # `.` stops at a line break
    (rb"(?<![\w.])x\b", 0),
    (rb"foo\s+bar", CONTEXT),  # \s holds a line break
    (rb"foo[^x]bar", CONTEXT),
    (rb"(?s)a.b", CONTEXT),
    (rb"line \d+\r?\n +raise", CONTEXT),
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
