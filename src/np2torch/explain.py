"""Rule documentation, generated from the rule table: `np2torch explain CODE` and docs/rules.md.

Every page has ruff's sections (What it does / Why is this bad? / Example /
Use instead / Fix safety / Known problems), filled from the row's fields
(:class:`np2torch.rules.Rule`), so adding a row documents it.

Regenerate the docs with ``python -m np2torch.explain --write-docs`` (from the
repository root); ``--check`` exits 1 when docs/rules.md is stale.
"""

from __future__ import annotations

import sys
from typing import Sequence

import click

from np2torch.pages import DOCS_PATH, page, rules_document
from np2torch.rules import RULES_BY_CODE

__all__ = ["DOCS_PATH", "command", "main", "page", "rules_document"]


@click.command(name="explain", short_help="Explain a rule, e.g. `np2torch explain NPT001`.")
@click.argument("code")
@click.pass_context
def command(ctx: click.Context, code: str) -> None:
    """Print the documentation page of rule CODE (e.g. NPT001)."""
    rule = RULES_BY_CODE.get(code.strip().upper())
    if rule is None:
        click.echo(f"error: unknown rule code {code!r} (`np2torch rules` lists them)", err=True)
        ctx.exit(2)
    click.echo(page(rule), nl=False)


def main(argv: Sequence[str] | None = None) -> int:
    """``--write-docs`` rewrites docs/rules.md; ``--check`` exits 1 when it differs from the table."""
    args = list(sys.argv[1:] if argv is None else argv)
    wanted = rules_document()
    if args == ["--write-docs"]:
        DOCS_PATH.parent.mkdir(parents=True, exist_ok=True)
        DOCS_PATH.write_bytes(wanted.encode("utf-8"))
        return 0
    if args == ["--check"]:
        current = DOCS_PATH.read_bytes().decode("utf-8") if DOCS_PATH.exists() else None
        if current != wanted:
            print(f"{DOCS_PATH} is stale: run `python -m np2torch.explain --write-docs`", file=sys.stderr)
            return 1
        return 0
    print("usage: python -m np2torch.explain --write-docs | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
