# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who else can write where distributor works, and whether this host lets them plant links there.

Two kernel settings decide what an account that can write a directory can do to root with it:
with `fs.protected_hardlinks` at 0 it can give any file of the filesystem a name there (a hard
link to a root-only file it cannot read), and with `fs.protected_symlinks` at 0 root follows its
symbolic links in sticky world-writable directories. Both are 1 on most distributions, but 0 is
the kernel's own default. distributor opens nothing through such a link (descriptors walked with
O_NOFOLLOW, files created by their own open, one link checked on the open descriptor: see
regular.links_not_ours), yet the host lets the same planted link reach every other program root
runs there. So a root publisher on such a host is told which directories another account can
write, or with `storage.require_private_directories` refused, as SFTP storage is (sftp/private.py).
"""

from __future__ import annotations

import os
import stat
from typing import Callable

from ..errors import DistributorError

# Each setting, and what an account that can write a directory may plant there while it is 0.
LINK_PROTECTIONS = {
    "fs.protected_hardlinks": "a hard link to any file of their filesystem",
    "fs.protected_symlinks": "a symbolic link that root follows even in a sticky world-writable directory",
}
SHOWN_DIRECTORIES = 5
UNPROTECTED = (
    "and on this host %s 0, so such an account can plant there %s. distributor reads and writes nothing through a "
    "link it did not make (docs/untrusted-destinations.md), but other programs that run as root there are open to it. Set %s "
    "to 1 (sysctl), make these directories writable by root alone, or publish with an account of its own")


def read_sysctl(name: str) -> int | None:
    """The value of a kernel setting (`fs.protected_hardlinks`) from /proc/sys; None where it
    cannot be read (another kernel, no /proc)."""
    try:
        with open("/proc/sys/" + name.replace(".", "/"), encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def unprotected_links(euid: int, read: Callable[[str], int | None] = read_sysctl) -> list[str]:
    """The link protections this host has turned off (set to 0) for a publisher running as
    `euid`, by name (`fs.protected_hardlinks`): the one place that decides whether a host allows the attack.
    Only root is exposed to it: root may write any file, so a link planted by another account
    reaches every file of the host; another publisher's reach is its own files, and those it
    never writes or reads through a link it did not make. A setting that cannot be read is not
    named (a kernel without it has no such attack to allow, or cannot say)."""
    if euid != 0:
        return []
    return [name for name in LINK_PROTECTIONS if read(name) == 0]


def named(shared: list[tuple[str, str]]) -> str:
    """(location, why) pairs as one warning names them: the first SHOWN_DIRECTORIES, then a count."""
    more = "; and %d more" % (len(shared) - SHOWN_DIRECTORIES) if len(shared) > SHOWN_DIRECTORIES else ""
    return "; ".join("%s %s" % pair for pair in shared[:SHOWN_DIRECTORIES]) + more


def writable_by_others(mode: int) -> str | None:
    """Why a directory of this st_mode is writable by accounts other than its owner, or None."""
    shown = "mode %04o" % stat.S_IMODE(mode)
    if mode & stat.S_IWOTH:
        return "is writable by every account (%s)" % shown
    if mode & stat.S_IWGRP:
        return "is writable by its group (%s)" % shown
    return None


def others_can_write(info: os.stat_result, euid: int) -> str | None:
    """Why accounts other than `euid` can change what is in the directory `info` describes (its
    group or every account may write it, sticky or not; another account than root owns it), or
    None. root is no other account: it can change anything whatever the modes."""
    why = writable_by_others(info.st_mode)
    if why is None and info.st_uid not in (0, euid):
        why = "is owned by uid %d" % info.st_uid
    return why


class Exposure:
    """The directories of one local destination that another account can write, on a host that
    lets that account plant links for root (unprotected_links). Nothing is judged, and no system
    call made, on a host that does not: the hot path pays nothing for this where it matters not.
    Each directory is judged the first time the storage opens it, before anything is done in it;
    the settings that make the directories distributor creates are judged when it is opened."""

    def __init__(self, require: bool, directory_mode: int | None, ids: tuple[int, int],
                 read: Callable[[str], int | None] = read_sysctl):
        self.require = require
        self.euid = os.geteuid()
        self.settings = unprotected_links(self.euid, read)
        self.shared: list[tuple[str, str]] = []
        self.judged: set[str] = set()
        if self.settings:
            created = "the directories distributor creates"
            if directory_mode is not None:
                self._found("%s (storage.directory_mode)" % created, writable_by_others(directory_mode))
            if ids[0] not in (-1, 0, self.euid):
                self._found("%s (storage.owner)" % created, "are owned by uid %d" % ids[0])

    def judge(self, where: str, fd: int) -> None:
        """The directory open at `fd`, at `where`: noted (or refused) when writable by its group
        or by all, or owned by another account than root. A refusal is given again each time the
        directory is opened; a directory that passed is not looked at again."""
        if not self.settings or where in self.judged:
            return
        self._found(where, others_can_write(os.fstat(fd), self.euid))
        self.judged.add(where)

    def _found(self, where: str, why: str | None) -> None:
        if why is None:
            return
        if self.require:
            raise DistributorError("storage_error", "%s %s, and storage.require_private_directories is set, %s." % (
                where, why, self._window()))
        self.shared.append((where, why))

    def _window(self) -> str:
        settings = " and ".join(self.settings)
        plants = " or ".join(LINK_PROTECTIONS[name] for name in self.settings)
        return UNPROTECTED % (settings + (" are" if len(self.settings) > 1 else " is"), plants, settings)

    @property
    def warnings(self) -> list[str]:
        """One warning naming the directories found and the settings that expose them."""
        if not self.shared:
            return []
        return ["%s, %s; storage.require_private_directories: true refuses such destinations." % (
            named(self.shared), self._window())]
