"""``np2torch server``: the command that starts the language server; pygls is imported only here, when it runs."""

from __future__ import annotations

import click

EXTRA_HINT = "pip install 'np2torch[server]'"


class MissingExtra(click.ClickException):
    exit_code = 2


@click.command(name="server", short_help="Run the language server (LSP over stdio) for editors.")
@click.option("--unsafe-fixes", is_flag=True,
              help="Also offer the fixes that can change results (e.g. NPT901) as code actions.")
def command(unsafe_fixes: bool) -> int:
    """Run np2torch's language server on stdin and stdout: diagnostics, quick fixes, fix-all and hover
    for Python files and notebooks (docs/editors.md)."""
    try:
        from np2torch.server import lsp
    except ImportError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing in ("pygls", "lsprotocol", "cattrs", "attrs"):
            raise MissingExtra(f"`np2torch server` needs pygls, which is not installed: {EXTRA_HINT}") from None
        raise
    return lsp.serve(unsafe_fixes=unsafe_fixes)
