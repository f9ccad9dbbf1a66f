# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The contract's floor for a skip: the smallest program found that does what a skip of
a single-owner local destination must do under the state contract, each check in the cheapest
form found (whole columns through C passes, no object a file), and nothing else.

    python benchmarks/skip_floor.py SOURCE ROOT      # one skip of SOURCE already published to ROOT/site

replace_floor.py's floor reads the manifest and the state, `lstat`s each file and compares: the
reads a skip cannot avoid. A skip must also (DESIGN.md, spec/destination-state.md) refuse a
manifest with duplicate keys, check its schema and every path rule and recompute its digest
(a record's digest of itself is never trusted), hold the destination's lock while it reads,
check the state's schema, owner, timestamps and every record (path rules, kind, digest form,
size) and that the records are the outputs this manifest plans, look for an interrupted
attempt's journal, and return the plan digest a review approves: that is this program. It
exits as a module does (`AnsibleModule`, `exit_json`); rows.py runs it in the skip row's rounds
beside the module and `replace_floor.py`'s floor. Not a product: it refuses anything but a
plain publication of copies, which is all the row measures.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import sys
from operator import itemgetter, lt

STATE, JOURNAL, LOCK, SITE = ".distributor.json", ".distributor.journal.json", ".distributor.lock", "site"
MANIFEST_KEYS = {"schema_version", "id", "digest", "created", "files"}
OUTPUT_KEYS = ("path", "kind", "source_path", "sha256", "size", "created_at", "updated_at")
TIMESTAMPS = re.compile(r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n)*")
# Paths joined by "/" and walled in by "/" show an empty, "." or ".." segment, an absolute path
# or a reserved name as one of these; a backslash or control character is deleted by the table.
UNCLEAN = ("//", "/./", "/../", "/.distributor")
DROPPED = dict.fromkeys([*range(32), 127, ord("\\")])
_path, _sha256, _size = itemgetter("path"), itemgetter("sha256"), itemgetter("size")


def decoded(path: str, hook=None):
    """A JSON file refused unread when it holds more arrays and objects than one per 32 bytes
    (planted `[[[...` would take minutes and gigabytes to decode), as the module refuses it."""
    with open(path, "rb") as handle:
        raw = handle.read()
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


def checked_manifest(source: str) -> tuple[dict, list, list, list]:
    manifest = decoded(os.path.join(source, "manifest.json"), no_duplicates)
    if set(manifest) != MANIFEST_KEYS or manifest["schema_version"] != 1 or not TIMESTAMPS.fullmatch(manifest["created"] + "\n"):
        refuse("manifest schema")
    files = manifest["files"]
    if not all(len(entry) == 3 for entry in files):
        refuse("manifest entry keys")
    paths, sha256s, sizes = list(map(_path, files)), list(map(_sha256, files)), list(map(_size, files))
    clean_paths(paths)
    if not sha256_column(sha256s) or not {int}.issuperset(map(type, sizes)) or min(sizes, default=0) < 0:
        refuse("manifest sha256 or size")
    lines = "".join(map("%s\0%s\0%d\n".__mod__, zip(paths, sha256s, sizes)))
    if "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest() != manifest["digest"]:
        refuse("manifest digest")
    return manifest, paths, sha256s, sizes


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


def check_state(site: str, manifest: dict, paths: list, sha256s: list, sizes: list, owner: tuple) -> list:
    state = decoded(os.path.join(site, STATE))  # no duplicate-key hook: the module's state is decoded without one
    if (state.get("schema_version"), state.get("pipeline_id"), state.get("destination_id")) != (2, *owner) \
            or state.get("state") != {"mode": "single_owner"} or state.get("reconciliation") != {"mode": "replace"}:
        refuse("state schema or owner")
    if state.get("source") != {"manifest": manifest}:
        refuse("the state holds another manifest")
    outputs = state["outputs"]
    if not all(len(record) == len(OUTPUT_KEYS) for record in outputs):
        refuse("record keys")
    columns = [list(map(itemgetter(key), outputs)) for key in OUTPUT_KEYS]
    if columns[0] != paths or columns[2] != paths or columns[1].count("source") != len(paths) \
            or columns[3] != sha256s or columns[4] != sizes:
        refuse("the records are not this manifest's outputs")
    stamps = set(columns[5]).union(columns[6], (state["published_at"], state["created_at"], state["updated_at"]))
    if not {str}.issuperset(map(type, stamps)) or not TIMESTAMPS.fullmatch("\n".join(stamps) + "\n"):
        refuse("record timestamps")
    if os.path.lexists(os.path.join(site, JOURNAL)):
        refuse("an interrupted attempt")
    return outputs


def plan_digest(manifest: dict, paths: list, sha256s: list, sizes: list, owner: str) -> str:
    """The module's plan digest of a skip, the same value (a contract with approved jobs, pinned
    across versions by tests/unit/test_plan_digest_golden.py): its canonical JSON, the records
    by one format each over their columns."""
    string = json.encoder.encode_basestring_ascii
    source = {"created": manifest["created"], "digest": manifest["digest"], "id": manifest["id"]}
    facts = {"action": "skip", "bundle_path": SITE, "deletes": [], "managed_before": [], "operation": "publish", "outputs": None,
             "owner": owner, "plan_format": 2, "primary_url": None, "reconciliation": "replace", "recorded_source": source,
             "recovered": [], "source": source, "state_mode": "single_owner", "writes": []}
    head, tail = json.dumps(facts, sort_keys=True, separators=(",", ":")).split('"outputs":null')
    form = '{"attributes":[],"kind":"source","owner":%s,"path":%%s,"sha256":%%s,"size":%%d,"source_path":%%s,"transform":null,"url":null}'
    shown = list(map(string, paths))
    records = ",".join(map((form % string(owner)).__mod__, zip(shown, map(string, sha256s), sizes, shown)))
    return "sha256:" + hashlib.sha256(("%s\"outputs\":[%s]%s" % (head, records, tail)).encode("ascii")).hexdigest()


def skip(source: str, root: str) -> None:
    from ansible.module_utils import basic  # pylint: disable=import-outside-toplevel
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": {"source": source, "root": root}}).encode()
    basic._ANSIBLE_PROFILE = "legacy"
    module = basic.AnsibleModule(argument_spec={"source": {"type": "path"}, "root": {"type": "path"}})
    manifest, paths, sha256s, sizes = checked_manifest(source)
    check_bundle(source, paths, sizes)
    site = os.path.join(root, SITE)
    descriptor = locked(site)
    try:
        check_state(site, manifest, paths, sha256s, sizes, ("bench", "bench"))
    finally:
        os.unlink(os.path.join(site, LOCK))
        os.close(descriptor)
    module.exit_json(changed=False, action="skip", written_count=0, plan_digest=plan_digest(manifest, paths, sha256s, sizes, "bench/bench"))


if __name__ == "__main__":
    skip(*sys.argv[1:3])
