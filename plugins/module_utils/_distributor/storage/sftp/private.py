# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which directories of an SFTP destination another account can write, and what that leaves open.

SFTP names every file by path, and the server resolves each path again on every request, following
symbolic links on the way. An account that can write a directory distributor walks can swap one of
its subdirectories for a link between distributor's last look and its next request. distributor
re-checks the way right before it acts, stages and parks files in a private directory so that a
rename through a swapped link finds nothing to move, and sets attributes on handles or with
lsetstat; what remains is a window it can narrow but not close. So the directories are judged
before they are used: the operator is told, or with `require_private_directories` refused.
"""

from __future__ import annotations

import stat

from ..private import named

RESIDUAL_WINDOW = (
    "SFTP acts by path, so an account that can write there can swap a directory of the bundle path for a "
    "symbolic link: distributor re-checks the way right before each rename, delete and attribute change, but a "
    "swap landing between that check and the request can still make a directory, read a file or list names, and "
    "(between the two lookups of one rename) move a file, wherever the link points that the SFTP account can "
    "write. Make these directories writable by %s alone, or publish with a dedicated account or a ChrootDirectory "
    "(docs/untrusted-destinations.md)")


def foreign_owner(uid: int, name: str | None, username: str) -> str | None:
    """Why a directory owned by `uid` (called `name` on the server, None when it cannot say) may
    be changed by another account than `username`, or None. root is no other account: it can
    change anything whatever the owners."""
    if uid == 0 or name == username:
        return None
    if name is None:
        return ("is owned by uid %d, which the server does not name, so distributor cannot tell whether it is %s"
                % (uid, username))
    return "is owned by %s (uid %d), not %s" % (name, uid, username)


def shared_warning(shared: list[tuple[str, str]], username: str) -> str:
    """One warning for every directory found writable by another account: (location, why) pairs."""
    return "%s. %s; storage.require_private_directories: true refuses such destinations." % (
        named(shared), RESIDUAL_WINDOW % username)


def shared_refusal(where: str, why: str, username: str) -> str:
    """The error with require_private_directories: the same residual window as the warning names,
    so the operator learns why the option refused."""
    return "%s %s, and storage.require_private_directories is set. %s." % (where, why, RESIDUAL_WINDOW % username)


def unwritable(mode: int, owner: str | None, username: str) -> str | None:
    """Why `username` cannot create files in a directory of this st_mode owned by `owner` (its name
    on the server), or None when it can or the attributes cannot tell. SFTP shows no group
    membership, so a directory its group may write is taken as writable; POSIX ACLs granting
    another account write show in the group bits (the ACL mask), so they are taken as writable too."""
    shown = "mode %04o" % stat.S_IMODE(mode)
    if username == "root" or (mode & stat.S_IWOTH and mode & stat.S_IXOTH):
        return None
    if owner == username:
        if mode & stat.S_IWUSR and mode & stat.S_IXUSR:
            return None
        return "does not let its owner %s create files in it (%s)" % (username, shown)
    if owner is None or mode & stat.S_IWGRP:
        return None
    return "is owned by %s (%s), which lets neither %s nor any other account but its owner create files in it" % (
        owner, shown, username)
