# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every relative link of the user's and the maintainer's documentation leads somewhere.

The documentation is split into topic pages that link to each other's sections; a page renamed or
a heading reworded would otherwise leave a reader at the top of a page, or at GitHub's 404. A link
must name an existing file and, with a `#anchor`, a heading of that Markdown file, spelled by
GitHub's rules (lowercase, spaces to `-`, punctuation other than `-` and `_` dropped, `-1`, `-2`
for repeated headings).
"""

from __future__ import annotations

import glob
import os
import re
from urllib.parse import unquote

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
INLINE_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _documents() -> list[str]:
    """README.md, CONTRIBUTING.md and every page under docs/, relative to the repository."""
    pages = ["README.md", "CONTRIBUTING.md"]
    pages += [os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)]
    return sorted(page for page in pages if os.path.isfile(os.path.join(ROOT, page)))


def _prose(path: str) -> str:
    """The Markdown of `path` without fenced code, where `#` starts a comment, not a heading."""
    with open(path, encoding="utf-8") as handle:
        return FENCE.sub("", handle.read())


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: link targets and code spans count by their words."""
    text = INLINE_LINK.sub(r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: str) -> set[str]:
    """The anchors of a Markdown file's headings, repeated ones numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(_prose(path)):
        name = anchor(match.group(1))
        count = seen.get(name, 0)
        seen[name] = count + 1
        found.add(name if count == 0 else "%s-%d" % (name, count))
    return found


def broken_links(page: str, root: str = ROOT) -> list[str]:
    """The relative links of `page` (relative to `root`) that lead nowhere, with why."""
    path = os.path.join(root, page)
    broken = []
    for match in LINK.finditer(_prose(path)):
        target = match.group(1)
        if EXTERNAL.match(target):
            continue
        file_part, _hash, fragment = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), unquote(file_part))) if file_part else path
        if not os.path.exists(resolved):
            broken.append("%s: no file %s" % (target, os.path.relpath(resolved, root)))
        elif fragment and resolved.endswith(".md") and unquote(fragment) not in anchors(resolved):
            broken.append("%s: no heading #%s in %s" % (target, fragment, os.path.relpath(resolved, root)))
    return broken


@pytest.mark.parametrize("page", _documents())
def test_every_relative_link_leads_to_a_file_and_heading(page):
    assert broken_links(page) == []


def test_the_pages_are_found():
    """The check reads the pages it is meant to: an empty list would pass any link."""
    pages = _documents()
    assert {"README.md", "CONTRIBUTING.md", "docs/README.md", "docs/config.md", "docs/internal/architecture.md"} <= set(pages)


@pytest.mark.parametrize(
    "heading, expected",
    [
        ("Reviewing changes with `--check --diff`", "reviewing-changes-with---check---diff"),
        ("Looking at a destination: `distributor_state_info`", "looking-at-a-destination-distributor_state_info"),
        ("SFTP: what a path-based protocol leaves open", "sftp-what-a-path-based-protocol-leaves-open"),
        ("Statuses and keep-N", "statuses-and-keep-n"),
        ("See [config](config.md)", "see-config"),
    ],
)
def test_anchor_follows_githubs_rules(heading, expected):
    assert anchor(heading) == expected


def test_a_broken_anchor_and_a_missing_file_are_reported(tmp_path):
    """The check fails where it should: a link to a missing heading and to a missing file."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Two words\n\n```\n# not a heading\n```\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#two-words) [self](#title) [gone](docs/b.md) [wrong](docs/a.md#not-a-heading) "
        "[web](https://example.com/x.md#y)\n\n# Title\n",
        encoding="utf-8",
    )
    assert broken_links("README.md", str(tmp_path)) == ["docs/b.md: no file docs/b.md", "docs/a.md#not-a-heading: no heading #not-a-heading in docs/a.md"]
