"""The package index's page: README.md with its links made absolute (pyproject.toml names ``readme`` dynamic).

README.md links the docs relatively, so that they work in a clone and on the repository host; the package
index renders the description on its own page, where a relative link points nowhere.  Everything else about
the build is in pyproject.toml.
"""

import re
from pathlib import Path

from setuptools import setup

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
)
