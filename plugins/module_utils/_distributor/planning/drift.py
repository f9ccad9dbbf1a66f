# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift: managed outputs that are no longer what their records say, because someone edited,
truncated or deleted them at the destination. The contract's decision looks only at the state
record, so a republish of the same bundle is a `skip` and the edit stays; `verify` looks at the
outputs themselves.

`size` compares each output's size with its record (a same-size edit passes); `sha256` also its
digest. Only the records handed in are measured: other owners' outputs and unmanaged files are
never read beyond the listing.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..errors import Unreadable
from .plan import PlannedOutput, Write
from ..regular import ForeignLinks
from ..records.state import Output


def find_drift(records: Iterable[Output], listed: frozenset, measure: Callable, verify: str) -> tuple[list, list]:
    """(missing, drifted) paths among `records`: missing when not listed (or gone when measured),
    drifted when the size (or, for sha256, the digest) differs from the record, when what is there
    is not a regular file (a FIFO, a device: never opened, see errors.Unreadable), or when the
    file there has a name distributor did not make (regular.ForeignLinks: never read, and replaced
    by a rename, which leaves the other name's file as it is). `measure` is Storage.measure, which
    takes no digest of a file whose size already differs."""
    missing, drifted = [], []
    for record in sorted(records, key=lambda o: o.path):
        try:
            seen = measure(record.path, record.size, verify == "sha256") if record.path in listed else None
        except (ForeignLinks, Unreadable):
            drifted.append(record.path)
            continue
        if seen is None:
            missing.append(record.path)
        elif seen[0] != record.size or (seen[1] is not None and seen[1] != record.sha256):
            drifted.append(record.path)
    return missing, drifted


def repair_candidates(planned: Iterable[PlannedOutput], contents: dict, mine: dict, untouched: set) -> list:
    """The outputs a publish keeps as they are and can rewrite from this bundle: planned, managed
    by this owner (`mine`), neither written nor deleted by the plan (`untouched`), and recorded
    with exactly the content the bundle produces (a stale bundle that the contract skips does not
    produce the recorded bytes, so it repairs nothing)."""
    found = []
    for item in planned:
        record, content = mine.get(item.path), contents.get(item.path)
        if record is None or content is None or item.path not in untouched:
            continue
        if (record.sha256, record.size, record.attributes) == (content.sha256, content.size, content.attributes):
            found.append((item, record))
    return found


def repairs(planned, contents: dict, mine: dict, untouched: set, listed: frozenset, measure: Callable, verify: str) -> tuple:
    """The writes that put drifted and missing outputs back, as Write values the executor runs
    like any other: nothing when `verify` is none."""
    if verify == "none":
        return ()
    candidates = repair_candidates(planned, contents, mine, untouched)
    missing, drifted = find_drift([record for _item, record in candidates], listed, measure, verify)
    bad = set(missing) | set(drifted)
    return tuple(Write(item.path, item.source_path, contents[item.path]) for item, _record in candidates if item.path in bad)
