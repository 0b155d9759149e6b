"""np2torch run's start-up hook for child interpreters (this folder is first on PYTHONPATH while a program runs
under ``np2torch run``): install the run's import hook, then import the ``sitecustomize`` the interpreter would
have imported without this folder.  Written for any Python 3 and never failing for np2torch's sake: an
interpreter without np2torch simply runs unchanged."""

import importlib
import os
import sys


def _np2torch_start() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    try:
        from np2torch.run.children import activate_from_environment
    except ImportError:
        pass
    else:
        activate_from_environment()
    # The sitecustomize this folder stood in front of, under the same name: the import system then
    # finds it, not this module, in sys.modules when this import completes.
    mine = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ImportError as exc:
        if getattr(exc, "name", None) != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine


_np2torch_start()
