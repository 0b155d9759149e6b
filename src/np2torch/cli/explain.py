"""``np2torch explain CODE``: one rule's page (What it does / Why is this bad? / Example / Use instead /
Fix safety / Known problems), rendered from the rule table by :mod:`np2torch.lint.pages`."""

from __future__ import annotations

import click

from np2torch.lint.pages import page
from np2torch.lint.rules import RULES_BY_CODE


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
