# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record is evidence of what distributor wrote only when an account it writes as owns it.

The attack of issue 38, on real disk and a real sshd: uid 65534 can write the site's top
directory but not uid 1000's `reports/` beneath it. It publishes the site plus uid 1000's files to
a scratch root and renames the record it got over the real one; root's next publish must not
take that record's word for what to delete.
"""

from __future__ import annotations

import os
import shutil

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError
from ansible_collections.distributor.core.plugins.module_utils._distributor.paths import INDEX_NAME, JOURNAL_NAME, STATE_NAME
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.prune import prune
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.publish import publish
from ansible_collections.distributor.core.plugins.module_utils._distributor.operations.state_info import state_info

import builders
from builders import LATER, MEMORY_STORAGE, NOW, write_bundle
from memory_storage import MemoryStorage

PIPELINE = {"id": "reports"}
VICTIM_UID = 1000  # owns reports/, which the attacker cannot write
ATTACKER_UID = 65534  # can write the site's top directory
SITE = {"index.html": b"<p>site</p>", "about.html": b"<p>about</p>"}


@pytest.fixture(params=["local", "sftp"])
def place(request, tmp_path):
    return builders.Place(request.param, tmp_path, request)


def planted_root(place, tmp_path):
    """The site published by root; uid 1000's 20 reports beside it; a record naming them, made by
    publishing the site and the reports to a scratch root, renamed over the real one by uid 65534."""
    site = place.root / "site"
    publish(write_bundle(tmp_path / "site-bundle", SITE), PIPELINE, place.destination, now=NOW)
    reports = {"reports/q%03d.pdf" % i: b"%%PDF quarter %d of uid %d" % (i, VICTIM_UID) for i in range(20)}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    scratch_destination = dict(place.destination, storage=dict(place.destination["storage"], root=str(scratch)))
    publish(write_bundle(tmp_path / "with-reports", dict(SITE, **reports)), PIPELINE, scratch_destination, now=NOW)
    (site / "reports").mkdir()
    for path, data in reports.items():
        (site / path).write_bytes(data)
        os.chown(site / path, VICTIM_UID, VICTIM_UID)
    os.chown(site / "reports", VICTIM_UID, VICTIM_UID)
    os.chmod(site, 0o777)
    planted = site / (STATE_NAME + ".planted")
    shutil.copyfile(scratch / "site" / STATE_NAME, planted)
    os.chown(planted, ATTACKER_UID, ATTACKER_UID)
    os.rename(planted, site / STATE_NAME)
    return site, reports


def test_a_record_renamed_over_the_real_one_by_another_account_deletes_nothing(place, tmp_path):
    """The publish that would have deleted the 20 reports fails invalid_state, in check mode and in
    the run, naming the record, its owner and the way out; every file stays."""
    site, reports = planted_root(place, tmp_path)
    bundle = write_bundle(tmp_path / "next", dict(SITE, **{"index.html": b"<p>site v2</p>"}))
    for check_mode in (True, False):
        with pytest.raises(DistributorError) as caught:
            publish(bundle, PIPELINE, place.destination, now=LATER, check_mode=check_mode)
        assert caught.value.reason == "invalid_state"
        assert STATE_NAME in caught.value.message
        assert "is owned by uid %d, not by " % ATTACKER_UID in caught.value.message
        assert "storage.trusted_owners" in caught.value.message
    assert {path: (site / path).read_bytes() for path in reports} == reports
    assert (site / "index.html").read_bytes() == SITE["index.html"], "nothing was written"


def test_prune_and_state_info_refuse_the_planted_record_too(place, tmp_path):
    """prune would delete what the record names: it refuses before deleting; state_info reports
    the record as not valid instead of showing its outputs as distributor's."""
    site, reports = planted_root(place, tmp_path)
    with pytest.raises(DistributorError) as caught:
        prune(PIPELINE["id"], dict(place.destination, retention={"max_outputs": 1}))
    assert caught.value.reason == "invalid_state" and "uid %d" % ATTACKER_UID in caught.value.message
    info = state_info(place.destination, pipeline_id=PIPELINE["id"])
    assert info["valid"] is False and "is owned by uid %d" % ATTACKER_UID in info["error"]
    assert {path: (site / path).read_bytes() for path in reports} == reports


def test_an_account_named_in_trusted_owners_is_trusted_by_id_and_by_name(place, tmp_path):
    """A migration from one publishing account to another names the old one: its record counts."""
    site = place.root / "site"
    bundle = write_bundle(tmp_path / "b", SITE)
    publish(bundle, PIPELINE, place.destination, now=NOW)
    os.chown(site / STATE_NAME, ATTACKER_UID, ATTACKER_UID)
    for trusted in (str(ATTACKER_UID), "nobody"):
        storage = dict(place.destination["storage"], trusted_owners=[trusted])
        result = publish(bundle, PIPELINE, dict(place.destination, storage=storage), now=LATER, check_mode=True)
        assert result["action"] == "skip", trusted


def test_a_journal_or_release_index_of_another_account_is_refused(tmp_path):
    """The journal and the release index are records too (local: the same read serves them all)."""
    root = tmp_path / "root"
    destination = {"id": "archive", "storage": {"type": "local", "root": str(root)}, "path": "site",
                   "releases": {"keep": 2}}
    bundle = write_bundle(tmp_path / "b", SITE)
    publish(bundle, PIPELINE, destination, now=NOW)
    index = root / ".distributor-releases" / "site" / INDEX_NAME
    os.chown(index, ATTACKER_UID, ATTACKER_UID)
    with pytest.raises(DistributorError) as caught:
        publish(write_bundle(tmp_path / "c", dict(SITE, **{"new.html": b"<p>new</p>"})), PIPELINE, destination, now=LATER)
    assert caught.value.reason == "invalid_state" and INDEX_NAME in caught.value.message
    plain = dict(destination)
    del plain["releases"]
    plain["path"] = "plain"
    publish(bundle, PIPELINE, plain, now=NOW)
    journal = root / "plain" / JOURNAL_NAME
    journal.write_text('{"token": "planted", "writes": []}')
    os.chown(journal, ATTACKER_UID, ATTACKER_UID)
    with pytest.raises(DistributorError) as caught:
        publish(bundle, PIPELINE, plain, now=LATER)
    assert caught.value.reason == "invalid_state" and JOURNAL_NAME in caught.value.message
    assert journal.exists(), "a record distributor did not write is left for the operator"


def test_force_does_not_replace_a_record_of_another_account(tmp_path):
    """Invalid state may be replaced by a forced publish; a record of another account is no
    invalid state of distributor's own, so force is refused as any run is."""
    store = {"site/" + STATE_NAME: b"{}"}

    def opener(cfg, base, token):
        return MemoryStorage(store, base, token, foreign={"site/" + STATE_NAME})

    destination = {"id": "archive", "storage": MEMORY_STORAGE, "path": "site"}
    with pytest.raises(DistributorError) as caught:
        publish(write_bundle(tmp_path / "b", SITE), PIPELINE, destination, now=NOW, force=True, opener=opener)
    assert caught.value.reason == "invalid_state"
    assert store == {"site/" + STATE_NAME: b"{}"}
