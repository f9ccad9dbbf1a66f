# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `record_file`: a run's whole plan and result, every entry of every list, as JSON lines on
the host the module runs on, for the results a job cannot hold (budget.py).

One JSON object a line, so `grep` and `jq -c` read a record of any size a line at a time:

    {"record_format": 1, "module": ..., "check_mode": ..., "result": {every scalar and count}}
    {"plan": {...}}              the plan's canonical facts, whose SHA-256 is `plan_digest`
    {"written": "a/b.html"}      one line per entry of each list of the result, in its order
    {"state": {...}}             each object of the result (the state record) on a line of its own

The file is the module's own: written under a name only this run uses, created by its own
exclusive open with mode 0600 (never into a file or through a link someone else put there), made
durable and renamed over `record_file`, so a reader sees the previous record or this one, never
half. Its directories are made and opened one at a time from `/`, never through a link: on a host
that lets root follow links in sticky directories (`fs.protected_symlinks=0`), a link another
account planted where the record's directory is still to be made would lead a root run's record
into a directory of that account's choosing. The directory stays open until the record is
written, so the path is resolved once. A directory on the way that another account can write is
named in a warning: that account can replace the record, whose `record_sha256` then tells.
Check mode writes it too: it records the review, and changes nothing at the destination.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat

from ..budget import LISTS
from ..planning.digest import canonical_parts
from ..errors import DistributorError
from ..storage.local.descriptors import CREATE_FLAGS, DIRECTORY_FLAGS, entry_mode
from ..storage.private import named, others_can_write

RECORD_FORMAT = 1
# A list a result makes when read (budget.Mapped) is made whole for the line that holds it.
_LINE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=list)
_BUFFER = 1024 * 1024


class RecordFile:
    """Where the record goes: `where`, its directory held open (`directory`) from before the
    operation until the record is written, and the `warnings` about who else can write on the way."""

    def __init__(self, where: str, directory: int, warnings: list[str]):
        self.where = where
        self.name = os.path.basename(where)
        self.directory = directory
        self.warnings = warnings

    def close(self) -> None:
        """The directory is held only until the record is written, or the run has failed."""
        os.close(self.directory)

    def __enter__(self) -> RecordFile:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def prepare_record(path: str) -> RecordFile:
    """`path` made absolute, its directories made when missing and opened, before the operation
    runs: a record that cannot be written fails as invalid_config before anything is done."""
    where = os.path.abspath(path)
    directory, name = os.path.split(where)
    euid = os.geteuid()
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        shared = _shared("/", fd, euid)
        location = ""
        for part in [part for part in directory.split("/") if part]:
            location += "/" + part
            child = _directory_at(fd, part, where, location)
            os.close(fd)
            fd = child
            shared += _shared(location, fd, euid)
        problem = _not_writable(fd, name)
        if problem:
            raise DistributorError("invalid_config", "record_file %s %s; give the path of a file to write the record to"
                                   % (where, problem))
    except BaseException:
        os.close(fd)
        raise
    warnings = ["record_file %s: %s; an account that can write there can replace the record (its record_sha256 then "
                "no longer matches its bytes) or put something in its way; keep records in a directory only this account can write" % (where, named(shared))]
    return RecordFile(where, fd, warnings if shared else [])


def _directory_at(parent: int, name: str, where: str, location: str) -> int:
    """`name` in `parent` opened as a directory, made when absent, never through a link."""
    try:
        try:
            return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            try:
                os.mkdir(name, 0o777, dir_fd=parent)
            except FileExistsError:
                pass  # made meanwhile: opened like any other, never through a link
            return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(parent, name):
            raise DistributorError("invalid_config", "record_file %s: %s is a symbolic link, and distributor follows no "
                                   "link on the way to a record_file (another account may have put it there); give a "
                                   "path without links" % (where, location)) from None
        raise DistributorError("invalid_config", "record_file %s: cannot create its directory %s: %s; give a path "
                               "in a directory this account can write" % (where, location, exc.strerror or exc)) from None


def _not_writable(directory: int, name: str) -> str | None:
    """Why no record can be written at `name` in `directory`, or None."""
    if not os.access(".", os.W_OK | os.X_OK, dir_fd=directory, effective_ids=True):
        return "is in a directory this account cannot write"
    if not name or stat.S_ISDIR(entry_mode(directory, name) or 0):
        return "is a directory"
    return None


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(entry_mode(parent, name) or 0)
    except OSError:
        return False


def _shared(location: str, fd: int, euid: int) -> list[tuple[str, str]]:
    why = others_can_write(os.fstat(fd), euid)
    return [] if why is None else [(location, why)]


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


def write_record(record: RecordFile, lines) -> str:
    """Write `lines` to the record atomically; returns `sha256:<hex>` of the file's bytes."""
    staged = ".%s.%s.tmp" % (record.name, secrets.token_hex(8))
    directory = record.directory
    digest = hashlib.sha256()
    try:
        descriptor = os.open(staged, CREATE_FLAGS, 0o600, dir_fd=directory)
        try:
            with os.fdopen(descriptor, "wb", buffering=_BUFFER) as handle:
                for line in lines:
                    digest.update(line)
                    handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(staged, record.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            _discard(directory, staged)
            raise
        os.fsync(directory)
    except OSError as exc:
        raise DistributorError("storage_error", "cannot write the record_file %s: %s" % (record.where, exc.strerror or exc)) from None
    return "sha256:" + digest.hexdigest()


def _discard(directory: int, staged: str) -> None:
    try:
        os.unlink(staged, dir_fd=directory)
    except OSError:
        pass
