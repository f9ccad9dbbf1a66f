# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cProfile one publish phase, to see where distributor's time goes.

    python benchmarks/profile_publish.py --backend local --bundle small --phase replace [--count 2000]
                                         [--sort cumulative|tottime] [--top 30] [--output FILE.prof]

It prepares the root exactly as run.py does (first publish, then a 10% change for `replace`),
profiles only the requested phase and prints the top functions. cProfile sees the calling thread
only: S3 uploads run in worker threads, so for S3 it shows the planning around them, not them.
Save with --output and open with `python -m pstats FILE.prof` (or snakeviz) to dig further.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time

from bundles import BundleSpec, change, generate
from harness import Backends, destination, pipeline, publish

SIZES = {"small": 4 * 1024, "large": 64 * 1024 * 1024, "markdown": 0}
COUNTS = {"small": 2000, "large": 4, "markdown": 500}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--backend", choices=("local", "sftp", "s3"), default="local")
    parser.add_argument("--bundle", choices=tuple(SIZES), default="small")
    parser.add_argument("--count", type=int, help="number of files (default: as in the full run)")
    parser.add_argument("--phase", choices=("first", "republish", "replace"), default="first")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key (cumulative, tottime, ncalls)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--output", help="also save the raw profile here")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)

    spec = BundleSpec(args.bundle, args.bundle, args.count or COUNTS[args.bundle], SIZES[args.bundle])
    workdir = tempfile.mkdtemp(prefix="distributor-profile-")
    servers = Backends(workdir)
    import boto3  # noqa: F401  (imported up front, as in run.py: not part of the profile)
    import paramiko  # noqa: F401
    try:
        servers.start([args.backend])
        source = generate(os.path.join(workdir, "bundle"), spec, args.seed)
        target = destination(args.backend, servers.fresh_root(args.backend, "profile")["storage"])
        rules = pipeline(spec.markdown)
        if args.phase != "first":
            publish(source, rules, target)
        if args.phase == "replace":
            change(source, spec, args.seed)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        result = profiler.runcall(publish, source, rules, target)
        elapsed = time.perf_counter() - started
    finally:
        servers.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print("%s %s (%s) %s: action %s, %d written, %.3fs under the profiler" % (
        args.backend, spec.name, spec.describe(), args.phase, result["action"], len(result["written"]), elapsed))
    if args.output:
        profiler.dump_stats(args.output)
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
