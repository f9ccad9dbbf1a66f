# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The floor of what a one-file change published as a release does beyond the same change in
place (issue #42's release row): the new generation's files linked from the live one, the index
and the switch, and each generation beyond `keep` cleared as every delete must be (issue #38):
each file judged a regular file of this account whose other names are the ones distributor made
(the same path, the same file, in a sibling generation whose record names it with the same
digest), then removed with its directories and record.

    python benchmarks/release_floor.py ROOT CHANGED KEEP    # on a copy of a release home: it changes it

release_change.py runs it in each of its rounds (on_a_copy: `cp -a`, links kept) beside the
module's release and in-place changes. Its CPU is timed with `process_time` from after what both
kinds of change do alike (the interpreter's start, the live generation's record read and its tree
listed: the change in place reads and lists its own); the bundle's checks, the changed file
written and a record of every output written durably are left out for the same reason. The
row's ratio can then be no lower than 1 + this floor / the change in place's CPU.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from operator import itemgetter

from contract_floor import decoded_bytes, walk

HOME = os.path.join(".distributor-releases", "site")
INDEX = ".distributor-releases.json"
STATE = ".distributor.json"
SITE = "site"


def digests(generation: str) -> dict:
    """path -> sha256 of a generation's record."""
    with open(os.path.join(generation, STATE), "rb") as handle:
        outputs = decoded_bytes(handle.read(), generation)["outputs"]
    return dict(zip(map(itemgetter("path"), outputs), map(itemgetter("sha256"), outputs)))


def extra(root: str, changed: str, keep: int) -> float:
    """The release's work beyond the change in place, on the release home under `root`; its CPU."""
    home = os.path.join(root, HOME)
    live = os.readlink(os.path.join(root, SITE)).rpartition("/")[2]
    live_dir, new_id = os.path.join(home, live), "new-%d" % os.getpid()
    new_dir = os.path.join(home, new_id)
    live_digests = digests(live_dir)
    files, directories = walk(live_dir)
    started = time.process_time()
    with open(os.path.join(home, INDEX)) as handle:
        index = json.load(handle)
    # The new generation: every file but the changed one a link to the live generation's.
    os.mkdir(new_dir)
    for directory in sorted(directories):
        os.mkdir(os.path.join(new_dir, directory))
    live_prefix, new_prefix = live_dir + "/", new_dir + "/"
    for path in files:
        if path != changed:
            os.link(live_prefix + path, new_prefix + path)
    # The index naming it, and the switch.
    index["releases"].append(dict(index["releases"][-1], id=new_id))
    with open(os.path.join(home, INDEX + ".new"), "w") as handle:
        json.dump(index, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(os.path.join(home, INDEX + ".new"), os.path.join(home, INDEX))
    os.symlink(os.path.join(HOME, new_id), os.path.join(root, SITE + ".new"))
    os.rename(os.path.join(root, SITE + ".new"), os.path.join(root, SITE))
    ids = [release["id"] for release in index["releases"]]
    known = {live: live_digests, new_id: dict(live_digests, **{changed: "the changed file's"})}
    for number, oldest in enumerate(ids[:max(0, len(ids) - keep)]):
        clear(home, oldest, [(sibling, known[sibling] if sibling in known else digests(os.path.join(home, sibling)))
                             for sibling in ids[number + 1:]])
    return time.process_time() - started


def clear(home: str, release: str, siblings: list) -> None:
    """Generation `release` removed, each file judged first: regular, ours, and every other name
    it has one of `siblings` ((id, path -> sha256)) made, the same path with the same digest."""
    cleared = os.path.join(home, release)
    mine = digests(cleared)
    files, directories = walk(cleared)
    held = {}
    me = os.geteuid()
    prefix = cleared + "/"
    for path in files:
        found = os.lstat(prefix + path)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != me:
            raise SystemExit("%s is not distributor's" % path)
        names = 1
        head, _slash, name = path.rpartition("/")
        for sibling, recorded in siblings:
            if names < found.st_nlink and recorded.get(path) == mine.get(path):
                directory = held.get((sibling, head))
                if directory is None:
                    directory = held[sibling, head] = os.open(os.path.join(home, sibling, head), os.O_RDONLY | os.O_DIRECTORY)
                there = os.stat(name, dir_fd=directory, follow_symlinks=False)
                names += (there.st_dev, there.st_ino) == (found.st_dev, found.st_ino)
        if names != found.st_nlink:
            raise SystemExit("%s has a name distributor did not make" % path)
    for directory in held.values():
        os.close(directory)
    for path in files:
        os.unlink(prefix + path)
    for directory in sorted(directories, key=lambda d: -d.count("/")):
        os.rmdir(os.path.join(cleared, directory))
    os.unlink(os.path.join(cleared, STATE))
    os.rmdir(cleared)


def on_a_copy(root: str, changed: str, keep: int, copy: str) -> float:
    """The floor's CPU on a copy (`cp -a`) of the release root `root`, in a process of its own."""
    subprocess.run(["cp", "-a", root, copy], check=True)
    os.sync()
    floor = subprocess.run([sys.executable, __file__, copy, changed, str(keep)], capture_output=True, text=True, check=True)
    return json.loads(floor.stdout)["cpu"]


if __name__ == "__main__":
    print(json.dumps({"cpu": extra(sys.argv[1], sys.argv[2], int(sys.argv[3]))}))
