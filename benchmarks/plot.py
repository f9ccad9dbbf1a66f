# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draw time against files from a scale.py result: one line per tool and phase, log-log.

    .build/bench-tools/bin/python benchmarks/plot.py [RESULT.json] [--output PNG]

Without RESULT, the newest benchmarks/results/*-scale.json. Runs in the bench environment,
where benchmarks/requirements.txt installs matplotlib (the test environment has none).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
STYLES = {"distributor": "C0", "distributor module": "C2", "rsync -a": "C3"}
MARKS = {"first": "o-", "skip": "s--", "replace": "^:"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("result", nargs="?")
    parser.add_argument("--output")
    args = parser.parse_args(argv)
    path = args.result or max(glob.glob(os.path.join(RESULTS, "*-scale.json")))
    with open(path) as handle:
        data = json.load(handle)
    figure, axes = plt.subplots(figsize=(8, 5.5))
    for tool, colour in STYLES.items():
        for phase, mark in MARKS.items():
            points = sorted((r["files"], r["wall"]) for r in data["rows"] if (r["tool"], r["phase"]) == (tool, phase))
            if points:
                axes.plot(*zip(*points), mark, color=colour, label="%s, %s" % (tool, phase))
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("files (4 KiB each)")
    axes.set_ylabel("wall seconds")
    axes.set_title("local destination: distributor vs rsync -a (%s, %s cores)" % (data["meta"]["revision"], data["meta"]["cpus"]))
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    output = args.output or path[: -len(".json")] + ".png"
    figure.tight_layout()
    figure.savefig(output, dpi=110)
    print("wrote %s" % output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
