"""The linter and codemod core: text in, text out, no file I/O, no NumPy, no torch.

:mod:`.rules` derives one rule per row of the function table
(:mod:`np2torch.runtime.table`) plus the pattern rules; :mod:`.resolve` resolves
qualified names; :mod:`.engine` classifies what it finds (``check_source``,
``fix_source``, ``fix_and_check``); :mod:`.rewrite` applies fixes with LibCST; :mod:`.compiled`,
:mod:`.suppress` and :mod:`.syntax` say what may not be fixed and why;
:mod:`.notebook` runs the same engine cell by cell; :mod:`.pages` renders the
rule pages.  The command line (:mod:`np2torch.cli`) and the editor
integrations are built on this package, never the other way round.
"""
