"""docs/rules.md, generated from the rule table (the pages ``np2torch explain`` prints).

``python -m np2torch.tools.docs --write`` rewrites it (from the repository root);
``--check`` exits 1 when the file on disk is stale (tests/lint/test_rules_docs.py runs it).
"""

from __future__ import annotations

import sys
from typing import Sequence

from np2torch.lint.pages import DOCS_PATH, rules_document

COMMAND = "python -m np2torch.tools.docs --write"


def main(argv: Sequence[str] | None = None) -> int:
    """``--write`` rewrites docs/rules.md; ``--check`` exits 1 when it differs from the table."""
    args = list(sys.argv[1:] if argv is None else argv)
    wanted = rules_document()
    if args == ["--write"]:
        DOCS_PATH.parent.mkdir(parents=True, exist_ok=True)
        DOCS_PATH.write_bytes(wanted.encode("utf-8"))
        return 0
    if args == ["--check"]:
        current = DOCS_PATH.read_bytes().decode("utf-8") if DOCS_PATH.exists() else None
        if current != wanted:
            print(f"{DOCS_PATH} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    print("usage: python -m np2torch.tools.docs --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
