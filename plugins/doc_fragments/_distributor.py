# -*- coding: utf-8 -*-
# Copyright (c) 2026, distributor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option documentation shared by the distributor modules (private to this collection)."""

from __future__ import annotations


class ModuleDocFragment:
    """`destination` is the same dict for every module; its text lives here once."""

    ATTRIBUTES = r"""
attributes:
  platform:
    description: Runs on the host that reaches the storage (the Ansible controller or a POSIX managed node).
    support: full
    platforms: posix
"""

    DESTINATION = r"""
options:
  destination:
    description:
      - Where and under which policy to publish. See C(docs/config.md) for every key.
    type: dict
    required: true
    suboptions:
      id:
        description: Destination id; recorded as the owner's C(destination_id) in state.
        type: str
        required: true
      storage:
        description: The storage root.
        type: dict
        required: true
        suboptions:
          type:
            description: Backend.
            type: str
            required: true
            choices: [local, sftp, s3]
          root:
            description:
              - Absolute directory (C(local), C(sftp)). A local root of C(/) is refused.
            type: str
          host:
            description: SFTP server host name.
            type: str
          port:
            description: SFTP server port; 22 when unset.
            type: int
          username:
            description: SFTP user name.
            type: str
          password:
            description: SFTP password. Never logged.
            type: str
          private_key_file:
            description: SFTP private key file.
            type: path
          known_hosts_file:
            description:
              - known_hosts file holding the SFTP server's host key.
              - When neither this nor O(destination.storage.known_hosts) is set, C(~/.ssh/known_hosts) of the user
                running the module.
            type: path
          known_hosts:
            description:
              - known_hosts lines holding the SFTP server's host key, given as a value (what C(ssh-keyscan) prints),
                for example from an AWX credential. Used with O(destination.storage.known_hosts_file) when both are set.
            type: str
          host_key_policy:
            description:
              - C(reject) refuses an SFTP server whose key is not in I(known_hosts_file); C(accept_new) records it.
              - C(reject) when unset.
            type: str
            choices: [reject, accept_new]
          connect_timeout:
            description:
              - Seconds each step of connecting to the SFTP server may wait (TCP connection or the last jump host's
                forward, SSH banner, key exchange, authentication). V(30) when unset.
            type: float
          jump_hosts:
            description:
              - C(sftp) only. SSH servers crossed in this order to reach O(destination.storage.host), like
                OpenSSH's C(ProxyJump), without an ssh binary or ssh config file. Each connection runs inside a
                forwarded (C(direct-tcpip)) channel of the one before, so each jump host must allow TCP forwarding.
              - Each jump host's host key is checked like the server's, C(reject) by default.
              - One chain of connections serves a whole run.
            type: list
            elements: dict
            suboptions:
              host:
                description: Jump host name or address, as the previous jump host (or, for the first, this host) resolves it.
                type: str
                required: true
              port:
                description: SSH port; 22 when unset.
                type: int
              username:
                description: User name on the jump host; the user running the module when unset.
                type: str
              password:
                description: Password. Never logged.
                type: str
              private_key_file:
                description: Private key file. With neither this nor a password, ssh-agent and C(~/.ssh) keys are tried.
                type: path
              known_hosts_file:
                description: known_hosts file holding the jump host's key.
                type: path
              known_hosts:
                description: known_hosts lines holding the jump host's key, given as a value.
                type: str
              host_key_policy:
                description: Like O(destination.storage.host_key_policy), for this jump host; C(reject) when unset.
                type: str
                choices: [reject, accept_new]
              connect_timeout:
                description: Seconds each step of connecting to this jump host may wait; V(30) when unset.
                type: float
          require_private_directories:
            description:
              - C(sftp) and C(local). Refuse, with C(storage_error) before the run changes anything, a directory
                on the way to an output that another account can write (writable by its group or by all, or owned
                by another account), instead of naming it in a warning of the result.
              - C(sftp) acts by path, so such an account can swap a directory for a symbolic link between
                distributor's check and its request (see docs/untrusted-destinations.md); directories owned by another
                account than O(destination.storage.username) count.
              - C(local) judges directories only when the module runs as root on a host whose kernel lets other
                accounts plant links (C(fs.protected_hardlinks) or C(fs.protected_symlinks) set to 0); directories
                owned by another account than root count. Elsewhere nothing is judged or warned of.
              - V(false) when unset.
            type: bool
          bucket:
            description: S3 bucket.
            type: str
          prefix:
            description: S3 key prefix of the root.
            type: str
          region:
            description:
              - S3 region. When unset, the E(AWS_REGION) environment variable, then E(AWS_DEFAULT_REGION)
                and the AWS configuration files.
            type: str
            aliases: [aws_region]
          endpoint_url:
            description: URL of an S3-compatible service.
            type: str
            aliases: [aws_endpoint_url]
          profile:
            description: AWS profile; the standard AWS credential chain is used when no keys are given.
            type: str
            aliases: [aws_profile]
          access_key:
            description: AWS access key id.
            type: str
            aliases: [aws_access_key]
          secret_key:
            description: AWS secret access key. Never logged.
            type: str
            aliases: [aws_secret_key]
          session_token:
            description: AWS session token. Never logged.
            type: str
          file_mode:
            description:
              - Mode of every output (C(local), C(sftp)) as an octal string, for example V("0640"). Quote it in
                YAML, an unquoted V(0640) is an integer and is refused.
              - Set on the staged file before it is renamed into place, so an output never appears with another mode.
              - When unset, C(local) writes V("0644") and C(sftp) keeps the server's default.
              - A change of this setting alone rewrites the outputs.
            type: str
          directory_mode:
            description:
              - Mode of the directories distributor creates (C(local), C(sftp)), for example V("0750").
                Existing directories are left alone.
            type: str
          owner:
            description:
              - Owner of every output and of the directories distributor creates. C(local) takes a user name
                or a numeric id; C(sftp) a numeric id only. Changing owners usually needs root.
            type: str
          group:
            description: Group, like O(destination.storage.owner).
            type: str
          trusted_owners:
            description:
              - Other accounts that publish to this destination (C(local), C(sftp)), as user names or numeric ids.
              - distributor acts on a state record, release index or journal, and deletes, overwrites or moves a file,
                only when the publishing account, O(destination.storage.owner) or one of these owns it; a record
                owned by any other account fails the run with C(invalid_state) before anything is written.
              - Name here every account that shares a root with this one (shared roots, a migration from one
                publishing account to another). C(sftp) compares names with those the server gives the uids.
            type: list
            elements: str
          acl:
            description: Canned ACL of every S3 object, for example V(public-read) or V(bucket-owner-full-control).
            type: str
          cache_control:
            description:
              - C(Cache-Control) of the S3 objects. A string applies to every object; a list of
                C({match, value}) rules (glob over output paths) applies the first matching rule's value.
            type: raw
          storage_class:
            description: S3 storage class, for example V(STANDARD_IA).
            type: str
          server_side_encryption:
            description: S3 server-side encryption.
            type: str
            choices: [AES256, aws:kms]
          sse_kms_key_id:
            description: KMS key for O(destination.storage.server_side_encryption=aws:kms).
            type: str
          metadata:
            description: User metadata (C(x-amz-meta-*)) of every S3 object.
            type: dict
          content_types:
            description:
              - Content types by extension (V(.atom) or V(atom)) for S3 objects, on top of Python's C(mimetypes).
                Text types are sent with C(charset=utf-8).
            type: dict
          validate_certs:
            description: Verify the S3 endpoint's TLS certificate. V(true) when unset.
            type: bool
          ca_bundle:
            description: CA bundle file to verify the S3 endpoint with.
            type: path
      path:
        description:
          - Bundle path under the root. Placeholders C({pipeline_id}), C({destination_id}), C({source_id}),
            C({created:<strftime>}). Empty means the root itself.
        type: str
      state:
        description: C(mode) is C(single_owner) (default, schema 2 state) or C(shared_root) (schema 3).
        type: dict
        suboptions:
          mode:
            description: State mode.
            type: str
            choices: [single_owner, shared_root]
      reconciliation:
        description: C(mode) is C(replace) (default) or C(merge).
        type: dict
        suboptions:
          mode:
            description: Reconciliation mode.
            type: str
            choices: [replace, merge]
      transfer:
        description: What to do with a newer or conflicting recorded source, and how much one publish may delete.
        type: dict
        suboptions:
          on_destination_newer:
            description: C(skip) (default) or C(replace).
            type: str
            choices: [skip, replace]
          on_conflict:
            description: C(fail) (default) or C(replace).
            type: str
            choices: [fail, replace]
          max_deletes:
            description:
              - The most outputs one publish may delete (replacement, takeover, forced replacement, and the outputs of an
                interrupted publish that recovery deletes); C(256) when unset, C(-1) for no limit.
              - A plan over it fails with C(delete_limit) before anything is written, in check mode too.
              - C(distributor.core.distributor_prune) is not limited.
            type: int
          allow_empty:
            description: Let a bundle with no files delete outputs; without it such a publish fails with C(delete_limit).
            type: bool
      takeover:
        description: C(mode) C(managed) may take over outputs and state another owner manages; never unmanaged content.
        type: dict
        suboptions:
          mode:
            description: Takeover mode; C(none) when unset.
            type: str
            choices: [none, managed]
      links:
        description: URLs recorded for outputs.
        type: dict
        suboptions:
          base_url:
            description:
              - Absolute http(s) URL of the bundle path, without a query, fragment, backslash or C(.)/C(..) segment (output paths are joined to it);
                takes the same placeholders as I(path).
              - Every URL a result returns or invalidates is made from an output's path and this URL, never read from the state.
            type: str
          primary:
            description: Patterns choosing the primary output, tried in order; C([index.html, "*.html"]) when unset.
            type: list
            elements: str
          invalidation_limit:
            description:
              - The most paths the C(invalidation_paths) of a publish or prune result holds; above it paths collapse to C(<prefix>/*) wildcards,
                each counting as one path. C(1000) when unset, at least C(1).
            type: int
      retention:
        description: What C(distributor.core.distributor_prune) deletes.
        type: dict
        suboptions:
          max_age:
            description: Outputs whose C(updated_at) is older, like C(30d), C(12h), C(90m), C(45s), C(2w).
            type: str
          max_outputs:
            description: Keep the newest N outputs per owner.
            type: int
      lock:
        description: The lock of the bundle path.
        type: dict
        suboptions:
          expiry:
            description:
              - Seconds (1 to 86400, default 600) after which an SFTP or S3 lock whose holder
                stopped renewing it may be broken; a live holder renews it every third of this.
              - Local locks are released by the kernel when the holder dies; the expiry does not apply.
            type: float
      releases:
        description:
          - Release mode (C(local) and C(sftp); C(s3) fails with C(invalid_config)). The bundle path becomes a
            relative symbolic link to one complete generation kept in C(.distributor-releases/<name>/) beside it;
            a publish builds the next generation there (unchanged outputs as hard links), then switches the link
            in one rename. Needs a non-empty I(path).
          - Given, even empty (V({})), it turns release mode on. See C(docs/config.md) for the layout.
        type: dict
        version_added: 0.2.0
        suboptions:
          keep:
            description:
              - Good releases kept after a switch, the active one included (at least V(1), V(3) when unset).
                Failed and rolled-back releases are removed at once and never counted; the active release and
                the one a rollback returns to are never removed, whatever this says.
            type: int
          activate:
            description:
              - Switch the link to the release a publish builds. V(false) builds and verifies a C(staged)
                release to preview, switched to later with C(distributor.core.distributor_release).
                V(true) when unset.
            type: bool
          convert:
            description:
              - Let the first release-mode publish to a bundle path that is a plain directory holding a state record
                turn it into the first release (renamed into the release home, the link put in its place).
                Without it such a publish fails and says so. V(false) when unset.
            type: bool
          preview_url:
            description:
              - Where a release can be looked at before it is live, with C({release}) standing for its id, for
                example V(https://preview.example.com/{release}/) served from C(.distributor-releases/<name>/) by a
                web server only reviewers reach. A publish returns it filled in as RV(distributor.core.distributor_publish#module:release.preview_url).
            type: str
          shared:
            description:
              - Paths kept once in C(.distributor-releases/<name>/shared/) and linked into every release at their path by
                a relative symbolic link, for example V(.well-known/acme-challenge) or V(uploads). What a web server or another
                job writes there survives every release and rollback. Never an output, never read, carried or cleared by
                distributor; a bundle holding one (or anything under one) fails with C(invalid_config). A conversion moves what
                the plain directory holds there into the shared place. The web server must follow links below the document
                root (nginx C(disable_symlinks if_not_owner) or C(off)).
            type: list
            elements: str
            version_added: 0.2.0
          id:
            description:
              - The id of the release this publish builds, in the form C(YYYYMMDDTHHMMSSZ-) then 12 lowercase hex
                digits (for example V(20261206T053000Z-0123456789ab)); another form fails with C(invalid_config).
                One id named on every destination of a fleet makes one release across them.
              - It must sort after every release the destination holds, of any status, else the publish fails with
                C(conflict) naming both, before anything is written (check mode too). Naming the live release while the
                publish would change it fails with C(conflict) too.
              - Unset, the publish makes an id from the time and a random token.
            type: str
            version_added: 0.2.0
          build:
            description:
              - V(changed) (when unset) builds a release only when the plan changes something.
              - V(always) builds one even when nothing changed (every output a hard link to the live release's file,
                and its record), so that every destination of a fleet holds the same release id; nothing is built
                when the live release is already the one I(id) names.
            type: str
            choices: [changed, always]
            version_added: 0.2.0
"""

    MANAGED_ROOT = r"""
options:
  pipeline_id:
    description:
      - The pipeline whose managed outputs are checked; with I(destination.id) it selects the owner.
      - Single-owner state must record this pipeline and destination, else the module fails with C(conflict).
    type: str
    required: true
  lock_timeout:
    description:
      - Seconds to wait for a publisher of the same root before failing with C(locked).
      - Check mode takes no lock.
    type: float
    default: 60
"""

    # Review across jobs: the run must be the plan a check-mode run showed.
    PLAN_REVIEW = r"""
options:
  expect_plan_digest:
    description:
      - The RV(plan_digest) of the check-mode run a reviewer approved.
      - The run plans as usual; if its digest differs it fails with C(plan_changed) before it
        touches storage (nothing written or deleted, no interrupted attempt cleaned up) and says
        what the run would now do. Another owner publishing unrelated paths into a shared root
        in between does not change the digest.
      - A form C(sha256:<64 hex digits>); anything else is C(invalid_config).
    type: str
    version_added: 0.2.0
"""

    # Results that fit where results go (AWX job events), and the whole result where it belongs.
    RESULT = r"""
options:
  result_limit:
    description:
      - At most this many entries in each list of the result (C(changes), the lists of paths, the
        records in C(outputs) and C(state)), the first ones in the list's order; V(-1) returns every entry.
      - Every list keeps its count (for example C(changes_count)), and RV(truncated) names each list
        that was cut and how many entries it left out. A plan digest covers the whole plan whatever is returned.
      - The module's arguments that the result echoes as C(invocation) are cut the same way.
      - The C(--diff) listing shows, above this many outputs, the lines that change (the first
        this many by path) and counts the others; content diffs stop after this many entries.
      - The default keeps a result with C(--diff) near 250 KB at any number of files, under the
        700,000 characters AWX keeps as a job event (see docs/awx.md).
    type: int
    default: 100
    version_added: 0.2.0
  record_file:
    description:
      - Also write the whole result, every entry of every list, and the plan its C(plan_digest) is
        taken over (modules that plan), as JSON lines to this file on the host the module runs on;
        RV(record_sha256) is its digest.
      - Written under a temporary name in the same directory (created when missing), with mode C(0600), made durable
        and renamed over the path, so a reader sees a whole record. Check mode writes it too, as
        the record of the review; it changes nothing at the destination.
      - Its directories are made and opened one at a time without following links, so a path with a symbolic
        link in it fails with C(invalid_config) naming the link (give the path the link leads to).
        A directory on the way that another account can write (writable by its group or by all, sticky ones
        like C(/tmp) too, or owned by an account other than this one and root) is named in a warning, since
        that account can replace the record.
      - A directory that cannot be created or written fails with C(invalid_config) before anything is done.
        A run that fails writes no record; one that cannot write it after a real run fails with C(storage_error)
        and says that the run itself completed.
    type: path
    version_added: 0.2.0
"""

    # The options that fill a bundle path's placeholders when no bundle is at hand.
    SELECTOR = r"""
options:
  created:
    description:
      - RFC3339 time (like C(2026-06-04T11:55:00Z)) that fills C({created:<strftime>}) in I(destination.path),
        selecting the bundle path one publication used.
      - Without it I(destination.path) must not use C({created}).
    type: str
  source_id:
    description:
      - The source id that fills C({source_id}) in I(destination.path).
      - Without it I(destination.path) must not use C({source_id}).
    type: str
"""

    PIPELINE = r"""
options:
  pipeline:
    description: What to produce from a source bundle. See C(docs/config.md).
    type: dict
    required: true
    suboptions:
      id:
        description: Pipeline id; recorded as the owner's C(pipeline_id) in state.
        type: str
        required: true
      outputs:
        description:
          - Output rules; every matching rule produces one output. Copy every file when unset.
        type: list
        elements: dict
        suboptions:
          match:
            description: Glob over manifest paths; C(**) crosses directories.
            type: str
            required: true
          transform:
            description: C(copy) keeps the path; C(markdown_to_html) replaces the extension with C(.html).
            type: str
            default: copy
            choices: [copy, markdown_to_html]
      exclude:
        description: Globs over manifest paths; matching files produce no output.
        type: list
        elements: str
      markdown:
        description: Options of the C(markdown_to_html) transform.
        type: dict
        suboptions:
          allow_raw_html:
            description: Pass raw HTML in Markdown through instead of escaping it.
            type: bool
            default: false
          stylesheet:
            description:
              - URL of your own stylesheet (C(https://...), C(/css/site.css) or relative to the page), linked
                from every page instead of the built-in stylesheet, which is otherwise inlined.
            type: str
            version_added: 0.2.0
          template:
            description:
              - Absolute path of an HTML page template on the host that runs the module, used instead of the
                built-in page. Each C({title}), C({content}), C({stylesheet}) and C({lang}) in it is replaced (plain
                placeholders, not Jinja2); C({content}) is required, every other brace stays as written.
              - The file is read at every publish. A changed template changes the render key of every page, so the
                next publish renders every page again, an unchanged bundle included (see the configuration reference).
            type: path
            version_added: 0.2.0
          lang:
            description:
              - The language of the pages, a BCP 47 tag such as C(en), C(de) or C(pt-BR), written as
                C(<html lang="...">) by the built-in page and in place of C({lang}) in a template.
              - Part of the render key like the other page options, so a change renders every page again.
            type: str
            default: en
            version_added: 0.2.0
      destinations:
        description: Destination ids, used by the C(distributor) role; ignored by the modules.
        type: list
        elements: str
"""
