# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 30 item 2 on the real backends: a one-file change to a release writes one file and
links every other into the new generation, everything the new generation holds is durable
before the bundle path is switched to it, and an SFTP server that cannot switch atomically is
refused before anything is written.

Local storage is watched from inside the publish: every system call that makes a name (open
with O_CREAT, mkdir, link, rename, symlink) and every sync (fsync, syncfs) is recorded with the
directory and file it concerns, and each name the new generation needs must be synced before the
rename that switches the link. SFTP is watched from the server: OpenSSH's own sftp-server logs
every request it serves (`-l DEBUG3`), with the bytes each handle wrote and each handle's
fsync@openssh.com: every file SFTP storage stages, in a release or in place, is synced on its
handle before its close and its rename.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.local import durability
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.sftp.wire import POSIX_RENAME

from generations import HOME, INDEX, NAME, entries, generation, live, make_site, release_destination
from services import start_sshd, without_extension

FILES = 200  # in 10 directories: a release whose every unchanged file must be linked
CHANGED = "d00/f000.txt"
PIPELINE = {"id": "site"}
START = datetime(2026, 6, 4, 12, 0, tzinfo=timezone.utc)
SFTP_SERVER = "/usr/lib/openssh/sftp-server"


def site(changed: bool = False) -> dict:
    files = {"d%02d/f%03d.txt" % (i % 10, i): b"file %d\n" % i * 40 for i in range(FILES)}
    if changed:
        files[CHANGED] = b"changed\n" * 100
    return files


def two_releases(tmp_path, storage: dict, watch=None) -> tuple[dict, dict]:
    """A first release of site(), then one with CHANGED changed (under `watch`, a context
    manager, when given); both results."""
    destination = release_destination(storage)
    first = publish(make_site(str(tmp_path / "one"), site(), "2026-06-04T11:00:00Z"), PIPELINE, destination, now=START)
    bundle = make_site(str(tmp_path / "two"), site(changed=True), "2026-06-04T11:30:00Z")
    if watch is None:
        return first, publish(bundle, PIPELINE, destination, now=START + timedelta(minutes=1))
    with watch:
        return first, publish(bundle, PIPELINE, destination, now=START + timedelta(minutes=1))


def assert_linked_but_one(root: str, old: str, new: str) -> None:
    """Every file of the new generation but CHANGED is the old generation's file (same inode,
    two names); CHANGED is a file of its own in each."""
    for path in site():
        before, after = os.lstat(os.path.join(generation(root, old), path)), os.lstat(os.path.join(generation(root, new), path))
        if path == CHANGED:
            assert before.st_ino != after.st_ino and (before.st_nlink, after.st_nlink) == (1, 1), path
        else:
            assert before.st_ino == after.st_ino and after.st_nlink == 2, path


# -- local: system calls recorded in the publishing process ---------------------------------


def _where(fd: int) -> str:
    return os.readlink("/proc/self/fd/%d" % fd)


def _identity(fd: int) -> tuple:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


PATCHED = ("open", "close", "mkdir", "link", "rename", "replace", "symlink", "fsync")


class Durability:
    """Records, for a publish in this process, each name made (its directory's identity and
    path) and each file written (its identity, once closed), and each fsync and syncfs; then
    says which of those the new generation needs were not synced before the switch."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.needs: list = []  # [(path, (dev, ino) that must be synced, index of the event)]
        self.syncs: list = []  # [(index, ("fsync", (dev, ino)) | ("syncfs", dev))]
        self.created: dict = {}  # fd of a file opened with O_CREAT -> its path
        self.switch: int | None = None
        self.events = 0

    def _event(self) -> int:
        self.events += 1
        return self.events

    def _named(self, dir_fd, name: str) -> None:
        """A name made in the directory `dir_fd`: durable once that directory is synced. A name
        in a staging directory needs nothing: it is renamed away, or recovery removes it."""
        where = _where(dir_fd) if dir_fd is not None else ""
        if dir_fd is not None and not os.path.basename(where).startswith(".distributor.tmp."):
            self.needs.append((os.path.join(where, name), _identity(dir_fd), self._event()))

    def __enter__(self):
        real = self.real = {name: getattr(os, name) for name in PATCHED}
        real_syncfs = self.real_syncfs = durability.syncfs

        def opened(path, flags, mode=0o777, *, dir_fd=None):
            fd = real["open"](path, flags, mode, dir_fd=dir_fd)
            if flags & os.O_CREAT:
                self._named(dir_fd, path)
                self.created[fd] = os.path.join(_where(dir_fd), path) if dir_fd is not None else path
            return fd

        def closed(fd):
            if fd in self.created:
                self.needs.append((self.created.pop(fd), _identity(fd), self._event()))
            return real["close"](fd)

        def made(path, mode=0o777, *, dir_fd=None):
            self._named(dir_fd, path)
            return real["mkdir"](path, mode, dir_fd=dir_fd)

        def linked(src, dst, *, src_dir_fd=None, dst_dir_fd=None, follow_symlinks=True):
            real["link"](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, follow_symlinks=follow_symlinks)
            self._named(dst_dir_fd, dst)

        def renamed(which):
            def rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
                if str(src).startswith(".distributor.switch.") and dst == NAME:
                    self.switch = self._event()
                real[which](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
                self._named(src_dir_fd, src)
                self._named(dst_dir_fd, dst)
            return rename

        def symlinked(target, path, target_is_directory=False, *, dir_fd=None):
            real["symlink"](target, path, target_is_directory, dir_fd=dir_fd)
            self._named(dir_fd, path)

        def fsynced(fd):
            real["fsync"](fd)
            self.syncs.append((self._event(), ("fsync", _identity(fd))))

        def syncfs(fd):
            real_syncfs(fd)
            self.syncs.append((self._event(), ("syncfs", os.fstat(fd).st_dev)))

        for name, function in (("open", opened), ("close", closed), ("mkdir", made), ("link", linked),
                               ("rename", renamed("rename")), ("replace", renamed("replace")), ("symlink", symlinked),
                               ("fsync", fsynced)):
            self.monkeypatch.setattr(os, name, function)
        self.monkeypatch.setattr(durability, "syncfs", syncfs)
        return self

    def __exit__(self, *exc):
        for name in PATCHED:
            self.monkeypatch.setattr(os, name, self.real[name])
        self.monkeypatch.setattr(durability, "syncfs", self.real_syncfs)

    def unsynced(self, needed) -> list:
        """The names and files made before the switch that `needed(path)` and that were not made
        durable between their making and the switch."""
        assert self.switch is not None, "no switch of the bundle path was seen"
        left = []
        for path, (dev, ino), at in self.needs:
            if at > self.switch or not needed(path):
                continue
            if not any(at < when < self.switch and (what == ("fsync", (dev, ino)) or what == ("syncfs", dev))
                       for when, what in self.syncs):
                left.append(path)
        return left


@pytest.mark.parametrize("strategy", ["syncfs", "fsync each"])
def test_a_one_file_change_to_a_local_release_writes_one_file_links_the_rest_and_syncs_them_before_the_switch(
        tmp_path, monkeypatch, strategy):
    """Both ways local storage makes files durable (durability.py): one syncfs where the
    filesystem offers it, else an fsync per file and per directory."""
    root = str(tmp_path / "www")
    if strategy == "fsync each":
        monkeypatch.setattr(durability, "syncfs_usable", lambda _path: False)
    watch = Durability(monkeypatch)
    first, second = two_releases(tmp_path, {"type": "local", "root": root}, watch)

    old, new = first["release"]["id"], second["release"]["id"]
    assert second["written"] == [CHANGED] and second["release"]["status"] == "active" and live(root) == new
    assert_linked_but_one(root, old, new)
    home = os.path.realpath(os.path.join(root, HOME))
    built = os.path.join(home, new)

    def needed(path: str) -> bool:
        """The new generation's names and files, the index that records it built, the new link."""
        return path == built or path.startswith((built + "/", os.path.join(home, ".distributor.tmp."),
                                                 os.path.join(home, ".distributor.switch."))) or path == os.path.join(
            home, os.path.basename(INDEX))
    made = [path for path, _identity, _at in watch.needs if path.startswith(built + "/")]
    assert len(made) > FILES, "the recorder saw %d names made in the new generation" % len(made)
    unsynced = watch.unsynced(needed)
    assert unsynced == [], "made before the switch and not durable then: %s" % unsynced[:10]


# -- SFTP: what OpenSSH's sftp-server logs ----------------------------------------------------


@pytest.fixture(scope="module")
def logged_sshd(tmp_path_factory):
    """sshd whose SFTP server is OpenSSH's sftp-server logging every request it serves."""
    if not os.access(SFTP_SERVER, os.X_OK):
        pytest.fail("%s is missing: install openssh-server (see .ci/run)" % SFTP_SERVER)
    log = str(tmp_path_factory.mktemp("sftp-log") / "sftp-server.log")
    server = start_sshd(sftp_command="%s -e -l DEBUG3 2>>%s" % (SFTP_SERVER, log))
    server.sftp_log = log
    yield server
    server.stop()


def requests_since(server, offset: int) -> list[tuple[str, list[str], str]]:
    """The requests the server logged after byte `offset` of its log, in order: (what, the
    paths its line quotes, the line), for the lines that say what a request did."""
    with open(server.sftp_log, "rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode("utf-8", "replace").splitlines()
    found = []
    for line in lines:
        match = re.match(r'(open|close|fsync|mkdir name|rename|posix-rename|hardlink|symlink|remove name|rmdir name|'
                         r'set|setstat name) (?:old )?"', line)
        if match:
            found.append((match.group(1).split()[0], re.findall(r'"([^"]*)"', line), line))
    return found


def log_size(server) -> int:
    return os.path.getsize(server.sftp_log) if os.path.exists(server.sftp_log) else 0


WRITES = ("mkdir", "rename", "posix-rename", "hardlink", "symlink", "remove", "rmdir", "set", "setstat")


def writes(requests: list) -> list:
    """The requests that changed something: opens for writing and every other act."""
    return [(what, paths) for what, paths, line in requests
            if what in WRITES or (what == "open" and re.search(r"flags \S*(WRITE|CREATE)", line))]


def test_a_one_file_change_to_an_sftp_release_writes_one_file_and_links_the_rest_before_the_switch(
        tmp_path, logged_sshd):
    root = str(tmp_path / "www")
    destination = release_destination(logged_sshd.storage(root))
    first = publish(make_site(str(tmp_path / "one"), site(), "2026-06-04T11:00:00Z"), PIPELINE, destination, now=START)
    offset = log_size(logged_sshd)
    second = publish(make_site(str(tmp_path / "two"), site(changed=True), "2026-06-04T11:30:00Z"), PIPELINE,
                     destination, now=START + timedelta(minutes=1))

    old, new = first["release"]["id"], second["release"]["id"]
    assert second["written"] == [CHANGED] and live(root) == new
    assert_linked_but_one(root, old, new)
    requests = requests_since(logged_sshd, offset)
    into = os.path.join(root, HOME, new) + "/"
    written = {}
    for what, paths, line in requests:
        if what == "close" and paths[0].startswith(into) and ".distributor" not in os.path.basename(paths[0]):
            written[os.path.relpath(paths[0], into)] = int(line.rsplit(" ", 1)[1])
    assert {os.path.basename(path): size for path, size in written.items()} == {"f000.txt": len(site(True)[CHANGED])}
    links = [paths for what, paths, _line in requests if what == "hardlink"]
    assert sorted(os.path.relpath(new_name, into) for _old_name, new_name in links) == sorted(set(site()) - {CHANGED})
    assert all(old_name == new_name.replace("/%s/" % new, "/%s/" % old) for old_name, new_name in links)
    switches = [n for n, (what, paths, _line) in enumerate(requests)
                if what == "posix-rename" and paths[1] == os.path.join(root, NAME)]
    assert len(switches) == 1, requests
    generation_acts = [n for n, (what, paths, _line) in enumerate(requests)
                       if what in WRITES + ("close",) and any(p.startswith(into) for p in paths)]
    index_renames = [n for n, (what, paths, _line) in enumerate(requests)
                     if what == "posix-rename" and paths[1] == os.path.join(root, INDEX)]
    assert generation_acts and max(generation_acts) < switches[0], "the new generation changed after the switch"
    assert any(max(generation_acts) < n < switches[0] for n in index_renames), "no index recorded the build before the switch"


@pytest.mark.parametrize("mode", ["release", "in place"])
def test_every_file_sftp_storage_writes_is_synced_on_its_handle_before_it_is_closed_and_renamed(
        tmp_path, logged_sshd, mode):
    """Outputs, records, the release index: each staged file's fsync@openssh.com is served
    between its open and its close, so before its rename, and (release) before the switch."""
    root = str(tmp_path / "www")
    storage = logged_sshd.storage(root)
    destination = release_destination(storage) if mode == "release" else {"id": "web", "storage": storage, "path": NAME}
    publish(make_site(str(tmp_path / "one"), site(), "2026-06-04T11:00:00Z"), PIPELINE, destination, now=START)
    offset = log_size(logged_sshd)
    publish(make_site(str(tmp_path / "two"), site(changed=True), "2026-06-04T11:30:00Z"), PIPELINE, destination,
            now=START + timedelta(minutes=1))

    requests = requests_since(logged_sshd, offset)
    at = {}  # staged name -> [open, fsync, close] positions in the log
    for n, (what, paths, line) in enumerate(requests):
        if what == "open" and re.search(r"flags \S*CREATE", line):
            at[paths[0]] = [n, None, None]
        elif what in ("fsync", "close") and paths[0] in at:
            at[paths[0]][1 if what == "fsync" else 2] = n
    renames = {paths[0]: (paths[1], n) for n, (what, paths, _line) in enumerate(requests)
               if what == "posix-rename" and paths[0] in at}
    targets = {os.path.relpath(target, root) for target, _n in renames.values()}
    kept = os.path.join(HOME, live(root)) if mode == "release" else NAME
    wanted = {os.path.join(kept, CHANGED), os.path.join(kept, ".distributor.json")}
    assert wanted | ({INDEX} if mode == "release" else set()) <= targets, sorted(targets)
    unsynced = [(staged, seen) for staged, seen in at.items()
                if staged in renames and not (seen[1] is not None and seen[0] < seen[1] < seen[2] < renames[staged][1])]
    assert unsynced == [], "renamed without a sync on its handle before its close: %s" % unsynced
    switches = [n for n, (what, paths, _line) in enumerate(requests)
                if what == "posix-rename" and paths[1] == os.path.join(root, NAME)]
    if mode == "release":
        into = os.path.join(root, kept) + "/"
        assert len(switches) == 1
        assert all(at[staged][1] < switches[0] for staged, (target, _n) in renames.items() if target.startswith(into))


@pytest.mark.parametrize("first", ["a first publish", "a publish to a release"])
def test_an_sftp_server_without_posix_rename_is_refused_before_anything_is_written(tmp_path, logged_sshd, first):
    root = tmp_path / "www"
    root.mkdir()
    destination = release_destination(logged_sshd.storage(str(root)))
    if first == "a publish to a release":
        publish(make_site(str(tmp_path / "one"), site(), "2026-06-04T11:00:00Z"), PIPELINE, destination, now=START)
    before = entries(str(root))
    offset = log_size(logged_sshd)
    with pytest.raises(DistributorError) as refused:
        publish(make_site(str(tmp_path / "two"), site(changed=True), "2026-06-04T11:30:00Z"), PIPELINE, destination,
                now=START + timedelta(minutes=1), opener=lambda cfg, base, token: without_extension(
                    open_storage(cfg, base, token), POSIX_RENAME))

    assert refused.value.reason == "storage_error" and POSIX_RENAME in refused.value.message
    assert "no non-atomic fallback" in refused.value.message
    acts = writes(requests_since(logged_sshd, offset))
    assert acts == [], "the refused publish wrote: %s" % acts
    assert entries(str(root)) == before


@pytest.mark.parametrize("kind", ["local", "sftp"])
def test_a_file_two_generations_share_is_shown_in_a_diff_on_local_storage_and_one_with_another_name_is_not(
        tmp_path, kind, request):
    """Local storage finds the other generation holds the very same file (st_dev, st_ino) and
    shows it; SFTP has no inode numbers and cannot tell the generations' names from names
    planted with the same count, so it reads no shared file and says why."""
    root = tmp_path / "www"
    storage = {"type": "local", "root": str(root)} if kind == "local" else request.getfixturevalue(
        "sshd_server").storage(str(root))
    destination = release_destination(storage)
    for n, text in enumerate((b"one", b"two")):
        publish(make_site(str(tmp_path / ("b%d" % n)), {"index.html": text, "notes.txt": b"old\n"},
                          "2026-06-04T11:0%d:00Z" % n), PIPELINE, destination, now=START + timedelta(minutes=n))
    shared = os.path.join(str(root), NAME, "notes.txt")
    assert os.lstat(shared).st_nlink == 2

    def reviewed() -> dict:
        checked = publish(make_site(str(tmp_path / "b3"), {"index.html": b"two", "notes.txt": b"new\n"},
                                    "2026-06-04T11:05:00Z"), PIPELINE, destination, now=START + timedelta(minutes=5),
                          check_mode=True, diff_contents=True)
        return {entry["after_header"].rpartition("/")[2]: entry for entry in checked["diff"][1:]}
    shown = reviewed()["notes.txt"]
    if kind == "sftp":
        assert "before" not in shown and "SFTP cannot tell they are distributor's own" in shown["prepared"], shown
        return
    assert (shown["before"], shown["after"]) == ("old\n", "new\n")
    os.link(shared, str(tmp_path / "another-name.txt"))
    shown = reviewed()["notes.txt"]
    assert "before" not in shown and "the file has 3 links" in shown["prepared"], shown
