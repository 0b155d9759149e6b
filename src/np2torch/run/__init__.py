"""``np2torch run``: a program run with the rewrite ``np2torch fix`` would make, applied in memory.

:mod:`.instrument` compiles a module's ``ast`` with its call sites (no line or
column moves), :mod:`.hook` does it as the program imports its modules,
:mod:`.program` runs the script or module as ``python`` would, :mod:`.children`
follows the program into its child processes, :mod:`.report` turns the sites'
counts (:mod:`np2torch.runtime.sites`) into what each site saved, and
:mod:`.ipython` is the same for IPython and Jupyter (``%load_ext np2torch``).
This layer stands on the linter core, the runtime and the command line's
configuration; nothing below it imports it.
"""
