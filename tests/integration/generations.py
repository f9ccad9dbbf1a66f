# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A release home on disk as the release tests look at it, without distributor: the bundle
path's link, the generations beside it and their index; and the bundles those tests publish.

Every test root holds one bundle path, `site`, so its release home is
`.distributor-releases/site` under the root (docs/releases.md).
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.manifest_build import create_manifest

NAME = "site"
HOME = os.path.join(".distributor-releases", NAME)
INDEX = os.path.join(HOME, ".distributor-releases.json")
RELEASE_ID = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}$")


def make_site(directory: str, files: dict, created: str, source_id: str = "site.example") -> str:
    """`files` ({path: bytes}) written under `directory` with their manifest: a source bundle."""
    for path, data in files.items():
        full = os.path.join(directory, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as handle:
            handle.write(data)
    os.makedirs(directory, exist_ok=True)
    create_manifest(directory, source_id, created, sorted(files))
    return directory


def release_destination(storage: dict, **releases) -> dict:
    """Destination `web` publishing to `site` under `storage` in release mode."""
    return {"id": "web", "storage": storage, "path": NAME, "releases": dict({"keep": 3}, **releases)}


def live(root: str) -> str | None:
    """The id of the release the bundle path links to, or None when it is no link."""
    link = os.path.join(root, NAME)
    if not os.path.islink(link):
        return None
    target = os.readlink(link)
    prefix = HOME + "/"
    assert target.startswith(prefix) and RELEASE_ID.match(target[len(prefix):]), target
    return target[len(prefix):]


def generation(root: str, release: str) -> str:
    return os.path.join(root, HOME, release)


def generations(root: str) -> set:
    """The ids of the generation directories in the release home."""
    home = os.path.join(root, HOME)
    return {name for name in os.listdir(home) if RELEASE_ID.match(name)} if os.path.isdir(home) else set()


def index(root: str) -> dict:
    with open(os.path.join(root, INDEX), "rb") as handle:
        return json.load(handle)


def statuses(root: str) -> dict:
    """{id: status} as the index records them."""
    return {entry["id"]: entry["status"] for entry in index(root)["releases"]}


def entries(top: str, skip: tuple = ()) -> dict:
    """Everything under `top` but the directories `skip` (relative paths), never followed:
    {relative path: (kind, bytes, link target or inode)}. Files are compared by content and
    inode (a link distributor made keeps its inode), links by target; what a crash or a race
    must leave untouched is compared this way."""
    found = {}
    for directory, dirs, files in os.walk(top):
        dirs[:] = [name for name in dirs if os.path.relpath(os.path.join(directory, name), top) not in skip]
        for name in dirs + files:
            full = os.path.join(directory, name)
            info = os.lstat(full)
            key = os.path.relpath(full, top)
            if os.path.islink(full):
                found[key] = ("link", None, os.readlink(full))
            elif name in files:
                with open(full, "rb") as handle:
                    found[key] = ("file", handle.read(), info.st_ino)
            else:
                found[key] = ("directory", None, None)
    return found
