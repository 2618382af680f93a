"""The redaction's fast detectors change nothing: same output as the joined regex they skip.

`Redactor._sub` first runs each pattern alone, shaped for speed (split into its top-level
alternatives, run case-sensitively on the lowered text where that is equivalent, a harmless value
refused inside the regex), and returns the text as is when none finds anything; otherwise the
joined regex decides, as before (on the lowered text too when every pattern in it allows). These tests pin the pieces and compare the whole against today's
behaviour (the key-value regex as it was written before, no detectors) on tricky lines.
"""

from __future__ import annotations

import random
import re

import pytest

from logkit.capture.redact import ENGINE_ENV, Redactor, available_engines, load_rules
from logkit.capture.regexshape import alternatives, first_bytes, literal_prefix, lowerable, unharmless

#: the key-value pattern as secrets.toml wrote it before it was shaped for speed
OLD_KEY_VALUE = r"""(?i)(?:(?:api[_-]?key|apikey|secret|passw(?:or)?d|credentials?|access[_-]?key|private[_-]?key|encryption[_-]?key)[a-z0-9_-]*|[_-]token)['"]?\s*[:=]\s*(?P<secret>'[^'\n]*'|"[^"\n]*"|[^\s,;)}'"]+)"""

LINES = [
    b"[1] server_args: api_key=None, tp_size=8, port=30000",
    b"[2] server_args: API_KEY=NONE, Api-Key: 12,5 api_key=1_000 apikey=-3.5% api_key=nil)",
    b"api_key=hunter22 API_KEY=Hunter22 api_key='' api_key=\"\" api_key='None' api_key=none5",
    b"secret--api-key = 5 secret--api-key = hunter2 --api-key sk-abcdefghijklmnopqrstuvwx",
    b"hf_tokenizer=abc custom_tokenizer=foo skip_tokenizer_init=True hf_token=abc-def",
    b"aws_secret_access_key = AKIAXYZ  ssl_keyfile_password=None password = None password: true",
    b"Authorization: Basic dXNlcjpwYXNz authorization=\"Token 123456\" Bearer abcdefgh12345678",
    b"https://user:pa55word@host/x https://user:none@host/ https://hub.example.com/models/m1",
    b"GET /x?token=abc&sig=def ?api_key=None&x=1 ;auth=12345 &Signature=XYZ",
    b"the password hunter2; password is swordfish; password reset required; PASSWORD Hunter",
    b"{'api_key': 'x', 'token': 'y', \"hf_token\": \"z\", token=\"q\", #new-token: 5, token usage: 0.2}",
    b"ghp_abcdefghijklmnopqrstuvwxyz0123456789 github_pat_abcdefghijklmnopqrstuvwxyz0123 GHP_X",
    b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig HF_abcdefghijklmnopqrstuv hf_abcdefghijklmnopqrstuv",
    b"private_key:'-----BEGIN' encryption-key=\"x y\" credential=fal5e CREDENTIALS=False access-key=0x12",
    b"x_token: None y-token= 42 z_TOKEN=abc token'=' api_key=\tNone api_key= ,",
    b"api_key=None\rprogress api_key=Nonesuch api_key=true; api_key=truex api_key=8,abc",
]


def _old(engine: str, monkeypatch: pytest.MonkeyPatch) -> Redactor:
    """A redactor as it was: the old key-value regex, the joined regex wherever a trigger is."""
    monkeypatch.setenv(ENGINE_ENV, engine)
    rules = load_rules()
    patterns = tuple((n, OLD_KEY_VALUE if n == "key-value" else s) for n, s in rules.patterns)
    values = dict(zip(rules._fields(), rules._values(), strict=True))
    old = Redactor(type(rules)(**{**values, "patterns": patterns}), literals=["Planted-Lit3ral"])
    old._changes = lambda data, patterns: True  # type: ignore[method-assign]
    # the joined regex as it was: (?i) on the original text (not the lowered one)
    old._subset = lambda key: (re.compile("|".join(p for i, p in old._parts if i in key).encode()), False)  # type: ignore[method-assign]
    return old


def test_lowerable_accepts_lowercase_patterns_only() -> None:
    assert lowerable(r"api[_-]?key[a-z0-9_-]*['\"]?\s*[:=]")
    assert lowerable(r"\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})")  # closed under lowering
    assert lowerable(r"(?<![a-z0-9#_-])token")
    assert not lowerable(r"Bearer")  # a capital literal
    assert not lowerable(r"[A-Z]+")  # a class with capitals but not their lowercase
    assert not lowerable(r"[^A-Z]")
    assert not lowerable(r"(?-i:abc)x")  # a flag switch
    assert not lowerable(r"(a)\1")  # a back-reference
    assert not lowerable(r"(?i)abc")  # already case-insensitive as a whole
    for name, source in load_rules().patterns:
        if source.startswith("(?i)"):
            assert lowerable(source[4:]), name  # every (?i) pattern of the table takes the fast path


def test_alternatives_split_a_leading_group_and_drop_leading_assertions() -> None:
    assert alternatives(r"(?:a|b(?:c|d)|[|)])x") == ["ax", "b(?:c|d)x", "[|)]x"]
    assert alternatives(r"\b(?:gh_|pat_)\w+") == [r"gh_\w+", r"pat_\w+"]
    assert alternatives(r"(?<![a-z])token=") == ["token="]
    assert alternatives(r"(?:a|b)?x") == ["(?:a|b)?x"]  # an optional group is no prefix
    assert alternatives(r"(?:a|b)+x") == ["(?:a|b)+x"]
    data = "..b.. a token= bdx".encode()
    for source in (r"(?:a|b(?:c|d))x", r"\b(?:a|bd)x", r"(?<!\s)token="):
        whole = re.compile(source.encode()).search(data) is not None
        assert whole <= any(re.compile(p.encode()).search(data) for p in alternatives(source))


def test_first_bytes_and_literal_prefix_are_necessary_signs() -> None:
    assert first_bytes(r"[?&;]x") == (b"&", b";", b"?")
    assert first_bytes("api", re.IGNORECASE) == (b"A", b"a")
    assert first_bytes(r"\s+x") == () and first_bytes(r"[^a]") == ()
    assert literal_prefix(r"secret[a-z]*=") == b"secret"
    assert literal_prefix(r"api[_-]?key") == b"api"
    assert literal_prefix(r"hf[_-]") == b"" and literal_prefix(r"(?:ab|cd)e") == b""


def test_the_key_value_pattern_matches_as_before() -> None:
    new = dict(load_rules().patterns)["key-value"]
    rng = random.Random(5)
    words = [b"api_key", b"API-KEY", b"apikey", b"secret", b"passwd", b"password", b"credential", b"access_key",
             b"private-key", b"encryption_key", b"_token", b"-token", b"hf_tokenizer", b"x", b"'", b'"', b"=", b":",
             b" ", b"None", b"12,5", b"hunter2", b"'a b'", b"\n", b"--", b"_", b"TOKEN"]
    for _ in range(3000):
        text = b"".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        old_m = [m.span("secret") for m in re.finditer(OLD_KEY_VALUE.encode(), text)]
        new_m = [m.span("secret") for m in re.finditer(new.encode(), text)]
        assert old_m == new_m, text


@pytest.mark.slow
@pytest.mark.parametrize("engine", available_engines())
def test_redaction_is_unchanged_on_tricky_lines(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _old(engine, monkeypatch)
    new = Redactor(literals=["Planted-Lit3ral"])
    assert new.engine == engine
    rng = random.Random(11)
    for line in LINES:
        for repeat in (1, 200):  # one line (a region) and a dense chunk of them
            chunk = (line + b"\n") * repeat
            assert new.chunk(chunk) == old.chunk(chunk), (engine, line)
    fill = b"[2026-11-14 10:21:07 TP0] Decode batch, #running-req: 32, #token: 41234, token usage: 0.21\n"
    for _ in range(300):
        lines = [rng.choice(LINES) if rng.random() < 0.3 else fill for _ in range(rng.randint(1, 80))]
        if rng.random() < 0.3:
            lines.insert(rng.randrange(len(lines)), b"odd Planted-Lit3ral here")
        chunk = b"\n".join(lines) + b"\n"
        assert new.chunk(chunk) == old.chunk(chunk), (engine, chunk)


def test_a_harmless_value_on_every_line_is_decided_without_the_joined_regex(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Redactor()
    calls: list[int] = []
    monkeypatch.setattr(r, "_replace", lambda *a: calls.append(1))
    chunk = b"".join(b"[%d] server_args: api_key=None, tp_size=8, port=30000\n" % i for i in range(5000))
    assert r.chunk(chunk) == chunk and calls == []


@pytest.mark.skipif("hyperscan" not in available_engines(), reason="Hyperscan is not installed")
def test_the_spelled_out_harmless_values_agree_with_the_look_ahead() -> None:
    """unharmless() (what Hyperscan runs) matches exactly where the look-ahead refuses nothing."""
    import hyperscan

    rules = load_rules()
    chars = dict(zip((n for n, _s in rules.patterns), rules.value_chars, strict=True))["key-value"]
    assert chars is not None
    spelled = unharmless(rules.harmless, chars)
    assert spelled is not None
    look = re.compile(f"k=(?!(?:{rules.harmless})(?!{chars}))(?:['\"]|{chars})".encode(), re.IGNORECASE)
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[b"k=(?:['\"]|" + spelled.encode() + b")"], ids=[0],
               flags=[hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_SINGLEMATCH])

    def hs(data: bytes) -> bool:
        found: list[int] = []
        db.scan(data, match_event_handler=lambda *_a: found.append(1))
        return bool(found)

    rng = random.Random(3)
    alphabet = [*"noeultrfasixNEULTRFASI05.-_%,;) }'\"\n\t:/=x", "none", "null", "true", "false", "nil", "1.5", "-3"]
    for _ in range(60000):
        data = b"k=" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))).encode()
        assert hs(data) == (look.search(data) is not None), data
    assert unharmless("none|null", chars) is None  # a shape it does not know: the caller keeps re
