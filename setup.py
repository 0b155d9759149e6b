"""What pyproject.toml cannot say: the package index's page and the optional C front.

README.md links the docs relatively, so that they work in a clone and on the repository host; the package
index renders the description on its own page, where a relative link points nowhere: pyproject.toml names
``readme`` dynamic and it is made here, with its links made absolute.

``np2torch.runtime._front`` (src/np2torch/runtime/_front.c) passes the helpers' small calls to the original
from C.  It is optional: where it does not build (no compiler, a free-threaded interpreter) the install
goes on and the helpers are their Python functions, with the same results.  Everything else about the
build is in pyproject.toml.
"""

import re
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent


def absolute_links(markdown: str, base: str) -> str:
    """``markdown`` with each relative link target ``](docs/x.md)`` as ``](<base>/blob/main/docs/x.md)``."""
    return re.sub(r"\]\((?![a-zA-Z][a-zA-Z0-9+.-]*:|#)([^)\s]+)\)", lambda m: f"]({base}/blob/main/{m.group(1)})", markdown)


def repository() -> str:
    """``[project.urls] Repository`` of pyproject.toml (read as text: tomllib is 3.11's)."""
    found = re.search(r'^Repository\s*=\s*"([^"]+)"', (HERE / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    if found is None:
        raise SystemExit("pyproject.toml: [project.urls] has no Repository")
    return found.group(1).rstrip("/")


setup(
    long_description=absolute_links((HERE / "README.md").read_text(encoding="utf-8"), repository()),
    long_description_content_type="text/markdown",
    ext_modules=[Extension("np2torch.runtime._front", ["src/np2torch/runtime/_front.c"], optional=True)],
)
