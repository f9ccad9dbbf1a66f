# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a pipeline rule does to a bundle file: the output's path, its kind, and its bytes."""

from __future__ import annotations

import html
import posixpath
import re
import traceback
from functools import lru_cache
from typing import TYPE_CHECKING

from .errors import DistributorError, MissingLibrary

try:
    import markdown
    from markdown.extensions import Extension
    from markdown.extensions.toc import slugify_unicode
    from markdown.treeprocessors import Treeprocessor
except ImportError:
    HAS_MARKDOWN = False
    MARKDOWN_IMPORT_ERROR = traceback.format_exc()
    Extension = Treeprocessor = object  # so the classes below still define; render_markdown refuses
else:
    HAS_MARKDOWN = True
    MARKDOWN_IMPORT_ERROR = None

if TYPE_CHECKING:
    from .manifest import Bundle

TRANSFORMS = ("copy", "markdown_to_html")
_KINDS = {"copy": "source", "markdown_to_html": "generated"}

# Schemes whose URLs run code or smuggle content when followed. Browsers drop ASCII whitespace
# and control characters inside a scheme and decode character references in attributes, so the
# check runs on the decoded, squeezed, lower-cased URL.
_SCRIPT_SCHEME = re.compile(r"(?:javascript|vbscript|data):")
_SQUEEZE = re.compile(r"[\x00-\x20\x7f\\]+")
_HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

_DOCUMENT = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
</head>
<body>
%s
</body>
</html>
"""


def _known(transform: str) -> str:
    if transform not in TRANSFORMS:
        raise DistributorError("invalid_config", "unknown transform %r; use one of %s" % (
            transform, ", ".join(TRANSFORMS)))
    return transform


def output_path(transform: str, source_path: str) -> str:
    """Where the output of `source_path` lands under the bundle path."""
    if _known(transform) == "copy":
        return source_path
    head, name = posixpath.split(source_path)
    stem = posixpath.splitext(name)[0]
    return posixpath.join(head, stem + ".html")


def output_kind(transform: str) -> str:
    """`source` outputs are the producer's bytes; `generated` ones are distributor's rendering."""
    return _KINDS[_known(transform)]


def render_markdown(source: bytes, source_path: str, allow_raw_html: bool = False) -> bytes:
    """A complete UTF-8 HTML5 document from Markdown, the same bytes for the same input.

    Bundles come from producers, who are trusted less than operators. By default raw HTML in
    the source is shown as text and links or images whose URL uses a script-capable scheme
    (`javascript:`, `vbscript:`, `data:`) lose that URL. `allow_raw_html=True` is the operator
    vouching for the producer: raw HTML then passes through untouched, since filtering it would
    need a full HTML sanitiser; links and images written in Markdown syntax are still cleaned.
    Relative Markdown links to `.md` files (lower-case, like the usual `**/*.md` rule) point at
    the `.html` this transform writes for them; links inside raw HTML are left as written.
    """
    if not HAS_MARKDOWN:
        raise MissingLibrary("markdown", "the markdown_to_html transform", MARKDOWN_IMPORT_ERROR)
    renderer = _renderer(allow_raw_html)
    try:
        body = renderer.reset().convert(_decode(source, source_path))
    except RecursionError:
        # Python-Markdown parses nested inline markup recursively; the shared renderer is reset
        # before every page, so nothing of the failed one is reused.
        raise DistributorError("invalid_manifest", "%s nests Markdown markup too deeply to render; flatten it or "
                               "publish it with the copy transform" % source_path) from None
    title = _first_heading(renderer) or posixpath.basename(source_path)
    return (_DOCUMENT % (html.escape(title, quote=False), body)).encode("utf-8")


@lru_cache(maxsize=2)
def _renderer(allow_raw_html: bool):
    """One Markdown instance per option, reset between pages: building one (four extensions) per
    page cost about 6% of rendering."""
    return markdown.Markdown(
        extensions=["tables", "fenced_code", "toc", _DistributorExtension(allow_raw_html)],
        extension_configs={"toc": {"slugify": slugify_unicode}},
        output_format="html",
    )


def _decode(source: bytes, source_path: str) -> str:
    try:
        return source.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_manifest", "%s is not UTF-8 text (byte %d); save it as UTF-8 or "
                               "publish it with the copy transform" % (source_path, exc.start)) from None


def _first_heading(renderer) -> str:
    """The text of the document's first heading, as the toc extension collected it (HTML-escaped,
    tags stripped); toc nests later headings only, so the first token is the first heading."""
    tokens = getattr(renderer, "toc_tokens", [])
    return html.unescape(tokens[0]["name"]).strip() if tokens else ""


class _DistributorExtension(Extension):
    """Raw HTML off by default, and the link treeprocessor, as one Markdown extension."""

    def __init__(self, allow_raw_html: bool):
        super().__init__()
        self.allow_raw_html = allow_raw_html

    def extendMarkdown(self, md) -> None:
        if not self.allow_raw_html:
            # Without these two, Markdown treats `<tag>` as text and its serializer escapes it.
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
        # Below `unescape` (0): backslash escapes are restored in attributes by then, so what
        # is checked is what the browser gets.
        md.treeprocessors.register(_LinkTreeprocessor(md), "distributor_links", -10)


class _LinkTreeprocessor(Treeprocessor):
    """Drops script-capable URLs and points relative `.md` links at their `.html` outputs."""

    def run(self, root) -> None:
        for element in root.iter():
            for attribute in ("href", "src"):
                url = element.get(attribute)
                if url is None:
                    continue
                if _is_script_url(url):
                    del element.attrib[attribute]
                elif attribute == "href":
                    element.set(attribute, _rewrite_link(url))


def _is_script_url(url: str) -> bool:
    return bool(_SCRIPT_SCHEME.match(_SQUEEZE.sub("", html.unescape(url)).lower()))


def _rewrite_link(url: str) -> str:
    """`guide/setup.md#install` -> `guide/setup.html#install`; URLs with a scheme or a host
    (`https://…`, `//host/…`) are another site's business and stay as written."""
    if _HAS_SCHEME.match(url) or url.startswith("//"):
        return url
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    path, rest = url[:cut], url[cut:]
    if not path.endswith(".md"):
        return url
    return path[: -len(".md")] + ".html" + rest
