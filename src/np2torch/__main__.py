"""``python -m np2torch``: the same command line as the ``np2torch`` script."""

from np2torch.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
