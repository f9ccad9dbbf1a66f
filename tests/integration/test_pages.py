# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendered pages through ansible-playbook: the built-in stylesheet and highlighted code by
default, the operator's stylesheet and template file when the pipeline names them."""

from __future__ import annotations

from conftest import tree

SOURCE = b"# Report\n\n```python\nprint('hi')\n```\n"


def pipeline(**markdown):
    return {"id": "site", "outputs": [{"match": "*.md", "transform": "markdown_to_html"}], "markdown": markdown}


def destination(root):
    return {"id": "web", "storage": {"type": "local", "root": str(root)}}


def test_pages_are_styled_by_default_and_by_the_operators_template_and_stylesheet(playbook, make_bundle, tmp_path):
    bundle = make_bundle({"report.md": SOURCE})
    published = playbook.publish(source=bundle, pipeline=pipeline(), destination=destination(tmp_path / "plain"))
    assert published["changed"], published
    page = tree(tmp_path / "plain")["report.html"].decode()
    assert "<style>:root{color-scheme:light dark;" in page and '<span class="nb">print</span>' in page

    template = tmp_path / "page.html"
    template.write_text("<!DOCTYPE html>\n<title>{title} | Site</title>{stylesheet}\n<main>{content}</main>\n")
    styled = playbook.publish(source=bundle, pipeline=pipeline(stylesheet="/css/site.css", template=str(template)),
                              destination=destination(tmp_path / "styled"))
    page = tree(tmp_path / "styled")["report.html"].decode()
    assert page.startswith('<!DOCTYPE html>\n<title>Report | Site</title><link rel="stylesheet" href="/css/site.css">\n<main>')
    assert "<style>" not in page and styled["written"] == ["report.html"]

    missing = playbook.publish(source=bundle, pipeline=pipeline(template=str(tmp_path / "gone.html")),
                               destination=destination(tmp_path / "styled"))
    assert missing.get("failed") and missing["reason"] == "invalid_config"
    assert missing["msg"] == "pipeline site: markdown.template %s cannot be read: No such file or directory" % (tmp_path / "gone.html")
