# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CDN paths a run made stale: what a user fronting the destination with a CDN would
otherwise work out by hand from `written`, `deleted` and `links.base_url`.

Each URL is made from the output's path and `links.base_url` as this run renders it, never read
from a record (urls.py): a record's `url` someone rewrote to `https://h/*` would otherwise purge
the whole site, or `…/../../admin/a.html` another part of it. A page is served at its directory
URL as well (`/a/index.html` also as `/a/`), so both are given. CloudFront bills per path and a
wildcard counts as one, so above the destination's `links.invalidation_limit` paths collapse to
`<directory>/*` (a wildcard may only end a path), the deepest directories first: the paths keep
as much precision as the limit allows, and the same changes always give the same paths.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit

from ..urls import output_url

INDEX_PAGES = ("index.html", "index.htm")


def invalidation_paths(urls, limit: int) -> list[str]:
    """The sorted URL paths of `urls` (percent-encoding kept as in the URL, None skipped: no
    `base_url`), with the directory form of index pages, at most `limit` of them."""
    paths = set()
    for url in urls:
        if url is None:
            continue
        path = urlsplit(url).path or "/"
        paths.add(path)
        directory, _slash, name = path.rpartition("/")
        if name in INDEX_PAGES:
            paths.add(directory + "/")
    return sorted(_collapse(paths, limit))


def changed_urls(plan, base_url: str | None) -> list:
    """The URLs of the outputs a publish plan writes, repairs, resettles (served with other
    headers now) or deletes, at `base_url`: where the bundle path is served now, whatever URL a
    record of a deleted output holds."""
    changed = (*plan.writes, *plan.repairs, *plan.resettles)
    return [output_url(base_url, path) for path in (*(w.path for w in changed), *plan.deletes)]


def _collapse(paths: set, limit: int) -> set:
    """Replace directories by `<directory>*` (directory ending in `/`), deepest first and, at one
    depth, those holding the most paths first, until at most `limit` paths remain."""
    entries = set(paths)
    depth = max((p.count("/") for p in entries), default=0) - 1
    while len(entries) > limit and depth >= 0:
        holding = Counter(d for d in (_ancestor(p, depth) for p in entries) if d is not None)
        # Directories of one depth are disjoint: each collapse saves its count less one.
        excess, chosen = len(entries) - limit, set()
        for directory, count in sorted(holding.items(), key=lambda item: (-item[1], item[0])):
            if excess <= 0 or count < 2:
                break
            chosen.add(directory)
            excess -= count - 1
        entries = {p for p in entries if _ancestor(p, depth) not in chosen} | {d + "*" for d in chosen}
        depth -= 1
    return entries


def _ancestor(path: str, depth: int) -> str | None:
    """The directory `depth` levels below the root that holds `path` (`/` is depth 0), ending in
    `/`; None for a path not that deep."""
    end = -1
    for _level in range(depth + 1):
        end = path.find("/", end + 1)
        if end < 0:
            return None
    return path[:end + 1]
