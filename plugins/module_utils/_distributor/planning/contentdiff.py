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
only called binary. A task shows a bounded number of entries and bytes and then says how many
more outputs it does not show; the built-in stylesheet every page inlines is shown as a one-line
note naming its digest.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Iterable

from ..limits import UNLIMITED
from ..errors import Unreadable
from .plan import Write
from ..regular import ForeignLinks
from ..records.state import Output
from ..records.transforms import BUILTIN_STYLESHEET

# Bytes of one output's old or new content read at most, and of all contents one task shows (old
# and new counted, as shown): a reviewer reads pages, not data files, and AWX drops a result
# whose text is over 700,000 characters, whatever the bundle holds.
FILE_BOUND = 64 * 1024
TASK_BOUND = 256 * 1024
# What a page shows in place of the built-in stylesheet: the same 3 KiB in every page would
# otherwise be most of every new page's diff. Its digest names the stylesheet exactly, so a page
# that had another (an older distributor's) still shows the change.
STYLESHEET_NOTE = "<style>/* distributor's built-in stylesheet, %d bytes, sha256:%s: not repeated in diffs */</style>" % (
    len(BUILTIN_STYLESHEET), hashlib.sha256(BUILTIN_STYLESHEET.encode("utf-8")).hexdigest())


class _Skip(Exception):
    """Why an output's content is not shown, in words for the reviewer."""


class _Stop(Exception):
    """Why no further output's content is shown: the entries or bytes of the task are spent."""


def content_diffs(writes: Iterable[Write], managed: dict[str, Output], present: frozenset,
                  read_old: Callable[[str, int], bytes | None], read_new: Callable[[Write], bytes],
                  where: Callable[[str], str], limit: int = UNLIMITED) -> list[dict]:
    """One Ansible diff entry per write, in plan order, at most `limit` of them (-1: no limit)
    and TASK_BOUND bytes of shown text; then one entry saying how many more writes are not
    shown and why, and nothing of them is read.

    `managed` maps paths to their records before the run, `present` holds the files under the
    bundle path (as the plan saw them), `read_old(path, limit)` reads at most `limit + 1` bytes
    of the destination (the record's size may be a lie, the file there of any size), `read_new`
    the bytes the write puts there, `where` names a path's location for the headers.
    """
    writes = list(writes)
    budget = TASK_BOUND
    entries = []
    for write in writes:
        location = where(write.path)
        try:
            if limit != UNLIMITED and len(entries) >= limit:
                raise _Stop("result_limit is %d" % limit)
            before, after = _texts(write, managed.get(write.path), write.path in present, read_old, read_new)
            if len(before) + len(after) > budget:
                raise _Stop("the bound of %d bytes of content diffs per task is reached" % TASK_BOUND)
        except _Skip as why:
            entries.append({"before_header": location, "after_header": location,
                            "prepared": "diff skipped: %s: %s\n" % (location, why)})
            continue
        except _Stop as why:
            more = len(writes) - len(entries)
            entries.append({"prepared": "diff skipped: %d more output(s) written, not shown: %s\n" % (more, why)})
            break
        budget -= len(before) + len(after)
        entries.append({"before_header": location, "after_header": location, "before": before, "after": after})
    return entries


def _texts(write: Write, record: Output | None, present: bool, read_old, read_new) -> tuple[str, str]:
    """(old text, new text) of one write as shown, or _Skip. The new bytes are judged first, so
    nothing is read from the destination for an output whose new content would not be shown anyway."""
    if present and record is None:
        raise _Skip("replaces content distributor does not manage, which it does not read")
    _within(write.content.size, "new")
    old_size = record.size if present else 0
    _within(old_size, "old")
    after = _text(read_new(write), "new")
    if not present:
        return _elided("", after)
    try:
        old = read_old(write.path, FILE_BOUND) or b""
    except ForeignLinks as links:
        raise _Skip("old content not shown: " + links.shown) from None
    except Unreadable as found:
        raise _Skip("the old file is %s, not a regular file, which distributor does not open" % found.kind) from None
    if len(old) > FILE_BOUND:
        raise _Skip("old content has grown past its record's %d bytes, over the bound of %d bytes per file"
                    % (old_size, FILE_BOUND))
    return _elided(_text(old, "old"), after)


def _elided(before: str, after: str) -> tuple[str, str]:
    """The built-in stylesheet replaced by STYLESHEET_NOTE in both texts, unless either already
    holds the note's words: a page could carry them in place of the stylesheet, and would then
    look unchanged beside an old page that had the real one."""
    if STYLESHEET_NOTE in before or STYLESHEET_NOTE in after:
        return before, after
    return before.replace(BUILTIN_STYLESHEET, STYLESHEET_NOTE), after.replace(BUILTIN_STYLESHEET, STYLESHEET_NOTE)


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
