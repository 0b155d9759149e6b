"""``python -m np2torch``: the same command line as the ``np2torch`` script."""

import os
import sys

if __name__ == "__main__" and sys.path and not sys.flags.safe_path:
    # `python -m` puts the working directory first on sys.path, where a program's own `random.py` or
    # `logging.py` would shadow the standard library np2torch imports: np2torch's own folder instead, as
    # the console script has its bin folder (`np2torch run` puts the program's folder in its place).
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from np2torch.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
