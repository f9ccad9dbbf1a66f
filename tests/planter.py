# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An attacker who can write a destination's directory, as a real process: it renames a record
of its own over distributor's, again and again, while distributor runs (issue 38). Run as an
unprivileged account (`setpriv` to nobody) when the tests run as root, like swapper.py.

    python3 planter.py RECORD TARGET

Each line read holds delays in seconds, ascending: at each (counted from the line's arrival) it
renames a fresh copy of RECORD (made beside it, in the attacker's own directory, on TARGET's
file system) over TARGET, then answers with a line of the renames' monotonic times (the clock
every process shares), `failed` for one that failed. The test sends a line as a run starts, so
the renames land anywhere in the run: before its read of the record, between the read and its
write, after it. Standard library only: it runs under the system Python, which the
unprivileged account can execute.
"""

import os
import sys
import time


def main() -> None:
    record, target = sys.argv[1], sys.argv[2]
    with open(record, "rb") as handle:
        data = handle.read()
    fresh = record + ".next"
    for line in sys.stdin:
        start, times = time.monotonic(), []
        for delay in line.split():
            time.sleep(max(0.0, start + float(delay) - time.monotonic()))
            with open(fresh, "wb") as handle:
                handle.write(data)
            try:
                os.rename(fresh, target)
                times.append(repr(time.monotonic()))
            except OSError:
                times.append("failed")
        print(" ".join(times), flush=True)


if __name__ == "__main__":
    main()
