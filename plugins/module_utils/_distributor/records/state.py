# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Destination state: one model for schemas 1, 2 and 3 (read by state_parse.py), written back
as 2 or 3.

Single-owner state is modelled as a state with one owner, so comparison and planning have one
shape to reason about; only parsing and serialising know the schemas apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import partial
from operator import attrgetter
from types import MappingProxyType
from typing import Mapping, NamedTuple

from .carried import Carried, CarriedFiles, join_outputs
from .columns import Row, fields
from .manifest import Manifest, file_to_dict, listed
from .state_lines import LINE as _LINE, file_lines, output_lines
from .schemas import only_scalars
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
OUTPUT_FIELDS = ("path", "kind", "source_path", "transform", "url", "sha256", "size", "created_at", "updated_at", "owner",
                 "source_id", "source_digest", "source_created", "attributes", "render_key")


class Output(Row, fields("Output", *OUTPUT_FIELDS, defaults=((), None))):
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


_owner_of, _path_of = attrgetter("owner"), attrgetter("path")


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
    written as, made column-wise (state_lines); carried manifest entries as they were read."""
    return _Lines(items.lines() if isinstance(items, CarriedFiles) else _WRITERS[make](items))


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
