"""``np2torch check --watch``: checked again after a change, as ``ruff check --watch``; nothing runs while
nothing changes (no test waits on the clock: the pause between looks is handed in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from np2torch.cli import main, watch


def test_a_change_runs_the_check_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text("import numpy as np\ny = np.exp(x)\n")
    monkeypatch.chdir(tmp_path)
    looks = []

    def pause(_seconds: float) -> None:  # between looks: the first edits a file, the others change nothing
        looks.append(None)
        if len(looks) == 1:
            (tmp_path / "a.py").write_text("import numpy as np\ny = np.log(x)\nz = np.exp(x)\n")

    runs = []

    def run() -> int:
        runs.append(None)
        return main(["check", "--no-cache", "."])

    assert watch.watch(run, ["."], sleep=pause, running=lambda: len(looks) < 3) == 0
    out = capsys.readouterr().out
    assert len(runs) == 2
    assert out.startswith("Starting linter in watch mode...\n")
    first, second = out.split("File change detected...\n")
    assert "a.py:2:5: NPT001" in first and "NPT002" not in first
    assert "a.py:2:5: NPT002" in second and "a.py:3:5: NPT001" in second


def test_caches_and_virtual_environments_are_not_watched(tmp_path: Path) -> None:
    for name in (".venv/lib/x.py", ".np2torch_cache/a.py", "pkg/a.py", "pkg/notes.txt", "pyproject.toml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    seen = {Path(path).relative_to(tmp_path).as_posix() for path in watch.snapshot([str(tmp_path)])}
    assert seen == {"pkg/a.py", "pyproject.toml"}


def test_watch_refuses_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--watch", "-"]) == 2
    assert "--watch checks files, not stdin" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["-q", "-s"])
def test_quiet_and_silent_leave_out_ruffs_two_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], flag: str) -> None:
    # `ruff check --watch -q` prints neither `Starting linter in watch mode...` nor `File change detected...`
    (tmp_path / "a.py").write_text("import numpy as np\ny = np.exp(x)\n")
    monkeypatch.chdir(tmp_path)
    looks = []

    def pause(_seconds: float) -> None:
        looks.append(None)
        (tmp_path / "a.py").write_text(f"import numpy as np\ny = np.exp(x)\n# {len(looks)}\n")

    assert watch.watch(lambda: main(["check", "--no-cache", flag, "."]), ["."], sleep=pause,
                       running=lambda: len(looks) < 2, quiet=True) == 0
    out = capsys.readouterr().out
    assert "watch mode" not in out and "File change" not in out
    assert out.count("a.py:2:5: NPT001") == (3 if flag == "-q" else 0)
