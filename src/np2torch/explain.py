"""Rule documentation, generated from the rule table: `np2torch explain CODE` and docs/rules.md.

Every page has ruff's sections (What it does / Why is this bad? / Example /
Use instead / Fix safety / Known problems), filled from the row's fields
(:class:`np2torch.rules.Rule`), so adding a row documents it.

Regenerate the docs with ``python -m np2torch.explain --write-docs`` (from the
repository root); ``--check`` exits 1 when docs/rules.md is stale.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import click

from np2torch.output import rules_table
from np2torch.rules import CODE_RANGES, LEGACY_CODES, RULES, RULES_BY_CODE, Rule

DOCS_PATH = Path("docs") / "rules.md"


def _code_block(text: str) -> str:
    return f"```python\n{text.rstrip(chr(10))}\n```"


def page(rule: Rule, heading: str = "#") -> str:
    """The rule's page in Markdown; ``heading`` is the level of its title."""
    sub = heading + "#"
    fix_line = f"Fix is always available ({rule.fix_safety})." if rule.fix_safety == "safe" else (
        "Fix is available with `--unsafe-fixes`."
    )
    sections = [
        f"{heading} {rule.code}: {rule.name}",
        f"Derived from `{rule.qualname}` ({rule.category}). {fix_line}",
        f"{sub} What it does\n\nFinds: {rule.summary}. The fix replaces it with "
        f"`np2torch.runtime.{rule.helper}`.",
        f"{sub} Why is this bad?\n\n{rule.why}",
        f"{sub} Example\n\n{_code_block(rule.example_code)}",
        f"{sub} Use instead\n\n{_code_block(rule.use_instead_code)}",
        f"{sub} Fix safety\n\n{rule.fix_safety_text}",
        f"{sub} Known problems\n\n{rule.known_problems or 'None known.'}",
    ]
    return "\n\n".join(sections) + "\n"


def rules_document(rules: Sequence[Rule] = RULES) -> str:
    """The whole of docs/rules.md."""
    ranges = "\n".join(f"- `NPT{digit}xx`: {category}" for digit, category in sorted(CODE_RANGES.items()))
    legacy = ", ".join(sorted(LEGACY_CODES))
    parts = [
        "# Rules\n\n"
        "<!-- Generated from src/np2torch/rules.py by `python -m np2torch.explain --write-docs`; "
        "do not edit by hand (tests/test_rules_docs.py fails when it is stale). -->",
        "Each rule finds calls of (or references to) one NumPy/SciPy function that "
        "`np2torch.runtime` serves as an exact drop-in, or a pattern of calls. "
        "`np2torch explain CODE` prints a rule's page; `np2torch rules` lists them.",
        f"## Code ranges\n\n{ranges}\n\n{legacy} predate the ranges and keep their codes.",
        "## Overview\n\n" + "\n".join(rules_table(rules, "markdown")),
    ]
    for rule in rules:
        parts.append(f'<a id="{rule.code.lower()}"></a>\n\n' + page(rule, heading="##").rstrip("\n"))
    return "\n\n".join(parts) + "\n"


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
