# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract's floor: the smallest program found that does what a publish of copies to a
single-owner local destination must do under the state contract, each check in the cheapest form
found (whole columns through C passes, no object a file), and nothing else.

    python benchmarks/contract_floor.py SOURCE ROOT      # publish SOURCE to ROOT/site as distributor_publish would

(or, as an Ansible module in a playbook's `library/`, with the arguments `source` and `root`)

replace_floor.py's floor does a publish's reads and durable writes: what no program can avoid. A
publish must also (DESIGN.md, spec/destination-state.md) refuse a manifest with duplicate keys,
check its schema and every path rule and recompute its digest (a record's digest of itself is
never trusted, the embedded one's neither), hold the destination's lock, check that the state's
account is ours and its schema, owner, timestamps and records (the outputs its manifest plans),
look for an interrupted attempt's journal, list the bundle path before it writes (an unmanaged
file in the way is refused), judge every file it writes over or deletes (a regular file of our
account), return the plan digest a review approves, and write crash-safely: the journal made
durable before any output, the outputs staged and made durable (one `syncfs`) before they are
renamed into place, the state written durably last. Each rename and delete names its file in a
target directory opened without following links, from the destination's descriptor down (a link
planted among the path's directories cannot send it out of the bundle path), and a rename moves
a staged file only after a look that it is still the file written there (a move proves its
authorship, as every delete and overwrite does). Those last two were added on 2026-12-07: the
floor had renamed by path from the destination, which follows such a link. That is this program, for a skip, a first
publish and a replace of the same bundle id; it returns what the module returns of them
(action, the paths written and deleted, each change, the plan digest, which must be the
module's: rows.py checks it), cut as the module cuts it, printed as the module prints it. Not a product: it refuses
anything but a plain publication of ASCII-named copies by pipeline and destination `bench`,
which is all the rows measure.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import hashlib
import json
import os
import re
import secrets
import stat
import sys
import time
from operator import itemgetter, lt
from typing import NamedTuple

STATE, JOURNAL, LOCK, SITE = ".distributor.json", ".distributor.journal.json", ".distributor.lock", "site"
OWNER, KEY = ("bench", "bench"), "bench/bench"
STATE_KEYS = {"schema_version", "distributor_version", "pipeline_id", "destination_id", "published_at", "created_at", "updated_at",
              "state", "reconciliation", "source", "outputs"}
MANIFEST_KEYS = {"schema_version", "id", "digest", "created", "files"}
OUTPUT_KEYS = ("path", "kind", "source_path", "sha256", "size", "created_at", "updated_at")
TIMESTAMPS = re.compile(r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n)*")
# Paths joined by "/" and walled in by "/" show an empty, "." or ".." segment, an absolute path
# or a reserved name as one of these; a backslash or control character is deleted by the table.
UNCLEAN = ("//", "/./", "/../", "/.distributor")
DROPPED = dict.fromkeys([*range(32), 127, ord("\\")])
_path, _sha256, _size = itemgetter("path"), itemgetter("sha256"), itemgetter("size")
# The module's default result_limit, restated: importing limits.py would make this floor ship and
# compile the collection's code, the cost it is measured without.
RESULT_LIMIT = 100


def decoded_bytes(raw: bytes, path: str, hook=None):
    """JSON text refused undecoded when it holds more arrays and objects than one per 32 bytes
    (planted `[[[...` would take minutes and gigabytes to decode), as the module refuses it."""
    if raw.count(b"{") + raw.count(b"[") > len(raw) // 32 + 1000:
        refuse("%s is too dense" % path)
    try:
        return json.loads(raw, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return refuse("%s is not JSON distributor wrote" % path)


def refuse(what: str):
    raise SystemExit(json.dumps({"failed": True, "msg": what}))


def no_duplicates(pairs: list) -> dict:
    value = dict(pairs)
    if len(value) != len(pairs):
        refuse("duplicate key")
    return value


def clean_paths(paths: list) -> None:
    walled = "/" + "/".join(paths) + "/" if {str}.issuperset(map(type, paths)) else ""
    if not walled.isascii() or len(walled.translate(DROPPED)) != len(walled) or any(map(walled.__contains__, UNCLEAN)):
        refuse("a path breaks the path rules (non-ASCII paths are not in this row)")
    if not all(map(lt, paths, paths[1:])):
        refuse("paths not sorted or listed twice")
    directories = {p.rpartition("/")[0] for p in paths}
    directories.discard("")
    if not directories.isdisjoint(paths):
        refuse("a file is listed inside a file")


def checked_manifest(source: str) -> tuple[dict, tuple]:
    with open(os.path.join(source, "manifest.json"), "rb") as handle:
        manifest = decoded_bytes(handle.read(), "manifest.json", no_duplicates)
    return manifest, checked_manifest_data(manifest)


def checked_manifest_data(manifest: dict) -> tuple:
    """(paths, sha256s, sizes) of a manifest whose schema, path rules and digest hold."""
    if not isinstance(manifest, dict) or set(manifest) != MANIFEST_KEYS or manifest["schema_version"] != 1 \
            or not isinstance(manifest["created"], str) or not TIMESTAMPS.fullmatch(manifest["created"] + "\n"):
        refuse("manifest schema")
    files = manifest["files"]
    if not isinstance(files, list) or not {dict}.issuperset(map(type, files)) or not all(len(entry) == 3 for entry in files):
        refuse("manifest entry keys")
    paths, sha256s, sizes = list(map(_path, files)), list(map(_sha256, files)), list(map(_size, files))
    clean_paths(paths)
    if not sha256_column(sha256s) or not {int}.issuperset(map(type, sizes)) or min(sizes, default=0) < 0:
        refuse("manifest sha256 or size")
    lines = "".join(map("%s\0%s\0%d\n".__mod__, zip(paths, sha256s, sizes)))
    if "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest() != manifest["digest"]:
        refuse("manifest digest")
    return paths, sha256s, sizes


def sha256_column(column: list) -> bool:
    """`sha256:` and 64 lowercase hex digits each, told over the values joined (every value 71
    characters: the n-th character of each is every 71st of the whole)."""
    if not {str}.issuperset(map(type, column)) or not {71}.issuperset(map(len, column)):
        return False
    joined = "".join(column)
    if not joined.isascii() or any(joined[i::71] != "sha256:"[i] * len(column) for i in range(7)):
        return False
    digits = joined.encode("ascii").replace(b"sha256:", b"")
    return len(digits) == 64 * len(column) and not digits.translate(None, b"0123456789abcdef")


def check_bundle(source: str, paths: list, sizes: list) -> None:
    for path, size in zip(paths, sizes):
        found = os.lstat(os.path.join(source, path))
        if not stat.S_ISREG(found.st_mode) or found.st_size != size:
            refuse("%s is not the listed file" % path)


def locked(site: str) -> int:
    descriptor = os.open(os.path.join(site, LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(descriptor, json.dumps({"holder": "floor:%d" % os.getpid()}).encode())
    return descriptor


def read_state(site: str) -> dict | None:
    """The state, when there is one, of our account: a record another account could plant
    lends no rights."""
    try:
        descriptor = os.open(os.path.join(site, STATE), os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            refuse("the state is not a file of this account")
        raw = os.read(descriptor, info.st_size + 1)
    finally:
        os.close(descriptor)
    return decoded_bytes(raw, STATE)  # no duplicate-key hook: the module's state is decoded without one


def check_state(state: dict, manifest: dict, columns: tuple) -> tuple[dict, tuple]:
    """The state's recorded manifest and its columns (path, sha256, size), the records checked
    against them: when it is the bundle's manifest, compared whole with the one checked."""
    if not STATE_KEYS >= set(state) or (state.get("schema_version"), state.get("pipeline_id"), state.get("destination_id")) != (2, *OWNER) \
            or state.get("state") != {"mode": "single_owner"} or state.get("reconciliation") != {"mode": "replace"} \
            or not isinstance(state.get("source"), dict) or set(state["source"]) != {"manifest"}:
        refuse("state schema or owner")
    recorded = state["source"]["manifest"]
    if recorded != manifest:
        columns = checked_manifest_data(recorded)
    paths, sha256s, sizes = columns
    outputs = state["outputs"]
    if not isinstance(outputs, list) or not all(len(record) == len(OUTPUT_KEYS) for record in outputs):
        refuse("record keys")
    values = [list(map(itemgetter(key), outputs)) for key in OUTPUT_KEYS]
    if values[0] != paths or values[2] != paths or values[1].count("source") != len(paths) or values[3] != sha256s or values[4] != sizes:
        refuse("the records are not the recorded manifest's outputs")
    stamps = set(values[5]).union(values[6], (state["published_at"], state["created_at"], state["updated_at"]))
    if not {str}.issuperset(map(type, stamps)) or not TIMESTAMPS.fullmatch("\n".join(stamps) + "\n"):
        refuse("record timestamps")
    return recorded, columns


class Plan(NamedTuple):
    """What the run does: its action, the bundle's columns, the writes (indexes into them, each
    with its kind of change), the deletes and the records before (path -> sha256)."""
    action: str
    manifest: dict
    columns: tuple
    recorded: dict
    writes: list
    changes: list
    deletes: list


def source_of(manifest: dict | None) -> dict | None:
    return {"created": manifest["created"], "digest": manifest["digest"], "id": manifest["id"]} if manifest else None


def plan_digest(plan: Plan, before: dict | None) -> str:
    """The module's plan digest, the same value (a contract with approved jobs, pinned across
    versions by tests/unit/test_plan_digest_golden.py): its canonical JSON, the records and the
    writes by one format each over their columns."""
    string = json.encoder.encode_basestring_ascii
    paths, sha256s, sizes = plan.columns
    touched = sorted([paths[i] for i in plan.writes] + plan.deletes)
    facts = {"action": plan.action, "bundle_path": SITE, "deletes": plan.deletes, "managed_before": [
        {"owner": KEY if p in plan.recorded else None, "path": p, "sha256": plan.recorded.get(p)} for p in touched],
        "operation": "publish", "outputs": None, "owner": KEY, "plan_format": 2, "primary_url": None, "reconciliation": "replace",
        "recorded_source": source_of(before), "recovered": [], "source": source_of(plan.manifest), "state_mode": "single_owner",
        "writes": None}
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"))
    owner = string(KEY)
    shown = list(map(string, paths))
    form = '{"attributes":[],"kind":"source","owner":%s,"path":%%s,"sha256":%%s,"size":%%d,"source_path":%%s,"transform":null,"url":null}'
    records = ",".join(map((form % owner).__mod__, zip(shown, map(string, sha256s), sizes, shown)))
    form = '{"attributes":[],"change":"%%s","owner":%s,"path":%%s,"sha256":%%s,"size":%%d}' % owner
    writes = ",".join(form % (change, shown[i], string(sha256s[i]), sizes[i]) for i, change in zip(plan.writes, plan.changes))
    text = text.replace('"outputs":null', '"outputs":[%s]' % records, 1).replace('"writes":null', '"writes":[%s]' % writes, 1)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def decide(manifest: dict, columns: tuple, before: dict | None, same: bool, recorded_columns: tuple | None, present: set) -> Plan:
    """Skip the same manifest (`same`: the recorded one, `before`), replace an older one of the
    same id, publish into an empty root; refuse the rest, and an unmanaged file where an output goes."""
    recorded = dict(zip(recorded_columns[0], recorded_columns[1])) if recorded_columns else {}
    if same:
        return Plan("skip", manifest, columns, recorded, [], [], [])
    if before is not None and (before["id"] != manifest["id"] or before["created"] >= manifest["created"]):
        refuse("another or no newer source")
    paths = columns[0]
    sizes_before = dict(zip(recorded_columns[0], recorded_columns[2])) if recorded_columns else {}
    writes = [i for i, (p, s, n) in enumerate(zip(*columns)) if recorded.get(p) != s or sizes_before.get(p) != n]
    changes = ["update" if paths[i] in recorded else "create" for i in writes]
    if any(paths[i] in present for i, change in zip(writes, changes) if change == "create"):
        refuse("an unmanaged file is where an output goes")
    deletes = sorted(set(recorded).difference(paths))
    return Plan("replace" if before else "publish", manifest, columns, recorded, writes, changes, deletes)


def walk(top: str) -> tuple[list, list]:
    """(files, directories) under `top`, relative, distributor's own names left out."""
    files, directories, pending = [], [], [("", top)]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.startswith(".distributor"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    directories.append(prefix + entry.name)
                    pending.append((prefix + entry.name + "/", entry.path))
                else:
                    files.append(prefix + entry.name)
    return files, directories


def check_authorship(site: str, paths: list) -> None:
    """Each file written over or deleted: a regular file of our account with one name."""
    me = os.geteuid()
    for path in paths:
        info = os.lstat(os.path.join(site, path))
        if not stat.S_ISREG(info.st_mode) or info.st_uid != me or info.st_nlink != 1:
            refuse("%s is not distributor's to touch" % path)


def durable_write(directory: str, name: str, data: bytes) -> None:
    descriptor = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(descriptor, data)
        os.fchmod(descriptor, 0o644)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_directory(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def directories(site_fd: int, heads: set) -> dict:
    """Each target directory (and its parents) made and opened without following a link, from the
    site's descriptor down: a rename names its file in a directory it holds, so a link planted in
    a path's directories cannot send it outside the bundle path, as the module's renames cannot."""
    wanted = set()
    for head in heads:
        while head and head not in wanted:
            wanted.add(head)
            head = head.rpartition("/")[0]
    held = {"": site_fd}
    for head in sorted(wanted):  # a parent sorts before everything under it
        parent, _slash, name = head.rpartition("/")
        try:
            os.mkdir(name, 0o755, dir_fd=held[parent])
        except FileExistsError:
            pass
        held[head] = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=held[parent])
    return held


def execute(source: str, site: str, plan: Plan, state: dict | None) -> None:
    """Journal, stage, `syncfs`, rename, delete, state, as a crash at any point leaves a state
    that names only durable files and a journal naming what to undo."""
    paths, sha256s, sizes = plan.columns
    staging = os.path.join(site, ".distributor.tmp." + secrets.token_hex(6))
    os.mkdir(staging, 0o700)
    durable_write(staging, "journal", json.dumps({"writes": [paths[i] for i in plan.writes], "deletes": plan.deletes}).encode())
    os.rename(os.path.join(staging, "journal"), os.path.join(site, JOURNAL))
    fsync_directory(site)
    site_fd, staging_fd = os.open(site, os.O_RDONLY | os.O_DIRECTORY), os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    held = directories(site_fd, {paths[i].rpartition("/")[0] for i in plan.writes} | {path.rpartition("/")[0] for path in plan.deletes})
    source += "/"
    staged = []
    for number, i in enumerate(plan.writes):
        descriptor = os.open(source + paths[i], os.O_RDONLY | os.O_NOFOLLOW)
        try:
            info = os.fstat(descriptor)
            data = os.read(descriptor, sizes[i] + 1)
        finally:
            os.close(descriptor)
        if not stat.S_ISREG(info.st_mode) or "sha256:" + hashlib.sha256(data).hexdigest() != sha256s[i]:
            refuse("%s does not match the manifest" % paths[i])
        descriptor = os.open(str(number), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=staging_fd)
        os.write(descriptor, data)
        os.fchmod(descriptor, 0o644)
        info = os.fstat(descriptor)
        staged.append((info.st_dev, info.st_ino))
        os.close(descriptor)
    if ctypes.CDLL(None, use_errno=True).syncfs(site_fd) != 0:
        raise OSError(ctypes.get_errno(), "syncfs")
    for number, i in enumerate(plan.writes):
        name = str(number)
        info = os.stat(name, dir_fd=staging_fd, follow_symlinks=False)
        if (info.st_dev, info.st_ino) != staged[number]:
            refuse("the file staged for %s was replaced" % paths[i])
        head, _slash, tail = paths[i].rpartition("/")
        os.rename(name, tail, src_dir_fd=staging_fd, dst_dir_fd=held[head])
    for path in plan.deletes:
        head, _slash, tail = path.rpartition("/")
        os.unlink(tail, dir_fd=held[head])
    for descriptor in held.values():
        if descriptor != site_fd:
            os.close(descriptor)
    os.close(site_fd)
    os.close(staging_fd)
    durable_write(staging, "state", new_state(plan, state))
    os.rename(os.path.join(staging, "state"), os.path.join(site, STATE))
    os.rmdir(staging)
    os.unlink(os.path.join(site, JOURNAL))
    fsync_directory(site)


def new_state(plan: Plan, state: dict | None) -> bytes:
    """The record after the run, in the module's schema 2: kept records as they were, written
    ones with the time of this run."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kept = {record["path"]: record for record in state["outputs"]} if state else {}
    paths, sha256s, sizes = plan.columns
    written = set(plan.writes)
    outputs = [kept[p] if i not in written else {
        "path": p, "kind": "source", "source_path": p, "sha256": sha256s[i], "size": sizes[i],
        "created_at": kept[p]["created_at"] if p in kept else now, "updated_at": now} for i, p in enumerate(paths)]
    return json.dumps({"schema_version": 2, "distributor_version": "floor", "pipeline_id": OWNER[0], "destination_id": OWNER[1],
                       "published_at": now, "created_at": state["created_at"] if state else now, "updated_at": now,
                       "state": {"mode": "single_owner"}, "reconciliation": {"mode": "replace"},
                       "source": {"manifest": plan.manifest}, "outputs": outputs}).encode()


def publish(argv: list) -> None:
    """Run by rows.py as `contract_floor.py SOURCE ROOT`, or by playbook_sync.py through
    `ansible-playbook` as a module (`source`, `root`), which hands the arguments over itself."""
    gc.disable()  # as the module does (operations.adapter.run_module): no pass of the collector over 100,000 records
    from ansible.module_utils import basic  # pylint: disable=import-outside-toplevel
    if argv:
        basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": {"source": argv[0], "root": argv[1]}}).encode()
        basic._ANSIBLE_PROFILE = "legacy"
    module = basic.AnsibleModule(argument_spec={"source": {"type": "path"}, "root": {"type": "path"}})
    source, root = module.params["source"], module.params["root"]
    manifest, columns = checked_manifest(source)
    check_bundle(source, columns[0], columns[2])
    site = os.path.join(root, SITE)
    os.makedirs(site, exist_ok=True)
    lock = locked(site)
    try:
        state = read_state(site)
        before, recorded_columns = check_state(state, manifest, columns) if state is not None else (None, None)
        if os.path.lexists(os.path.join(site, JOURNAL)):
            refuse("an interrupted attempt")
        same = before == manifest
        present = set() if same else set(walk(site)[0])
        plan = decide(manifest, columns, before, same, recorded_columns, present)
        digest = plan_digest(plan, before)
        check_authorship(site, sorted(p for p in [columns[0][i] for i in plan.writes] + plan.deletes if p in present))
        if plan.action != "skip":
            execute(source, site, plan, state)
    finally:
        os.unlink(os.path.join(site, LOCK))
        os.close(lock)
    paths, sha256s = columns[0], columns[1]
    changes = [{"path": paths[i], "change": change, "owner": KEY, "previous_owner": KEY if change == "update" else None,
                "before": plan.recorded.get(paths[i]), "after": sha256s[i]} for i, change in zip(plan.writes, plan.changes)]
    changes += [{"path": p, "change": "delete", "owner": KEY, "previous_owner": KEY, "before": plan.recorded[p], "after": None}
                for p in plan.deletes]
    result = {"changed": plan.action != "skip", "action": plan.action, "written": [paths[i] for i in plan.writes],
              "deleted": plan.deletes, "changes": sorted(changes, key=itemgetter("path")), "plan_digest": digest,
              "invocation": {"module_args": module.params}, "truncated": {}}
    for name in ("written", "deleted", "changes"):  # each list's first RESULT_LIMIT entries and its count, as budget.py keeps them
        result[name + "_count"] = len(result[name])
        if len(result[name]) > RESULT_LIMIT:
            result["truncated"][name] = len(result[name]) - RESULT_LIMIT
            del result[name][RESULT_LIMIT:]
    # What exit_json prints, less Ansible's walk of every value for the no_log options' (there
    # are none): the module holds its result back from that walk the same way (adapter.py).
    print(json.dumps(result))


if __name__ == "__main__":
    publish(sys.argv[1:] if len(sys.argv) == 3 else [])
    sys.exit(0)  # a module run by Ansible ends by exiting, as exit_json does
