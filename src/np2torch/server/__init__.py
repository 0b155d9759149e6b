"""``np2torch server``: the linter in an editor, as a Language Server (LSP over stdio, on pygls).

:mod:`.command` is the command (it needs only click; pygls is the optional extra
``np2torch[server]``), :mod:`.lsp` the server, :mod:`.edits` the text edits a
fix becomes.  It lints with :mod:`np2torch.lint` and takes each file's settings
as the command line does (:func:`np2torch.cli.config.settings_for_file`); nothing
else in np2torch imports it or pygls (tests/test_architecture.py).
"""
