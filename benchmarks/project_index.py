"""What does the project index (np2torch.cli.index) cost, in CPU seconds, cold and warm?

Give it project folders, for example an installed package tree and this repository:

    SP=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    .venv/bin/python benchmarks/project_index.py $SP/numba $SP/scipy .

For each folder: the files indexed, those parsed, and this process's CPU seconds
(``time.process_time``) to build the index cold (an empty cache folder), warm (the
cache filled, nothing changed) and without a cache; each the median of --repeat
runs.  A check of a file that may have a finding pays one of these per project,
once per run.  Timings on a busy machine are noise.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from np2torch.cli.index import ProjectIndex, project_files


def _build(folder: str, cache: Path | None) -> tuple[float, int]:
    index = ProjectIndex(cache, fingerprint="benchmark", roots=(folder,))
    start = time.process_time()
    index.answer(folder)
    return time.process_time() - start, index.parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'folder':<40} {'files':>6} {'parsed':>6} {'cold s':>8} {'warm s':>8} {'no cache s':>10}")
    for folder in args.folders:
        cold, warm, bare = [], [], []
        parsed = 0
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as cache:
                seconds, parsed = _build(folder, Path(cache))
                cold.append(seconds)
                warm.append(_build(folder, Path(cache))[0])
            bare.append(_build(folder, None)[0])
        print(f"{folder[-40:]:<40} {len(project_files(folder)):>6} {parsed:>6} {statistics.median(cold):>8.3f} "
              f"{statistics.median(warm):>8.3f} {statistics.median(bare):>10.3f}")


if __name__ == "__main__":
    main()
