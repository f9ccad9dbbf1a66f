# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The journal of a publish attempt: written before its first write, read back by the next run.

Anyone who can write the bundle path can write a journal, so what it says is a claim to check,
never an order: recovery deletes a journaled path only when the file there is what the entry
says the attempt wrote (its size and digest) and belongs to the account distributor writes as
(execute.find_leftovers asks Storage.doubt). A journal of the first format named paths only;
it is still read, and none of its paths is ever deleted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import DistributorError
from .formats import JOURNAL_TOKEN_PATTERN, is_sha256
from .manifest import publishable_path_problem
from .schemas import load_json, show


@dataclass(frozen=True)
class Entry:
    """One write of an attempt: its path, and the digest and size of the bytes it puts there
    (None in a journal of the first format, which recorded paths only)."""

    path: str
    sha256: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class Journal:
    """An attempt's intent: `token` names its staged files and `writes` every output it may
    have put in place, the only paths recovery may delete."""

    token: str
    writes: tuple[Entry, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """The journaled paths, in the order written."""
        return tuple(entry.path for entry in self.writes)


def serialize_journal(journal: Journal) -> bytes:
    """The journal as written: schema_documents.JOURNAL, the format parse_journal reads."""
    writes = [{"path": e.path, "sha256": e.sha256, "size": e.size} for e in journal.writes]
    return json.dumps({"token": journal.token, "writes": writes}).encode("utf-8")


def parse_journal(raw: bytes, where: str) -> Journal:
    """Checked entry by entry, stopping at the first fault, so a planted journal costs no more
    than a valid one: the token and every path pass the manifest's path rules, and an entry's
    digest and size are what distributor writes, or nothing is deleted."""
    data = load_json(raw, where, "invalid_state")
    if not isinstance(data, dict) or not isinstance(data.get("writes"), list):
        raise _bad_journal(where, "writes", "must be an array of the writes the attempt planned")
    token = data.get("token")
    if not isinstance(token, str) or not JOURNAL_TOKEN_PATTERN.fullmatch(token):
        raise _bad_journal(where, "token %s" % show(token), "must be an attempt token (letters, digits, - and _)")
    return Journal(token, tuple(_entry(item, "writes[%d]" % index, where) for index, item in enumerate(data["writes"])))


def _entry(item: object, field: str, where: str) -> Entry:
    """A write: {"path", "sha256", "size"}, or a bare path (the first format)."""
    path = item.get("path") if isinstance(item, dict) else item
    problem = publishable_path_problem(path) if isinstance(path, str) else "is not a string"
    if problem:
        raise _bad_journal(where, "%s %s" % (field + ".path" if isinstance(item, dict) else field, show(path)), problem)
    if not isinstance(item, dict):
        return Entry(path)
    digest, size = item.get("sha256"), item.get("size")
    if not is_sha256(digest):
        raise _bad_journal(where, "%s.sha256 %s" % (field, show(digest)), "is not sha256: and 64 lowercase hex digits")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise _bad_journal(where, "%s.size %s" % (field, show(size)), "is not a size in bytes")
    return Entry(path, digest, size)


def _bad_journal(where: str, field: str, problem: str) -> DistributorError:
    return DistributorError(
        "invalid_state",
        "%s: %s %s; it records an interrupted publish and names what recovery would delete, so nothing "
        "was deleted. Check the bundle path by hand, then remove the journal." % (where, field, problem),
    )
