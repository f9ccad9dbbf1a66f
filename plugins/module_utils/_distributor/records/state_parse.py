# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a state record: schemas 1, 2 and 3 into state.py's one model, every problem
`invalid_state` naming the record and the field.

A record distributor wrote is recognised by the column checks (columns.py) and its lines
(state_lines.py) and read without a Python call per output; any other takes the full path
(the schema, then the checks the schema cannot state: timestamps, one path one record, the
owners, the URLs), which words what is wrong.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from itertools import repeat
from urllib.parse import quote

from .carried import Carried
from ..errors import DistributorError
from .columns import manifest_columns, publishable, rows, shared_output_lines, single_owner_columns
from .manifest import Manifest, carried, parse_manifest, publishable_path_problem, recognised
from .schemas import check_nesting, decode_json, validate
from .state import OUTPUT_FIELDS, Output, Owner, OwnerKey, State, schema_version_for
from .state_lines import emptied, split_files, split_outputs
from ..timestamps import parse_rfc3339
from ..urls import recorded_url_problem, url_problem
from ..vocabulary import SHARED_ROOT, SINGLE_OWNER


def parse_state(raw: bytes, where: str) -> State:
    """Read any schema; every problem is `invalid_state` naming `where` and the field. A record
    the column checks recognise (_carried, _recognised) needs no more; any other takes the full path."""
    return _carried(raw, where) or _decoded(raw, where)


def _carried(raw: bytes, where: str) -> State | None:
    """A schema-3 record whose output lines the column checks accept (columns.shared_output_lines),
    its outputs carried as those lines (carried.py); the rest of the record takes the full path
    less the outputs and its owners' manifest file lines (_head). Each line's owner must be
    recorded and its path one that owner's manifest lists or a publishable one, as
    _check_outputs asks. None sends the whole record to the full path, which words what is
    wrong: anything that fails here fails there too. The record's density is the head's
    (schemas.check_density, in _decoded): outside its strings an output line holds at most two
    of the brackets counted, in hundreds of bytes."""
    block = split_outputs(raw)
    columns = block and shared_output_lines(raw, *block)
    head = _head(raw, block[0], where) if columns else None
    if head is None:
        return None
    keys = {o.key: o.key for o in head.owners}
    named = {text: keys.get(OwnerKey(*pair)) for text, pair in columns["owners"].items()}
    if head.mode != SHARED_ROOT or None in named.values():
        return None
    owners, paths = list(map(named.__getitem__, columns["owner"])), columns["path"]
    if not publishable(paths):
        manifests = {o.key: o.manifest.paths for o in head.owners}
        if not all(path in manifests[owner] or publishable([path]) for path, owner in zip(paths, owners)):
            return None
    return replace(head, outputs=Carried(columns["line"], paths, owners, _carried_output))


def _head(raw: bytes, start: int, where: str) -> State | None:
    """The full path's model of the record less its outputs block (which starts at `start`),
    the file lines of its owners' manifests carried (_carried_manifests) rather than decoded;
    None when the record is not laid out as distributor writes one or anything is declined."""
    files = split_files(raw, start)
    if files is None:
        return None
    marker = os.urandom(16).hex()
    try:
        data = decode_json(emptied(raw, start, files, marker), where, "invalid_state")
        manifests = _carried_manifests(data, raw, files, marker)
        return None if manifests is None else _parsed(data, where, manifests)
    except DistributorError:
        return None


def _carried_manifests(data: object, raw: bytes, files: list, marker: str) -> dict | None:
    """Each owner's manifest (by its index in `owners`) whose file lines are the block of `files`
    that state_lines.emptied put `marker` and its index for, read by manifest.carried, its
    `files` member made an empty list for the schema; None unless every block is found there,
    in order, and accepted. A block anywhere else (lines laid out as a manifest's in a member
    the schema lets a record add) leaves its marker unfound: the full path reads that record."""
    placeholders = ["%s%d" % (marker, index) for index in range(len(files))]
    owners = data.get("owners") if isinstance(data, dict) else None
    placed = {}
    for index, record in enumerate(owners if isinstance(owners, list) else ()):
        source = record.get("source") if isinstance(record, dict) else None
        manifest = source.get("manifest") if isinstance(source, dict) else None
        if isinstance(manifest, dict) and manifest.get("files") in placeholders:
            placed[index] = manifest
    if [manifest["files"] for manifest in placed.values()] != placeholders:
        return None
    made = {}
    for (index, manifest), block in zip(placed.items(), files):
        manifest["files"] = []
        made[index] = carried(manifest, raw, *block)
    return None if None in made.values() else made


def _carried_output(line: bytes) -> Output:
    """A carried record modelled as the full path models it (the line was checked whole)."""
    record = json.loads(line)
    return _output(record, OwnerKey(record["pipeline_id"], record["destination_id"]), None, None, "", 0)


def _decoded(raw: bytes, where: str) -> State:
    """parse_state of a record decoded whole: the single-owner column checks, else the full path."""
    return _parsed(decode_json(raw, where, "invalid_state"), where)


def recorded_files(raw: bytes, where: str) -> dict[str, tuple[int, str]]:
    """(size, sha256) by path of each output the record `raw` names, where parse_state accepts
    it and refused as it refuses it: what removing a release generation needs of its record. A
    record the column checks recognise is read from its columns, without the model parse_state
    makes of every output."""
    data = decode_json(raw, where, "invalid_state")
    known = _columns(data, _paths_of)
    if known is None:
        return {o.path: (o.size, o.sha256) for o in _parsed(data, where).outputs}
    columns = known[1]
    return dict(zip(columns["path"], zip(columns["size"], columns["sha256"])))


def _parsed(data: object, where: str, manifests: dict | None = None) -> State:
    """parse_state of the decoded record; `manifests`: owners' manifests already read (_head)."""
    state = _recognised(data)
    if state is not None:
        return state
    check_nesting(data, where, "invalid_state")
    if not isinstance(data, dict) or data.get("schema_version") not in (1, 2, 3):
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise DistributorError("invalid_state", "%s: schema_version %r is not 1, 2 or 3" % (where, found))
    version = data["schema_version"]
    validate("state-v%d" % version, data, where, "invalid_state", nesting_checked=True)
    state = _parse_shared(data, where, manifests or {}) if version == 3 else _parse_single(data, where)
    _check_outputs(state, where)
    return state


def _timestamp(value: str, where: str, field: str, index: int | None = None) -> str:
    """`value` when it is an RFC3339 timestamp, else invalid_state naming `field` (of
    outputs[`index`], when given: the name is made only for a timestamp that fails). A value of
    another type is refused too: only strings are looked up among the valid ones (a list cannot be)."""
    if isinstance(value, str) and value in _VALID_TIMES:
        return value
    try:
        parse_rfc3339(value)
    except ValueError as exc:
        name = field if index is None else "outputs[%d].%s" % (index, field)
        raise DistributorError("invalid_state", "%s: %s: %s" % (where, name, exc)) from exc
    if len(_VALID_TIMES) >= 4096:
        _VALID_TIMES.clear()
    _VALID_TIMES.add(value)
    return value


# A state of 100,000 outputs holds a handful of distinct timestamps, each parsed three times per
# output otherwise; a valid timestamp string stays valid, so remembering them is safe.
_VALID_TIMES: set = set()


def _output(record: dict, owner: OwnerKey, manifest: Manifest | None, fallback_time: str | None, where: str, index: int,
            keyed: bool = True) -> Output:
    created = record.get("created_at", fallback_time)
    updated = record.get("updated_at", fallback_time)
    created = created if isinstance(created, str) and created in _VALID_TIMES else _timestamp(created, where, "created_at", index)
    updated = updated if isinstance(updated, str) and updated in _VALID_TIMES else _timestamp(updated, where, "updated_at", index)
    if manifest is None:
        source_id, source_digest, source_created = record["source_id"], record["source_digest"], record["source_created"]
        if not isinstance(source_created, str) or source_created not in _VALID_TIMES:
            _timestamp(source_created, where, "source_created", index)
    else:
        source_id, source_digest, source_created = manifest.id, manifest.digest, manifest.created
    attributes = record.get("attributes")
    return Output(record["path"], record["kind"], record["source_path"], record.get("transform"), record.get("url"),
                  record["sha256"], record["size"], created, updated, owner, source_id, source_digest, source_created,
                  tuple(sorted(attributes.items())) if attributes else (), record.get("render_key") if keyed else None)


def _recognised(data: object) -> State | None:
    """The State _parse_single and _check_outputs make of a schema-2 record whose embedded
    manifest (manifest.recognised) and every other member the column checks accept, each
    output made from its columns at once; None sends the record to the full path."""
    known = _columns(data, recognised)
    if known is None:
        return None
    manifest, columns = known[0], known[1]
    key = OwnerKey(data["pipeline_id"], data["destination_id"])
    attributes = columns["attributes"]
    columns["attributes"] = repeat(()) if attributes is None else [tuple(sorted(a.items())) if a else () for a in attributes]
    columns.update(owner=repeat(key), source_id=repeat(manifest.id), source_digest=repeat(manifest.digest),
                   source_created=repeat(manifest.created))
    outputs = rows(Output, *(repeat(None) if columns[name] is None else columns[name] for name in OUTPUT_FIELDS))
    owner = Owner(key, data["reconciliation"]["mode"], manifest, data.get("links", {}).get("primary_url"))
    return State(SINGLE_OWNER, 2, data["created_at"], data["updated_at"], data["published_at"], data.get("distributor_version"),
                 (owner,), outputs)


def _columns(data: object, recognise) -> tuple[Manifest | None, dict] | None:
    """The embedded manifest and the output columns of a schema-2 record the column checks
    accept (`recognise`: manifest.recognised or _paths_of; columns.single_owner_columns), else
    None."""
    source = data.get("source") if isinstance(data, dict) else None
    known = recognise(source.get("manifest")) if isinstance(source, dict) else None
    columns = known and single_owner_columns(data, known[1])
    return (known[0], columns) if columns else None


def _paths_of(manifest: object) -> tuple[None, list] | None:
    """What manifest.recognised tells of an embedded manifest, less the model it makes of each
    file: (None, its paths), or None."""
    columns = manifest_columns(manifest)
    return (None, columns[0]) if columns else None


def _parse_single(data: dict, where: str) -> State:
    """Schemas 1 and 2. Schema 1 has no reconciliation (it was always replace) and no timestamps
    but `published_at`, from which every missing timestamp is inferred."""
    published = _timestamp(data["published_at"], where, "published_at")
    key = OwnerKey(data["pipeline_id"], data["destination_id"])
    manifest = parse_manifest(data["source"]["manifest"], "%s: source.manifest" % where, "invalid_state", nesting_checked=True)
    owner = Owner(
        key=key,
        reconciliation=data.get("reconciliation", {}).get("mode", "replace"),
        manifest=manifest,
        primary_url=data.get("links", {}).get("primary_url"),
    )
    return State(
        mode=SINGLE_OWNER,
        schema_version=data["schema_version"],
        created_at=_timestamp(data.get("created_at", published), where, "created_at"),
        updated_at=_timestamp(data.get("updated_at", published), where, "updated_at"),
        published_at=published,
        distributor_version=data.get("distributor_version"),
        owners=(owner,),
        outputs=tuple(_output(r, key, manifest, published, where, i, data["schema_version"] > 1) for i, r in enumerate(data["outputs"])),
    )


def _parse_shared(data: dict, where: str, manifests: dict) -> State:
    owners = {}
    for i, record in enumerate(data["owners"]):
        key = OwnerKey(record["pipeline_id"], record["destination_id"])
        if key in owners:
            raise DistributorError("invalid_state", "%s: owners[%d]: owner %s is recorded twice" % (where, i, key))
        manifest = manifests.get(i) or parse_manifest(record["source"]["manifest"], "%s: owners[%d].source.manifest" % (where, i),
                                                      "invalid_state", nesting_checked=True)
        owners[key] = Owner(key, record["reconciliation"]["mode"], manifest, record.get("links", {}).get("primary_url"))
    known = owners.keys()
    outputs = []
    for i, record in enumerate(data["outputs"]):
        key = OwnerKey(record["pipeline_id"], record["destination_id"])
        if key not in known:
            raise DistributorError("invalid_state", "%s: outputs[%d]: owner %s has no owners[] record" % (where, i, key))
        outputs.append(_output(record, key, None, None, where, i))
    return State(
        mode=SHARED_ROOT,
        schema_version=schema_version_for(SHARED_ROOT),
        created_at=_timestamp(data["created_at"], where, "created_at"),
        updated_at=_timestamp(data["updated_at"], where, "updated_at"),
        published_at=None,
        distributor_version=data.get("distributor_version"),
        owners=tuple(owners.values()),
        outputs=tuple(outputs),
    )


def _check_outputs(state: State, where: str) -> None:
    """One path, one record: the invariant every decision relies on. A path some owner's
    manifest lists has passed the same path rules there, so only the others are checked again
    (most outputs are copies at their source's path). Then the URLs (_check_urls). A record
    without outputs (_head's) asks no manifest for its paths: carried ones stay unmodelled."""
    seen = set()
    listed = {o.key: o.manifest.paths for o in state.owners} if state.outputs else {}
    for i, output in enumerate(state.outputs):
        path = output.path
        if path not in listed[output.owner]:
            problem = publishable_path_problem(path)
            if problem:
                raise DistributorError("invalid_state", "%s: outputs[%d].path %r %s" % (where, i, path, problem))
        if path in seen:
            raise DistributorError("invalid_state", "%s: outputs[%d].path %r is recorded twice" % (where, i, path))
        seen.add(path)
    _check_urls(state, where)


def _check_urls(state: State, where: str) -> None:
    """Every recorded URL is one distributor could have made: an output's `url` is its own path
    under a sound base URL, a `primary_url` is sound (urls.py). Against which base is not asked:
    other owners of a shared root publish under their own destinations' base URLs, retained
    outputs keep the URL of the publication that wrote them, and an operator may change
    links.base_url. No URL read here is ever used: each is made again from a path."""
    for i, owner in enumerate(state.owners):
        problem = owner.primary_url and url_problem(owner.primary_url)
        if problem:
            field = "links.primary_url" if state.mode == SINGLE_OWNER else "owners[%d].links.primary_url" % i
            raise DistributorError("invalid_state", "%s: %s %r %s; distributor never records such a URL, so the record "
                                                    "was edited" % (where, field, owner.primary_url, problem))
    for i, output in enumerate(state.outputs):
        problem = output.url and recorded_url_problem(output.url, output.path)
        if problem:
            raise DistributorError(
                "invalid_state",
                "%s: outputs[%d].url %r %s; the URL distributor records for %r is links.base_url + %r, so the "
                "record was edited (distributor makes every URL it uses from the path, never from a record)"
                % (where, i, output.url, problem, output.path, "/" + quote(output.path)))
