# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a pipeline rule does to a bundle file: the output's path, its kind, and its bytes."""

from __future__ import annotations

import hashlib
import html
import json
import os
import posixpath
import re
import traceback
from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser

from ..errors import DistributorError, MissingLibrary
from ..regular import NotRegularFile, open_regular
from ..vocabulary import TRANSFORMS

try:
    import pygments
except ImportError:
    PYGMENTS_VERSION = None  # codehilite then writes plain code blocks: other bytes, so another key
else:
    PYGMENTS_VERSION = pygments.__version__

_KINDS = {"copy": "source", "markdown_to_html": "generated"}

# Schemes whose URLs run code or smuggle content when followed. Browsers drop ASCII whitespace
# and control characters inside a scheme and decode character references in attributes, so the
# check runs on the decoded, squeezed, lower-cased URL.
_SCRIPT_SCHEME = re.compile(r"(?:javascript|vbscript|data):")
_SQUEEZE = re.compile(r"[\x00-\x20\x7f\\]+")
_HAS_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

# The page every rendered document is: the built-in template. An operator's template
# (pipeline markdown.template) takes its place and is filled the same way, by fill_template.
DEFAULT_TEMPLATE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{stylesheet}
</head>
<body>
{content}
</body>
</html>
"""
PLACEHOLDERS = ("title", "content", "stylesheet", "lang")
DEFAULT_LANG = "en"
_PLACEHOLDER = re.compile(r"\{(%s)\}" % "|".join(PLACEHOLDERS))
# One attribute of a start tag as written: its name, then its value with the quotes it has.
_ATTRIBUTE = re.compile(r"""([^\s/>"'=][^\s/>"'=]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")
TEMPLATE_MAX_BYTES = 1024 * 1024

# The built-in stylesheet, inline so a page published anywhere (a web root, S3, a file opened
# from disk) looks finished without fetching anything: readable measure and type, bordered
# tables, code blocks, images that fit the screen, light and dark from the reader's setting, and
# the classes Pygments gives highlighted code (codehilite) in both. Static text, so a page's
# bytes do not depend on the Pygments version's own stylesheet; one line in the page, so that a
# reviewer's content diff of a new page is the page, not the stylesheet.
BUILTIN_STYLESHEET = (
    "<style>"
    ":root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--line:#d1d9e0;--soft:#f6f8fa;--link:#0969da}"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--line:#3d444d;--soft:#161b22;--link:#4493f8}}"
    "html{background:var(--bg);color:var(--fg)}"
    "body{max-width:52rem;margin:0 auto;padding:2rem 1.25rem 4rem;font:16px/1.6 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Noto Sans\","
    "Helvetica,Arial,sans-serif;overflow-wrap:break-word}"
    "h1,h2,h3,h4,h5,h6{line-height:1.25;margin:1.6em 0 .6em;font-weight:600}"
    "h1{font-size:2em;margin-top:0;padding-bottom:.3em;border-bottom:1px solid var(--line)}"
    "h2{font-size:1.5em;padding-bottom:.3em;border-bottom:1px solid var(--line)}"
    "h3{font-size:1.25em}"
    "p,ul,ol,dl,table,pre,blockquote{margin:0 0 1em}"
    "a{color:var(--link);text-decoration:none}"
    "a:hover{text-decoration:underline}"
    "img{max-width:100%;height:auto}"
    "hr{border:0;border-top:1px solid var(--line);margin:2em 0}"
    "blockquote{margin-left:0;padding:0 1em;color:var(--muted);border-left:.25em solid var(--line)}"
    "table{border-collapse:collapse;display:block;max-width:100%;overflow-x:auto}"
    "th,td{border:1px solid var(--line);padding:.4em .8em;text-align:left}"
    "th{background:var(--soft);font-weight:600}"
    "tr:nth-child(2n) td{background:var(--soft)}"
    "code,pre{font-family:ui-monospace,SFMono-Regular,\"SF Mono\",Menlo,Consolas,\"Liberation Mono\",monospace;font-size:.875em}"
    "code{background:var(--soft);padding:.15em .35em;border-radius:4px}"
    "pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:1em;overflow-x:auto;line-height:1.45}"
    "pre code{background:none;padding:0}"
    ".codehilite{margin:0 0 1em}"
    ".codehilite .c,.codehilite .c1,.codehilite .cm,.codehilite .cs,.codehilite .ch,.codehilite .cp{color:#6e7781;font-style:italic}"
    ".codehilite .k,.codehilite .kc,.codehilite .kd,.codehilite .kn,.codehilite .kr,.codehilite .kt,.codehilite .ow,.codehilite .nt{color:#cf222e}"
    ".codehilite .s,.codehilite .s1,.codehilite .s2,.codehilite .sb,.codehilite .sd,.codehilite .se,.codehilite .sh,.codehilite .si,"
    ".codehilite .sx,.codehilite .dl{color:#0a3069}"
    ".codehilite .m,.codehilite .mi,.codehilite .mf,.codehilite .mh,.codehilite .mo,.codehilite .il,.codehilite .no,.codehilite .kc{color:#0550ae}"
    ".codehilite .nf,.codehilite .fm,.codehilite .nc,.codehilite .nd,.codehilite .ne{color:#8250df}"
    ".codehilite .nb,.codehilite .bp,.codehilite .na,.codehilite .nv,.codehilite .vi{color:#953800}"
    ".codehilite .gd{color:#82071e;background:#ffebe9}.codehilite .gi{color:#116329;background:#dafbe1}.codehilite .err{color:#cf222e}"
    "@media (prefers-color-scheme:dark){"
    ".codehilite .c,.codehilite .c1,.codehilite .cm,.codehilite .cs,.codehilite .ch,.codehilite .cp{color:#9198a1}"
    ".codehilite .k,.codehilite .kc,.codehilite .kd,.codehilite .kn,.codehilite .kr,.codehilite .kt,.codehilite .ow,.codehilite .nt{color:#ff7b72}"
    ".codehilite .s,.codehilite .s1,.codehilite .s2,.codehilite .sb,.codehilite .sd,.codehilite .se,.codehilite .sh,.codehilite .si,"
    ".codehilite .sx,.codehilite .dl{color:#a5d6ff}"
    ".codehilite .m,.codehilite .mi,.codehilite .mf,.codehilite .mh,.codehilite .mo,.codehilite .il,.codehilite .no,.codehilite .kc{color:#79c0ff}"
    ".codehilite .nf,.codehilite .fm,.codehilite .nc,.codehilite .nd,.codehilite .ne{color:#d2a8ff}"
    ".codehilite .nb,.codehilite .bp,.codehilite .na,.codehilite .nv,.codehilite .vi{color:#ffa657}"
    ".codehilite .gd{color:#ffdcd7;background:#67060c}.codehilite .gi{color:#aff5b4;background:#033a16}.codehilite .err{color:#ff7b72}"
    "}"
    "</style>")


# distributor's own part of a page's bytes: the built-in template and stylesheet, the extensions
# and options of the renderer, the link rewriting, the title rule. Bump it with every change that
# changes what render_markdown returns for the same input, or outputs recorded with an older key
# keep the old bytes (render_key reuses a record's digest without rendering). 2: the title is
# escaped with its quotes (`'` is `&#x27;`, `"` is `&quot;`). 3: the page's language
# (`<html lang="en">`, markdown.lang).
RENDERER_VERSION = 3


@dataclass(frozen=True)
class Page:
    """How a pipeline's Markdown becomes a page: the operator's `markdown` options, with the
    template already read (read_template), so rendering itself reads nothing but the source."""

    allow_raw_html: bool = False
    stylesheet: str | None = None
    template: str = DEFAULT_TEMPLATE
    lang: str = DEFAULT_LANG


def read_template(path: str, where: str) -> str:
    """The text of an operator's page template (`markdown.template`), or invalid_config naming
    the file: read once per publish, on the host that runs the module. The operator is trusted,
    so a link is followed; only what could hang the read (a FIFO, a device) is refused."""
    field = "%s: markdown.template %s" % (where, path)
    try:
        with open_regular(os.path.realpath(path)) as handle:
            raw = handle.read(TEMPLATE_MAX_BYTES + 1)
    except NotRegularFile as exc:
        raise DistributorError("invalid_config", "%s is %s, not a regular file" % (field, exc.kind)) from None
    except OSError as exc:
        raise DistributorError("invalid_config", "%s cannot be read: %s" % (field, exc.strerror or exc)) from None
    if len(raw) > TEMPLATE_MAX_BYTES:
        raise DistributorError("invalid_config", "%s is larger than %d bytes; a page template is one HTML page"
                               % (field, TEMPLATE_MAX_BYTES))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DistributorError("invalid_config", "%s is not UTF-8 (byte %d); save it as UTF-8" % (field, exc.start)) from None
    if "{content}" not in text:
        raise DistributorError("invalid_config", "%s has no {content} placeholder, so pages would lose their text; "
                               "put {content} where the rendered Markdown goes ({title}, {stylesheet} and {lang} are "
                               "optional)"
                               % field)
    problem = _TagPlaceholders.problem(text)
    if problem:
        raise DistributorError("invalid_config", "%s %s" % (field, problem))
    return text


class _TagPlaceholders(HTMLParser):
    """Finds placeholders inside a template's tags that no escaping can make safe: {title} is
    escaped for text and quoted attribute values (fill_template), so in an unquoted value a
    producer's heading `x onload=alert(1)` adds an attribute; {content} and {stylesheet} are
    HTML, which inside a tag breaks it open whatever it holds."""

    def __init__(self):
        super().__init__()
        self.found: str | None = None

    @classmethod
    def problem(cls, template: str) -> str | None:
        """What the first such placeholder is, as the end of a sentence naming the template."""
        finder = cls()
        finder.feed(template)
        finder.close()
        return finder.found

    def handle_starttag(self, tag: str, attrs) -> None:
        raw = self.get_starttag_text() or ""
        for name, value in _ATTRIBUTE.findall(raw[len(tag) + 1:]):
            for placeholder in _PLACEHOLDER.findall(name + value):
                if placeholder == "lang":
                    continue  # letters, digits and hyphens (the schema's pattern): safe in any value
                if placeholder != "title":
                    self._found("puts {%s} inside the tag %s; it is HTML and goes only where elements go" % (
                        placeholder, raw))
                elif value[:1] not in ("'", '"'):
                    self._found("puts {title} in the tag %s outside a quoted attribute value; quote the value "
                                "('{title}' or \"{title}\"): {title} is escaped for text and quoted values only" % raw)

    handle_startendtag = handle_starttag

    def _found(self, problem: str) -> None:
        if self.found is None:
            self.found = problem


def stylesheet_element(url: str | None) -> str:
    """What fills {stylesheet}: a link to the operator's sheet, else the built-in one inline."""
    if url is None:
        return BUILTIN_STYLESHEET
    return '<link rel="stylesheet" href="%s">' % html.escape(url, quote=True)


def fill_template(template: str, title: str, content: str, stylesheet: str, lang: str = DEFAULT_LANG) -> str:
    """Each `{title}`, `{content}`, `{stylesheet}` and `{lang}` replaced in one pass, so a page whose text
    says `{title}` keeps saying it; every other brace (CSS, scripts) stays as written. `title` is
    a producer's text and is escaped here, quotes too: an operator's template may put it in an
    attribute (`content='{title}'`), where a heading `It's' onload='…` must stay one value.
    `content` and `stylesheet` are HTML (read_template keeps them out of tags)."""
    values = {"title": html.escape(title, quote=True), "content": content, "stylesheet": stylesheet,
              "lang": html.escape(lang, quote=True)}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


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


def render_markdown(source: bytes, source_path: str, page: Page = Page()) -> bytes:
    """A complete UTF-8 HTML5 document from Markdown, the same bytes for the same input, page
    options and renderer versions (Python-Markdown, Pygments).

    Bundles come from producers, who are trusted less than operators. By default raw HTML in
    the source is shown as text and links or images whose URL uses a script-capable scheme
    (`javascript:`, `vbscript:`, `data:`) lose that URL. `allow_raw_html=True` is the operator
    vouching for the producer: raw HTML then passes through untouched, since filtering it would
    need a full HTML sanitiser; links and images written in Markdown syntax are still cleaned.
    Relative Markdown links to `.md` files (lower-case, like the usual `**/*.md` rule) point at
    the `.html` this transform writes for them; links inside raw HTML are left as written.
    Fenced code gets Pygments' highlighting classes when Pygments is installed (codehilite),
    plain `<pre><code class="language-…">` otherwise.
    """
    renderer = _renderer(page.allow_raw_html)
    try:
        body = renderer.reset().convert(_decode(source, source_path))
    except RecursionError:
        # Python-Markdown parses nested inline markup recursively; the shared renderer is reset
        # before every page, so nothing of the failed one is reused.
        raise DistributorError("invalid_manifest", "%s nests Markdown markup too deeply to render; flatten it or "
                               "publish it with the copy transform" % source_path) from None
    title = _first_heading(renderer) or posixpath.basename(source_path)
    return fill_template(page.template, title, body, stylesheet_element(page.stylesheet), page.lang).encode("utf-8")


def render_key(transform: str, source_sha256: str, source_path: str, page: Page) -> str:
    """`sha256:<hex>` over everything a generated output's bytes depend on: the transform, the
    source's digest and path (the title falls back to its name), the page options (the template
    by digest), the Markdown and Pygments versions and RENDERER_VERSION. Equal keys mean equal
    bytes, so a publish whose key equals an output's recorded one reuses the record instead of
    rendering the page again (state decision 43)."""
    facts = dict(_page_facts(page), transform=transform, source_sha256=source_sha256, source_path=source_path)
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


@lru_cache(maxsize=4)
def _page_facts(page: Page) -> dict:
    """The part of a render key every page of a publish shares, the template hashed once."""
    return {
        "key_format": 1,
        "renderer": RENDERER_VERSION,
        "markdown": _markdown_version(),
        "pygments": PYGMENTS_VERSION,
        "allow_raw_html": page.allow_raw_html,
        "stylesheet": page.stylesheet,
        "lang": page.lang,
        "template_sha256": "sha256:" + hashlib.sha256(page.template.encode("utf-8")).hexdigest(),
    }


@lru_cache(maxsize=1)
def _markdown():
    """Python-Markdown, imported when a page is first rendered or keyed rather than at every
    module start: a publish of copies never uses it, and its import was a tenth of the module's."""
    try:
        import markdown
    except ImportError:
        raise MissingLibrary("markdown", "the markdown_to_html transform", traceback.format_exc()) from None
    return markdown


def _markdown_version() -> str | None:
    try:
        return _markdown().__version__
    except MissingLibrary:
        return None


@lru_cache(maxsize=2)
def _renderer(allow_raw_html: bool):
    """One Markdown instance per option, reset between pages: building one (five extensions) per
    page cost about 6% of rendering."""
    markdown = _markdown()
    from markdown.extensions.toc import slugify_unicode
    return markdown.Markdown(
        extensions=["tables", "fenced_code", "codehilite", "toc", _extension(allow_raw_html)],
        extension_configs={"toc": {"slugify": slugify_unicode}, "codehilite": {"guess_lang": False}},
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


def _extension(allow_raw_html: bool):
    """Raw HTML off by default, and the link treeprocessor, as one Markdown extension: a class
    made here, as Markdown accepts only its own Extension's subclasses, imported for rendering."""
    from markdown.extensions import Extension

    class DistributorExtension(Extension):
        def extendMarkdown(self, md) -> None:
            if not allow_raw_html:
                # Without these two, Markdown treats `<tag>` as text and its serializer escapes it.
                md.preprocessors.deregister("html_block")
                md.inlinePatterns.deregister("html")
            # Below `unescape` (0): backslash escapes are restored in attributes by then, so what
            # is checked is what the browser gets.
            md.treeprocessors.register(_LinkTreeprocessor(), "distributor_links", -10)

    return DistributorExtension()


class _LinkTreeprocessor:
    """Drops script-capable URLs and points relative `.md` links at their `.html` outputs. Markdown
    only calls a treeprocessor's `run`, so this needs nothing of Python-Markdown's classes."""

    def run(self, root) -> None:
        for element in root.iter():
            for attribute in ("href", "src"):
                url = element.get(attribute)
                if url is None:
                    continue
                if is_script_url(url):
                    del element.attrib[attribute]
                elif attribute == "href":
                    element.set(attribute, _rewrite_link(url))


def is_script_url(url: str) -> bool:
    """A URL that runs code or smuggles content when followed, as a browser reads it."""
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
