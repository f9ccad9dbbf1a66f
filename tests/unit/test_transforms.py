# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""copy and markdown_to_html: output paths, kinds, and the HTML a producer's Markdown becomes."""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records import transforms as transforms_module
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError, MissingLibrary
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.transforms import (
    TRANSFORMS, Page, output_kind, output_path, read_template, render_markdown)


def render(text: str, path: str = "docs/page.md", allow_raw_html: bool = False) -> str:
    return render_markdown(text.encode("utf-8"), path, Page(allow_raw_html)).decode("utf-8")


def body(text: str, allow_raw_html: bool = False) -> str:
    document = render(text, allow_raw_html=allow_raw_html)
    return document[document.index("<body>\n") + 7: document.index("\n</body>")]


# output paths and kinds


def test_transforms_are_copy_and_markdown_to_html():
    assert TRANSFORMS == ("copy", "markdown_to_html")


@pytest.mark.parametrize("source, expected", [
    ("report.md", "report.html"),
    ("docs/guide/setup.md", "docs/guide/setup.html"),
    ("notes.markdown", "notes.html"),
    ("archive.tar.md", "archive.tar.html"),
    ("README", "README.html"),
    ("v1.2/README", "v1.2/README.html"),
    (".hidden", ".hidden.html"),
])
def test_markdown_output_path_replaces_the_extension_with_html(source, expected):
    assert output_path("markdown_to_html", source) == expected


def test_copy_output_path_is_the_source_path():
    assert output_path("copy", "img/logo.png") == "img/logo.png"


def test_kinds_copy_is_source_and_markdown_is_generated():
    assert output_kind("copy") == "source"
    assert output_kind("markdown_to_html") == "generated"


@pytest.mark.parametrize("call", [lambda: output_path("pandoc", "a.md"), lambda: output_kind("pandoc")])
def test_unknown_transform_is_a_config_error(call):
    with pytest.raises(DistributorError) as caught:
        call()
    assert caught.value.reason == "invalid_config"
    assert caught.value.message == "unknown transform 'pandoc'; use one of copy, markdown_to_html"


# the document


def test_output_is_a_complete_utf8_html5_document():
    document = render("# Caf\u00e9\n\nText.\n")
    assert document.startswith("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
    assert "<title>Caf\u00e9</title>" in document
    assert "<p>Text.</p>" in document
    assert document.endswith("</body>\n</html>\n")


def test_title_is_the_text_of_the_first_heading_whatever_its_level():
    document = render("intro\n\n### First *styled* & `code`\n\n# Later\n")
    assert "<title>First styled &amp; code</title>" in document


def test_title_falls_back_to_the_file_name():
    assert "<title>page.md</title>" in render("no heading here\n")


def test_title_escapes_html_written_in_a_heading():
    assert "<title>&lt;script&gt;x&lt;/script&gt;</title>" in render("# <script>x</script>\n")


class Attributes(HTMLParser):
    """Every start tag's attributes, as a browser's tokenizer reads them."""

    def __init__(self, document: str):
        super().__init__()
        self.tags = []
        self.feed(document)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


BREAKOUTS = ["It's' onload='alert(document.domain)", 'A "quoted" title" http-equiv="refresh" content="0;url=https://evil.example/',
             "<x> & 'both' \"kinds\""]


@pytest.mark.parametrize("heading", BREAKOUTS)
@pytest.mark.parametrize("quote", ["'", '"'])
def test_a_title_in_a_quoted_attribute_of_the_operators_template_stays_one_value(heading, quote):
    """A producer's heading must not add an event handler or a refresh redirect to an operator's
    `<meta property="og:title" content='{title}'>`."""
    template = "<head><meta property=%sog:title%s content=%s{title}%s></head><body>{content}</body>" % ((quote,) * 4)
    document = render_markdown(("# %s\n" % heading).encode(), "a.md", Page(template=template)).decode()
    meta = [attrs for tag, attrs in Attributes(document).tags if tag == "meta"]
    assert meta == [[("property", "og:title"), ("content", heading)]]


def test_a_title_is_escaped_with_its_quotes_in_the_built_in_page():
    assert "<title>It&#x27;s &quot;here&quot;</title>" in render("# It's \"here\"\n")
    assert "<title>it&#x27;s.md</title>" in render_markdown(b"no heading\n", "it's.md").decode()


def test_tables_render():
    html = body("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert "<table>" in html and "<th>a</th>" in html and "<td>2</td>" in html


def test_fenced_code_gets_pygments_highlighting_classes_escaped():
    html = body("```python\nprint('<b>')\n```\n")
    assert html == ('<div class="codehilite"><pre><span></span><code><span class="nb">print</span><span class="p">(</span>'
                    '<span class="s1">\'&lt;b&gt;\'</span><span class="p">)</span>\n</code></pre></div>')


def test_without_pygments_fenced_code_renders_plain_with_its_language(monkeypatch):
    from markdown.extensions import codehilite
    monkeypatch.setattr(codehilite, "pygments", False)
    html = body("```python\nprint('<b>')\n```\n")
    assert html == "<pre class=\"codehilite\"><code class=\"language-python\">print('&lt;b&gt;')\n</code></pre>"


def test_headings_get_ids():
    html = body("# Getting started\n\n## Install it\n\n## Install it\n\n## \u00dcber\n")
    assert '<h1 id="getting-started">' in html
    assert '<h2 id="install-it">' in html and '<h2 id="install-it_1">' in html
    assert '<h2 id="\u00fcber">' in html


def test_output_is_deterministic():
    text = "# T\n\n[a](b.md#c)\n\n| x |\n|---|\n| 1 |\n\n```\ncode\n```\n<div>raw</div>\n"
    assert render(text) == render(text)
    assert render(text, allow_raw_html=True) == render(text, allow_raw_html=True)


def test_utf8_byte_order_mark_is_not_content():
    assert render_markdown(b"\xef\xbb\xbf# Hi\n", "a.md").decode().count("<title>Hi</title>") == 1


def test_source_that_is_not_utf8_is_refused():
    with pytest.raises(DistributorError) as caught:
        render_markdown(b"# caf\xe9\n", "docs/latin1.md")
    assert caught.value.reason == "invalid_manifest"
    assert caught.value.message == ("docs/latin1.md is not UTF-8 text (byte 5); save it as UTF-8 or "
                                    "publish it with the copy transform")


def test_missing_markdown_is_reported_as_a_missing_library(monkeypatch):
    monkeypatch.setitem(sys.modules, "markdown", None)  # what an import finds when it is not installed
    transforms_module._markdown.cache_clear()
    transforms_module._renderer.cache_clear()
    try:
        with pytest.raises(MissingLibrary) as caught:
            render_markdown(b"# x", "a.md")
    finally:
        monkeypatch.undo()
        transforms_module._markdown.cache_clear()
        transforms_module._renderer.cache_clear()
    assert caught.value.message == "markdown is required for the markdown_to_html transform"
    assert "ModuleNotFoundError" in caught.value.traceback
    assert render_markdown(b"# x", "a.md").startswith(b"<!DOCTYPE html>")


def test_a_module_start_imports_no_markdown_until_a_page_is_rendered():
    code = ("import sys; from ansible_collections.distributor.core.plugins.modules import distributor_publish; "
            "from ansible_collections.distributor.core.plugins.module_utils._distributor.records import transforms; "
            "assert 'markdown' not in sys.modules, 'imported at module start'; "
            "transforms.render_markdown(b'# x', 'a.md'); assert 'markdown' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


# links


@pytest.mark.parametrize("link, expected", [
    ("other.md", "other.html"),
    ("guide/setup.md#install", "guide/setup.html#install"),
    ("../up.md?plain=1#top", "../up.html?plain=1#top"),
    ("/docs/root.md", "/docs/root.html"),
    ("setup.md#see-x.md", "setup.html#see-x.md"),
])
def test_relative_links_to_markdown_files_point_at_their_html(link, expected):
    assert '<a href="%s">x</a>' % expected in body("[x](%s)" % link)


def test_reference_style_links_are_rewritten_too():
    assert '<a href="a.html#b">x</a>' in body("[x][r]\n\n[r]: a.md#b\n")


@pytest.mark.parametrize("link", [
    "https://example.com/readme.md", "http://example.com/a.md#x", "//cdn.example.com/a.md",
    "mailto:someone@example.com", "#section", "image.png", "notes.md.txt", "README.MD",
])
def test_absolute_and_non_markdown_links_are_untouched(link):
    assert '<a href="%s">x</a>' % link in body("[x](%s)" % link)


def test_raw_html_is_escaped_by_default():
    html = body("<script>alert(1)</script>\n\nText with <b onclick=\"x()\">inline</b> html.\n")
    assert "<script>" not in html and "<b " not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'Text with &lt;b onclick="x()"&gt;inline&lt;/b&gt; html.' in html


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", " JaVaScRiPt:alert(1)", "java\tscript:alert(1)", "jav&#x61;script:alert(1)",
    "jav&#97;script:alert(1)", "&#106;avascript:alert(1)", "javascript&colon;alert(1)", "javascript\\:alert(1)",
    "vbscript:msgbox(1)", "VBScript:msgbox(1)", "data:text/html;base64,PHNjcmlwdD4=",
])
def test_script_capable_link_urls_are_dropped(url):
    html = body("[click](%s)" % url)
    assert "<a>click</a>" in html
    assert "href" not in html


def test_script_capable_reference_link_urls_are_dropped():
    assert "<a>x</a>" in body("[x][evil]\n\n[evil]: javascript:alert(1)\n")


def test_data_image_sources_are_dropped():
    html = body("![logo](data:image/svg+xml;base64,PHN2Zz4=)")
    assert "<img alt=\"logo\">" in html and "src" not in html


def test_safe_links_and_images_are_kept():
    html = body("[a](https://example.com/x?y=1) ![b](img/logo.png)")
    assert '<a href="https://example.com/x?y=1">a</a>' in html
    assert '<img alt="b" src="img/logo.png">' in html


def test_raw_html_passes_through_when_the_operator_allows_it():
    html = body('<div class="note">Kept <em>as is</em></div>\n\nand <b>inline</b>\n', allow_raw_html=True)
    assert '<div class="note">Kept <em>as is</em></div>' in html
    assert "<b>inline</b>" in html


def test_markdown_links_are_still_cleaned_when_raw_html_is_allowed():
    html = body("[x](javascript:alert(1)) [y](other.md)", allow_raw_html=True)
    assert "<a>x</a>" in html and '<a href="other.html">y</a>' in html


def test_heading_text_with_raw_html_allowed_makes_a_tag_free_title():
    assert "<title>Hello world</title>" in render("# Hello <em>world</em>\n", allow_raw_html=True)


def test_the_shared_renderer_keeps_no_state_between_pages():
    """Pages render to the same bytes whatever was rendered before them (ids, toc, the title)."""
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records import transforms
    pages = [b"# Same\n\n## Same\n\n[x](a.md) <b>raw</b>\n", b"# Other\n\n| a | b |\n| - | - |\n| 1 | 2 |\n",
             b"no heading\n\n```\ncode\n```\n", b"# Same\n"]
    first = [transforms.render_markdown(p, "p%d.md" % i) for i, p in enumerate(pages)]
    again = [transforms.render_markdown(p, "p%d.md" % i) for i, p in reversed(list(enumerate(pages)))][::-1]
    transforms._renderer.cache_clear()
    fresh = []
    for i, p in enumerate(pages):
        fresh.append(transforms.render_markdown(p, "p%d.md" % i))
        transforms._renderer.cache_clear()
    assert first == again == fresh
    assert transforms.render_markdown(pages[0], "x.md", Page(allow_raw_html=True)) != first[0], "the option picks its own renderer"


# the page: built-in stylesheet, the operator's stylesheet and template


def test_pages_carry_the_built_in_stylesheet_inline_for_light_and_dark():
    document = render("# T\n")
    head = document[: document.index("</head>")]
    assert "<style>" in head and "<link" not in head
    for rule in ("prefers-color-scheme:dark", "th,td{border:1px solid", "img{max-width:100%",
                 "pre{background:var(--soft)", ".codehilite .k,"):
        assert rule in head, rule


def test_an_operator_stylesheet_url_replaces_the_built_in_one():
    document = render_markdown(b"# T\n", "a.md", Page(stylesheet="https://cdn.example.com/site.css?v=1&x=2")).decode()
    assert '<link rel="stylesheet" href="https://cdn.example.com/site.css?v=1&amp;x=2">' in document
    assert "<style>" not in document


def test_a_template_is_filled_once_and_keeps_every_other_brace():
    template = "<html><head><title>{title}</title><style>p{color:red}</style>{stylesheet}</head><main>{content}</main>{other}</html>"
    document = render_markdown(b"# A & B\n\nsays {title} and {content}\n", "a.md",
                               Page(stylesheet="/site.css", template=template)).decode()
    assert document == ('<html><head><title>A &amp; B</title><style>p{color:red}</style><link rel="stylesheet" href="/site.css">'
                        '</head><main><h1 id="a-b">A &amp; B</h1>\n<p>says {title} and {content}</p></main>{other}</html>')


def test_the_page_carries_its_language_in_the_built_in_page_and_in_a_template():
    assert render_markdown(b"# T\n", "a.md", Page(lang="pt-BR")).startswith(b'<!DOCTYPE html>\n<html lang="pt-BR">\n<head>')
    template = "<html lang={lang} data-lang='{lang}'><main>{content}</main></html>"
    assert render_markdown(b"# T\n", "a.md", Page(template=template, lang="de")) == (
        b'<html lang=de data-lang=\'de\'><main><h1 id="t">T</h1></main></html>')


def test_the_template_changes_the_page_bytes():
    plain = render_markdown(b"# T\n", "a.md")
    templated = render_markdown(b"# T\n", "a.md", Page(template="<body class=site>{content}</body>"))
    assert templated == b'<body class=site><h1 id="t">T</h1></body>' and templated != plain


def test_a_template_file_is_read_as_utf8_and_links_are_followed(tmp_path):
    (tmp_path / "page.html").write_bytes("\ufeff<h1>Caf\u00e9</h1>{content}".encode("utf-8"))
    (tmp_path / "link.html").symlink_to(tmp_path / "page.html")
    assert read_template(str(tmp_path / "link.html"), "pipeline site") == "<h1>Caf\u00e9</h1>{content}"


@pytest.mark.parametrize("template, message", [
    ("<meta content={title}>{content}", "puts {title} in the tag <meta content={title}> outside a quoted attribute value"),
    ("<a title=x{title}>{content}</a>", "outside a quoted attribute value"),
    ("<p {title}>{content}</p>", "outside a quoted attribute value"),
    ("<div data-x='{content}'></div>", "puts {content} inside the tag <div data-x='{content}'>; it is HTML"),
    ("<link {stylesheet}>{content}", "puts {stylesheet} inside the tag"),
])
def test_a_placeholder_no_escaping_can_make_safe_in_a_tag_is_a_config_error(tmp_path, template, message):
    path = tmp_path / "page.html"
    path.write_text(template)
    with pytest.raises(DistributorError) as caught:
        read_template(str(path), "pipeline site")
    assert caught.value.reason == "invalid_config" and message in caught.value.message


def test_a_title_in_quoted_attributes_and_text_is_a_usable_template(tmp_path):
    template = ("<html><head><title>{title}</title><meta name=\"a=b\" content=\"x={title}\"><meta content='{title}'>"
                "{stylesheet}</head><body class=page>{content}<p>{title}</p></body></html>")
    (tmp_path / "page.html").write_text(template)
    assert read_template(str(tmp_path / "page.html"), "pipeline site") == template


@pytest.mark.parametrize("name, content, message", [
    ("missing.html", None, "cannot be read: No such file or directory"),
    ("plain.html", b"<p>{title}</p>", "has no {content} placeholder, so pages would lose their text"),
    ("latin1.html", b"{content} caf\xe9", "is not UTF-8 (byte 13); save it as UTF-8"),
    ("huge.html", b"{content}" + b"x" * (1024 * 1024), "is larger than 1048576 bytes"),
    ("dir", "dir", "is a directory, not a regular file"),
    ("fifo", "fifo", "is a FIFO (named pipe), not a regular file"),
])
def test_an_unusable_template_file_is_a_config_error_naming_it(tmp_path, name, content, message):
    import os
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif content == "fifo":
        os.mkfifo(path)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(DistributorError) as caught:
        read_template(str(path), "pipeline site")
    assert caught.value.reason == "invalid_config"
    assert caught.value.message.startswith("pipeline site: markdown.template %s " % path)
    assert message in caught.value.message
