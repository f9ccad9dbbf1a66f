# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a directory tree holds, to show that a hostile-destination test changed nothing there."""

from __future__ import annotations

import os
import stat


def snapshot(top, skip: tuple = ()) -> dict:
    """Every entry below `top` except the top-level names in `skip`: files with their bytes,
    links with their targets, other entries with their type and mode. Opens nothing but regular
    files, since tests plant FIFOs."""
    found = {}
    for directory, dirs, files in os.walk(str(top)):
        if directory == str(top):
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in dirs + files:
            full = os.path.join(directory, name)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                found[full] = ("link", os.readlink(full))
            elif stat.S_ISREG(info.st_mode):
                with open(full, "rb") as handle:
                    found[full] = ("file", handle.read())
            else:
                found[full] = ("other", stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode))
    return found
