"""Time the replay of LINC's released generations: logicpipe (`reproduce --paper linc`) against LINC's own
evaluation code (its eval/tasks/utils.py through NLTK's Prover9 interface) on the same generations, and
count how often LINC's code gives LINC's published per-sample verdict.

Nothing of LINC's is part of logicpipe. This script needs, at run time:
- LINC's utils.py: --linc-utils PATH (from a checkout of github.com/benlipkin/linc at 718dfe8,
  `git show 718dfe8:eval/tasks/utils.py > utils.py`);
- a Python with nltk for it: --nltk-python PATH (e.g. `python -m venv /tmp/nltk && /tmp/nltk/bin/pip
  install nltk`; never this project's environment);
- a Prover9 binary in a folder only you can write (NLTK refuses others): --prover9-dir DIR;
- LINC's files in $LOGICPIPE_LINC (e.g. ../shared/linc).

    python scripts/benchmark_linc.py --linc-utils utils.py --nltk-python /tmp/nltk/bin/python \
        --prover9-dir ~/p9 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run by --nltk-python: LINC's postprocess_generation (neurosymbolic mode) over every sample of a file.
_LINC_SIDE = r"""
import json, sys, time, importlib.util
spec = importlib.util.spec_from_file_location("linc_utils", sys.argv[1])
utils = importlib.util.module_from_spec(spec); spec.loader.exec_module(utils)
raw = json.load(open(sys.argv[2]))
def verdict(gen):
    try:
        parses = [l.replace("FOL:", "").strip() for l in gen.split("</EVALUATE>")[0].strip().split("\n") if "FOL:" in l]
        r = utils.evaluate(parses[:-1], parses[-1])
        assert r in ("True", "False", "Uncertain")
        return r
    except Exception:
        return "Error"
start = time.monotonic()
out = [[verdict(g) for g in samples] for samples in raw]
print(json.dumps({"seconds": time.monotonic() - start, "verdicts": out}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--linc-utils", type=Path, required=True)
    parser.add_argument("--nltk-python", required=True)
    parser.add_argument("--prover9-dir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from logicpipe.data.linc import linc_root, releases
    from logicpipe.report.linc import replay

    env = {**os.environ, "PROVER9": str(args.prover9_dir.expanduser())}
    print(f"{'file':45} {'samples':>7} {'LINC code s':>11} {'logicpipe s':>11} {'speed-up':>8} "
          f"{'LINC code = published':>22}")
    for release in releases(linc_root()):
        done = subprocess.run([args.nltk_python, "-c", _LINC_SIDE, str(args.linc_utils), str(release.raw)],
                              capture_output=True, text=True, env=env, check=True)
        theirs = json.loads(done.stdout.splitlines()[-1])
        _check_ran(theirs["verdicts"], release.stem)
        published = release.verdicts()
        pairs = [(a, b) for x, y in zip(theirs["verdicts"], published) for a, b in zip(x, y)]
        with tempfile.TemporaryDirectory() as folder:
            start = time.monotonic()
            replay(release, Path(folder), workers=args.workers, overwrite=True)
            ours = time.monotonic() - start
        print(f"{release.stem:45} {len(pairs):7} {theirs['seconds']:11.1f} {ours:11.1f} "
              f"{theirs['seconds'] / ours:7.1f}x {sum(a == b for a, b in pairs):>14}/{len(pairs)}")
    print(f"(LINC's code runs one sample after another, as LINC does; logicpipe on {args.workers} solver workers; "
          "logicpipe's time includes writing the run folder)", file=sys.stderr)


def _check_ran(verdicts: list[list[str]], stem: str) -> None:
    """LINC's code turns any exception into Error, so NLTK refusing to run Prover9 (a binary on an
    untrusted path, such as under /tmp) reads as a fast run of errors: stop rather than time that."""
    every = [v for samples in verdicts for v in samples]
    if every and sum(v == "Error" for v in every) > len(every) // 2:
        sys.exit(f"{stem}: LINC's code gave Error on most samples: check that NLTK runs Prover9 from "
                 "--prover9-dir (a folder only you can write, none of its parents world-writable)")


if __name__ == "__main__":
    main()
