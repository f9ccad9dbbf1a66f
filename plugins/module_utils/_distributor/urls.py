# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The URLs distributor makes (an output's: `links.base_url` joined with its path) and what a URL
must be for distributor to have made it.

URLs are made, never read: a record's `url` only informs whoever reads the record. Invalidation
paths and `primary_url` come from an output's path and the configured base URL, so a `url` someone
rewrote to `https://h/*` or `https://h/docs/../../admin/a.html` can choose neither what a CDN
purges nor what a result links to. A record holding a URL distributor never makes was edited, and
is refused like any other field that breaks the state's rules.
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import neg
from urllib.parse import quote, unquote, urlsplit

# Path characters quote() leaves as they are (and unquote() too): an output path made only of
# them is its own percent-encoding.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_.~/-]+")
_PLAIN_LINES = re.compile(r"(?:[A-Za-z0-9_.~/-]+\n)*")
_SEGMENT_SEPARATORS = re.compile(r"[/\\]")

# Base URLs (a recorded URL less its output path) already found sound: a state of 100,000 outputs
# has a handful, and a sound base stays sound.
_SOUND_BASES: set = set()
# Distinct bases all_made judges; a record with more takes the per-record check.
_BASES_JUDGED = 64


def output_url(base_url: str | None, path: str) -> str | None:
    """The public URL of an output: the rendered base URL joined with the quoted output path. A
    listed name that is not UTF-8 (a file force deletes; backends carry its bytes as surrogate
    escapes) is quoted byte for byte, the URL a web server serves that file at."""
    if not base_url:
        return None
    return base_url.rstrip("/") + "/" + quote(path, errors="surrogateescape")


def url_problem(url: str) -> str | None:
    """Why `url` is not one distributor makes (None when it could be): an absolute http(s) URL
    with a host, and no query, fragment, backslash or `.` / `..` segment. Segments are judged
    percent-decoded (`%2e%2e` is `..` to many servers), backslashes as separators (as browsers
    read http URLs)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an unclosed [IPv6] host
        return "is not a URL"
    if parts.scheme.lower() not in ("http", "https") or not host:
        return "is not an absolute http:// or https:// URL with a host"
    if "?" in url:
        return "has a query ('?')"
    if "#" in url:
        return "has a fragment ('#')"
    if "\\" in url:
        return "has a backslash"
    if any(segment in (".", "..") for segment in _SEGMENT_SEPARATORS.split(unquote(parts.path))):
        return "has a '.' or '..' segment"
    return None


def recorded_url_problem(url: str, path: str) -> str | None:
    """Why `url` is not the URL of output `path` under some base URL (None when it is): sound as
    url_problem says, and its percent-decoded path ends with `/` and the output's path. Compared
    decoded, since writers escape different characters (an earlier version, another
    implementation); under which base is not asked: other owners and earlier publications had
    their own (see docs/destination-state.md)."""
    plain = _PLAIN_PATH.fullmatch(path) is not None
    if plain and url.endswith("/" + path) and url[:-len(path)] in _SOUND_BASES:
        return None
    problem = url_problem(url)
    if problem:
        return problem
    if not unquote(urlsplit(url).path).endswith("/" + path):
        return "does not end with the output's path"
    if plain and url.endswith("/" + path):
        if len(_SOUND_BASES) >= 4096:
            _SOUND_BASES.clear()
        _SOUND_BASES.add(url[:-len(path)])
    return None


def all_made(urls: list, paths: list) -> bool:
    """Whether recorded_url_problem finds nothing wrong with any url of `urls` for the output
    path beside it in `paths` (strings, each clean: a record's paths pass paths.path_problem
    first), told by passes over the columns for plain paths: every url ends with `/` and its
    path, and each distinct base (a url less its path) is judged once, by recorded_url_problem
    on one of its pairs. That is how recorded_url_problem itself answers every other pair of a
    sound base (_SOUND_BASES): for a clean plain path the verdict depends on the base alone.
    False for anything else, which sends the caller to the per-record check."""
    if len(urls) != len(paths) or not paths:
        return len(urls) == len(paths)
    joined = "\n".join(paths)
    if joined.count("\n") != len(paths) - 1 or _PLAIN_LINES.fullmatch(joined + "\n") is None:
        return False
    if not {str}.issuperset(map(type, urls)) or not all(map(str.endswith, urls, map("/".__add__, paths))):
        return False
    bases = dict(zip(map(str.__getitem__, urls, map(slice, repeat(None), map(neg, map(len, paths)))), zip(urls, paths)))
    return len(bases) <= _BASES_JUDGED and all(recorded_url_problem(url, path) is None for url, path in bases.values())
