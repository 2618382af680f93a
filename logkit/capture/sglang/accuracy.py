"""The accuracy gate: a small shipped question set with exact answers, asked of a ready server.

Contract: :func:`questions` is the set of ``logkit/data/accuracy.toml`` (arithmetic from a fixed seed
and short factual items); :func:`check` asks each (few-shot, :func:`prompt`) of a server's
``/v1/completions`` (greedy, stopped at the line's end), scores the replies by exact match
(:func:`matches`; no reply is a wrong one) and returns an :class:`AccuracyResult`. The launch watcher
runs it after ready for ``--accuracy``: below the threshold the status is ``inaccurate``.
"""

from __future__ import annotations

import functools
import random
from typing import Any, NamedTuple

from ...errors import BadInput
from .table import data

__all__ = ["AccuracyResult", "Question", "check", "default_threshold", "matches", "prompt", "questions", "threshold"]


class Question(NamedTuple):
    """One question and its exact answer."""

    text: str
    answer: str


class AccuracyResult(NamedTuple):
    """A server's answers to the set: the score (share right), the threshold, the wrong ones."""

    total: int
    right: int
    threshold: float
    wrong: list[tuple[str, str, str]]  # (question, expected, got)

    @property
    def score(self) -> float:
        """The share of the questions answered right."""
        return self.right / self.total if self.total else 0.0

    @property
    def passed(self) -> bool:
        """At or above the threshold."""
        return self.score >= self.threshold

    def label(self) -> str:
        """``accuracy 0.62 below 0.90: 15 of 40 answers wrong`` (or ``accuracy 1.00 (40/40)``)."""
        if self.passed:
            return f"accuracy {self.score:.2f} ({self.right}/{self.total})"
        return (f"accuracy {self.score:.2f} below {self.threshold:.2f}: "
                f"{self.total - self.right} of {self.total} answers wrong")


@functools.cache
def _table() -> dict[str, Any]:
    return data("accuracy.toml")


def default_threshold() -> float:
    """The table's ``threshold``."""
    return float(_table()["threshold"])


def threshold(text: str) -> float:
    """A ``--accuracy`` threshold from the command line: a share between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"--accuracy {text!r} is not a number", fix="--accuracy 0.9 (a share of the questions)") from None
    if not 0.0 <= value <= 1.0:
        raise BadInput(f"--accuracy {text}: the threshold is a share of the questions, 0 to 1",
                       fix="--accuracy 0.9") from None
    return value


@functools.cache
def questions() -> tuple[Question, ...]:
    """The set: the generated arithmetic, then the factual items."""
    t = _table()
    a = t["arithmetic"]
    rng = random.Random(int(a["seed"]))
    out: list[Question] = []
    for _ in range(int(a["count"])):
        x, y, op = rng.randint(a["low"], a["high"]), rng.randint(a["low"], a["high"]), rng.choice(a["ops"])
        value = x + y if op == "+" else x - y if op == "-" else x * y
        out.append(Question(f"What is {x} {op} {y}?", str(value)))
    out += [Question(f["question"], str(f["answer"])) for f in t["fact"]]
    return tuple(out)


def prompt(question: str) -> str:
    """The few-shot prompt for ``question``."""
    t = _table()
    shots = "".join(f"Question: {s['question']}\nAnswer: {s['answer']}\n\n" for s in t["shot"])
    return f"{t['instruction']}\n\n{shots}Question: {question}\nAnswer:"


def matches(reply: str | None, answer: str) -> bool:
    """Exact match of a reply's first line: case, surrounding space and a final period ignored."""
    if reply is None:
        return False
    first = reply.strip().splitlines()[0] if reply.strip() else ""
    return first.strip().rstrip(".").strip().casefold() == answer.casefold()


def check(base: str, *, model: str = "default", api_key: str | None = None, threshold: float | None = None,
          timeout: float = 60.0) -> AccuracyResult:
    """Ask every question of the server at ``base`` and score the replies (never raises for a reply)."""
    from .smoke import post_json  # the one small JSON POST of the capture side (auth header included)

    limit = default_threshold() if threshold is None else threshold
    wrong: list[tuple[str, str, str]] = []
    items = questions()
    for q in items:
        body = {"model": model, "prompt": prompt(q.text), "max_tokens": int(_table()["max_tokens"]),
                "temperature": 0, "stop": ["\n"]}
        try:
            reply = str(post_json(f"{base}/v1/completions", body, timeout, api_key)["choices"][0].get("text") or "")
        except Exception as exc:  # noqa: BLE001 - an unanswered question is a wrong answer, never a crash
            reply = f"(no reply: {type(exc).__name__}: {exc})"
        if not matches(reply, q.answer):
            wrong.append((q.text, q.answer, reply.strip()[:200]))
    return AccuracyResult(len(items), len(items) - len(wrong), limit, wrong)
