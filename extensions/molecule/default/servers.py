# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop the scenario's servers: OpenSSH sshd and moto's S3 server on 127.0.0.1.

    python servers.py start STATE_FILE   returns once both serve; STATE_FILE (JSON) says how to
                                         reach them: the `sftp` and `s3` storage settings, no root
    python servers.py stop STATE_FILE    stops them and removes STATE_FILE
    python servers.py supervise STATE_FILE   what `start` leaves running

tests/services.py starts each server as a child that dies with its parent, so `start` leaves a
supervisor running in its own session: it starts both servers with tests/services.py, creates
the bucket, writes STATE_FILE, and stops the servers when `stop` sends it SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests"))
BUCKET = "distributor-molecule"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0


def _terminate(_signum, _frame):
    raise SystemExit(0)


def supervise(state_file: str) -> None:
    """Run both servers until SIGTERM; STATE_FILE exists exactly while they serve."""
    signal.signal(signal.SIGTERM, _terminate)
    sys.path.insert(0, TESTS)
    from services import start_s3, start_sshd  # pylint: disable=import-outside-toplevel

    servers = []
    try:
        sshd = start_sshd()
        servers.append(sshd)
        s3 = start_s3()
        servers.append(s3)
        s3.create_bucket(BUCKET)
        sftp_storage = sshd.storage(root="")
        del sftp_storage["root"]
        state = {"pid": os.getpid(), "sftp": sftp_storage, "s3": s3.storage(BUCKET)}
        with open(state_file + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=2)
        os.replace(state_file + ".tmp", state_file)
        while True:
            signal.pause()
    finally:
        for server in reversed(servers):
            server.stop()
        if os.path.exists(state_file):
            os.remove(state_file)


def start(state_file: str) -> None:
    log_file = state_file + ".log"
    with open(log_file, "wb") as log:
        # The supervisor outlives this command, so no `with` around it.
        process = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, os.path.abspath(__file__), "supervise", state_file],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while not os.path.exists(state_file):
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.terminate()
                process.wait()
            with open(log_file, encoding="utf-8", errors="replace") as log:
                sys.exit("the servers did not start:\n" + log.read())
        time.sleep(0.1)
    print("sshd and moto's S3 server run under supervisor %d; see %s" % (process.pid, state_file))


def _is_supervisor(pid: int, state_file: str) -> bool:
    """The recorded pid still belongs to our supervisor (not a process that reused the pid)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            arguments = handle.read().split(b"\0")
    except OSError:
        return False
    return b"supervise" in arguments and state_file.encode() in arguments


def stop(state_file: str) -> None:
    try:
        with open(state_file, encoding="utf-8") as handle:
            pid = json.load(handle)["pid"]
    except FileNotFoundError:
        return
    if not _is_supervisor(pid, state_file):
        os.remove(state_file)  # left by a supervisor that was killed; its servers died with it
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while os.path.exists(state_file):
        if time.monotonic() > deadline:
            sys.exit("supervisor %d did not stop within %ss" % (pid, STOP_TIMEOUT))
        time.sleep(0.1)


def main() -> None:
    commands = {"start": start, "stop": stop, "supervise": supervise}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](os.path.abspath(sys.argv[2]))


if __name__ == "__main__":
    main()
