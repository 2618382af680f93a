"""The escaping filter: every planted string renders as its own text through Python-Markdown."""

from __future__ import annotations

import html

import markdown
import pytest

from logkit.builder.escape import code, esc, fence, link, text_block

PLANTS = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "[click](javascript:alert(1))",
    "**bold** _em_ `code` ~~s~~",
    "| a | b |",
    "{: #id .cls onclick=x }",
    "# heading",
    "- list item",
    "1. numbered",
    "> quote",
    "&lt;already escaped&gt; &amp;",
    "flashinfer_trtllm __init__ a*b*c",
    "<!-- comment --> <![CDATA[x]]>",
    "line one\nline two\n===",
]
EXTENSIONS = ["tables", "attr_list", "admonition", "pymdownx.superfences"]


def rendered_text(source: str) -> tuple[str, str]:
    out = markdown.markdown(source, extensions=EXTENSIONS)
    text = html.unescape(__import__("re").sub(r"<[^>]+>", "", out))
    return out, text.strip()


@pytest.mark.parametrize("plant", PLANTS)
def test_inline_renders_as_text(plant: str) -> None:
    flat = " ".join(plant.split("\n"))
    for source in (str(esc(plant)), f"- {esc(plant)}", f"| x |\n|---|\n| {esc(plant)} |", f"## {esc(plant)}"):
        out, text = rendered_text(source)
        assert text.endswith(flat) or text == flat, (source, out)
        assert "<script" not in out and "<img" not in out and "<a " not in out and "<strong>" not in out
        assert "<em>" not in out and 'id="id"' not in out and "<h1" not in out and "<blockquote>" not in out


@pytest.mark.parametrize("plant", PLANTS)
def test_code_and_block(plant: str) -> None:
    out, text = rendered_text(f"| x |\n|---|\n| {code(plant)} |")
    assert text.split("\n")[-1] == " ".join(plant.split("\n")) and out.count("<td>") == 1
    out, text = rendered_text(str(text_block(plant)))
    assert "<script" not in out and "<h1" not in out


def test_fence_cannot_be_closed_from_inside() -> None:
    body = "```\n<script>x</script>\n````"
    out = markdown.markdown(str(fence(body, "bash")), extensions=EXTENSIONS)
    assert "<script>" not in out and html.unescape(out).count("<script>x</script>") == 1


def test_link_refuses_non_generated_targets() -> None:
    assert str(link("<b>", "sessions/x/index.md#A1")) == "[&#60;b&#62;](sessions/x/index.md#A1)"
    with pytest.raises(ValueError):
        link("x", "javascript:alert(1)")


def test_a_commands_words_are_shlexs_whatever_the_text() -> None:
    """The command block's plain-text fast path splits exactly as ``shlex.split`` (quotes, escapes,
    separators other than shlex's whitespace, non-ASCII spaces and unbalanced quotes included)."""
    import random
    import shlex

    from logkit.builder.render import _words

    def split(fn, text: str) -> object:
        try:
            return fn(text)
        except ValueError:
            return "unbalanced"

    rng = random.Random(0)
    alphabet = "ab -=#\t\n\r\x0b\x0c\x1c\x1f\"'\\$|;&()\xa0é"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert split(_words, text) == split(shlex.split, text), repr(text)
    assert _words("python -m sglang.launch_server --tp 8") == ["python", "-m", "sglang.launch_server", "--tp", "8"]
