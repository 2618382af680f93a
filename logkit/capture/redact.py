"""Keep secrets off disk: redaction of argv, environment, events and raw log text.

Contract:

* The patterns are data, in ``logkit/data/secrets.toml`` (env-var names, flag names, text regexes);
  this module only compiles them. Every matched value becomes the placeholder ``[REDACTED]``.
* A :class:`Redactor` made with :meth:`Redactor.for_run` also learns the literal values of the
  secret variables and flags of the run it guards, so a child printing ``$HF_TOKEN`` is caught
  even when the token has no recognisable shape.
  URL passwords in the environment are learned the same way.
* :meth:`Redactor.chunk` is on the recorder's hot path: a prefilter (the ``prefilter`` triggers and
  the learned literals) decides whether the single compiled regex runs at all, and then it runs
  only over the lines around each trigger. The prefilter engine (:mod:`.prefilter`) is Hyperscan,
  else RE2 (both optional: ``logkit[fast]``), else the standard library (one ``bytes.find`` per
  trigger); ``LOGKIT_REDACT_ENGINE=stdlib|re2|hyperscan`` starts the search at that engine. All
  three give the same result. Callers give it complete lines (a secret is never split across two calls; the
  recorder redacts a line flushed in parts with its earlier parts as context).
* Before the joined regex runs over triggered text, *detectors* (each pattern alone, shaped for
  speed by :mod:`.regexshape`: split into literal-first parts, lowered where equivalent, harmless
  values refused inside the regex; on Hyperscan where it takes them) say whether anything would
  change; most triggered text changes nothing and is returned as is. A detector may say yes
  where nothing changes, never no where something would: what is replaced is always the joined
  regex's decision, as before.
* :meth:`Redactor.scrub` walks any JSON-ready value (an event dict): strings are redacted as text,
  and everything under a secret-looking key (``api_key``), also inside lists, is replaced.

Imports only the standard library (the ``logkit run`` start-up must stay light).
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._slotted import Slotted
from .prefilter import ENGINE_ENV, ENGINES, available_engines, prefilter_for
from .regexshape import _group_end, alternatives, first_bytes, literal_prefix, lowerable, unharmless

_DATA = Path(__file__).resolve().parent.parent / "data"

__all__ = ["DENSE_BYTES", "ENGINES", "ENGINE_ENV", "PLACEHOLDER", "Redactor", "Rules", "available_engines", "is_secret_key",
           "load_rules", "redact_keys"]

PLACEHOLDER = "[REDACTED]"
#: unquoted values left alone (the default of ``secrets.toml``'s ``harmless``)
_HARMLESS_SOURCE = r"-?[0-9][0-9.,_]*%?|none|null|true|false|nil"


class Rules(Slotted):
    """The compiled content of ``secrets.toml`` (read-only once made, hashable)."""

    # __slots__, not @dataclass(frozen=True): `dataclasses` costs `logkit run` ~10 ms of start-up.
    __slots__ = ("placeholder", "env_names", "env_re", "flag_names", "flag_pattern", "min_literal", "prefilter",
                 "patterns", "pattern_triggers", "harmless", "value_chars")

    placeholder: str
    env_names: tuple[str, ...]
    env_re: re.Pattern[str]
    flag_names: frozenset[str]
    flag_pattern: re.Pattern[str]
    min_literal: int
    #: every pattern's triggers, each once, in file order
    prefilter: tuple[bytes, ...]
    #: (name, regex source) in file order
    patterns: tuple[tuple[str, str], ...]
    #: per pattern, the lowercase substrings one of which is in each of its matches
    pattern_triggers: tuple[tuple[bytes, ...], ...]
    #: regex of the unquoted values that are left alone (``None``, numbers), lowercase
    harmless: str
    #: per pattern, the class an unquoted value of its ``secret`` group is a maximal run of, or None
    value_chars: tuple[str | None, ...]

    def __init__(self, placeholder: str, env_names: tuple[str, ...], env_re: re.Pattern[str],
                 flag_names: frozenset[str], flag_pattern: re.Pattern[str], min_literal: int,
                 prefilter: tuple[bytes, ...], patterns: tuple[tuple[str, str], ...],
                 pattern_triggers: tuple[tuple[bytes, ...], ...], harmless: str = _HARMLESS_SOURCE,
                 value_chars: tuple[str | None, ...] | None = None) -> None:
        values = {"placeholder": placeholder, "env_names": env_names, "env_re": env_re, "flag_names": flag_names,
                  "flag_pattern": flag_pattern, "min_literal": min_literal, "prefilter": prefilter,
                  "patterns": patterns, "pattern_triggers": pattern_triggers, "harmless": harmless,
                  "value_chars": value_chars if value_chars is not None else (None,) * len(patterns)}
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Rules is read-only: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Rules is read-only: cannot delete {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """Read ``logkit/data/secrets.toml`` once."""
    raw = (_DATA / "secrets.toml").read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    text = data["text"]
    per_pattern = tuple(tuple(t.lower().encode() for t in p["triggers"]) for p in text["patterns"])
    return Rules(
        placeholder=data.get("placeholder", PLACEHOLDER),
        env_names=tuple(n.upper() for n in data["env"]["names"]),
        env_re=re.compile("|".join(fnmatch.translate(n.upper()) for n in data["env"]["names"])),
        flag_names=frozenset(n.lower() for n in data["flags"]["names"]),
        flag_pattern=re.compile(data["flags"]["pattern"]),
        min_literal=int(text.get("min_literal", 6)),
        prefilter=tuple(dict.fromkeys(t for ts in per_pattern for t in ts)),
        patterns=tuple((p["name"], p["regex"]) for p in text["patterns"]),
        pattern_triggers=per_pattern,
        harmless=text.get("harmless", _HARMLESS_SOURCE),
        value_chars=tuple(p.get("value_chars") for p in text["patterns"]),
    )


_URL_PASSWORD = re.compile(r"://[^/\s:@]+:([^/\s@]+)@")


def _secret_env(rules: Rules, name: str) -> bool:
    return rules.env_re.match(name.upper()) is not None


def _secret_flag(rules: Rules, flag: str) -> bool:
    low = flag.lower()
    return low in rules.flag_names or bool(rules.flag_pattern.match(low))


def is_secret_key(key: str, rules: Rules | None = None) -> bool:
    """Whether a mapping key (``api_key``, ``--hf-token``, ``HF_TOKEN``) names a secret: the one
    answer, from secrets.toml's environment names and flags (``sglang.toml`` carries none)."""
    rules = rules or load_rules()
    norm = key.strip().lstrip("-").replace("-", "_")
    return _secret_env(rules, norm) or _secret_flag(rules, "--" + norm.replace("_", "-"))


def _blank(value: Any, placeholder: str) -> Any:
    """Everything under a secret key: every value, also inside a list (a config diff's
    ``"api_key": [old, new]``) or a mapping, becomes the placeholder."""
    if isinstance(value, dict):
        return {k: _blank(v, placeholder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_blank(v, placeholder) for v in value]
    return value if value in (None, "", False, True) else placeholder


def redact_keys(value: Any) -> Any:
    """A JSON-ready value (``/server_info``) with every value under a secret key replaced, deeply;
    nothing else is changed (:meth:`Redactor.scrub` also redacts the text)."""
    rules = load_rules()
    if isinstance(value, dict):
        return {k: _blank(v, rules.placeholder) if isinstance(k, str) and v not in (None, "", False, True)
                and is_secret_key(k, rules) else redact_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_keys(v) for v in value]
    return value


def _flag_values(rules: Rules, argv: list[str]) -> list[tuple[int, str]]:
    """(index of the value, value) of every secret flag in argv."""
    found: list[tuple[int, str]] = []
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            continue
        flag, eq, value = arg.partition("=")
        if not _secret_flag(rules, flag):
            continue
        if eq:
            found.append((i, value))
        elif i + 1 < len(argv):
            found.append((i + 1, argv[i + 1]))
    return found


#: more than one trigger per this many bytes: the chunk is searched whole, not line by line
DENSE_BYTES = 2048


def _hyperscan_shape(part: str, unharmless_value: str | None) -> bytes | None:
    """A detector part as Hyperscan takes it (named groups unnamed), or None: look-arounds and
    back-references it does not take. A ``secret`` group that ends the part becomes "a quote or a
    value that is not harmless" when ``unharmless_value`` spells that out (a quote alone is looser
    than a quoted value: only a needless slow pass)."""
    if unharmless_value is not None and "(?P<secret>" in part:
        head, _sep, _value = part.partition("(?P<secret>")
        close, _bars = _group_end(part, len(head))
        if close != len(part) - 1:
            return None
        part = head + "(?:['\"]|" + unharmless_value + ")"
    part = re.sub(r"\(\?P<\w+>", "(?:", part)
    if re.search(r"\(\?(?:[=!]|<[=!])|\(\?P=|\\[1-9]", part):
        return None
    return part.encode("utf-8")


def _scoped(source: str) -> str:
    """Turn a leading ``(?i)`` into a scoped ``(?i:...)`` so patterns can be joined."""
    if source.startswith("(?i)"):
        return f"(?i:{source[4:]})"
    return source


class Redactor:
    """Redacts one run's secrets (the rules, plus literal values learned from its env and argv)."""

    def __init__(self, rules: Rules | None = None, literals: Iterable[str] = ()) -> None:
        self.rules = rules or load_rules()
        self.placeholder = self.rules.placeholder
        self._ph = self.placeholder.encode()
        lits = sorted({v for v in literals if len(v) >= self.rules.min_literal}, key=len, reverse=True)
        self.literals: tuple[str, ...] = tuple(lits)
        self._lit_bytes = tuple(v.encode("utf-8", "surrogateescape") for v in lits)
        parts: list[tuple[int, str]] = []  # (pattern index, -1 for the literals; its regex part)
        self._secret_group: dict[str, str | None] = {}
        if lits:
            parts.append((-1, "(?P<lit>" + "|".join(re.escape(v) for v in lits) + ")"))
            self._secret_group["lit"] = None
        for i, (_name, source) in enumerate(self.rules.patterns):
            has_secret = "(?P<secret>" in source
            source = source.replace("(?P<secret>", f"(?P<s{i}>")
            parts.append((i, f"(?P<p{i}>{_scoped(source)})"))
            self._secret_group[f"p{i}"] = f"s{i}" if has_secret else None
        self._parts = parts
        self._joined = "|".join(part for _i, part in parts)
        # trigger index (as the prefilter numbers them: triggers, then literals) -> patterns it starts
        by_trigger: dict[int, set[int]] = {}
        index = {t: n for n, t in enumerate(self.rules.prefilter)}
        for i, triggers in enumerate(self.rules.pattern_triggers):
            for t in triggers:
                by_trigger.setdefault(index[t], set()).add(i)
        for n in range(len(lits)):
            by_trigger[len(self.rules.prefilter) + n] = {-1}
        self._by_trigger = {n: frozenset(v) for n, v in by_trigger.items()}
        self._everything = frozenset(i for i, _part in parts)
        self._subset_re: dict[frozenset[int], tuple[re.Pattern[bytes], bool]] = {}
        self._detectors: dict[int, tuple[tuple[re.Pattern[bytes], bool, tuple[bytes, ...], bytes, bytes | None], ...]] = {}
        #: Hyperscan: one scan saying which detectors match and which literal starts occur
        self._hs: tuple[Any, dict[int, tuple[int, int]], dict[int, bytes]] | None = None
        self._harmless = re.compile(f"^(?:{self.rules.harmless}|)$", re.IGNORECASE)
        self._text_re_: re.Pattern[str] | None = None
        self._bytes_re_: re.Pattern[bytes] | None = None
        self._fast: Any = False  # compiled on the first chunk (RE2 costs start-up time)
        self._triggers = self.rules.prefilter
        self._str_triggers = tuple(t.decode() for t in self.rules.prefilter)

    # The joined regex is compiled on first use: most runs never need it (start-up matters).
    @property
    def _text_re(self) -> re.Pattern[str]:
        if self._text_re_ is None:
            self._text_re_ = re.compile(self._joined)
        return self._text_re_

    @property
    def _bytes_re(self) -> re.Pattern[bytes]:
        if self._bytes_re_ is None:
            self._bytes_re_ = re.compile(self._joined.encode("utf-8"))
        return self._bytes_re_

    @property
    def window(self) -> int:
        """Bytes a trigger or learned literal can span: chunk boundaries are rescanned this wide."""
        return max((len(t) for t in (*self._triggers, *self._lit_bytes)), default=1)

    @property
    def engine(self) -> str:
        """The prefilter engine in use: ``hyperscan``, ``re2`` or ``stdlib``."""
        return self._filter().name

    def _filter(self) -> Any:
        if self._fast is False:
            self._fast = prefilter_for(self.rules.prefilter, self._lit_bytes)
        return self._fast

    def suspicious(self, data: bytes) -> bool:
        """The prefilter alone: whether ``data`` may hold a secret (releases the GIL with RE2)."""
        return self._filter().any(data)

    def redact_chunk(self, data: bytes) -> bytes:
        """Redact ``data`` (after :meth:`suspicious` said yes): only the lines around a trigger.

        Each trigger's line and the next one are searched (a key and its value may sit a line
        apart); the rest of the chunk is copied as is, so one trigger in a megabyte costs a line.
        """
        engine = self._filter()
        by_trigger = self._by_trigger
        hits = engine.hits(data, len(data) // DENSE_BYTES)
        if hits is None:
            # triggers on most lines: one pass of the patterns they start over the whole chunk is
            # cheaper than a region per hit (a URL on every line runs only the `://` pattern).
            # Most such chunks change nothing (`api_key=None` on every line): the detectors say so,
            # faster than any engine tells which triggers occur (Hyperscan: one scan for them all).
            if not self._changes(data, self._everything):
                return data
            return self._sub(data, frozenset().union(*(by_trigger[t] for t in engine.present(data))), checked=True)
        if not hits:
            return data
        hits.sort()
        span = self.window
        regions: list[list[Any]] = []  # [start, end, patterns]
        for hit, trigger in hits:
            if regions and hit < regions[-1][1]:
                regions[-1][2] |= by_trigger[trigger]
                continue
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", min(hit + span, len(data)))
            end = len(data) if end < 0 else data.find(b"\n", end + 1)
            end = len(data) if end < 0 else end + 1
            if regions and start <= regions[-1][1]:
                regions[-1][1] = end
                regions[-1][2] |= by_trigger[trigger]
            else:
                regions.append([start, end, set(by_trigger[trigger])])
        if len(regions) == 1 and regions[0][:2] == [0, len(data)]:
            return self._sub(data, regions[0][2])
        out: list[bytes] = []
        done = 0
        for start, end, patterns in regions:
            out.append(data[done:start])
            out.append(self._sub(data[start:end], patterns))
            done = end
        out.append(data[done:])
        return b"".join(out)

    def _detector(self, i: int) -> tuple[tuple[re.Pattern[bytes], bool, tuple[bytes, ...], bytes, bytes | None], ...]:
        """Regexes (whether each runs on the lowered text, the bytes one of which starts each of its
        matches, the literal that starts each of them or ``b""``, the same without look-arounds for
        Hyperscan or None) that find every place pattern ``i`` (``-1``: the learned literals) would change:
        its top-level alternatives one by one, lowered where :func:`lowerable` allows, a harmless
        unquoted value refused inside the regex."""
        found = self._detectors.get(i)
        if found is not None:
            return found
        if i < 0:
            found = ((re.compile(self._parts[0][1].encode("utf-8")), False, (), b"", None),)
        else:
            source = self.rules.patterns[i][1]
            lowered = source.startswith("(?i)") and lowerable(source[4:])
            if lowered:
                source = source[4:]
            flags = 0 if lowered else re.IGNORECASE if source.startswith("(?i)") else 0
            if flags:
                source = source[4:]
            chars = self.rules.value_chars[i]
            harmless = f"(?!(?:{self.rules.harmless})(?!{chars}))"
            parts = []
            for part in alternatives(source):
                hs = _hyperscan_shape(part, unharmless(self.rules.harmless, chars) if chars else None)
                if chars and "(?P<secret>" in part:
                    # refuse what _replace would leave alone: a whole unquoted value that is harmless
                    part = part.replace("(?P<secret>", harmless + "(?P<secret>", 1)
                regex = re.compile(part.encode("utf-8"), flags)
                # first bytes in either case: checked on the original text, before any lowering
                parts.append((regex, lowered, first_bytes(part, flags | (re.IGNORECASE if lowered else 0)),
                              literal_prefix(part), hs))
            found = tuple(parts)
        self._detectors[i] = found
        return found

    def _scan(self, data: bytes) -> tuple[set[tuple[int, int]], set[bytes], set[tuple[int, int]]] | None:
        """With Hyperscan, one scan of ``data``: the detectors (pattern, part) that match in it, the
        literal starts that occur, and the detectors it answers for (those without look-arounds,
        the key-value one with its harmless values spelled out); None elsewhere."""
        if self._hs is None:
            matcher = self._filter().matcher
            if matcher is None:
                self._hs = (None, {}, {})
            else:
                exprs: list[tuple[bytes, bool]] = []
                owners: dict[int, tuple[int, int]] = {}
                literals: dict[int, bytes] = {}
                for i in sorted(self._everything):
                    for k, (regex, _low, _f, prefix, hs) in enumerate(self._detector(i)):
                        if hs is not None and prefix:  # one that starts with a class is slow there too
                            owners[len(exprs)] = (i, k)
                            exprs.append((hs, bool(regex.flags & re.IGNORECASE) or _low))
                        if prefix and prefix not in literals.values():
                            literals[len(exprs)] = prefix
                            exprs.append((re.escape(prefix), True))
                match, kept = matcher(exprs)
                self._hs = (match, {n: owners[n] for n in kept if n in owners},
                            {n: literals[n] for n in kept if n in literals})
        match, owners, literals = self._hs
        if match is None or len(data) < 4096:  # a line or two: re's own scans are as quick
            return None
        found = match(data)
        return ({owners[n] for n in found if n in owners}, {literals[n] for n in found if n in literals},
                set(owners.values()))

    def _changes(self, data: bytes, patterns: frozenset[int]) -> bool:
        """Whether running ``patterns`` over ``data`` can change it (no false "no")."""
        low = None
        scanned = self._scan(data)
        if scanned is not None:
            matched, occurring, answered = scanned
            if any(i in patterns for i, _k in matched):
                return True
        for i in sorted(patterns):
            for k, (regex, lowered, firsts, prefix, _hs) in enumerate(self._detector(i)):
                if scanned is not None:
                    if (i, k) in answered:
                        continue  # Hyperscan said it matches nowhere
                    if prefix and prefix not in occurring:
                        continue  # its literal start is nowhere in the text
                # a memchr per first byte is ~100x cheaper than re's scan for a class (`[?&;]`)
                if firsts and not any(b in data for b in firsts):
                    continue
                if lowered and low is None:
                    low = data.lower()
                hay = low if lowered else data
                if regex.search(hay) is not None:
                    return True
        return False

    def _sub(self, data: bytes, patterns: set[int] | frozenset[int] | None = None, checked: bool = False) -> bytes:
        """Run the patterns (all, or only those a region's triggers start) over ``data``.

        First each pattern alone, as :meth:`_detector` shapes it for speed: most triggered text
        holds nothing to change (``api_key=None`` on every line), and then ``data`` is returned as
        is. Otherwise the patterns run joined, as one regex, which decides what is replaced.
        """
        if patterns is None:
            regex = self._bytes_re
        else:
            key = frozenset(patterns)
            if not checked and not self._changes(data, key):
                return data
            regex, lowered = self._subset(key)
            if lowered:
                # the same matches as the (?i) regex on `data`; the text replaced is `data`'s
                out: list[bytes] = []
                done = 0
                for m in regex.finditer(data.lower()):
                    out.append(data[done:m.start()])
                    out.append(self._replace(m, self._ph, (b"'", b'"'), data))
                    done = m.end()
                out.append(data[done:])
                return b"".join(out)
        return regex.sub(lambda m: self._replace(m, self._ph, (b"'", b'"')), data)

    def _subset(self, key: frozenset[int]) -> tuple[re.Pattern[bytes], bool]:
        """The patterns of ``key`` joined in one regex, and whether it runs on the lowered text:
        when every one is ``(?i)`` and :func:`lowerable` (3x faster: no `(?i)` per byte)."""
        found = self._subset_re.get(key)
        if found is None:
            sources = [(i, self.rules.patterns[i][1]) for i in sorted(key) if i >= 0]
            if len(sources) == len(key) and all(s.startswith("(?i)") and lowerable(s[4:]) for _i, s in sources):
                joined = "|".join(f"(?P<p{i}>{s[4:].replace('(?P<secret>', f'(?P<s{i}>')})" for i, s in sources)
                found = (re.compile(joined.encode("utf-8")), True)
            else:
                joined = "|".join(part for i, part in self._parts if i in key)
                found = (re.compile(joined.encode("utf-8")), False)
            self._subset_re[key] = found
        return found

    @classmethod
    def for_run(cls, env: Mapping[str, str], argv: list[str]) -> Redactor:
        """A redactor that also knows the secret values in this run's environment and flags."""
        rules = load_rules()
        literals = [value for name, value in env.items() if _secret_env(rules, name) and value]
        literals += [value for _flag, value in _flag_values(rules, argv)]
        # A password inside a URL in the environment (HTTPS_PROXY=http://u:pw@proxy) is learned too.
        for value in env.values():
            if "://" in value and "@" in value:
                literals += _URL_PASSWORD.findall(value)
        return cls(rules, literals)

    # -- classification ------------------------------------------------------------------------

    def is_secret_env(self, name: str) -> bool:
        """Whether an environment variable of this name holds a secret."""
        return _secret_env(self.rules, name)

    def is_secret_flag(self, flag: str) -> bool:
        """Whether a command-line flag (``--api-key``) takes a secret value."""
        return _secret_flag(self.rules, flag)

    def is_secret_key(self, key: str) -> bool:
        """Whether a mapping key (``api_key``, ``--hf-token``, ``HF_TOKEN``) names a secret."""
        return is_secret_key(key, self.rules)

    def _flag_values(self, argv: list[str]) -> list[tuple[int, str]]:
        return _flag_values(self.rules, argv)

    # -- redaction -----------------------------------------------------------------------------

    def _replace(self, match: re.Match[Any], placeholder: Any, quotes: Any, text: Any = None) -> Any:
        """What replaces one match; ``text``: the original of the lowered text it was found in."""
        group = self._secret_group.get(match.lastgroup or "")
        whole = match.group(0) if text is None else text[match.start():match.end()]
        if group is None:
            return placeholder
        start, end = match.span(group)
        if start < 0:
            return placeholder
        value = match.group(group) if text is None else text[start:end]
        if value[:1] in quotes and len(value) >= 2 and value[-1:] == value[:1]:
            if len(value) == 2:
                return whole  # an empty quoted value: nothing to hide
            start, end = start + 1, end - 1
        elif self._harmless.match(value if isinstance(value, str) else value.decode("utf-8", "replace")):
            return whole  # an unquoted number or None: `#new-token: 5`, `password=None`
        base = match.start()
        return whole[: start - base] + placeholder + whole[end - base :]

    def text(self, value: str) -> str:
        """Redact a string (a log line, an argv word, an env value)."""
        if not value:
            return value
        low = value.lower()
        if not any(t in low for t in self._str_triggers) and not any(v in value for v in self.literals):
            return value
        return self._text_re.sub(lambda m: self._replace(m, self.placeholder, ("'", '"')), value)

    def chunk(self, data: bytes) -> bytes:
        """Redact a chunk of complete log lines; fast when the chunk holds nothing suspicious."""
        if not self.suspicious(data):
            return data
        return self.redact_chunk(data)

    def argv(self, argv: list[str]) -> list[str]:
        """The argv as it may be stored: secret flag values replaced, every word redacted as text."""
        out = list(argv)
        for i, _value in self._flag_values(argv):
            if i < len(argv) and argv[i].startswith("-") and "=" in argv[i]:
                flag = argv[i].partition("=")[0]
                out[i] = f"{flag}={self.placeholder}"
            else:
                out[i] = self.placeholder
        return [self.text(word) if word != self.placeholder else word for word in out]

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment values as they may be stored."""
        return {
            name: (self.placeholder if self.is_secret_env(name) and value else self.text(value))
            for name, value in env.items()
        }

    def scrub(self, value: Any) -> Any:
        """Redact a JSON-ready value deeply (an event dict before it is written)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                if isinstance(key, str) and item not in (None, "", False, True) and self.is_secret_key(key):
                    out[key] = _blank(item, self.placeholder)
                else:
                    out[key] = self.scrub(item)
            return out
        if isinstance(value, list):
            if value and all(isinstance(v, str) for v in value):
                return self.argv(value)
            return [self.scrub(v) for v in value]
        return value
