# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The result budget: what a module returns for 50,000 files has to fit where results go.

AWX keeps every task result as a job event, and its callback (ansible-runner's `awx_display`)
replaces a result with `{}` when `len(str(result))` is over MAX_EVENT_RES (700,000 by default):
a publish listing every path lost its plan digest and counts above a few thousand files. So a
result keeps every scalar (`action`, `reason`, `plan_digest`, ...) and a count of every list,
and each list (at any depth: `state.outputs` too) holds at most `result_limit` entries, the
first ones in the list's own order; `truncated` names each list that was cut and how many
entries it left out. The whole result, every entry, is what the `record_file` holds.

The plan digest is never computed from a result, cut or not: it is taken over the plan's facts
before the result exists (digest.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import DistributorError
from .limits import UNLIMITED

# Lists bounded otherwise: `invalidation_paths` by `links.invalidation_limit` (a CDN must get
# them all), the `diff` by report.py and contentdiff.py, which say what they leave out.
WHOLE = frozenset(("invalidation_paths", "diff", "warnings"))


class Mapped(Sequence):
    """`make(item)` for each of `items`, each made when it is read: the 50,000 records of a
    result are made for the entries it returns (and one at a time for the record file), not all
    at once to be cut. Equal to the list of its entries, as the list it stands for would be."""

    def __init__(self, items, make):
        self._items = items
        self._make = make

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._make(item) for item in self._items[index]]
        return self._make(self._items[index])

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, Mapped)) and list(self) == list(other)

    def __repr__(self) -> str:
        return "Mapped(%d entries)" % len(self)


LISTS = (list, tuple, Mapped)


def check_limit(limit: int) -> None:
    """Nothing when `limit` is a number of entries or -1, else the invalid_config failure:
    checked before the operation runs, so a wrong option changes nothing."""
    if limit < UNLIMITED:
        raise DistributorError("invalid_config", "result_limit %d is not a number of entries; give 0 or more, "
                               "or -1 to return every entry" % limit)


def capped(result: dict, limit: int) -> dict:
    """`result` with each list longer than `limit` cut to its first `limit` entries, except the
    top-level ones in WHOLE; `<name>_count` (the whole length) for each top-level list that is
    capped, and `truncated`: {dotted path of each list cut: entries left out}, lists inside lists
    of objects summed under one path (`state.owners.source.manifest.files`). `limit` -1: whole."""
    truncated: dict = {}
    values = {}
    for name, value in result.items():
        if name in WHOLE or not isinstance(value, LISTS + (dict,)):
            values[name] = value
            continue
        values[name] = _cap(value, limit, name, truncated)
        if isinstance(value, LISTS):
            values[name + "_count"] = len(value)
    values["truncated"] = truncated
    return values


def cut_arguments(params: dict, limit: int) -> dict:
    """The module's arguments as its result's `invocation` shows them, each list cut like the
    result's: a `manifest` option of 50,000 files would otherwise come back whole in every result."""
    return _cap(params, limit, "", {})


def _cap(value, limit: int, path: str, truncated: dict):
    if isinstance(value, dict):
        return {key: _cap(item, limit, path + "." + key, truncated) for key, item in value.items()}
    if not isinstance(value, LISTS):
        return value
    kept = value[:] if limit == UNLIMITED or len(value) <= limit else value[:limit]
    if len(kept) < len(value):
        truncated[path] = truncated.get(path, 0) + len(value) - len(kept)
    return [_cap(item, limit, path, truncated) for item in kept]
