# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One version and one timestamp form: what state records name and when they say it happened."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import render_bundle_path
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.decide import decide
from ansible_collections.distributor.core.plugins.module_utils._distributor.planning.plan import Content, plan, plan_outputs
from ansible_collections.distributor.core.plugins.module_utils._distributor.releases.rules import release_id
from ansible_collections.distributor.core.plugins.module_utils._distributor.records.state import OwnerKey
from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.lease import describe_holder
from ansible_collections.distributor.core.plugins.module_utils._distributor.timestamps import format_compact, parse_compact
from ansible_collections.distributor.core.plugins.module_utils._distributor.version import COLLECTION_VERSION

from builders import destination, manifest, pipeline

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(REPO, "plugins", "module_utils", "_distributor")
KEY = OwnerKey("reports", "archive")


def test_the_version_records_name_is_the_one_galaxy_yml_releases():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        assert yaml.safe_load(handle)["version"] == COLLECTION_VERSION


def test_a_plan_made_with_a_clock_in_another_zone_records_utc():
    m = manifest()
    cfg = destination()
    planned = plan_outputs(m, pipeline())
    paths = frozenset(p.path for p in planned)
    decision = decide(manifest=m, key=KEY, destination=cfg, state=None, state_error=None, present=frozenset(),
                      planned=paths, force=False, where="memory:/")
    contents = {p.path: Content("sha256:" + "0" * 64, 1, b"x") for p in planned}
    berlin = datetime(2026, 6, 4, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    after = plan(decision=decision, key=KEY, destination=cfg, manifest=m, planned=planned, contents=contents,
                 before=None, present=frozenset(), bundle_path="", base_url=None, now=berlin).after
    assert after.created_at == after.updated_at == "2026-06-04T12:00:00Z"
    assert after.distributor_version == COLLECTION_VERSION


def test_a_bare_created_placeholder_renders_the_instant_in_utc():
    cfg = destination(path="archive/{created}")
    created = datetime(2026, 6, 4, 13, 55, 0, tzinfo=timezone(timedelta(hours=2)))
    assert render_bundle_path(cfg, "reports", "r", created) == "archive/2026-06-04T11:55:00Z"


def test_a_lock_holder_is_described_with_rfc3339_times():
    raw = b'{"holder": "host:1", "acquired_at": 1780574400, "expires_at": 1780575000}'
    assert describe_holder(raw) == '"host:1" (since 2026-06-04T12:00:00Z, expires 2026-06-04T12:10:00Z)'


def test_a_release_ids_second_is_written_and_read_by_the_timestamp_module_in_utc():
    berlin = datetime(2026, 6, 4, 14, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    assert format_compact(berlin) == "20260604T120005Z"
    assert parse_compact("20260604T120005Z") == berlin and parse_compact("20260604T120005Z").tzinfo == timezone.utc
    assert release_id(berlin, "0123456789ab") == "20260604T120005Z-0123456789ab"
    with pytest.raises(ValueError):
        parse_compact("2026-06-04T12:00:05Z")


def test_only_the_timestamp_module_formats_or_parses_times():
    """But the `{created:<strftime>}` placeholder, whose format is the user's (config.render_bundle_path)."""
    found = {}
    for directory, _dirs, files in os.walk(CORE):
        for name in files:
            if name.endswith(".py") and name != "timestamps.py":
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    calls = re.findall(r"\.(strftime|strptime)\(", handle.read())
                if calls:
                    found[os.path.relpath(os.path.join(directory, name), CORE)] = calls
    assert found == {"records/config.py": ["strftime"]}
