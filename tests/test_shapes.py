"""The clean-line-shape memory (logkit/capture/shapes.py) shared by the classifier and the redactor:
whatever was learnt, a line it calls clean holds no needle, in any case, with any digits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from logkit.capture.shapes import CleanShapes

NEEDLES = (b"api_key", b"sm90", b"error", b"-----begin")
_LINE = st.lists(st.sampled_from([b"Api_Key", b"API_KEY", b"sm80", b"sm90", b"SM91", b"ERROR", b"err", b"or",
                                  b"x", b" ", b"12", b"-----BEGIN", b"-", b"=", b"token"]), max_size=8).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(learnt=st.lists(_LINE, max_size=30), lines=st.lists(_LINE, min_size=1, max_size=10))
def test_a_line_called_clean_holds_no_needle_in_any_case(learnt: list[bytes], lines: list[bytes]) -> None:
    memory = CleanShapes(NEEDLES)
    data = b"\n".join(learnt)
    memory.learn(memory.shapes(data))
    chunk = b"\n".join(lines)
    shapes = memory.shapes(chunk)
    if memory.all_clean(shapes) or memory.learn(shapes):
        low = chunk.lower()
        assert not [n for n in NEEDLES if n in low]


def test_marks_make_a_line_unclean_and_unclean_shapes_are_not_tested_again() -> None:
    calls: list[bytes] = []

    def marks(data: bytes) -> list[int]:
        calls.append(data)
        return [i for i in range(len(data)) if data.startswith(b"!!!!!!", i)]

    memory = CleanShapes(NEEDLES, marks)
    lines = [b"fine line %d" % i for i in range(20)] + [b"shout !!!!!!!", b"an error here"]
    assert not memory.learn(memory.shapes(b"\n".join(lines)))
    assert memory.all_clean(memory.shapes(b"fine line 7\nfine line 99"))
    assert b"shout !!!!!!!" in memory.unclean and b"an error here" in memory.unclean
    calls.clear()
    assert not memory.learn(memory.shapes(b"fine line 1\nshout !!!!!!!\nAN ERROR HERE"))
    assert calls == []  # nothing new: nothing tested


def test_a_needle_with_a_line_break_turns_the_memory_off() -> None:
    memory = CleanShapes([b"-----begin key-----\nabc"])
    assert not memory.usable
    assert not memory.learn(memory.shapes(b"plain\nlines"))
    assert not memory.all_clean(memory.shapes(b"plain"))
