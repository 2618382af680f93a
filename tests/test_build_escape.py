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
