# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What storage says when it refuses or fails, worded once.

Local and SFTP storage walk the same kind of tree and refuse the same things in it: a symbolic
link, a file where a directory is needed, a staging name someone else took, a root of `/`. An
operator who meets one of them on either backend reads the same sentence, and a change of wording
is made here for both. `os_errors` is the one place an OSError becomes storage_error for local
storage, and for any OSError another backend lets through (see confined.py); SFTP and S3
translate their SDKs' errors in their own `_errors`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..errors import DistributorError
from ..limits import DEPTH_LIMIT

CHANGED_DURING_RUN = "something else changed the destination during this run"


@contextmanager
def os_errors(action: str, where: str, consequence: str = "") -> Iterator[None]:
    """An OSError of the body leaves as storage_error naming the location (see failure)."""
    try:
        yield
    except OSError as exc:
        raise failure(action, where, exc, consequence) from exc


def failure(action: str, where: str, exc: OSError, consequence: str = "") -> DistributorError:
    """`cannot <action> <where>: <strerror>`, then `consequence` when the failure means more than
    that one act failed. Called directly only for an error that travelled back as a value from a
    worker thread (durability.py); callers raise it `from exc`."""
    message = "cannot %s %s: %s" % (action, where, exc.strerror or exc)
    return DistributorError("storage_error", message + ("; " + consequence if consequence else ""))


def link_refused(where: str) -> DistributorError:
    """A symbolic link inside a destination root: following it could lead any act out of the root."""
    return DistributorError(
        "storage_error", "%s is a symbolic link; distributor never follows links inside a destination root" % where)


def not_a_directory(where: str, needed_by: str) -> DistributorError:
    """Someone's file where a path needs a directory: distributor never removes what it does not manage."""
    return DistributorError(
        "storage_error",
        "%s is a file where %s needs a directory; move it away so distributor can publish there" % (where, needed_by))


def staging_taken(where: str) -> DistributorError:
    """The attempt's staging name is taken: only this attempt creates it, so whatever is there
    was put by someone else (who may have read the token from the journal) and is never reused."""
    return DistributorError("storage_error", "cannot stage files in %s: something already exists at that name, "
                            "which only this attempt creates; remove it" % where)


def not_private(where: str) -> DistributorError:
    """The staging directory just made is not the attempt's own private one: staged files in it
    could be swapped by whoever made it."""
    return DistributorError("storage_error", "%s is not the private directory this attempt made; %s"
                            % (where, CHANGED_DURING_RUN))


def disappeared(where: str) -> DistributorError:
    """A directory distributor has just made is not there when looked at again: a directory on
    the way was moved or swapped for a link."""
    return DistributorError("storage_error",
                            "%s is not where distributor just made it; %s" % (where, CHANGED_DURING_RUN))


def staged_replaced(target: str, staged: str) -> DistributorError:
    """Right before its rename, the staged file is not the one this attempt wrote: renaming it
    would publish someone else's content."""
    return DistributorError("storage_error", "cannot write %s: its staged file %s was replaced or removed by "
                            "someone else" % (target, staged))


def not_writable(where: str, why: str) -> DistributorError:
    """Check mode's prediction of the write a run could not make: reported now, not after the
    reviewed plan was approved and the run has begun."""
    return DistributorError("storage_error", "cannot write in %s: it %s; a run would fail there. Give the publishing "
                            "account write access, or publish with an account that has it" % (where, why))


def lock_not_ours(where: str, owner: int, account: int) -> DistributorError:
    """A lock file of another account: distributor writes its lock record only into a file its
    own account made, whatever the other account put there (or linked there) to be overwritten."""
    return DistributorError("storage_error", "%s is owned by uid %d, not by uid %d that distributor runs as; it writes "
                            "its lock only into a file its own account made. A publisher running as that account may "
                            "hold it: when none does, remove it" % (where, owner, account))


def too_deep(where: str) -> DistributorError:
    """A tree deeper than any a bundle makes, planted to exhaust the walk: refused, not walked."""
    return DistributorError("storage_error", "%s is more than %d directories deep; distributor lists trees at most "
                            "that deep (limits.DEPTH_LIMIT)" % (where, DEPTH_LIMIT))


def relative_root(root: str, kind: str = "path") -> DistributorError:
    """storage.root must not depend on the directory the module happens to run in; `kind` says
    on which machine the path is (an SFTP root is a remote path)."""
    return DistributorError("invalid_config", "storage.root %r must be an absolute %s" % (root, kind))


def root_refused() -> DistributorError:
    """A root of `/`: replace and prune would own the whole filesystem."""
    return DistributorError("invalid_config", "storage.root '/' is refused: publish into a directory of its own")


def not_offered(what: str, where: str) -> DistributorError:
    """A release primitive this backend has not: S3 has neither links nor renames (config
    refuses releases there first; this is the backstop)."""
    return DistributorError("storage_error", "releases need %s, which the storage at %s does not offer; releases work "
                            "on local and SFTP storage" % (what, where))


def no_atomic_switch(server: str, extension: str) -> DistributorError:
    """An SFTP server that cannot rename a link over another: replacing the bundle path's link
    any other way leaves a moment with no link there, so there is no fallback."""
    return DistributorError("storage_error", "%s does not offer %s, the only SFTP request that renames a new link over "
                            "the bundle path's link in one step (SSH_FXP_RENAME refuses to replace a name); "
                            "distributor has no non-atomic fallback, so nothing was written. Use a server that offers "
                            "it (OpenSSH does), or publish without releases" % (server, extension))


def not_a_link(where: str, kind: str) -> DistributorError:
    """A directory or a file where a release's link is switched: a rename would replace (or
    refuse to replace) what someone else put there."""
    return DistributorError("storage_error", "cannot switch %s: it is %s, and distributor replaces only a symbolic "
                            "link there; move it away first" % (where, kind))


def already_there(action: str, where: str) -> DistributorError:
    """A name that must be new (a temporary link, a rename's or a hard link's target) is taken:
    distributor never replaces what it did not make."""
    return DistributorError("storage_error", "cannot %s %s: something already exists at that name, and distributor "
                            "never replaces it; find out who put it there, then remove it" % (action, where))


def not_linkable(where: str, kind: str) -> DistributorError:
    """A hard link's source that is not a regular file."""
    return DistributorError("storage_error", "cannot link %s: it is %s, and distributor links only regular files "
                            "it wrote" % (where, kind))


def link_not_made(where: str, source: str) -> DistributorError:
    """A hard link that, looked at right after it was made, is not the file linked: a name on
    the way was swapped in between."""
    return DistributorError("storage_error", "cannot link %s to %s: the file at the new name is not the one linked; "
                            "%s" % (where, source, CHANGED_DURING_RUN))


def missing(action: str, where: str) -> DistributorError:
    """What an act needs is not there."""
    return DistributorError("storage_error", "cannot %s %s: it does not exist" % (action, where))
