# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading one chunk ahead keeps the order of chunks and failures a writer relies on."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.bundle import READ_CHUNK_SIZE
from ansible_collections.distributor.core.plugins.module_utils._distributor.execution.readahead import read_ahead

FULL = READ_CHUNK_SIZE


def source(sizes, fail=False):
    for number, size in enumerate(sizes):
        yield bytes([number]) * size
    if fail:
        raise DistributorError("verification_failed", "big.bin: sha256 mismatch")


@pytest.mark.parametrize("sizes", [[], [10], [FULL], [FULL, FULL, 7], [FULL] * 5])
def test_every_chunk_arrives_in_order(sizes):
    assert [len(chunk) for chunk in read_ahead(source(sizes))] == sizes
    assert b"".join(read_ahead(source(sizes))) == b"".join(source(sizes))


@pytest.mark.parametrize("sizes", [[10], [FULL, FULL, 7]])
def test_the_source_failure_comes_after_the_last_chunk_not_before(sizes):
    """A writer that drains the chunks before it commits must meet the failure first."""
    received = []
    with pytest.raises(DistributorError) as caught:
        for chunk in read_ahead(source(sizes, fail=True)):
            received.append(len(chunk))
    assert caught.value.reason == "verification_failed"
    assert received == sizes


def test_a_consumer_that_stops_early_closes_the_source_and_leaves_no_thread():
    closed = threading.Event()

    def endless():
        try:
            while True:
                yield b"x" * FULL
        finally:
            closed.set()

    before = threading.active_count()
    chunks = read_ahead(endless())
    next(chunks)
    next(chunks)
    chunks.close()
    assert closed.is_set()
    assert threading.active_count() == before
