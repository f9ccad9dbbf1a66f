# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Content diffs: what changes inside the outputs a publish writes, shown as `copy` and
`template` show it.

With `--diff` the listing of paths and digests comes first; then each written output has an
entry of its own: the old and the new text, which Ansible renders as a unified diff, or one line
saying why it is not shown (binary content, over a bound, content distributor does not manage,
which it never reads, something other than a regular file, which it never opens, or a file with
a name distributor did not make: regular.ForeignLinks). The old content is read from the
destination before anything is written, in check mode as in a real run, and only for outputs a
state record manages there: what is found at a destination is untrusted, so nothing is read that
is larger than a bound allows, as far as the record tells, and bytes that are not UTF-8 text are
only called binary.
"""

from __future__ import annotations

from typing import Callable, Iterable

from .errors import Unreadable
from .plan import Write
from .regular import ForeignLinks
from .state import Output

# Bytes of one output's old or new content shown at most, and of all contents one task shows
# (old and new counted): a reviewer reads pages, not data files, and a result Ansible holds in
# memory and prints must stay small whatever the bundle holds.
FILE_BOUND = 64 * 1024
TASK_BOUND = 1024 * 1024


class _Skip(Exception):
    """Why an output's content is not shown, in words for the reviewer."""


def content_diffs(writes: Iterable[Write], managed: dict[str, Output], present: frozenset,
                  read_old: Callable[[str, int], bytes | None], read_new: Callable[[Write], bytes],
                  where: Callable[[str], str]) -> list[dict]:
    """One Ansible diff entry per write, in plan order.

    `managed` maps paths to their records before the run, `present` holds the files under the
    bundle path (as the plan saw them), `read_old(path, limit)` reads at most `limit + 1` bytes
    of the destination (the record's size may be a lie, the file there of any size), `read_new`
    the bytes the write puts there, `where` names a path's location for the headers.
    """
    budget = TASK_BOUND
    entries = []
    for write in writes:
        location = where(write.path)
        try:
            before, after, used = _texts(write, managed.get(write.path), write.path in present, read_old, read_new, budget)
        except _Skip as why:
            entries.append({"before_header": location, "after_header": location,
                            "prepared": "diff skipped: %s: %s\n" % (location, why)})
            continue
        budget -= used
        entries.append({"before_header": location, "after_header": location, "before": before, "after": after})
    return entries


def _texts(write: Write, record: Output | None, present: bool, read_old, read_new, budget: int) -> tuple[str, str, int]:
    """(old text, new text, bytes read) of one write, or _Skip. The new bytes are judged first, so nothing
    is read from the destination for an output whose new content would not be shown anyway."""
    if present and record is None:
        raise _Skip("replaces content distributor does not manage, which it does not read")
    _within(write.content.size, "new")
    old_size = record.size if present else 0
    _within(old_size, "old")
    if write.content.size + old_size > budget:
        raise _Skip("the bound of %d bytes of content diffs per task is reached" % TASK_BOUND)
    new = read_new(write)
    after = _text(new, "new")
    if not present:
        return "", after, len(new)
    try:
        old = read_old(write.path, FILE_BOUND) or b""
    except ForeignLinks as links:
        raise _Skip("old content not shown: " + links.shown) from None
    except Unreadable as found:
        raise _Skip("the old file is %s, not a regular file, which distributor does not open" % found.kind) from None
    if len(old) > FILE_BOUND:
        raise _Skip("old content has grown past its record's %d bytes, over the bound of %d bytes per file"
                    % (old_size, FILE_BOUND))
    return _text(old, "old"), after, len(new) + len(old)


def _within(size: int, which: str) -> None:
    if size > FILE_BOUND:
        raise _Skip("%s content is %d bytes, over the bound of %d bytes per file" % (which, size, FILE_BOUND))


def _text(data: bytes, which: str) -> str:
    """UTF-8 without NUL bytes is text, as Ansible's own diff judges files; the rest is binary."""
    if b"\0" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise _Skip("%s content is binary" % which)
