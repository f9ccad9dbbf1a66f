# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `record_file`: a run's whole plan and result, every entry of every list, as JSON lines on
the host the module runs on, for the results a job cannot hold (budget.py).

One JSON object a line, so `grep` and `jq -c` read a record of any size a line at a time:

    {"record_format": 1, "module": ..., "check_mode": ..., "result": {every scalar and count}}
    {"plan": {...}}              the plan's canonical facts, whose SHA-256 is `plan_digest`
    {"written": "a/b.html"}      one line per entry of each list of the result, in its order
    {"state": {...}}             each object of the result (the state record) on a line of its own

The file is the module's own: written under a name only this run uses, created by its own
exclusive open (never into a file or through a link someone else put there), made durable and
renamed over `record_file`, so a reader sees the previous record or this one, never half.
Check mode writes it too: it records the review, and changes nothing at the destination.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets

from .budget import LISTS
from .digest import canonical_parts
from .errors import DistributorError

RECORD_FORMAT = 1
# A list a result makes when read (budget.Mapped) is made whole for the line that holds it.
_LINE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=list)
_BUFFER = 1024 * 1024


def prepare_record(path: str) -> str:
    """`path` made absolute, its directory created when missing, before the operation runs: a
    record that cannot be written fails as invalid_config before anything is done."""
    where = os.path.abspath(path)
    directory = os.path.dirname(where)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise DistributorError("invalid_config", "record_file %s: cannot create its directory %s: %s; give a path "
                               "in a directory this account can write" % (where, directory, exc.strerror or exc)) from None
    if os.path.isdir(where) or not os.access(directory, os.W_OK | os.X_OK):
        problem = "is a directory" if os.path.isdir(where) else "is in a directory this account cannot write"
        raise DistributorError("invalid_config", "record_file %s %s; give the path of a file to write the record to"
                               % (where, problem))
    return where


def record_lines(module: str, check_mode: bool, result: dict, plan: dict | None):
    """The record's lines for `result`, whole, and `plan`, as pieces of bytes (a line ends with a
    newline; the plan's comes in several pieces). The `diff` is left out: it shows a reviewer
    what the state and the changes already hold."""
    result = {name: value for name, value in result.items() if name != "diff"}
    head = {name: value for name, value in result.items() if not isinstance(value, LISTS + (dict,))}
    head.update(("%s_count" % name, len(value)) for name, value in result.items() if isinstance(value, LISTS))
    yield _encode({"record_format": RECORD_FORMAT, "module": module, "check_mode": check_mode, "result": head})
    if plan is not None:
        yield b'{"plan":'
        yield from canonical_parts(plan)
        yield b"}\n"
    for name, value in result.items():
        if isinstance(value, LISTS):
            for entry in value:
                yield _encode({name: entry})
    for name, value in result.items():
        if isinstance(value, dict):
            yield _encode({name: value})


def _encode(value) -> bytes:
    return (_LINE.encode(value) + "\n").encode("ascii")


def write_record(where: str, lines) -> str:
    """Write `lines` to `where` atomically; returns `sha256:<hex>` of the file's bytes."""
    directory, name = os.path.split(where)
    staged = os.path.join(directory, ".%s.%s.tmp" % (name, secrets.token_hex(8)))
    digest = hashlib.sha256()
    try:
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(descriptor, "wb", buffering=_BUFFER) as handle:
                for line in lines:
                    digest.update(line)
                    handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(staged, where)
        except BaseException:
            _discard(staged)
            raise
        _sync_directory(directory)
    except OSError as exc:
        raise DistributorError("storage_error", "cannot write the record_file %s: %s" % (where, exc.strerror or exc)) from None
    return "sha256:" + digest.hexdigest()


def _discard(staged: str) -> None:
    try:
        os.unlink(staged)
    except OSError:
        pass


def _sync_directory(directory: str) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
