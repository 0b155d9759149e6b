"""`check --add-noqa`: today's findings accepted as a baseline, through the real CLI. Twice is once, and
`check` passes after it; every other byte of a file (and of a notebook) stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from np2torch.cli import main

SOURCE = (
    "# -*- coding: latin-1 -*-\r\n"
    "import numpy as np\r\n"
    "\r\n"
    "y = np.exp(x) + np.log(x)  # noqa: E501\r\n"
    "z = np.log(x)  # caf\xe9\r\n"
    "w = np.exp(x) if x else \\\r\n"
    "    np.log(x)\r\n"
)
NOTEBOOK = json.dumps({
    "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["import numpy as np\n", "%matplotlib inline\n"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["np.exp(x)\n"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["y = np.exp(x)  # \u00e9\n", "z = 1"]},
    ],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
}, indent=1)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_add_noqa_twice_is_once_and_check_then_passes(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("a.py")
    path.write_bytes(SOURCE.encode("latin-1"))
    code, out, err = run(capsys, "check", "--add-noqa", "a.py")
    assert (code, out) == (0, "")
    warning = ("a.py:6:5: warning: no noqa comment can go on this line (it ends inside a string or a line "
               "continuation): NPT001\n")
    assert err == warning + "Added 3 noqa directives.\n"
    once = path.read_bytes()
    assert once == (
        "# -*- coding: latin-1 -*-\r\n"
        "import numpy as np\r\n"
        "\r\n"
        "y = np.exp(x) + np.log(x)  # noqa: E501, NPT001, NPT002\r\n"
        "z = np.log(x)  # caf\xe9  # noqa: NPT002\r\n"
        "w = np.exp(x) if x else \\\r\n"  # no comment can follow a backslash: the finding stays
        "    np.log(x)  # noqa: NPT002\r\n"
    ).encode("latin-1")
    assert run(capsys, "check", "--add-noqa", "a.py") == (0, "", warning)  # none added: ruff's says nothing
    assert path.read_bytes() == once
    code, out, _ = run(capsys, "check", "--no-cache", "a.py")
    assert code == 1 and out.startswith("a.py:6:5: NPT001 ") and "Found 1 error" in out


def test_add_noqa_in_a_notebook_keeps_every_other_byte(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("nb.ipynb")
    path.write_text(NOTEBOOK)
    assert run(capsys, "check", "--add-noqa", "nb.ipynb")[0] == 0
    once = path.read_text()
    assert once == NOTEBOOK.replace('"y = np.exp(x)  # \\u00e9\\n"', '"y = np.exp(x)  # \\u00e9  # noqa: NPT001\\n"')
    assert run(capsys, "check", "--add-noqa", "nb.ipynb")[0] == 0 and path.read_text() == once
    assert run(capsys, "check", "--no-cache", "nb.ipynb")[0] == 0


def test_add_noqa_honours_the_selection_and_merges_later_codes(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("a.py")
    path.write_text("import numpy as np\n\ny = np.exp(x) + np.log(x)\n")
    assert run(capsys, "check", "--add-noqa", "--select", "NPT002", "a.py")[0] == 0
    assert path.read_text().endswith("y = np.exp(x) + np.log(x)  # noqa: NPT002\n")
    assert run(capsys, "check", "--add-noqa", "a.py")[0] == 0
    assert path.read_text().endswith("y = np.exp(x) + np.log(x)  # noqa: NPT002, NPT001\n")


def test_a_file_that_does_not_parse_is_left_as_ruffs_add_noqa_leaves_it(capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.py").write_text("import numpy as np\nnp.exp(\n")
    code, out, err = run(capsys, "check", "--add-noqa", "bad.py")
    assert (code, out, err) == (0, "", "")  # ruff's exits 0 and says nothing either
    assert Path("bad.py").read_text() == "import numpy as np\nnp.exp(\n"


def test_add_noqa_names_a_file_that_is_not_utf8_as_ruffs(capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.py").write_bytes(b"import numpy as np\nx = '\xff'\n")
    code, _, err = run(capsys, "check", "--add-noqa", "bad.py")
    assert code == 0  # ruff's add-noqa reads the file apart from its check, and logs why it could not
    assert err.splitlines()[0] == (f"error: Failed to extract source from {Path('bad.py').resolve()}: "
                                   "stream did not contain valid UTF-8")
    assert run(capsys, "check", "--add-noqa", "-q", "bad.py") == (0, "", "")


def test_npt801_reports_the_codes_a_baseline_left_behind(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("a.py")
    path.write_text("import numpy as np\n\ny = np.exp(x) + np.log(x)\n")
    assert run(capsys, "check", "--add-noqa", "a.py")[0] == 0
    assert run(capsys, "check", "--no-cache", "--extend-select", "NPT801", "a.py")[0] == 0  # every code used
    # the exp call goes (here by hand); its code stays in the comment, silencing the next one written there
    path.write_text(path.read_text().replace("np.exp(x) + ", ""))
    Path("b.py").write_text("import math\nz = math.exp(1)  # noqa: NPT001, E501\n")  # no NumPy at all: still judged
    code, out, _ = run(capsys, "check", "--no-cache", "--extend-select", "NPT801", ".")
    assert code == 1
    assert out.splitlines()[:2] == [
        "a.py:3:24: NPT801 Unused `noqa` code: no finding of it on this line [*]",
        "b.py:2:26: NPT801 Unused `noqa` code: no finding of it on this line [*]",
    ]
    assert run(capsys, "check", "--no-cache", ".")[0] == 0  # opt-in: off without a selector naming it
    # the fix removes what is left behind, and nothing a finding still uses
    assert run(capsys, "fix", "--no-cache", "--extend-select", "NPT801", ".")[0] == 0
    assert path.read_text().endswith("y = np.log(x)  # noqa: NPT002\n")
    assert Path("b.py").read_text() == "import math\nz = math.exp(1)  # noqa: E501\n"
    assert run(capsys, "check", "--no-cache", "--extend-select", "NPT801", ".")[0] == 0


def test_add_noqa_never_silences_npt801(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("a.py")
    path.write_text("import math\n\ny = math.exp(x)  # noqa: NPT001\n")
    assert run(capsys, "check", "--add-noqa", "--extend-select", "NPT801", "a.py")[0] == 0
    assert path.read_text() == "import math\n\ny = math.exp(x)  # noqa: NPT001\n"
