# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pipeline and destination settings: defaults, templates, and errors that name the field."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from ansible_collections.distributor.core.plugins.module_utils._distributor.records.config import (
    parse_destination, parse_pipeline, render_bundle_path)
from ansible_collections.distributor.core.plugins.module_utils._distributor import vocabulary
from ansible_collections.distributor.core.plugins.module_utils._distributor.errors import DistributorError

CREATED = datetime(2026, 6, 4, 11, 55, tzinfo=timezone.utc)


def destination(**extra):
    return dict({"id": "archive", "storage": {"type": "local", "root": "/srv/www"}}, **extra)


def refused(parse, data, *words):
    with pytest.raises(DistributorError) as caught:
        parse(data)
    assert caught.value.reason == "invalid_config"
    for word in words:
        assert word in caught.value.message
    return caught.value.message


def test_defaults_follow_the_design():
    cfg = parse_destination(destination())
    assert (cfg.state_mode, cfg.reconciliation, cfg.on_destination_newer, cfg.on_conflict, cfg.takeover) == (
        "single_owner", "replace", "skip", "fail", "none")
    assert cfg.primary == ("index.html", "*.html")
    assert [(r.match, r.transform) for r in parse_pipeline({"id": "p"}).rules] == [("**", "copy")]


def test_unset_ansible_suboptions_count_as_absent():
    cfg = parse_destination(destination(path=None, links={"base_url": None, "primary": None}, transfer=None))
    assert cfg.path == "" and cfg.base_url is None


def test_bundle_path_placeholders_are_rendered():
    cfg = parse_destination(destination(path="{destination_id}/{pipeline_id}/{source_id}/{created:%Y/%m/%d}"))
    assert render_bundle_path(cfg, "reports", "src.1", CREATED) == "archive/reports/src.1/2026/06/04"


@pytest.mark.parametrize("path", ["../escape", "a/../../b", "x/.distributor"])
def test_a_bundle_path_must_stay_under_the_root(path):
    cfg = parse_destination(destination(path=path))
    with pytest.raises(DistributorError) as caught:
        render_bundle_path(cfg, "reports", "s", CREATED)
    assert caught.value.reason == "invalid_config" and "bundle path" in caught.value.message


def test_a_source_id_that_climbs_out_is_refused():
    cfg = parse_destination(destination(path="{source_id}"))
    with pytest.raises(DistributorError):
        render_bundle_path(cfg, "reports", "../../etc", CREATED)


def test_unknown_placeholder_is_named():
    refused(parse_destination, destination(path="{date}"), "{date}")


def test_missing_placeholder_value_names_the_option_to_give():
    cfg = parse_destination(destination(path="{source_id}"))
    with pytest.raises(DistributorError) as caught:
        render_bundle_path(cfg, "reports", None, None)
    assert "give source_id" in caught.value.message


def test_unknown_keys_and_bad_values_name_the_field():
    refused(parse_destination, destination(reconciliation={"mode": "append"}), "reconciliation.mode", "append")
    refused(parse_destination, destination(storage={"type": "local"}), "storage", "root")
    refused(parse_pipeline, {"id": "p", "outputs": [{"match": "*", "transform": "pdf"}]}, "outputs[0].transform")
    refused(parse_destination, destination(colour="blue"), "colour")


def test_validation_errors_never_echo_secrets():
    data = destination(storage={"type": "s3", "bucket": "b", "secret_key": 12345, "session_token": "tok-SECRET"})
    message = refused(parse_destination, data, "secret_key")
    assert "12345" not in message and "tok-SECRET" not in message


def test_base_url_must_be_absolute_http():
    refused(parse_destination, destination(links={"base_url": "reports.example.com"}), "links.base_url")


@pytest.mark.parametrize("base_url, problem", [
    ("https://h.example/site?v=1", "without spaces, a query ('?') or a fragment ('#')"),
    ("https://h.example/site#x", "without spaces, a query ('?') or a fragment ('#')"),
    ("https://h.example/{created:%Y}?v=1", "without spaces, a query ('?') or a fragment ('#')"),
    ("https://h.example/site/../admin/", "'.' or '..' segment"),
    ("https://h.example/site/%2e%2e/admin/", "'.' or '..' segment"),
    ("https://h.example/site\\admin/", "backslash"),
])
def test_a_base_url_outputs_cannot_be_joined_to_is_invalid_config(base_url, problem):
    """`…/site?v=1` would make `…/site?v=1/a.html`: the path of every output inside a query."""
    refused(parse_destination, destination(links={"base_url": base_url}), "links.base_url", problem)


def test_retention_age_units():
    cfg = parse_destination(destination(retention={"max_age": "2w", "max_outputs": 3}))
    assert (cfg.retention.max_age_seconds, cfg.retention.max_outputs) == (14 * 86400, 3)
    refused(parse_destination, destination(retention={"max_age": "30 days"}), "max_age")


def test_memory_is_not_a_storage_type_a_user_can_configure():
    with pytest.raises(DistributorError) as caught:
        parse_destination({"id": "archive", "storage": {"type": "memory", "root": "x"}})
    assert caught.value.reason == "invalid_config" and "storage.type" in caught.value.message


def test_an_unknown_storage_type_never_falls_back_to_a_backend():
    from ansible_collections.distributor.core.plugins.module_utils._distributor.storage.select import open_storage
    with pytest.raises(DistributorError) as caught:
        open_storage({"type": "ftp", "root": "/x"}, "", "t")
    assert caught.value.reason == "invalid_config"


@pytest.mark.parametrize("name", [n for n in dir(vocabulary) if n.isupper()])
def test_every_choice_is_documented_in_config_md(name):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "config.md")) as handle:
        text = handle.read()
    missing = [word for word in getattr(vocabulary, name) if word not in text]
    assert not missing, "docs/config.md does not mention %s of %s" % (missing, name)


@pytest.mark.parametrize("markdown, message", [
    ({"stylesheet": "javascript:alert(1)"}, "markdown.stylesheet 'javascript:alert(1)' must be the URL of a stylesheet"),
    ({"stylesheet": "site.css\" onload=\"x"}, "without spaces, quotes, backslashes or a script scheme"),
    ({"template": "templates/page.html"}, "markdown.template 'templates/page.html' must be an absolute path"),
    ({"template": ""}, "pipeline: markdown.template must not be empty"),
    ({"stylesheet": 1}, "pipeline: markdown.stylesheet must be a string, not an integer"),
    ({"lang": "en\" onload=\"x"}, "pipeline: markdown.lang"),
    ({"lang": ""}, "pipeline: markdown.lang"),
])
def test_page_options_are_checked_naming_the_field(markdown, message):
    with pytest.raises(DistributorError) as caught:
        parse_pipeline({"id": "site", "markdown": markdown})
    assert caught.value.reason == "invalid_config" and message in caught.value.message, caught.value.message


def test_page_options_are_kept():
    parsed = parse_pipeline({"id": "site", "markdown": {"stylesheet": "/css/site.css", "template": "/etc/page.html"}})
    assert (parsed.stylesheet, parsed.template, parsed.allow_raw_html) == ("/css/site.css", "/etc/page.html", False)
    assert parsed.lang == "en"
    assert parse_pipeline({"id": "site", "markdown": {"lang": "pt-BR"}}).lang == "pt-BR"


def test_release_mode_is_off_unless_given_and_defaults_to_keep_3_activate_no_convert():
    assert parse_destination(destination(path="site")).releases is None
    assert parse_destination(destination(path="site", releases=None)).releases is None
    cfg = parse_destination(destination(path="site", releases={}))
    assert (cfg.releases.keep, cfg.releases.activate, cfg.releases.convert) == (3, True, False)
    cfg = parse_destination(destination(path="site", releases={"keep": 1, "activate": False, "convert": True}))
    assert (cfg.releases.keep, cfg.releases.activate, cfg.releases.convert) == (1, False, True)


def test_unset_release_suboptions_take_their_defaults():
    cfg = parse_destination(destination(path="site", releases={"keep": None, "activate": None, "convert": None}))
    assert (cfg.releases.keep, cfg.releases.activate, cfg.releases.convert) == (3, True, False)


@pytest.mark.parametrize("releases, words", [
    ({"keep": 0}, ("releases.keep", "1 or more")),
    ({"keep": True}, ("releases.keep", "integer")),
    ({"activate": "yes"}, ("releases.activate", "boolean")),
    ({"kept": 3}, ("releases", "kept")),
])
def test_release_settings_are_checked_naming_the_field(releases, words):
    refused(parse_destination, destination(path="site", releases=releases), *words)


def test_releases_on_s3_are_invalid_config_saying_why():
    message = refused(parse_destination, {"id": "cdn", "path": "site", "storage": {"type": "s3", "bucket": "b"},
                                          "releases": {}}, "destination cdn", "releases")
    assert "S3 does not have" in message and "symbolic links" in message and "CDN" in message


@pytest.mark.parametrize("path", [None, "", "/"])
def test_releases_need_a_bundle_path_below_the_root(path):
    refused(parse_destination, destination(path=path, releases={"keep": 2}), "releases need a bundle path")


@pytest.mark.parametrize("storage", [{"type": "local", "root": "/srv/www"}, {"type": "sftp", "host": "h", "root": "/srv"}])
def test_releases_are_accepted_on_local_and_sftp(storage):
    assert parse_destination(destination(path="site", storage=storage, releases={})).releases.keep == 3


@pytest.mark.parametrize("preview, words", [
    ("https://preview.example.com/", ("releases.preview_url", "{release}")),
    ("https://preview.example.com/{release}/?x=1", ("releases.preview_url", "query")),
    ("file:///srv/{release}", ("releases.preview_url", "http")),
])
def test_a_preview_url_must_hold_the_release_and_be_a_url_distributor_could_make(preview, words):
    refused(parse_destination, destination(path="site", releases={"preview_url": preview}), *words)


def test_a_preview_url_with_the_release_is_kept():
    cfg = parse_destination(destination(path="site", releases={"preview_url": "https://preview.example.com/{release}/"}))
    assert cfg.releases.preview_url == "https://preview.example.com/{release}/"
