# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A shared root's output records carried as the lines they were read as.

One owner's publish needs the other owners' records only to write them back and to know who
owns each path. Modelling every record of a 100,000-output root (decoding, an `Output` each)
was most of what a publish of one owner cost, so state_parse.parse_state keeps the records of a
schema-3 state that the column checks accept (columns.shared_output_lines) as their checked
lines with two columns, path and owner. A record is modelled only when something asks for it
(the same model the full path makes, from the same JSON), and a line nobody changed is written
back byte for byte. Every rule that reads other owners asks the path-and-owner view
(Carried.owners_by_path) or the records, and gets the answers the modelled state gives. Where
the lines sit in the record's bytes is state_lines.py's, beside the format it writes them in.

The owners' embedded manifests are carried the same way (CarriedFiles): their file lines checked
in place and their digests recomputed from what was checked (manifest.carried), each entry
modelled only when a manifest's files are asked for, the lines written back as read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, compress
from operator import and_, itemgetter, not_

from .columns import rows
from .state_lines import FILE_LINE, file_block_lines, with_outputs


def join_outputs(head: str, outputs: Carried, encode) -> bytes:
    """The record's bytes: `head` (its JSON with an empty outputs list, as
    state.readable_json lays it out) with the outputs block put back, carried lines as read and
    `encode(records)` the lines of the modelled ones, in the order of their paths."""
    made = sorted(outputs.records, key=_path)
    lines = sorted(chain(zip(outputs.paths, outputs.lines), zip(map(_path, made), map(str.encode, encode(made)))))
    return with_outputs(head, [line for _path_, line in lines])


def _path(record) -> str:
    return record.path


class Carried(Sequence):
    """A shared root's outputs: the carried records (`lines`, with their `paths` and `owners`),
    each modelled by `model(line)` when first asked for, then `records`, the ones a plan made.
    It is a sequence of output records like the tuple it stands for, and equal to that tuple."""

    def __init__(self, lines: list, paths: list, owners: list, model, records: tuple = ()):
        self.lines, self.paths, self.owners, self.records = lines, paths, owners, records
        self._model = model
        self._made: dict = {}
        self._owned: dict = {}

    def __len__(self) -> int:
        return len(self.lines) + len(self.records)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self)[index]
        count = len(self.lines)
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        if position >= count:
            return self.records[position - count]
        made = self._made.get(position)
        if made is None:
            made = self._made[position] = self._model(self.lines[position])
        return made

    def __iter__(self):
        yield from map(self.__getitem__, range(len(self.lines)))
        yield from self.records

    def __eq__(self, other) -> bool:
        if isinstance(other, Carried) and other.lines == self.lines and other.records == self.records:
            return True
        if isinstance(other, (tuple, Carried)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other) -> tuple:
        return tuple(self) + tuple(other)

    def __radd__(self, other) -> tuple:
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        return "Carried(%d lines, %d records)" % (len(self.lines), len(self.records))

    def owned(self, key) -> tuple:
        """The records of owner `key`, in order: only these are modelled for its publish."""
        found = self._owned.get(key)
        if found is None:
            mine = list(compress(range(len(self.lines)), map(key.__eq__, self.owners)))
            found = self._owned[key] = tuple(map(self.__getitem__, mine)) + tuple(o for o in self.records if o.owner == key)
        return found

    def owners_by_path(self) -> dict:
        """The path-and-owner view: each path's owner, without a record modelled."""
        return dict(chain(zip(self.paths, self.owners), ((o.path, o.owner) for o in self.records)))

    def by_path(self) -> Mapping:
        """Each path's record, modelled when looked up."""
        return _ByPath(self)

    def without(self, key, paths) -> Carried:
        """The records not of owner `key` nor at any of `paths`: what a publish of `key` carries
        over (the paths it plans are its own now), its lines still the ones read."""
        kept = list(map(and_, map(key.__ne__, self.owners), map(not_, map(paths.__contains__, self.paths))))
        records = tuple(o for o in self.records if o.owner != key and o.path not in paths)
        return Carried(list(compress(self.lines, kept)), list(compress(self.paths, kept)), list(compress(self.owners, kept)),
                       self._model, records)

    def with_records(self, records: tuple) -> Carried:
        """These outputs and `records` after them: a plan's records for its owner."""
        return Carried(self.lines, self.paths, self.owners, self._model, self.records + tuple(records))


class _ByPath(Mapping):
    """Carried.by_path: keys and membership from the paths alone."""

    def __init__(self, outputs: Carried):
        self._outputs = outputs
        self._index = dict(zip(chain(outputs.paths, map(_path, outputs.records)), range(len(outputs))))

    def __getitem__(self, path):
        return self._outputs[self._index[path]]

    def __contains__(self, path) -> bool:
        return path in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


class CarriedFiles(Sequence):
    """An embedded manifest's file entries carried as the checked lines they were read as
    (`block`, state_lines.split_files, with their `paths`): `kind` rows made from the lines'
    groups (state_lines.FILE_LINE) when first asked for, the lines written back as read
    (`lines`). A sequence equal to the tuple of entries it stands for."""

    def __init__(self, paths: list, block: bytes, kind: type):
        self._paths, self._block, self._kind = paths, block, kind
        self._made: tuple | None = None

    def _entries(self) -> tuple:
        if self._made is None:
            found = FILE_LINE.findall(self._block)
            self._made = rows(self._kind, self._paths, map(bytes.decode, map(itemgetter(1), found)), map(int, map(itemgetter(2), found)))
        return self._made

    def __len__(self) -> int:
        return len(self._paths)

    def __getitem__(self, index):
        return self._entries()[index]

    def __iter__(self):
        return iter(self._entries())

    def __eq__(self, other) -> bool:
        if isinstance(other, (tuple, CarriedFiles)):
            return self._entries() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._entries())

    def __repr__(self) -> str:
        return "CarriedFiles(%d lines)" % len(self)

    def lines(self) -> list:
        """The entries' lines as read, for the record written back (state._written)."""
        return file_block_lines(self._block)
