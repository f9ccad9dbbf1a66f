# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A directory tree deeper than any bound, planted and removed without recursion.

Python's shutil.rmtree recurses (3.11), so a 1,500-level tree left in a pytest temporary
directory makes pytest's own clean-up of old runs fail with RecursionError: every test that plants
one removes it with remove_tree.
"""

from __future__ import annotations

import os

NAME = "d"


def plant_tree(top, levels: int) -> str:
    """`levels` nested directories named `d` under `top`, made relative to each other (the
    whole path may be longer than PATH_MAX), with a file `f` at the bottom; its relative path."""
    fd = os.open(str(top), os.O_DIRECTORY)
    try:
        for _level in range(levels):
            os.mkdir(NAME, dir_fd=fd)
            child = os.open(NAME, os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return (NAME + "/") * levels + "f"


def remove_tree(top) -> None:
    """Remove a tree planted by plant_tree under `top` (top itself stays), bottom up."""
    fds = [os.open(str(top), os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open(NAME, os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            except (FileNotFoundError, NotADirectoryError):
                break
        while len(fds) > 1:
            fd = fds.pop()
            for name in os.listdir(fd):
                os.unlink(name, dir_fd=fd)
            os.close(fd)
            os.rmdir(NAME, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
