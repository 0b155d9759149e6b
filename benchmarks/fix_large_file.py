"""Time `fix_source` on a generated 50,000-line module with a single finding.

    .venv/bin/python benchmarks/fix_large_file.py [LINES]

Before np2torch parsed only the top-level statements that hold a fix, LibCST
transformed the whole module: ~66 s for this file. The result is checked too:
exactly one call rewritten and one import line added.
"""

from __future__ import annotations

import sys
import time

from np2torch import fix_source


def large_module(lines: int) -> str:
    """A module of ``lines`` lines of plain functions, ``import numpy as np``, and one ``np.exp`` call at the end."""
    parts = ['"""A large module."""\nimport numpy as np\n']
    count = 2
    i = 0
    while count < lines:
        parts.append(f"\n\ndef f{i}(x, y=1):\n    z = x + y * {i}\n    if z > 3:\n        return [z, x, y]\n    return {{'a': z}}\n")
        count += 7
        i += 1
    parts.append("\n\ndef hot(x):\n    return np.exp(x)\n")
    return "".join(parts)


def main(argv: list[str]) -> int:
    lines = int(argv[0]) if argv else 50_000
    text = large_module(lines)
    fix_source("import numpy as np\ny = np.exp(x)\n")  # load LibCST first: its import is not the fix's cost
    start = time.perf_counter()
    fixed = fix_source(text)
    seconds = time.perf_counter() - start
    expected = text.replace("import numpy as np\n", "import numpy as np\nimport np2torch.runtime as np2t\n", 1)
    expected = expected.replace("return np.exp(x)", "return np2t.exp(x)")
    assert fixed == expected, "the fix changed more than the one call and the import"
    print(f"fix_source: {text.count(chr(10)):,} lines, 1 finding: {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
