# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An attacker with write access to a destination, as a real process: it swaps directories of
the bundle path with symbolic links to a directory outside the root, atomically and in a tight
loop (renameat2 RENAME_EXCHANGE), while distributor publishes. Run as an unprivileged account
(`setpriv` to nobody) when the tests run as root, as the issue's web-content account would.

    python3 swapper.py [--twins=DIR] SECONDS PAUSE OUTSIDE TARGET [TARGET ...]

Each TARGET (a directory, a file or a link) is exchanged with a link `TARGET-evil` beside it, or
with `--twins`, `DIR/<TARGET's path, quoted>` (so that no name is added beside the target), made
when missing, for SECONDS seconds, waiting up to PAUSE seconds (at random) after each
exchange, so that publishes get far enough for the swap to land between a check and the act it
guards; prints the number of exchanges made and of exchanges tried (a try fails while
distributor has removed or not yet made a target). The link leads to OUTSIDE, or to what the
target names after `=` (`TARGET=PATH`: a file outside, say; `TARGET=hard:FILE`: a hard link to
FILE instead of a symbolic link; `TARGET=dir:DIR`: a copy of the directory DIR, the swapper's own). A TARGET holding `*` is a glob, expanded anew on every pass,
for paths that come and go (release generations). Standard library only: it runs under the
system Python, which the unprivileged account can execute.
"""

import ctypes
import glob
import os
import random
import shutil
import sys
import time
import urllib.parse

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def twin(path: str, twins: str | None) -> str:
    """Where the evil twin of `path` is made: beside it, or in the directory `twins`."""
    return path + "-evil" if twins is None else os.path.join(twins, urllib.parse.quote(path, safe=""))


def expanded(targets: list, outside: str) -> list:
    """(path, what its evil twin links to) of every target, globs expanded now."""
    found = []
    for target in targets:
        pattern, _sep, evil = target.partition("=")
        paths = glob.glob(pattern) if "*" in pattern else [pattern]
        found.extend((path, evil or outside) for path in paths if not path.endswith("-evil"))
    return found


def main() -> None:
    arguments = sys.argv[1:]
    twins = arguments.pop(0)[len("--twins="):] if arguments[0].startswith("--twins=") else None
    seconds, pause, outside, targets = float(arguments[0]), float(arguments[1]), arguments[2], arguments[3:]
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    deadline = time.monotonic() + seconds
    swaps = tries = 0
    while time.monotonic() < deadline:
        for target, evil in expanded(targets, outside):
            link = twin(target, twins)
            try:
                if evil.startswith("hard:"):
                    os.link(evil[len("hard:"):], link)
                elif evil.startswith("dir:"):
                    shutil.copytree(evil[len("dir:"):], link, symlinks=True)
                else:
                    os.symlink(evil, link)
            except OSError:
                pass
            tries += 1
            if renameat2(AT_FDCWD, target.encode(), AT_FDCWD, link.encode(), RENAME_EXCHANGE) == 0:
                swaps += 1
                if pause:
                    time.sleep(random.random() * pause)
    print(swaps, tries)


if __name__ == "__main__":
    main()
