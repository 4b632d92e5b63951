"""Model text as markdown, safely: what the assistant writes, rendered as it means it.

Models answer in markdown (lists, code blocks, tables). `markdown_html` renders
it with markdown-it-py (CommonMark plus tables and strikethrough) with raw HTML
*off*: an ``<img onerror=...>`` in a reply is shown as text. Links keep only
the schemes ``http``, ``https`` and ``mailto`` (`safe_url`, the one URL
policy: a ``javascript:`` link stays literal text) and open in a new tab
without a referrer; images are not loaded (a reply cannot make the notebook
fetch a tracking pixel). The block carries
the classes MathJax skips, so dollar amounts and ``\\style{...}`` stay as written.

The parser is imported on the first render, so ``import nb_agents`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._html import NO_TYPESET, PRE, SAFE_SCHEMES, esc, safe_url

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["SAFE_SCHEMES", "markdown_html", "safe_link"]

_TEXT = "line-height:1.45;overflow-wrap:anywhere"

_parser: MarkdownIt | None = None


def safe_link(url: str) -> bool:
    """Whether a link may stay a link: the one URL policy, `nb_agents.render._html.safe_url`.

    Example:
        >>> safe_link("https://genkit.dev"), safe_link("javascript:alert(1)"), safe_link("/etc")
        (True, False, False)
    """
    return safe_url(url)


def _make_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = safe_link  # type: ignore[method-assign]  # markdown-it-py's documented hook

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        token.attrSet("target", "_blank")
        token.attrSet("rel", "noopener noreferrer nofollow")
        return str(self.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def parser() -> MarkdownIt:
    """The shared markdown parser (built on first use)."""
    global _parser
    if _parser is None:
        _parser = _make_parser()
    return _parser


def markdown_html(text: str, *, cls: str = "nba-md") -> str:
    """`text` rendered as markdown in a block MathJax skips; raw HTML shown as text.

    Example:
        >>> print(markdown_html("I moved **$500** <b>now</b>"))  # doctest: +NORMALIZE_WHITESPACE
        <div class="nba-md jp-RenderedHTMLCommon tex2jax_ignore mathjax_ignore" style="..."><p>I moved
        <strong>$500</strong> &lt;b&gt;now&lt;/b&gt;</p>
        </div>
    """
    if not text:
        return ""
    try:
        body = (
            parser()
            .render(text)
            .replace("<pre>", f'<pre style="{PRE}">')
            .replace("<table>", '<table style="margin-left:0;margin-right:auto">')
        )
    except Exception:  # noqa: BLE001 - a parser bug must not hide the text: show it escaped
        body = f'<p style="white-space:pre-wrap">{esc(text)}</p>'
    return f'<div class="{cls} jp-RenderedHTMLCommon {NO_TYPESET}" style="{_TEXT}">{body}</div>'
