# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a backend saw at a path, judged: Storage.doubt's answers and the refusals of a record or a
reserved name distributor cannot vouch for, worded once for every backend."""

from __future__ import annotations

from typing import Callable

from ..errors import DistributorError, Unreadable
from ..regular import links_not_ours


def verdict(kind: str | None, owner: str | None, links: int | None, size: int | None, sha256: str | None,
            measured: Callable[[], tuple[int, str | None] | None] | None, ours: int = 1, output: bool = False) -> str | None:
    """Storage.doubt's answer, from what a backend saw at the path: `kind` (regular.kind_of; a
    directory passes only as a name distributor gives, without `sha256`, never as an `output`),
    `owner` (owner_doubt, None when an account distributor writes as owns it), `links` (None
    where the storage cannot tell: SFTP) against `ours` (the names distributor made: one, and
    one for each generation that shares the very file, see Storage.shared_links), and
    `measured()`, measure's answer, asked only once all else agrees (never without `sha256`)."""
    if kind is not None and not (kind == "a directory" and sha256 is None and not output):
        return "is " + kind
    if owner is not None:
        return owner
    if kind is None and links is not None and links_not_ours(links, ours):
        if ours == 1:
            return "has %d links, and a file distributor writes has one" % links
        return "has %d links, and distributor made %d" % (links, ours)
    if sha256 is None:
        return None
    found = measured()
    if found is None:
        return "is gone"
    if found[0] != size:
        return "is %d bytes, not the %d the interrupted publish wrote" % (found[0], size)
    if found[1] != sha256:
        return "holds other bytes than the interrupted publish wrote"
    return None


def owner_doubt(uid: int | None, accounts: str) -> str:
    """The doubt of an entry owned by an account distributor does not write as (`accounts`
    names the ones it does)."""
    return "is owned by %s, not by %s" % ("an unknown account" if uid is None else "uid %d" % uid, accounts)


def trusted_accounts(publisher: str, owner: int, trusted: tuple[str, ...]) -> str:
    """The accounts whose records and files distributor acts on, for owner_doubt: the publishing
    one, storage.owner and storage.trusted_owners."""
    return publisher + (" or uid %d (storage.owner)" % owner if owner != -1 else "") + (
        " or %s (storage.trusted_owners)" % ", ".join(trusted) if trusted else "")


def untrusted_record(where: str, doubt: str) -> DistributorError:
    """The refusal of a record (paths.RECORD_NAMES) that an account distributor does not write as
    owns. Whoever can write the destination's directory can rename a valid record of theirs over
    the real one, naming as outputs files they cannot delete themselves (another account's): a
    record is evidence of what distributor wrote only when distributor's own account could have
    written it. Raised before anything is written or deleted, and never carried as state that
    `force` may replace."""
    return DistributorError(
        "invalid_state",
        "%s %s, so distributor does not take it for a record of its own and acted on nothing. If that account publishes to "
        "this destination too, name it in storage.trusted_owners; otherwise find out who put the record there, check the files "
        "it names, and restore distributor's own record from a backup or remove it (docs/untrusted-destinations.md)" % (where, doubt))


def not_a_record(where: str, kind: str) -> Unreadable:
    """Refusal of a reserved name (state, journal, lock) that holds something other than a regular
    file, never opened for reading (a FIFO would block the run for good). `storage_error`, like
    any other thing in distributor's way at the destination: no record was read, so there is no
    state to call invalid (and nothing `force` could replace). Raised for an output's name too,
    where the callers that read outputs (drift, content diffs) take it as an output that is not
    what its record says (see errors.Unreadable)."""
    return Unreadable(
        "%s is %s, not a regular file; distributor keeps its state, journal and lock there as regular "
        "files and opens nothing else at those names. Find out who put it there, then remove it." % (where, kind), kind)
