"""docs/editors.md's Neovim snippets, run as written in a real Neovim: headless, on a file with three findings.

The snippets are read from the page itself, so what it shows is what is tried.
Neovim is whichever ``nvim`` is on ``PATH``, and any others named in
``NP2TORCH_NVIM`` (commands separated by ``:``, e.g. wrappers around Neovims
unpacked from Debian's newer releases); a snippet for a newer Neovim than the one
at hand is skipped, and so is the nvim-lspconfig one unless ``NP2TORCH_LSPCONFIG``
names a checkout of the plugin.  Skipped where there is no Neovim at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from np2torch.cli import main

pytestmark = pytest.mark.timeout(300)

PAGE = Path(__file__).parents[2] / "docs" / "editors.md"
SOURCE = ("import numpy as np\nfrom scipy.special import erf\n\ndef f(x):\n"
          "    y = (np.exp(x), '\U0001d535')\n    return np.log(y[0]) + erf(x)\n")
TRIAL = """
local function codes()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    table.insert(out, string.format("%d:%s", d.lnum + 1, tostring(code)))
  end
  table.sort(out)
  return table.concat(out, " ")
end
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
io.stdout:write("DIAGNOSTICS " .. codes() .. "\\n")
local before = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n")
vim.cmd("normal \\\\nf")
vim.wait(60000, function() return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n") ~= before end, 50)
vim.cmd("write")
vim.cmd("qa!")
"""


def snippets() -> dict[str, str]:
    """Each ``### `` section of the page's Neovim part: its first ``lua`` block."""
    part = PAGE.read_text().split("\n## Neovim\n", 1)[1].split("\n## ", 1)[0]
    found = {}
    for section in part.split("\n### ")[1:]:
        title, _, body = section.partition("\n")
        block = re.search(r"```lua\n(.*?)```", body, re.S)
        if block:
            found[title] = block.group(1)
    return found


def neovims() -> list[tuple[str, tuple[int, int]]]:
    commands = [c for c in os.environ.get("NP2TORCH_NVIM", "").split(":") if c]
    if shutil.which("nvim"):
        commands.insert(0, "nvim")
    found = []
    for command in commands:
        version = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=60).stdout
        match = re.match(r"NVIM v(\d+)\.(\d+)", version)
        if match:
            found.append((command, (int(match.group(1)), int(match.group(2)))))
    return found


NEEDS = {"Neovim 0.11 and later": (0, 11), "Neovim 0.10": (0, 10), "Neovim 0.7 to 0.9": (0, 7),
         "With nvim-lspconfig": (0, 10)}


def test_the_page_has_a_snippet_for_each_neovim() -> None:
    assert list(snippets()) == [*NEEDS, "Keys"]


@pytest.mark.parametrize("title", list(NEEDS))
def test_the_snippet_works_as_written(tmp_path: Path, title: str) -> None:
    found = neovims()
    if not found:
        pytest.skip("no Neovim: `nvim` on PATH, or NP2TORCH_NVIM")
    lspconfig = os.environ.get("NP2TORCH_LSPCONFIG")
    if title == "With nvim-lspconfig" and not lspconfig:
        pytest.skip("NP2TORCH_LSPCONFIG names no nvim-lspconfig checkout")
    usable = [(command, version) for command, version in found if version >= NEEDS[title]]
    if not usable:
        pytest.skip(f"{title}: no Neovim that new ({', '.join(f'{c} {v}' for c, v in found)})")
    pages = snippets()
    config = pages[title] if title == "Neovim 0.7 to 0.9" else pages[title] + pages["Keys"]
    if lspconfig:
        config = f"vim.opt.runtimepath:prepend({str(lspconfig)!r})\n" + config
    (tmp_path / "init.lua").write_text(config)
    (tmp_path / "trial.lua").write_text(TRIAL)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command, version in usable:
        project = tmp_path / f"{version[0]}.{version[1]}"
        project.mkdir()
        (project / "pyproject.toml").write_text('[project]\nname = "trial"\n')
        module, expected = project / "mod.py", project / "expected.py"
        module.write_text(SOURCE)
        expected.write_text(SOURCE)
        before = os.getcwd()
        os.chdir(project)  # where the editor runs the server: the import order comes from the project there
        try:
            assert main(["fix", "--no-cache", "-q", str(expected)]) in (0, 1)
        finally:
            os.chdir(before)
        done = subprocess.run([command, "--headless", "-u", str(tmp_path / "init.lua"), "-c",
                               f"luafile {tmp_path / 'trial.lua'}", "mod.py"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=240)
        output = done.stdout + done.stderr
        assert "DIAGNOSTICS 5:NPT001 6:NPT002 6:NPT003" in output, (command, output)
        assert module.read_text() == expected.read_text(), (command, output)
