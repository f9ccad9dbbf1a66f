# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Destination state: schemas 1, 2 and 3 read into one model, written back as 2 or 3.

Single-owner state is modelled as a state with one owner, so comparison and planning have one
shape to reason about; only parsing and serialising know the schemas apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from itertools import repeat
from operator import attrgetter
from types import MappingProxyType
from typing import Mapping, NamedTuple
from urllib.parse import quote

from .carried import Carried, join_outputs
from ..errors import DistributorError
from .columns import Row, fields, manifest_columns, publishable, rows, shared_output_lines, single_owner_columns
from .manifest import Manifest, file_to_dict, listed, parse_manifest, publishable_path_problem, recognised
from .state_lines import LINE as _LINE, emptied, file_lines, output_lines, split_outputs
from .schemas import check_nesting, decode_json, only_scalars, validate
from ..timestamps import parse_rfc3339
from ..urls import recorded_url_problem, url_problem
from ..vocabulary import SHARED_ROOT, SINGLE_OWNER


class OwnerKey(NamedTuple):
    """Shared-root ownership is keyed by pipeline and destination: one pipeline may publish
    different output sets to different destinations."""

    pipeline_id: str
    destination_id: str

    def __str__(self) -> str:
        return "%s/%s" % self


# An output's fields, in order. `attributes`: the storage settings the operator configured for it
# (attributes.output_attributes); `render_key`: for generated outputs, schemas 2 and 3, what their
# bytes were rendered from (transforms.render_key).
_FIELDS = ("path", "kind", "source_path", "transform", "url", "sha256", "size", "created_at", "updated_at", "owner",
           "source_id", "source_digest", "source_created", "attributes", "render_key")


class Output(Row, fields("Output", *_FIELDS, defaults=((), None))):
    """One managed output's record: what was written where, from which source, by which owner,
    so the next run can tell its own files from unmanaged ones and skip unchanged ones. A Row:
    the 100,000 of a state are made from its columns at once."""

    __slots__ = ()


@dataclass(frozen=True)
class Owner:
    """One owner's record in a root: the source it last published and its policies, compared
    against by the next publish of that owner."""

    key: OwnerKey
    reconciliation: str
    manifest: Manifest
    primary_url: str | None


@dataclass(frozen=True)
class State:
    """A root's record in one shape for schemas 1, 2 and 3 (single-owner state has one owner), so
    deciding and planning never branch on the schema."""

    mode: str
    schema_version: int
    created_at: str
    updated_at: str
    published_at: str | None
    distributor_version: str | None
    owners: tuple[Owner, ...]
    outputs: tuple[Output, ...]

    def owner(self, key: OwnerKey) -> Owner | None:
        """The record of owner `key`; None when it has never published here."""
        return next((o for o in self.owners if o.key == key), None)

    def outputs_of(self, key: OwnerKey) -> tuple[Output, ...]:
        """The outputs owner `key` manages: its scope in a shared root (of carried records, only
        these are modelled)."""
        if isinstance(self.outputs, Carried):
            return self.outputs.owned(key)
        return self._indexed("_outputs_of", _by_owner).get(key, ())

    def by_path(self) -> Mapping[str, Output]:
        """Every managed output by path: one path has one record, so this is how managed and
        unmanaged files are told apart."""
        return self._indexed("_by_path", lambda outputs: outputs.by_path() if isinstance(outputs, Carried)
                             else MappingProxyType(dict(zip(map(_path_of, outputs), outputs))))

    def owners_by_path(self) -> Mapping[str, OwnerKey]:
        """Who owns each managed path: all that the rules about other owners' outputs (one path,
        one owner; takeover; what is in the way) ask of them, told without modelling them."""
        return self._indexed("_owners_by_path", lambda outputs: outputs.owners_by_path() if isinstance(outputs, Carried)
                             else dict(zip(map(_path_of, outputs), map(_owner_of, outputs))))

    def _indexed(self, name: str, build):
        """An index of the outputs, built on first use: a publish asks for the same index of a
        100,000-output state several times (deciding, planning, reviewing). The state is
        frozen, so the index stays true; it is no field, so equality ignores it."""
        index = self.__dict__.get(name)
        if index is None:
            index = build(self.outputs)
            object.__setattr__(self, name, index)
        return index


def _by_owner(outputs) -> dict:
    owners = set(map(_owner_of, outputs))
    if len(owners) == 1:  # every single-owner record: no loop over 100,000 outputs
        return {owners.pop(): tuple(outputs)}
    owned: dict = {}
    for output in outputs:
        owned.setdefault(output.owner, []).append(output)
    return {key: tuple(records) for key, records in owned.items()}


def parse_state(raw: bytes, where: str) -> State:
    """Read any schema; every problem is `invalid_state` naming `where` and the field. A record
    the column checks recognise (_carried, _recognised) needs no more; any other takes the full path."""
    return _carried(raw, where) or _decoded(raw, where)


def _carried(raw: bytes, where: str) -> State | None:
    """A schema-3 record whose output lines the column checks accept (columns.shared_output_lines),
    its outputs carried as those lines (carried.py); the rest of the record, its owners and
    their manifests, takes the full path (_decoded) less the outputs. Each line's owner must be
    recorded and its path one that owner's manifest lists or a publishable one, as
    _check_outputs asks. None sends the whole record to the full path, which words what is
    wrong: anything that fails here fails there too. The record's density is the head's
    (schemas.check_density, in _decoded): outside its strings an output line holds at most two
    of the brackets counted, in hundreds of bytes."""
    block = split_outputs(raw)
    columns = block and shared_output_lines(raw, *block)
    if not columns:
        return None
    try:
        head = _decoded(emptied(raw, block[0]), where)
    except DistributorError:
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


def _parsed(data: object, where: str) -> State:
    """parse_state of the decoded record."""
    state = _recognised(data)
    if state is not None:
        return state
    check_nesting(data, where, "invalid_state")
    if not isinstance(data, dict) or data.get("schema_version") not in (1, 2, 3):
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise DistributorError("invalid_state", "%s: schema_version %r is not 1, 2 or 3" % (where, found))
    version = data["schema_version"]
    validate("state-v%d" % version, data, where, "invalid_state", nesting_checked=True)
    state = _parse_shared(data, where) if version == 3 else _parse_single(data, where)
    _check_outputs(state, where)
    return state


def _timestamp(value: str, where: str, field: str, index: int | None = None) -> str:
    """`value` when it is an RFC3339 timestamp, else invalid_state naming `field` (of
    outputs[`index`], when given: the name is made only for a timestamp that fails)."""
    if value in _VALID_TIMES:
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


_owner_of, _path_of = attrgetter("owner"), attrgetter("path")

# A state of 100,000 outputs holds a handful of distinct timestamps, each parsed three times per
# output otherwise; a valid timestamp string stays valid, so remembering them is safe.
_VALID_TIMES: set = set()


def _output(record: dict, owner: OwnerKey, manifest: Manifest | None, fallback_time: str | None, where: str, index: int,
            keyed: bool = True) -> Output:
    created = record.get("created_at", fallback_time)
    updated = record.get("updated_at", fallback_time)
    created = created if created in _VALID_TIMES else _timestamp(created, where, "created_at", index)
    updated = updated if updated in _VALID_TIMES else _timestamp(updated, where, "updated_at", index)
    if manifest is None:
        source_id, source_digest, source_created = record["source_id"], record["source_digest"], record["source_created"]
        if source_created not in _VALID_TIMES:
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
    outputs = rows(Output, *(repeat(None) if columns[name] is None else columns[name] for name in _FIELDS))
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


def _parse_shared(data: dict, where: str) -> State:
    owners = {}
    for i, record in enumerate(data["owners"]):
        key = OwnerKey(record["pipeline_id"], record["destination_id"])
        if key in owners:
            raise DistributorError("invalid_state", "%s: owners[%d]: owner %s is recorded twice" % (where, i, key))
        manifest = parse_manifest(record["source"]["manifest"], "%s: owners[%d].source.manifest" % (where, i), "invalid_state",
                                  nesting_checked=True)
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
    (most outputs are copies at their source's path). Then the URLs (_check_urls)."""
    seen = set()
    listed = {o.key: o.manifest.paths for o in state.owners}
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


def schema_version_for(mode: str) -> int:
    """The schema every record distributor writes in `mode` follows: schema 1 is only ever read
    (and rewritten as 2), shared roots are schema 3."""
    return 3 if mode == SHARED_ROOT else 2


def to_shared(state: State) -> State:
    """Single-owner state as shared-root state: the migration the contract allows for the same owner."""
    return replace(state, mode=SHARED_ROOT, schema_version=schema_version_for(SHARED_ROOT), published_at=None)


def output_to_dict(output: Output, shared: bool = False) -> dict:
    """One output record as written and returned: shared-root records carry their owner and
    source, which a single-owner record holds once for all outputs."""
    record = {"path": output.path, "kind": output.kind, "source_path": output.source_path}
    if output.transform:
        record["transform"] = output.transform
    if output.url:
        record["url"] = output.url
    record.update(sha256=output.sha256, size=output.size)
    if shared:
        record.update(
            pipeline_id=output.owner.pipeline_id,
            destination_id=output.owner.destination_id,
            source_id=output.source_id,
            source_digest=output.source_digest,
            source_created=output.source_created,
        )
    record.update(created_at=output.created_at, updated_at=output.updated_at)
    if output.attributes:
        record["attributes"] = dict(output.attributes)
    if output.render_key:
        record["render_key"] = output.render_key
    return record


def _shared_record(output: Output) -> dict:
    return output_to_dict(output, True)


def _links(primary_url: str | None) -> dict:
    return {"links": {"primary_url": primary_url}} if primary_url else {}


def state_to_dict(state: State, each=listed) -> dict:
    """The record as written: schema 2 for single_owner, schema 3 for shared_root. `each(items,
    make)` makes its lists of output and manifest file records (manifest.listed)."""
    head = {"schema_version": schema_version_for(state.mode)}
    if state.distributor_version:
        head["distributor_version"] = state.distributor_version
    if state.mode == SHARED_ROOT:
        return dict(
            head,
            created_at=state.created_at,
            updated_at=state.updated_at,
            state={"mode": SHARED_ROOT},
            owners=[
                dict(
                    pipeline_id=o.key.pipeline_id,
                    destination_id=o.key.destination_id,
                    reconciliation={"mode": o.reconciliation},
                    source={"manifest": o.manifest.to_dict(each)},
                    **_links(o.primary_url),
                )
                for o in state.owners
            ],
            outputs=each(sorted(state.outputs, key=_path_of), _shared_record),
        )
    (owner,) = state.owners
    return dict(
        head,
        pipeline_id=owner.key.pipeline_id,
        destination_id=owner.key.destination_id,
        published_at=state.published_at,
        created_at=state.created_at,
        updated_at=state.updated_at,
        state={"mode": SINGLE_OWNER},
        reconciliation={"mode": owner.reconciliation},
        source={"manifest": owner.manifest.to_dict(each)},
        **_links(owner.primary_url),
        outputs=each(sorted(state.outputs, key=_path_of), output_to_dict),
    )


def serialize_state(state: State) -> bytes:
    """The bytes of the state file: the one form every operation writes a record in. Output and
    manifest file records are written as lines made from their columns (_written); carried
    records as they were read (carried.join_outputs): the same bytes writing their model would
    make, since the column checks take only lines in that form."""
    if isinstance(state.outputs, Carried) and state.mode == SHARED_ROOT and state.outputs:
        head = readable_json(state_to_dict(replace(state, outputs=()), _written))
        return join_outputs(head, state.outputs, partial(output_lines, shared=True))
    return (readable_json(state_to_dict(state, _written)) + "\n").encode("utf-8")


class _Lines(list):
    """Records already written as lines: readable_json lays them out one a line as it lays out
    the records' dicts."""


def _written(items, make) -> _Lines:
    """state_to_dict's `each` for the bytes of a record: the lines `make`'s dicts would be
    written as, made column-wise (state_lines)."""
    return _Lines(_WRITERS[make](items))


_WRITERS = {file_to_dict: file_lines, output_to_dict: partial(output_lines, shared=False),
            _shared_record: partial(output_lines, shared=True)}


def readable_json(value, indent: str = "") -> str:
    """JSON for a person inspecting a destination and fast to write: objects and arrays that
    hold arrays of objects are laid out one member per line; everything below that (an output
    record, a manifest file entry) is one compact line from the C encoder, through one encoder
    made once (json.dumps with separators makes one per call: a third of the time for 100,000
    records). `indent=2` would take the pure-Python encoder: about a second for a 70 MiB
    shared-root state."""
    inner = indent + "  "
    if isinstance(value, _Lines):
        return "[\n" + inner + (",\n" + inner).join(value) + "\n" + indent + "]" if value else "[]"
    if isinstance(value, dict) and any(_has_records(v) for v in value.values()):
        members = ["%s%s: %s" % (inner, _LINE.encode(k), readable_json(v, inner)) for k, v in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(value, list) and _has_records(value):
        if all(isinstance(item, dict) and only_scalars(item.values()) for item in value):
            return "[\n" + inner + _flat_records(value, inner) + "\n" + indent + "]"
        lines = [readable_json(item, inner) if _has_records(item) else _LINE.encode(item) for item in value]
        return "[\n" + inner + (",\n" + inner).join(lines) + "\n" + indent + "]"
    return _LINE.encode(value)


_NEWLINES = json.JSONEncoder(separators=("\n", ": "))


def _flat_records(records: list, inner: str) -> str:
    """Objects of scalars (every manifest file entry, most output records), one a line, from
    one call of the C encoder instead of one per record: with a newline as its separator, and
    JSON text holding no raw newline or NUL (strings escape them), a newline after `}` and
    before `{` separates two records (no scalar ends with `}`) and every other one two members."""
    text = _NEWLINES.encode(records)[1:-1]
    return text.replace("}\n{", "}\0{").replace("\n", ", ").replace("\0", ",\n" + inner)


def _has_records(value) -> bool:
    """An array of objects, or an object holding one: what is worth a line per member. An
    object of scalars (most output records, every manifest file entry) is told by the types of
    its values alone, without a call per value."""
    if isinstance(value, _Lines):
        return bool(value)
    if isinstance(value, list):
        return any(isinstance(item, dict) for item in value)
    if not isinstance(value, dict) or only_scalars(value.values()):
        return False
    return any(_has_records(v) for v in value.values())
