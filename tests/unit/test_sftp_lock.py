# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SFTP's lock over a real sshd: what its exclusive creates meet when other publishers race them."""

from __future__ import annotations

from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import LOCK_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import holder_record
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.lock import SftpLock

import builders


class TakenOnce:
    """An SFTP session whose first exclusive create of a name ending in `suffix` fails as OpenSSH
    answers a name already taken (the generic failure), the name gone again by the time anyone
    looks: another publisher breaking the same dead lock held its guard for that instant."""

    def __init__(self, session, marker: str):
        self.session, self.marker, self.failed = session, marker, False

    def open(self, remote, mode="r", *args, **kwargs):
        if mode == "wx" and self.marker in remote and not self.failed:
            self.failed = True
            raise IOError("Failure")
        return self.session.open(remote, mode, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.session, name)


def test_breaking_a_dead_lock_whose_guard_another_publisher_just_held_and_removed_goes_on(tmp_path, request):
    """Eight publishers waiting on one dead holder all break its lock at once, each under a guard
    named after the version: one that finds the guard's name taken, and gone when it looks, was
    failing the whole run (`cannot guard lock ...: Failure`); it tries the create again."""
    place = builders.Place("sftp", tmp_path, request)
    dead = holder_record(0.0, 1.0, "dead00000000")
    (place.root / "site" / LOCK_NAME).write_bytes(dead)
    storage = open_storage(place.destination["storage"], "site", "t1")
    try:
        lock = SftpLock(storage)
        racing = TakenOnce(lock._sftp(), ".break.")
        lock._channel = racing
        assert lock.delete(dead) is True
        assert racing.failed, "the guard's create met the taken name"
        assert not (place.root / "site" / LOCK_NAME).exists(), "the dead holder's lock was removed under the guard"
        lock.close()
    finally:
        storage.close()
