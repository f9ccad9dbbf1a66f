# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pages after their assets, observed on the storage interface: every non-HTML output is written
before the first HTML output, and deletes follow every write."""

from __future__ import annotations

from ansible_collections.distributor.core.plugins.module_utils._distributor.execution.execute import is_page
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage


class Recording(MemoryStorage):
    """A MemoryStorage that notes each output write and delete, in order (records left out)."""

    def __init__(self, log, *args):
        super().__init__(*args)
        self.log = log

    def write(self, path, chunks):
        if path not in (STATE_NAME, JOURNAL_NAME):
            self.log.append(("write", path))
        super().write(path, chunks)

    def delete(self, path):
        if path != JOURNAL_NAME:
            self.log.append(("delete", path))
        return super().delete(path)


PIPELINE = {"id": "reports", "outputs": [{"match": "**/*.md", "transform": "markdown_to_html"}, {"match": "**/*.htm"},
                                         {"match": "**/*.HTML"}, {"match": "**/*.png"}, {"match": "**/*.css"}]}
DEST = {"id": "archive", "storage": MEMORY_STORAGE}


def test_html_is_any_case_of_html_or_htm():
    assert all(is_page(p) for p in ("a.html", "b/c.htm", "D.HTML", "e.HtM"))
    assert not any(is_page(p) for p in ("a.png", "html", "a.html.gz", "site.css"))


def test_assets_are_written_before_pages_and_deletes_come_last(tmp_path):
    store, log = {}, []

    def opener(cfg, base, token):
        return Recording(log, store, base, token)

    first = write_bundle(tmp_path / "v1", {"a.md": b"# a\n", "gone.png": b"0", "z/old.css": b"o"},
                         created="2026-06-03T00:00:00Z")
    publish(first, PIPELINE, DEST, now=NOW, opener=opener)
    del log[:]
    second = write_bundle(tmp_path / "v2", {"a.md": b"# a2\n", "b/index.md": b"# b\n", "c.htm": b"<p>c</p>",
                                            "D.HTML": b"<p>d</p>", "a.png": b"1", "z/z.png": b"2", "site.css": b"s"})
    publish(second, PIPELINE, DEST, now=LATER, opener=opener)
    written = [path for op, path in log if op == "write"]
    assert sorted(written[:3]) == ["a.png", "site.css", "z/z.png"]
    assert sorted(written[3:]) == ["D.HTML", "a.html", "b/index.html", "c.htm"]
    assert log[len(written):] == [("delete", "gone.png"), ("delete", "z/old.css")]
