# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Source bundles for the benchmarks, generated reproducibly from a seed.

The same seed gives byte-identical bundles on every machine, so two runs compare like with
like. Binary content is a seeded random block repeated with a per-block counter: every block
differs (no tool can deduplicate it) but a 1 GiB file takes seconds, not a minute, to make.
Nothing here compresses content, so its compressibility does not matter.
"""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass

from harness import create_manifest

BUNDLE_ID = "bench.bundle"
CREATED = "2026-01-01T00:00:00Z"
CHANGED = "2026-01-01T01:00:00Z"
BLOCK = 1024 * 1024
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu release deploy bundle archive "
         "report metric latency throughput storage replica region cluster quota budget owner pipeline").split()


@dataclass(frozen=True)
class BundleSpec:
    name: str
    kind: str  # small | large | markdown
    count: int
    size: int  # bytes per file (binary kinds); markdown files are a few KiB each

    @property
    def markdown(self) -> bool:
        return self.kind == "markdown"

    def describe(self) -> str:
        if self.markdown:
            return "%d .md files" % self.count
        return "%d x %s" % (self.count, human_size(self.size))


def human_size(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d %s" % (size // factor, unit)
    return "%d B" % size


def _write_binary(path: str, size: int, rng: random.Random) -> None:
    block = bytearray(rng.randbytes(min(size, BLOCK)))
    offset = rng.getrandbits(32)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        written, counter = 0, 0
        while written < size:
            piece = min(BLOCK, size - written)
            if piece >= 8:
                struct.pack_into("<Q", block, 0, offset + counter)
            handle.write(block[:piece])
            written += piece
            counter += 1


def _paragraph(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choices(WORDS, k=words))
    return text[0].upper() + text[1:] + "."


def _markdown(rng: random.Random, index: int, count: int) -> str:
    """A report page with what markdown_to_html has to handle: headings, a table, fenced code,
    lists, links to sibling .md files (rewritten to .html) and an external link."""
    lines = ["# Report %d: %s %s" % (index, rng.choice(WORDS), rng.choice(WORDS)), ""]
    for section in range(rng.randint(3, 5)):
        lines += ["## Section %d %s" % (section + 1, rng.choice(WORDS)), "", _paragraph(rng, rng.randint(40, 90)), ""]
        lines += ["| metric | value | change |", "| --- | ---: | ---: |"]
        lines += ["| %s | %d | %+.1f%% |" % (rng.choice(WORDS), rng.randint(1, 10**6), rng.uniform(-50, 50))
                  for _row in range(rng.randint(3, 8))]
        lines += ["", "```python", "def f%d(x):" % section, "    return x * %d" % rng.randint(2, 99), "```", ""]
        other = rng.randrange(count)
        lines += ["- see [report %d](%s)" % (other, _md_path(other).replace("docs/", "../", 1)),
                  "- upstream <https://example.com/%s>" % rng.choice(WORDS), ""]
    return "\n".join(lines) + "\n"


def _md_path(index: int) -> str:
    return "docs/d%02d/report-%04d.md" % (index // 50, index)


def _binary_path(spec: BundleSpec, index: int) -> str:
    if spec.kind == "large":
        return "large-%02d.bin" % index
    return "d%02d/f%04d.bin" % (index // 100, index)  # 100 files a directory, like a real tree


def paths(spec: BundleSpec) -> list[str]:
    make = _md_path if spec.markdown else (lambda i: _binary_path(spec, i))
    return [make(i) for i in range(spec.count)]


def _write_file(root: str, spec: BundleSpec, index: int, seed: int, grow: int = 0) -> None:
    rng = random.Random("%s:%d:%d" % (spec.name, index, seed))
    path = os.path.join(root, (_md_path(index) if spec.markdown else _binary_path(spec, index)))
    if spec.markdown:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_markdown(rng, index, spec.count))
    else:
        _write_binary(path, spec.size + grow, rng)


def generate(root: str, spec: BundleSpec, seed: int) -> str:
    """Write the bundle and its manifest under `root`; returns `root`."""
    for index in range(spec.count):
        _write_file(root, spec, index, seed)
    create_manifest(root, BUNDLE_ID, CREATED)
    return root


def change(root: str, spec: BundleSpec, seed: int, fraction: float = 0.1, grow: int = 0, created: str = CHANGED) -> list[str]:
    """Rewrite `fraction` of the files (at least one) with new content, and give the manifest a
    newer `created` (a later one for a later change), as a producer's next release would. Binary files keep their size unless
    `grow` adds bytes to them: rsync and `aws s3 sync` then notice the change by mtime alone, as
    they would for a real rebuild, or by size too."""
    rng = random.Random("change:%s:%d" % (spec.name, seed))
    chosen = sorted(rng.sample(range(spec.count), max(1, round(spec.count * fraction))))
    for index in chosen:
        _write_file(root, spec, index, seed + 1, grow)
    create_manifest(root, BUNDLE_ID, created)
    every = paths(spec)
    return [every[i] for i in chosen]
