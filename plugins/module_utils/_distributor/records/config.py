# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pipeline and destination settings: validated by JSON Schema, defaults filled in one place."""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, urlsplit

from ..argspec import STORAGE
from .attributes import check_storage
from ..errors import DistributorError
from ..limits import LOCK_EXPIRY_SECONDS
from ..paths import is_reserved, path_problem
from .schema_documents import HTTP_URL
from .schemas import validate
from ..timestamps import format_rfc3339
from .transforms import DEFAULT_LANG, is_script_url
from ..urls import url_problem
from ..vocabulary import SHARED_ROOT, SINGLE_OWNER

DEFAULT_RULES = ({"match": "**", "transform": "copy"},)
_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?::([^{}]*))?\}")
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# hugo's maxDeletes and s3deploy's -max-delete default: a guard that a normal publish never meets.
DEFAULT_MAX_DELETES = 256
# CloudFront's free monthly allowance of invalidation paths.
DEFAULT_INVALIDATION_LIMIT = 1000
# Good releases kept: the active one, the one `previous` returns to, and one before that.
DEFAULT_KEEP = 3


@dataclass(frozen=True)
class Rule:
    """One `outputs` rule of a pipeline: the files its glob matches go through its transform."""

    match: str
    transform: str


@dataclass(frozen=True)
class Pipeline:
    """A pipeline's settings with defaults filled in: what turns a bundle into outputs, the same
    for every destination it publishes to."""

    id: str
    rules: tuple[Rule, ...]
    allow_raw_html: bool
    exclude: tuple[str, ...] = ()
    stylesheet: str | None = None
    template: str | None = None
    lang: str = DEFAULT_LANG


@dataclass(frozen=True)
class Retention:
    """What prune keeps of a destination's publications; None for a bound not set."""

    max_age_seconds: int | None
    max_outputs: int | None


@dataclass(frozen=True)
class Releases:
    """Release mode (releases.rules): how many good releases stay, whether a publish switches to
    what it built, whether a plain bundle path may become the first release, and the paths kept
    once in the release home for every release (`shared`: what a web server writes there). `id`
    names the release a publish builds and `build: always` builds one even when nothing changed:
    what a fleet needs to hold one release id on every destination (docs/releases.md)."""

    keep: int = DEFAULT_KEEP
    activate: bool = True
    convert: bool = False
    preview_url: str | None = None
    shared: tuple[str, ...] = ()
    id: str | None = None
    build: str = "changed"


@dataclass(frozen=True)
class Destination:
    """A destination's settings with defaults filled in: where outputs go and the policies
    (state mode, reconciliation, conflicts, takeover) every decision about that root reads."""

    id: str
    storage: dict
    path: str
    state_mode: str
    reconciliation: str
    on_destination_newer: str
    on_conflict: str
    takeover: str
    base_url: str | None
    primary: tuple[str, ...]
    retention: Retention
    lock_expiry: float = LOCK_EXPIRY_SECONDS
    max_deletes: int = DEFAULT_MAX_DELETES
    allow_empty: bool = False
    invalidation_limit: int = DEFAULT_INVALIDATION_LIMIT
    # None: the bundle path is a directory, changed in place.
    releases: Releases | None = None

    @property
    def shared_root(self) -> bool:
        """Whether the root holds many owners' outputs, which changes every rule of ownership."""
        return self.state_mode == SHARED_ROOT


def _without_none(data):
    """Ansible passes every unset suboption as None, in lists of options too (jump_hosts); the
    schemas describe what a user wrote."""
    if isinstance(data, dict):
        return {k: _without_none(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_without_none(v) for v in data]
    return data


_STORAGE_ALIASES = {alias: name for name, spec in STORAGE.items() for alias in spec.get("aliases", ())}


def _canonical_storage(data: dict) -> dict:
    """The amazon.aws spellings (aws_region, ...) under their own names: Ansible hands a module
    both the alias and the option it fills, and the role or a direct caller only the alias."""
    storage = data.get("storage")
    if not isinstance(storage, dict):
        return data
    canonical = {}
    for key, value in storage.items():
        name = _STORAGE_ALIASES.get(key, key)
        if name not in canonical or canonical[name] is None:
            canonical[name] = value
    return dict(data, storage=canonical)


def parse_pipeline(data: object) -> Pipeline:
    """The module's `pipeline` option as a Pipeline, or invalid_config: checked before any
    destination is opened, so a bad setting never leaves a lock or a partial write behind."""
    data = _without_none(data) if isinstance(data, dict) else data
    validate("pipeline", data, "pipeline", "invalid_config")
    rules = tuple(
        Rule(match=r["match"], transform=r.get("transform", "copy")) for r in data.get("outputs", DEFAULT_RULES)
    )
    markdown = data.get("markdown", {})
    pipeline = Pipeline(
        id=data["id"],
        rules=rules,
        allow_raw_html=markdown.get("allow_raw_html", False),
        exclude=tuple(data.get("exclude", ())),
        stylesheet=markdown.get("stylesheet"),
        template=markdown.get("template"),
        lang=markdown.get("lang", DEFAULT_LANG),
    )
    _check_page_options(pipeline)
    return pipeline


def _check_page_options(pipeline: Pipeline) -> None:
    """What the schema cannot say: the stylesheet is a URL a browser fetches as it is written
    (absolute, or relative to the page), and the template a file the module can find wherever it
    runs, whatever its working directory."""
    where = "pipeline %s" % pipeline.id
    if pipeline.stylesheet is not None:
        if re.search(r"[\x00-\x20\x7f\"<>\\]", pipeline.stylesheet) or is_script_url(pipeline.stylesheet):
            raise DistributorError("invalid_config", "%s: markdown.stylesheet %r must be the URL of a stylesheet "
                                   "(https://..., /css/site.css or css/site.css), without spaces, quotes, "
                                   "backslashes or a script scheme" % (where, pipeline.stylesheet))
    if pipeline.template is not None and not posixpath.isabs(pipeline.template):
        raise DistributorError("invalid_config", "%s: markdown.template %r must be an absolute path of a file on "
                               "the host that runs the module (for example {{ playbook_dir }}/page.html)"
                               % (where, pipeline.template))


def parse_destination(data: object) -> Destination:
    """The module's `destination` option as a Destination, or invalid_config; every operation
    reads a destination through here, so defaults and checks cannot differ between them."""
    data = _without_none(_canonical_storage(data)) if isinstance(data, dict) else data
    validate("destination", data, "destination", "invalid_config")
    where = "destination %s" % data["id"]
    links = data.get("links", {})
    retention = data.get("retention", {})
    transfer = data.get("transfer", {})
    destination = Destination(
        id=data["id"],
        storage=data["storage"],
        path=data.get("path", ""),
        state_mode=data.get("state", {}).get("mode", SINGLE_OWNER),
        reconciliation=data.get("reconciliation", {}).get("mode", "replace"),
        on_destination_newer=transfer.get("on_destination_newer", "skip"),
        on_conflict=transfer.get("on_conflict", "fail"),
        takeover=data.get("takeover", {}).get("mode", "none"),
        base_url=links.get("base_url"),
        primary=tuple(links.get("primary", ("index.html", "*.html"))),
        retention=Retention(
            max_age_seconds=parse_age(retention["max_age"], where) if "max_age" in retention else None,
            max_outputs=retention.get("max_outputs"),
        ),
        lock_expiry=float(data.get("lock", {}).get("expiry", LOCK_EXPIRY_SECONDS)),
        max_deletes=transfer.get("max_deletes", DEFAULT_MAX_DELETES),
        allow_empty=transfer.get("allow_empty", False),
        invalidation_limit=links.get("invalidation_limit", DEFAULT_INVALIDATION_LIMIT),
        releases=Releases(**dict(data["releases"], shared=tuple(data["releases"].get("shared", ())))) if "releases" in data else None,
    )
    if math.isnan(destination.lock_expiry):
        # Ansible's float type turns "nan" into a number that every schema bound lets through.
        raise DistributorError("invalid_config", "%s: lock.expiry must be a number of seconds, not NaN" % where)
    _check_templates(destination, where)
    if destination.releases is not None:
        _check_releases(destination, where)
    try:
        check_storage(destination.storage)
    except DistributorError as error:
        raise DistributorError(error.reason, "%s: %s" % (where, error.message)) from None
    if destination.base_url:
        _check_base_url(destination.base_url, where)
    return destination


def _check_releases(destination: Destination, where: str) -> None:
    """Release mode needs a link that can be renamed over atomically, in a directory above the
    bundle path: S3 has neither links nor renames, and the root has no directory above it."""
    if destination.storage["type"] == "s3":
        raise DistributorError(
            "invalid_config",
            "%s: releases need symbolic links and atomic renames, which S3 does not have; on S3 the way to switch "
            "a whole site at once is a CDN whose origin moves from one prefix to the next, which distributor does "
            "not do yet (see docs/config.md, releases). Remove releases from this destination." % where,
        )
    if destination.path.strip("/") == "":
        raise DistributorError(
            "invalid_config",
            "%s: releases need a bundle path (path): the bundle path becomes a symbolic link to the live release, "
            "and the storage root itself cannot be one. Give a path such as \"site\"." % where,
        )
    _check_shared(destination.releases.shared, where)
    preview = destination.releases.preview_url
    if not preview:
        return
    problem = url_problem(preview.replace("{release}", "20261206T053000Z-0123456789ab"))
    if problem or "{release}" not in preview:
        raise DistributorError("invalid_config", "%s: releases.preview_url %r %s" % (
            where, preview, "%s once {release} is filled in" % problem if problem else
            "holds no {release}, so every release would have the same preview"))


def _check_shared(shared: tuple, where: str) -> None:
    """Each shared path is a clean relative path that is not distributor's (reserved), given
    once and inside no other: the link to one is the only entry at its path in a release, so
    another inside it could never be linked."""
    for number, path in enumerate(shared):
        problem = path_problem(path) or ("is a name distributor keeps for its records" if is_reserved(path) else None)
        earlier = next((other for other in shared[:number] if other == path or path.startswith(other + "/")
                        or other.startswith(path + "/")), None)
        if problem is None and earlier is not None:
            problem = "is given twice" if earlier == path else "overlaps the shared path %r" % earlier
        if problem:
            raise DistributorError("invalid_config", "%s: releases.shared entry %r %s; a shared path is a relative path "
                                   "such as uploads or .well-known/acme-challenge, each given once, none inside another"
                                   % (where, path, problem))


def parse_age(text: str, where: str) -> int:
    """`30d`, `12h`, `90m`, `45s`, `2w` in seconds."""
    match = re.fullmatch(r"([0-9]+)([smhdw])", text or "")
    if not match:
        raise DistributorError("invalid_config", "%s: retention.max_age %r must look like 30d, 12h, 90m, 45s or 2w" % (where, text))
    return int(match.group(1)) * _AGE_UNITS[match.group(2)]


def _check_templates(destination: Destination, where: str) -> None:
    for field, template in (("path", destination.path), ("links.base_url", destination.base_url or "")):
        for name, _fmt in _PLACEHOLDER.findall(template):
            if name not in ("pipeline_id", "destination_id", "source_id", "created"):
                raise DistributorError(
                    "invalid_config",
                    "%s: %s uses unknown placeholder {%s}; use {pipeline_id}, {destination_id}, "
                    "{source_id} or {created:<strftime>}" % (where, field, name),
                )


def _check_base_url(template: str, where: str) -> None:
    """The template must be a URL already, and a producer's values ({source_id}, {created}) may
    only fill its path: whatever a producer writes, the URL keeps the operator's host. It is the
    URL output paths are joined to, so a query or fragment (`…/site?v=1/a.html`) is refused."""
    filled = _PLACEHOLDER.sub("x", template)
    check_http_url(filled, "%s: links.base_url %r" % (where, template))
    problem = url_problem(filled)
    if problem:
        raise DistributorError("invalid_config", "%s: links.base_url %r %s; it is the URL of the bundle path, which "
                                                 "each output's path is joined to" % (where, template, problem))
    for match in _PLACEHOLDER.finditer(template):
        if match.group(1) in _PRODUCER_VALUES and not re.match(r"[^:]*://[^/?#]*[/?#]", template[: match.start()]):
            raise DistributorError(
                "invalid_config",
                "%s: links.base_url %r uses {%s} before the URL's path; a producer's values may only fill "
                "the path, so that they can never choose the host" % (where, template, match.group(1)),
            )


_PRODUCER_VALUES = ("source_id", "created")


def check_http_url(url: str, what: str) -> None:
    """An absolute http(s) URL with a host, as the state schema's url fields require: a publish
    never records a URL that the next run's state check rejects."""
    try:
        parts = urlsplit(url) if re.fullmatch(HTTP_URL["pattern"], url) else None
        valid = parts is not None and parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed [IPv6] host
        valid = False
    if not valid:
        raise DistributorError("invalid_config", "%s must be an absolute http:// or https:// URL with a host "
                                                 "and no spaces" % what)


def render_url(destination: Destination, pipeline_id: str, source_id: str, created: datetime) -> str | None:
    """`links.base_url` rendered: each value percent-encoded as output paths are (only letters,
    digits, `-._~` and `/` stay as they are), then checked as a URL before anything is written."""
    if not destination.base_url:
        return None
    url = render_template(destination.base_url, pipeline_id, destination.id, source_id, created, encode=quote)
    check_http_url(url, "destination %s: links.base_url rendered as %r" % (destination.id, url))
    problem = url_problem(url)
    if problem:
        raise DistributorError("invalid_config", "destination %s: links.base_url rendered as %r %s; the values filled "
                                                 "into it (here source id %r) may not climb out of its path"
                                                 % (destination.id, url, problem, source_id))
    return url


def render_template(template: str, pipeline_id: str | None, destination_id: str, source_id: str | None,
                    created: datetime | None, encode=str) -> str:
    """Fill {pipeline_id}, {destination_id}, {source_id} and {created:<strftime>}, each value
    passed through `encode`.

    `source_id` and `created` are None when no bundle is at hand (reconcile-state, prune, state
    info), `pipeline_id` too when state info looks at a root as a whole: then a template that
    needs them is an error naming the missing value.
    """
    values = {"pipeline_id": pipeline_id, "destination_id": destination_id, "source_id": source_id, "created": created}

    def fill(match: re.Match) -> str:
        return encode(value_of(match))

    def value_of(match: re.Match) -> str:
        name, fmt = match.group(1), match.group(2)
        value = values[name]
        if value is None:
            raise DistributorError(
                "invalid_config",
                "destination %s: %r needs {%s}; give %s or use a path without it" % (destination_id, template, name, name),
            )
        if name != "created":
            return value
        return value.strftime(fmt) if fmt else format_rfc3339(value)

    return _PLACEHOLDER.sub(fill, template)


def render_bundle_path(destination: Destination, pipeline_id: str | None, source_id: str | None, created: datetime | None) -> str:
    """The bundle path under the root: clean, relative, never reserved ("" is the root itself)."""
    rendered = render_template(destination.path, pipeline_id, destination.id, source_id, created).strip("/")
    if rendered == "":
        return ""
    problem = path_problem(rendered)
    if problem or is_reserved(rendered):
        raise DistributorError(
            "invalid_config",
            "destination %s: bundle path %r (from %r) %s; it must stay under the root"
            % (destination.id, rendered, destination.path, problem or "uses a reserved .distributor name"),
        )
    return rendered
