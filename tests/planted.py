# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file an attacker's planted hard link leads to: root-only, outside every root, with an
access time older than its modification time, so that any read of it moves the access time
(relatime). Unit and playbook tests check it is never read, written or truncated."""

from __future__ import annotations

import os

SECRET = b"root-only: the neighbour must never see this\n"
OLD = 1_000_000_000 * 10 ** 9  # an access time older than the modification time below: a read moves it
MODIFIED = 1_500_000_000 * 10 ** 9


def plant_secret(tmp_path):
    """A root-only 0600 file in a root-only directory outside every root."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    path = outside / "secret"
    path.write_bytes(SECRET)
    os.chmod(path, 0o600)
    os.utime(path, ns=(OLD, MODIFIED))
    return path


def fingerprint(path) -> tuple:
    """What must not change: which file, its times, size and mode (taken without reading it)."""
    info = os.stat(path)
    return info.st_ino, info.st_size, info.st_mtime_ns, info.st_atime_ns, info.st_mode
