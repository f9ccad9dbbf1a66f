# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The floor of issue #30's disk line: what the smallest program doing a release's work adds
on disk for a one-file change to a 10,000-file release, against what distributor adds.

    python benchmarks/release_disk_floor.py [--files 10000]

The smallest program: the new generation is `cp -al` of the live one (every file a hard link,
its directories new, since a directory cannot be linked), one file written again, and the
record item 1 requires every generation to hold, cut to what the state schema requires (no
optional field, no whitespace). Beside it, distributor's own release of the same change. A
generation that is a complete tree with its own record cannot add less than its directories
and that record, which is why "adds about its size" cannot hold as written.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import jsonschema

from bundles import BundleSpec, generate
from harness import write_results
from release_change import SITE, module, one_file_changed, own_blocks, tree_blocks

SCHEMAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas")


def required_only(value, schema: dict):
    """`value` with every property `schema` does not require left out, recursively."""
    if isinstance(value, dict) and "properties" in schema:
        required = set(schema.get("required", ())) | set(schema.get("then", {}).get("required", ()))
        return {key: required_only(item, schema["properties"].get(key, {}))
                for key, item in value.items() if key in required}
    if isinstance(value, list) and "items" in schema:
        return [required_only(item, schema["items"]) for item in value]
    return value


def smallest_record(record: dict) -> bytes:
    """The record cut by the schema of its own version, and still valid under it."""
    with open(os.path.join(SCHEMAS, "state-v%d.schema.json" % record["schema_version"])) as handle:
        schema = json.load(handle)
    smallest = required_only(record, schema)
    jsonschema.validate(smallest, schema)
    return json.dumps(smallest, separators=(",", ":")).encode()


def floor_generation(live: str, new: str, changed: str, source: str) -> None:
    subprocess.run(["cp", "-al", live, new], check=True)
    os.unlink(os.path.join(new, changed))
    shutil.copyfile(os.path.join(source, changed), os.path.join(new, changed))
    record = os.path.join(new, ".distributor.json")
    with open(record, "rb") as handle:
        smallest = smallest_record(json.load(handle))
    os.unlink(record)
    with open(record, "wb") as handle:
        handle.write(smallest)


def measure(files: int, workdir: str) -> dict:
    spec = BundleSpec("release-disk-floor", "small", files, 4096)
    source = generate(os.path.join(workdir, "bundle"), spec, 30)
    root = os.path.join(workdir, "release")
    module(source, root, 3, workdir)
    first = os.path.realpath(os.path.join(root, SITE))
    changed = one_file_changed(source, spec, random.Random(30), 1)
    _wall, _cpu, result = module(source, root, 3, workdir)
    floor = os.path.join(workdir, "floor")
    floor_generation(first, floor, changed, source)
    return {"files": files, "changed_size": spec.size, "floor": tree_blocks(floor),
            "distributor": own_blocks(root, result["release"]["id"])}


def markdown(data: dict) -> str:
    lines = ["| what | files of its own | their disk | directories | their disk | total added |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name in ("floor", "distributor"):
        own = data[name]
        lines.append("| %s | %d | %d KiB | %d | %d KiB | %d KiB (the change: %d KiB) |" % (
            name, own["files"], own["file_bytes"] // 1024, own["directories"], own["directory_bytes"] // 1024,
            (own["file_bytes"] + own["directory_bytes"]) // 1024, data["changed_size"] // 1024))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--files", type=int, default=10000)
    options = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="distributor-release-disk-")
    try:
        data = measure(options.files, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results("release-disk-floor", data, markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
