# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The glob language of pipeline rules, `exclude`, `links.primary` and S3 `cache_control` rules.

One matcher for every setting that names output or source paths, so a pattern means the same
wherever an operator writes it. It sits at the bottom of the core and imports none of it: the
settings (attributes, config) and the plan both use it.
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern:
    """`**` crosses directories, `*` and `?` stay within one segment, `**/` may match nothing."""
    regex, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif pattern[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif pattern[i] == "?":
            regex, i = regex + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                regex, i = regex + re.escape("["), i + 1
            else:
                regex, i = regex + fnmatch.translate(pattern[i:end + 1])[4:-3], end + 1
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return re.compile(regex + r"\Z")


def glob_match(pattern: str, path: str) -> bool:
    """Whether the relative POSIX `path` matches `pattern`: fnmatch's `*` would cross `/`, which
    would make `*.md` match files in every subdirectory."""
    return glob_matcher(pattern)(path) is not None


def glob_matcher(pattern: str):
    """glob_match for one pattern and many paths (a true value or None), for loops over every
    file of a large bundle: the pattern is looked up once, not once per file. `**`, the default
    rule, is answered without the regex (0.8 µs a file)."""
    if pattern == "**":
        return _any_one_line
    return _glob(pattern).match


def _any_one_line(path: str):
    """What `**` (`.*` without DOTALL) matches: any path without a newline, the empty one too."""
    return None if "\n" in path else True
