"""[tool.np2torch] in pyproject.toml: reading, validation, nearest-file lookup, exclude patterns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from np2torch.cli.config import (
    DEFAULT_EXCLUDE,
    ConfigError,
    ConfigFinder,
    Overrides,
    load_config,
    load_explicit_config,
    run_settings,
    settings_for_file,
)
from np2torch.cli.globs import FilePatterns
from np2torch.lint.rules import RULES


def write_pyproject(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_key_is_read(tmp_path: Path) -> None:
    path = write_pyproject(
        tmp_path,
        """
[tool.np2torch]
select = ["NPT00"]
ignore = ["NPT004"]
exclude = ["vendored"]
extend-exclude = ["tests/fixtures"]
runtime-module = "mypkg._np2torch"
alias = "fast"
""",
    )
    config = load_config(path)
    assert config is not None
    assert config.root == tmp_path
    assert config.select == ("NPT00",)
    assert config.ignore == ("NPT004",)
    assert config.exclude == ("vendored",)
    assert config.exclude_patterns == ("vendored", "tests/fixtures")
    assert config.runtime_module == "mypkg._np2torch"
    assert config.alias == "fast"


def test_defaults_when_table_is_empty(tmp_path: Path) -> None:
    config = load_config(write_pyproject(tmp_path, "[tool.np2torch]\n"))
    assert config is not None
    assert config.select is None and config.ignore == ()
    assert config.exclude == DEFAULT_EXCLUDE
    assert config.runtime_module is None and config.alias is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("[project]\nname = 'x'\n", id="no np2torch at all"),
        pytest.param("[tool.ruff]\nselect = ['NPY']\n# np2torch is great\n", id="mentions np2torch, no table"),
    ],
)
def test_pyproject_without_table_is_not_a_config(tmp_path: Path, body: str) -> None:
    assert load_config(write_pyproject(tmp_path, body)) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param("foo = 1", "pyproject.toml: unknown key 'foo' in [tool.np2torch]", id="unknown key"),
        pytest.param("extend_exclude = []", "unknown key 'extend_exclude'", id="underscore spelling"),
        pytest.param("select = 'NPT001'", "'select' in [tool.np2torch] must be a list of strings", id="select str"),
        pytest.param("ignore = [1]", "'ignore' in [tool.np2torch] must be a list of strings", id="ignore ints"),
        pytest.param("exclude = 'build'", "'exclude' in [tool.np2torch] must be a list", id="exclude str"),
        pytest.param("select = ['NPT7']", "'select' in [tool.np2torch]: unknown rule selector 'NPT7'", id="bad code"),
        pytest.param("ignore = ['XYZ']", "'ignore' in [tool.np2torch]: unknown rule selector 'XYZ'", id="bad ignore"),
        pytest.param("alias = 'npt'", "'alias' in [tool.np2torch]: alias 'npt' is reserved", id="alias npt"),
        pytest.param("alias = '1x'", "alias must be a Python identifier", id="alias not identifier"),
        pytest.param("alias = 'class'", "alias must be a Python identifier", id="alias keyword"),
        pytest.param("alias = 3", "alias must be a Python identifier", id="alias int"),
        pytest.param("runtime-module = 'a..b'", "'runtime-module' in [tool.np2torch]: runtime module", id="bad module"),
        pytest.param("runtime-module = ['a']", "runtime module must be a dotted module name", id="module list"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, body: str, message: str) -> None:
    path = write_pyproject(tmp_path, f"[tool.np2torch]\n{body}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_table_that_is_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[tool.np2torch\] must be a table"):
        load_config(write_pyproject(tmp_path, "[tool]\nnp2torch = 3\n"))


def test_invalid_toml_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^pyproject.toml: invalid TOML: "):
        load_config(write_pyproject(tmp_path, "[tool.np2torch\nselect = ["))


@pytest.mark.parametrize("nested", ["x = " + "[" * 5000 + "]" * 5000, "x = " + "{a = " * 5000 + "1" + "}" * 5000],
                         ids=["arrays", "inline tables"])
def test_toml_nested_thousands_deep_is_one_line(tmp_path: Path, nested: str) -> None:
    with pytest.raises(ConfigError, match=r"^pyproject.toml: invalid TOML: nested too deeply$"):
        load_config(write_pyproject(tmp_path, f"[tool.np2torch]\n{nested}\n"))


def test_oversized_config_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from np2torch.cli import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 20)
    with pytest.raises(ConfigError, match=r"^pyproject.toml: file larger than 20 bytes, not read$"):
        load_config(write_pyproject(tmp_path, "[tool.np2torch]\nalias = 'fast'\n"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_explicit_config_that_is_a_fifo_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(ConfigError, match=r"^fifo.toml: not a regular file$"):
        load_explicit_config("fifo.toml")


def test_error_names_the_file_relative_to_cwd(tmp_path: Path) -> None:
    write_pyproject(tmp_path / "sub", "[tool.np2torch]\nbogus = true\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "sub" / "pyproject.toml")
    assert str(info.value).startswith(os.path.join("sub", "pyproject.toml") + ": unknown key 'bogus'")


def test_explicit_config_must_exist_and_have_the_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_explicit_config("missing.toml")
    (tmp_path / "other.toml").write_text("[tool.ruff]\n# np2torch\n")
    with pytest.raises(ConfigError, match=r"no \[tool.np2torch\] table"):
        load_explicit_config("other.toml")
    (tmp_path / "np.toml").write_text("[tool.np2torch]\nalias = 'fast'\n")
    assert load_explicit_config("np.toml").alias == "fast"


def test_finder_takes_the_nearest_file_with_a_table(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "[tool.np2torch]\nalias = 'outer'\n")
    write_pyproject(tmp_path / "a", "[project]\nname = 'a'\n")  # no table: passed over
    write_pyproject(tmp_path / "a" / "b", "[tool.np2torch]\nalias = 'inner'\n")
    (tmp_path / "a" / "b" / "c").mkdir()
    finder = ConfigFinder(cwd=tmp_path)
    assert finder.for_directory(str(tmp_path / "a")).alias == "outer"
    inner = finder.for_directory(str(tmp_path / "a" / "b" / "c"))
    assert inner.alias == "inner"
    assert inner.root == tmp_path / "a" / "b"
    assert finder.for_file(str(tmp_path / "a" / "b" / "x.py")) is inner


def test_finder_without_any_file_uses_defaults_rooted_at_cwd(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    config = ConfigFinder(cwd=tmp_path).for_directory(str(tmp_path / "pkg"))
    assert config.source is None and config.root == tmp_path


def test_override_wins_everywhere(tmp_path: Path) -> None:
    write_pyproject(tmp_path / "a", "[tool.np2torch]\nalias = 'inner'\n")
    override = load_config(write_pyproject(tmp_path / "cfg", "[tool.np2torch]\nalias = 'given'\n"))
    assert ConfigFinder(override).for_directory(str(tmp_path / "a")).alias == "given"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("build", "build", True, id="name matches a folder"),
        pytest.param("build", "src/build", True, id="name matches at any depth"),
        pytest.param("build", "src/builder", False, id="name is whole component"),
        pytest.param("*_pb2.py", "proto/x_pb2.py", True, id="star within a name"),
        pytest.param("tests/fixtures", "tests/fixtures", True, id="anchored path"),
        pytest.param("tests/fixtures", "src/tests/fixtures", False, id="anchored is not at any depth"),
        pytest.param("/legacy", "legacy", False, id="a leading slash is the absolute path, as ruff's"),
        pytest.param("src/*.py", "src/a.py", True, id="star in anchored"),
        pytest.param("src/*.py", "src/sub/a.py", True, id="star crosses slash, as ruff's"),
        pytest.param("a*.py", "a/b/c.py", True, id="a name pattern's star crosses slash below the root"),
        pytest.param("src/**/gen_*.py", "src/a/b/gen_x.py", True, id="double star crosses"),
        pytest.param("src/**/gen_*.py", "src/gen_x.py", True, id="double star may be empty"),
        pytest.param("data/", "data", True, id="trailing slash dropped"),
        pytest.param("data/", "src/data", False, id="trailing slash anchors, as ruff's"),
        pytest.param("./src/*.py", "src/a.py", True, id="a dot segment dropped"),
        pytest.param("src/x/../*.py", "src/a.py", True, id="a dot-dot segment takes a folder off"),
        pytest.param("{src,lib}/*.py", "lib/a.py", True, id="alternation"),
        pytest.param("v[0-9].py", "v3.py", True, id="character class"),
        pytest.param("v[!0-9].py", "v3.py", False, id="negated class"),
        pytest.param("a?.py", "ab.py", True, id="question mark"),
        pytest.param("a.b", "axb", False, id="dot is literal"),
    ],
)
def test_exclude_patterns(tmp_path: Path, pattern: str, path: str, expected: bool) -> None:
    assert FilePatterns(tmp_path, [pattern]).matches(str(tmp_path / path)) is expected


def test_a_root_with_glob_characters_is_literal(tmp_path: Path) -> None:
    root = tmp_path / "a[b]{c,d}*"
    assert FilePatterns(root, ["sub/*.py"]).matches(str(root / "sub" / "x.py"))
    assert not FilePatterns(root, ["sub/*.py"]).matches(str(tmp_path / "ab{c,d}x" / "sub" / "x.py"))


def test_excludes_checks_parent_folders_below_the_root_only(tmp_path: Path) -> None:
    root = tmp_path / "build" / "project"  # "build" above the root must not exclude everything
    matcher = FilePatterns(root, ["build", "gen/"])
    assert not matcher.excludes(str(root / "src" / "a.py"))
    assert matcher.excludes(str(root / "src" / "build" / "a.py"))
    assert matcher.excludes(str(root / "gen" / "deep" / "a.py"))


def test_resolve_cli_select_replaces_file_select_and_ignore(tmp_path: Path) -> None:
    config = load_config(write_pyproject(tmp_path, "[tool.np2torch]\nselect=['NPT001','NPT002']\nignore=['NPT002']\n"))
    assert config is not None
    assert run_settings(config, Overrides()).codes == ("NPT001",)
    assert run_settings(config, Overrides(ignore=("NPT001",))).codes == ()
    assert run_settings(config, Overrides(select=("NPT002", "NPT003"))).codes == ("NPT002", "NPT003")
    everything = tuple(rule.code for rule in RULES)
    assert run_settings(config, Overrides(select=("ALL",))).codes == everything


def test_resolve_cli_runtime_options_win(tmp_path: Path) -> None:
    config = load_config(write_pyproject(tmp_path, "[tool.np2torch]\nalias='a'\nruntime-module='m'\n"))
    assert config is not None
    assert run_settings(config, Overrides()).lint.alias == "a"
    settings = run_settings(config, Overrides(alias="b", runtime_module="pkg.m")).lint
    assert (settings.alias, settings.runtime_module) == ("b", "pkg.m")


def test_settings_for_file_are_those_of_check_with_force_exclude(tmp_path: Path) -> None:
    # What an editor integration lints a file it is handed with (the flake8 plugin, np2torch server).
    write_pyproject(tmp_path / "proj", '[tool.np2torch]\nselect = ["NPT002"]\nextend-exclude = ["gen"]\n')
    finder = ConfigFinder()
    settings = settings_for_file(str(tmp_path / "proj" / "pkg" / "m.py"), Overrides(unsafe_fixes=True), finder)
    assert settings is not None and settings.codes == ("NPT002",) and settings.lint.unsafe_fixes
    assert settings_for_file(str(tmp_path / "proj" / "gen" / "m.py"), finder=finder) is None
    assert settings_for_file(str(tmp_path / "elsewhere.py")) == run_settings(ConfigFinder().for_file("x.py"), Overrides())
    write_pyproject(tmp_path / "broken", "[tool.np2torch]\nselekt = 1\n")
    with pytest.raises(ConfigError, match="unknown key 'selekt'"):
        settings_for_file(str(tmp_path / "broken" / "m.py"))
