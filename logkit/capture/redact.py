"""Keep secrets off disk: redaction of argv, environment, events and raw log text.

Contract:

* The patterns are data (``logkit/data/secrets.toml``: env-var names, flag names, text regexes); every
  matched value becomes the placeholder ``[REDACTED]``. :meth:`Redactor.for_run` also learns the literal
  values of the run's secret variables and flags and URL passwords in its environment.
* One engine, ``re``: the patterns and the learned literals alone decide what is replaced; text holding
  none of the ``triggers`` (lowercase substrings, one in every match) nor a literal is returned as is.
* :meth:`Redactor.chunk` (the recorder's hot path) takes complete lines: a secret is never split.
* :meth:`Redactor.scrub` walks a JSON-ready value: strings redacted, everything under a secret key replaced.

Imports only the standard library (the ``logkit run`` start-up must stay light).
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable, Mapping
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

_DATA = Path(__file__).resolve().parent.parent / "data"

__all__ = ["PLACEHOLDER", "Redactor", "Rules", "is_secret_key", "load_rules", "redact_keys"]

PLACEHOLDER = "[REDACTED]"
#: How far after its trigger a block pattern's closing text is looked for (a private key is ~3 KiB).
UNTIL_MAX = 64 * 1024
#: unquoted values left alone (the default of ``secrets.toml``'s ``harmless``)
_HARMLESS_SOURCE = r"-?[0-9][0-9.,_]*%?|none|null|true|false|nil"


class Rules(NamedTuple):
    """The compiled content of ``secrets.toml`` (read-only, hashable)."""

    placeholder: str
    env_re: re.Pattern[str]
    flag_names: frozenset[str]
    flag_pattern: re.Pattern[str]
    min_literal: int
    patterns: tuple[tuple[str, str], ...]  # (name, regex source) in file order
    pattern_triggers: tuple[tuple[bytes, ...], ...]  # per pattern, lowercase substrings one of which each match holds
    harmless: str = _HARMLESS_SOURCE  # unquoted values left alone (None, numbers)
    not_secret_re: re.Pattern[str] | None = None  # names matching env_re that hold no secret
    argv_flags: frozenset[str] = frozenset()  # flags secret in a command line only (``--key``)
    user_password: frozenset[str] = frozenset()  # flags whose value is ``USER:PASSWORD`` (``curl -u``)
    glued_password: frozenset[str] = frozenset()  # commands whose ``-pPASSWORD`` is glued on (``mysql``)
    login_password: frozenset[str] = frozenset()  # commands whose ``login -p PASSWORD`` is a secret (``docker``)
    login_key: frozenset[str] = frozenset()  # commands whose ``login KEY`` is a secret (``wandb``)
    pattern_until: tuple[bytes, ...] = ()  # per pattern, the text ending its region (a multi-line block), or b""
    blocks: tuple[tuple[str, bytes], ...] = ()  # (header regex, closing text) redacted across reads
    cover: tuple[bytes, ...] = ()  # needles tested instead of the triggers holding them (lowercase)


@lru_cache(maxsize=1)
def load_rules() -> Rules:
    """Read ``logkit/data/secrets.toml`` once."""
    raw = (_DATA / "secrets.toml").read_text(encoding="utf-8")
    data = tomllib.loads(raw)
    text = data["text"]
    harmless_env = data["env"].get("not_secret", [])
    return Rules(
        placeholder=data.get("placeholder", PLACEHOLDER),
        env_re=re.compile("|".join(fnmatch.translate(n.upper()) for n in data["env"]["names"])),
        not_secret_re=re.compile("|".join(fnmatch.translate(n.upper()) for n in harmless_env)) if harmless_env else None,
        argv_flags=frozenset(n.lower() for n in data["flags"].get("argv_names", [])),
        user_password=frozenset(data["flags"].get("user_password", [])),
        glued_password=frozenset(data["flags"].get("glued_password", [])),
        login_password=frozenset(data["flags"].get("login_password", [])),
        login_key=frozenset(data["flags"].get("login_key", [])),
        pattern_until=tuple(p.get("until", "").lower().encode() for p in text["patterns"]),
        blocks=tuple((p["opens"], p["until"].lower().encode()) for p in text["patterns"] if "opens" in p),
        cover=tuple(c.lower().encode() for c in text.get("cover", [])),
        flag_names=frozenset(n.lower() for n in data["flags"]["names"]),
        flag_pattern=re.compile(data["flags"]["pattern"]),
        min_literal=int(text.get("min_literal", 6)),
        patterns=tuple((p["name"], p["regex"]) for p in text["patterns"]),
        pattern_triggers=tuple(tuple(t.lower().encode() for t in p["triggers"]) for p in text["patterns"]),
        harmless=text.get("harmless", _HARMLESS_SOURCE),
    )


_URL_PASSWORD = re.compile(r"://[^/\s:@]*:([^/\s@]+)@")


def _secret_env(rules: Rules, name: str) -> bool:
    """A secret-looking name is one whatever its prefix (``SGLANG_DB_PASS``), unless listed ``not_secret``."""
    upper = name.upper()
    return rules.env_re.match(upper) is not None and (rules.not_secret_re is None
                                                      or rules.not_secret_re.match(upper) is None)


def _secret_flag(rules: Rules, flag: str) -> bool:
    low = flag.lower()
    return low in rules.flag_names or bool(rules.flag_pattern.match(low))


def is_secret_key(key: str, rules: Rules | None = None) -> bool:
    """Whether a mapping key (``api_key``, ``--hf-token``, ``HF_TOKEN``) names a secret, by secrets.toml."""
    rules = rules or load_rules()
    norm = key.strip().lstrip("-").replace("-", "_")
    return _secret_env(rules, norm) or _secret_flag(rules, "--" + norm.replace("_", "-"))


def _blank(value: Any, placeholder: str) -> Any:
    """Everything under a secret key, also inside a list (a diff's ``[old, new]``) or a mapping, as the placeholder."""
    if isinstance(value, dict):
        return {k: _blank(v, placeholder) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_blank(v, placeholder) for v in value]
    return value if value in (None, "", False, True) else placeholder


def _keys(value: dict[Any, Any], rules: Rules, inner: Any) -> dict[Any, Any]:
    """A mapping with everything under a secret key blanked and ``inner`` applied to the other values."""
    return {k: _blank(v, rules.placeholder) if isinstance(k, str) and v not in (None, "", False, True)
            and is_secret_key(k, rules) else inner(v) for k, v in value.items()}


def redact_keys(value: Any) -> Any:
    """A JSON-ready value (``/server_info``) with every value under a secret key replaced, deeply."""
    if isinstance(value, dict):
        return _keys(value, load_rules(), redact_keys)
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
        if not _secret_flag(rules, flag) and flag.lower() not in rules.argv_flags:
            continue
        if eq:
            found.append((i, value))
        elif i + 1 < len(argv):
            found.append((i + 1, argv[i + 1]))
    return found


def _keep_lines(placeholder: Any, replaced: Any) -> Any:
    """The placeholder, and the line breaks of what it replaces (the log keeps the terminal's line numbers)."""
    newline = "\n" if isinstance(replaced, str) else b"\n"
    count = replaced.count(newline)
    return placeholder + newline * count if count else placeholder


def _scoped(source: str) -> str:
    """Turn a leading ``(?i)`` into a scoped ``(?i:...)`` so patterns can be joined."""
    return f"(?i:{source[4:]})" if source.startswith("(?i)") else source


class Redactor:
    """Redacts one run's secrets (the rules, plus literal values learned from its env and argv)."""

    def __init__(self, rules: Rules | None = None, literals: Iterable[str] = ()) -> None:
        self.rules = rules or load_rules()
        self.placeholder = self.rules.placeholder
        self._ph = self.placeholder.encode()
        lits = sorted({v for v in literals if len(v) >= self.rules.min_literal}, key=len, reverse=True)
        self.literals: tuple[str, ...] = tuple(lits)
        self._lit_bytes = tuple(v.encode("utf-8", "surrogateescape") for v in lits)
        parts: list[tuple[int, str]] = []  # (pattern index, -1 for the literals; its part of the regex)
        #: the group of each alternative whose match is replaced (None: the whole match)
        self._secret_group: dict[str, str | None] = {}
        if lits:
            parts.append((-1, "(?P<lit>" + "|".join(re.escape(v) for v in lits) + ")"))
            self._secret_group["lit"] = None
        for i, (_name, source) in enumerate(self.rules.patterns):
            has_secret = "(?P<secret>" in source
            parts.append((i, f"(?P<p{i}>{_scoped(source.replace('(?P<secret>', f'(?P<s{i}>'))})"))
            self._secret_group[f"p{i}"] = f"s{i}" if has_secret else None
        self._parts = parts
        self._joined = "|".join(part for _i, part in parts)
        # each trigger (lowercase) and learned literal (as is), with the patterns it may start
        starts: dict[bytes, set[int]] = {}
        for i, triggers in enumerate(self.rules.pattern_triggers):
            for t in triggers:
                starts.setdefault(t, set()).add(i)
        #: per pattern index, the text ending its region (a multi-line block)
        self._until = {i: u for i, u in enumerate(self.rules.pattern_until) if u}
        self._blocks = tuple((re.compile(_scoped(o).encode()), u) for o, u in self.rules.blocks)
        #: the closing text a stream awaits (a block opened in an earlier read), and the bytes since
        self._open: bytes | None = None
        self._open_bytes = 0
        self._starts = tuple((t, frozenset(p), True) for t, p in starts.items()) + tuple(
            (v, frozenset({-1}), False) for v in self._lit_bytes)
        self._subsets: dict[frozenset[int], re.Pattern[bytes]] = {}
        self._solo: dict[int, tuple[re.Pattern[bytes], bool]] = {}
        self._harmless = re.compile(f"^(?:{self.rules.harmless}|)$", re.IGNORECASE)
        self._triggers = tuple(starts)
        # "is anything suspicious here" needs only secrets.toml's cover needles and the triggers that
        # hold none of them nor a shorter trigger: each costs a scan of every chunk
        needles = set(self.rules.cover) | {t for t in starts if not any(c in t for c in self.rules.cover)}
        cover = tuple(t for t in needles if not any(o != t and o in t for o in needles))
        self._cover = cover
        self._str_triggers = tuple(t.decode() for t in cover)
        from .shapes import CleanShapes

        self._shapes = CleanShapes((*cover, *self._lit_bytes))

    # The joined regex is compiled on first use: most runs never need it (start-up matters).
    @cached_property
    def _text_re(self) -> re.Pattern[str]:
        return re.compile(self._joined)

    @cached_property
    def _bytes_re(self) -> re.Pattern[bytes]:
        return re.compile(self._joined.encode("utf-8"))

    @property
    def window(self) -> int:
        """Bytes a trigger or learned literal can span: chunk boundaries are rescanned this wide."""
        return max((len(t) for t in (*self._triggers, *self._lit_bytes)), default=1)

    def suspicious(self, data: bytes) -> bool:
        """Whether ``data`` holds a trigger (any case) or a learned literal (known clean shapes skipped)."""
        shapes = self._shapes.shapes(data)
        if self._shapes.all_clean(shapes):
            return False
        low = data.lower()
        if any(t in low for t in self._cover) or any(v in data for v in self._lit_bytes):
            return True
        self._shapes.learn(shapes)
        return False

    def redact_chunk(self, data: bytes) -> bytes:
        """Redact each trigger's line and the next with the patterns it starts (the joined regex is slow)."""
        low = data.lower()
        hits: list[tuple[int, frozenset[int]]] = []
        for needle, patterns, lowered in self._starts:
            hay = low if lowered else data
            at = hay.find(needle)
            while at >= 0:
                hits.append((at, patterns))
                at = hay.find(needle, at + 1)
        if not hits:
            return data
        hits.sort(key=lambda hit: hit[0])
        span = self.window
        regions: list[list[Any]] = []  # [start, end, patterns]
        for at, patterns in hits:
            inside = bool(regions) and at < regions[-1][1]
            end = regions[-1][1] if inside else 0
            if not inside:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", min(at + span, len(data)))
                end = len(data) if end < 0 else data.find(b"\n", end + 1)
                end = len(data) if end < 0 else end + 1
            # a block, also one whose header sits in an earlier trigger's region: up to the line of its
            # closing text
            for i in patterns & self._until.keys():
                close = low.find(self._until[i], at, at + UNTIL_MAX)
                if close >= 0:
                    close = data.find(b"\n", close)
                    end = max(end, len(data) if close < 0 else close + 1)
            if inside or (regions and start <= regions[-1][1]):
                regions[-1][1] = end
                regions[-1][2] |= patterns
            else:
                regions.append([start, end, set(patterns)])
        out: list[bytes] = []
        done = 0
        for start, end, patterns in regions:
            out.append(data[done:start])
            out.append(self._sub(data[start:end], frozenset(patterns)))
            done = end
        out.append(data[done:])
        return b"".join(out)

    def _sub(self, data: bytes, patterns: frozenset[int] | None = None) -> bytes:
        """Run the patterns (all, or those of ``patterns``, joined in file order) over ``data``."""
        if patterns is None:
            regex = self._bytes_re
        else:
            if not any(self._changes(data, i) for i in sorted(patterns)):
                return data
            regex = self._subsets.get(patterns)
            if regex is None:
                regex = re.compile("|".join(part for i, part in self._parts if i in patterns).encode("utf-8"))
                self._subsets[patterns] = regex
        return regex.sub(lambda m: self._replace(m, self._ph, (b"'", b'"')), data)

    def _changes(self, data: bytes, i: int) -> bool:
        """Whether pattern ``i`` (``-1``: the learned literals) changes anything where it matches (alone: fast)."""
        if i < 0:
            return True
        found = self._solo.get(i)
        if found is None:
            source = self.rules.patterns[i][1]
            lowered = source.startswith("(?i)")
            found = self._solo[i] = (re.compile((source[4:] if lowered else source).encode("utf-8")), lowered)
        regex, lowered = found
        hay = data.lower() if lowered else data
        m = regex.search(hay)
        while m is not None:
            if self._replace(m, self._ph, (b"'", b'"'), "secret") != m.group(0):
                return True
            m = regex.search(hay, m.start() + 1)
        return False

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

    def is_secret_env(self, name: str) -> bool:
        """Whether an environment variable of this name holds a secret."""
        return _secret_env(self.rules, name)

    def is_secret_key(self, key: str) -> bool:
        """Whether a mapping key (``api_key``, ``--hf-token``, ``HF_TOKEN``) names a secret."""
        return is_secret_key(key, self.rules)

    def _replace(self, match: re.Match[Any], placeholder: Any, quotes: Any, group: str | None = "") -> Any:
        """What replaces one match (str or bytes); ``group``: the one replaced when not the joined regex's."""
        if group == "":
            group = self._secret_group.get(match.lastgroup or "")
        elif group not in match.re.groupindex:
            group = None
        whole = match.group(0)
        if group is None:
            return _keep_lines(placeholder, whole)
        start, end = match.span(group)
        if start < 0:
            return _keep_lines(placeholder, whole)
        value = match.group(group)
        if value[:1] in quotes and len(value) >= 2 and value[-1:] == value[:1]:
            if len(value) == 2:
                return whole  # an empty quoted value: nothing to hide
            start, end = start + 1, end - 1
        elif self._harmless.match(value if isinstance(value, str) else value.decode("utf-8", "replace")):
            return whole  # an unquoted number or None: `#new-token: 5`, `password=None`
        base = match.start()
        return whole[: start - base] + _keep_lines(placeholder, whole[start - base:end - base]) + whole[end - base :]

    def text(self, value: str) -> str:
        """Redact a string (a log line, an argv word, an env value)."""
        if not value:
            return value
        low = value.lower()
        if not any(t in low for t in self._str_triggers) and not any(v in value for v in self.literals):
            return value
        return self._text_re.sub(lambda m: self._replace(m, self.placeholder, ("'", '"')), value)

    def stream(self, data: bytes, suspicious: bool | None = None) -> bytes:
        """The next complete lines of one stream, redacted; an open block (a private key) up to its closing line."""
        head = b""
        if self._open is not None:
            head, data = self._continue_block(data)
            if not data:
                return head
            suspicious = None  # the rest of the read was not judged on its own
        if suspicious is None:
            out = self.chunk(data)
        elif suspicious:
            out = self.redact_chunk(data)
        else:
            return head + data
        return head + self._open_block(out) if self._blocks else head + out

    def _open_block(self, out: bytes) -> bytes:
        """``out`` with the lines after a block header that has no closing text in it replaced."""
        low = out.lower()
        for opens, until in self._blocks:
            last = None
            for last in opens.finditer(low):
                pass
            if last is None or low.find(until, last.end()) >= 0:
                continue
            cut = out.find(b"\n", last.end())
            cut = len(out) if cut < 0 else cut + 1
            self._open, self._open_bytes = until, len(out) - cut
            return out[:cut] + (_keep_lines(self._ph, out[cut:]) if cut < len(out) else b"")
        return out

    def _continue_block(self, data: bytes) -> tuple[bytes, bytes]:
        """(the replaced lines of an open block in ``data``, what follows its closing line's start)."""
        at = data.lower().find(self._open or b"")
        if at < 0:
            self._open_bytes += len(data)
            if self._open_bytes > UNTIL_MAX:
                self._open = None  # no closing line: what follows is judged on its own again
            return _keep_lines(self._ph, data), b""
        start = data.rfind(b"\n", 0, at) + 1
        self._open = None
        return (_keep_lines(self._ph, data[:start]) if start else b""), data[start:]

    def chunk(self, data: bytes) -> bytes:
        """Redact a chunk of complete log lines; fast when the chunk holds nothing suspicious."""
        return self.redact_chunk(data) if self.suspicious(data) else data

    def argv(self, argv: list[str]) -> list[str]:
        """The argv as it may be stored: secret flag values (``-u U:PW``, ``mysql -pPW``) replaced, every word redacted."""
        out = list(argv)
        for i, _value in _flag_values(self.rules, argv):  # --flag=VALUE keeps its flag
            glued_flag = i < len(argv) and argv[i].startswith("-") and "=" in argv[i]
            out[i] = f"{argv[i].partition('=')[0]}={self.placeholder}" if glued_flag else self.placeholder
        glued = bool(argv) and argv[0].rpartition("/")[2] in self.rules.glued_password
        for i, word in enumerate(argv):
            if word in self.rules.user_password and i + 1 < len(argv) and ":" in argv[i + 1]:
                out[i + 1] = argv[i + 1].partition(":")[0] + ":" + self.placeholder
            elif glued and word.startswith("-p") and len(word) > 2:
                out[i] = "-p" + self.placeholder
        login = argv.index("login") if "login" in argv else 0  # `docker login`, `sudo podman login`, `wandb login`
        tools = {w.rpartition("/")[2] for w in argv[:login]}
        password, key = bool(tools & self.rules.login_password), bool(tools & self.rules.login_key)
        for i in range(login + 1, len(argv)) if password or key else ():
            word = argv[i]
            if password and word in ("-p", "--password") and i + 1 < len(argv):
                out[i + 1] = self.placeholder
            elif password and word.startswith(("-p=", "--password=")):
                out[i] = word.partition("=")[0] + "=" + self.placeholder
            elif key and len(word) >= 32 and not word.startswith("-"):
                out[i] = self.placeholder
        return [self.text(word) if word != self.placeholder else word for word in out]

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment values as they may be stored."""
        return {name: self.placeholder if self.is_secret_env(name) and value else self.text(value)
                for name, value in env.items()}

    def scrub(self, value: Any) -> Any:
        """Redact a JSON-ready value deeply (an event dict before it is written)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return _keys(value, self.rules, self.scrub)
        if isinstance(value, list):
            if value and all(isinstance(v, str) for v in value):
                return self.argv(value)
            return [self.scrub(v) for v in value]
        return value
