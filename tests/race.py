# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An attacker who can write one directory of a destination: swaps a directory with a symbolic
link in a tight loop (renameat2 with RENAME_EXCHANGE, atomic), as an unprivileged account.

    with Swapper(directory, link, seconds=15) as swapper:
        ... run publishes ...
    swapper.swaps      # exchanges made; `directory` is a directory again afterwards

`directory` and `link` must share a parent directory that the swapping account can write (give it
to that account: chown, as a web-content account owns a web root). The swapper runs as `nobody`
through setpriv when the tests run as root, so it has no power a real attacker would lack; as
another user it runs as that user. It stops after `seconds` or at stop(), always after an even
number of exchanges. An exchange that finds one of the names missing (the directory removed, to be
made again) is no error: the swapper tries again.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import sys

SWAPPER_ACCOUNT = "nobody"

_LOOP = r"""
import ctypes, errno, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
first, second, seconds = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + seconds
swaps = 0
stopped = []
signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
sys.stdout.write("ready\n")
sys.stdout.flush()
while not stopped and time.monotonic() < deadline:
    for _ in range(200):
        if libc.renameat2(AT_FDCWD, first, AT_FDCWD, second, RENAME_EXCHANGE) == 0:
            swaps += 1
        elif ctypes.get_errno() != errno.ENOENT:  # the directory may be removed and made again
            raise SystemExit("renameat2: %s" % os.strerror(ctypes.get_errno()))
while swaps % 2 and time.monotonic() < deadline + 10:
    if libc.renameat2(AT_FDCWD, first, AT_FDCWD, second, RENAME_EXCHANGE) == 0:
        swaps += 1
sys.stdout.write("%d\n" % swaps)
"""


def unprivileged_prefix() -> list[str]:
    """The command prefix that runs a program as SWAPPER_ACCOUNT (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    return [shutil.which("setpriv") or "/usr/bin/setpriv", "--reuid=%s" % SWAPPER_ACCOUNT,
            "--regid=%d" % pwd.getpwnam(SWAPPER_ACCOUNT).pw_gid, "--clear-groups"]


def swapper_ids() -> tuple[int, int]:
    """(uid, gid) the swapper runs as: give it the parent directory of what it swaps."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    entry = pwd.getpwnam(SWAPPER_ACCOUNT)
    return entry.pw_uid, entry.pw_gid


class Swapper:
    """Exchange `directory` and `link` (any two names in one directory) for up to `seconds`."""

    def __init__(self, directory: str, link: str, seconds: float):
        self.directory = directory
        self.link = link
        self.seconds = seconds
        self.swaps = 0
        self._process = None

    def start(self) -> "Swapper":
        self._process = subprocess.Popen(
            unprivileged_prefix() + [sys.executable, "-c", _LOOP, self.directory, self.link, str(self.seconds)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self._process.stdout.readline().strip() != "ready":
            raise RuntimeError("the swapper did not start: %s" % self._process.stderr.read())
        return self

    def stop(self) -> int:
        """Stop swapping (at once) and return the number of exchanges made."""
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
        out, err = self._process.communicate(timeout=self.seconds + 30)
        if self._process.returncode != 0:
            raise RuntimeError("the swapper failed: %s" % err)
        self.swaps = int(out.split()[-1])
        return self.swaps

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> "Swapper":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
