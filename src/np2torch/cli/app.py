"""The ``np2torch`` command line: parse options, call the runner, print, return an exit code.

Exit codes: 0 nothing found (or ``--exit-zero``), 1 findings (``fix``: findings
left, a ``--diff`` to show, or with ``--exit-non-zero-on-fix`` a file changed),
2 a usage or configuration error, or a file that could not be decoded or fixed.
A syntax error or a path that cannot be read is a finding, as ruff's
``invalid-syntax`` and E902 are.  Only ``-`` (with ``--stdin-filename``) reads
stdin, as ruff's: pre-commit runs hooks without one.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

import click
from click.core import ParameterSource

from np2torch import __version__
from np2torch.cli import runner
from np2torch.cli.cache import Cache, cache_folder, clean_caches
from np2torch.cli.config import (
    ConfigError,
    ConfigFinder,
    Excluder,
    Overlay,
    Overrides,
    PerFileIgnores,
    RunSettings,
    check_globs,
    check_output_format,
    check_selectors,
    check_target_version,
    depends_on,
    display_path,
    inline_settings,
    is_inline_setting,
    load_explicit_config,
    pattern_codes,
    per_file_ignored,
    project_file,
    run_settings,
    split_codes,
)
from np2torch.cli.discovery import Target, discover
from np2torch.cli.files import FileError, decode_notebook, decode_source, is_notebook, read_bytes
from np2torch.cli.fix_edits import FixEdits
from np2torch.cli.from_run import Margin, RunReport, decide, parse_margin, plan_file, within
from np2torch.cli.index import ProjectIndex
from np2torch.cli.output import (
    FORMATS,
    SUMMARY_FORMATS,
    TEXT_FORMATS,
    UNSAFE_HINT,
    Progress,
    as_finding,
    check_summary,
    diff_summary,
    fix_only_summary,
    fix_summary,
    fixed_report,
    plural,
    problem,
    render,
    show_fixes_check,
    sort_key,
    statistics,
)
from np2torch.cli.projects import project_root
from np2torch.cli.show import SourceLines, settings_report
from np2torch.lint.model import NOT_ANALYSED, Finding, Settings, check_alias, check_module
from np2torch.lint.pages import rules_table
from np2torch.lint.rules import RULES

# Subcommands other modules provide: name -> (module, attribute, one-line help). Listed only when the
# module exists, imported only when run, so `import np2torch.cli` never loads them.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "bench": ("np2torch.tools.bench", "command", "Time NumPy/SciPy against np2torch.runtime on this machine."),
    "tune": ("np2torch.tools.tune", "command", "Measure this machine's profile: which path is fastest, per function and size."),
    "vendor": ("np2torch.tools.vendor", "command", "Copy the runtime into a project as a package."),
    "explain": ("np2torch.cli.explain", "command", "Explain a rule, e.g. `np2torch explain NPT001`."),
    "server": ("np2torch.server.command", "command", "Run the language server (LSP over stdio) for editors."),
    "run": ("np2torch.run.command", "command",
            "Run a program with the rewrite applied in memory; report what each call site saved."),
}


class UnavailableCommand(click.ClickException):
    exit_code = 2


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [name for name, (module, _, _) in LAZY_COMMANDS.items() if _module_exists(module)]
        return sorted({*super().list_commands(ctx), *lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in LAZY_COMMANDS:
            return command
        module_name, attribute, _ = LAZY_COMMANDS[cmd_name]
        if not _module_exists(module_name):
            return None
        try:
            command = getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:
            raise UnavailableCommand(f"`np2torch {cmd_name}` is unavailable: {type(exc).__name__}: {exc}") from None
        if not isinstance(command, click.Command):
            raise UnavailableCommand(f"`np2torch {cmd_name}` is unavailable: {module_name}.{attribute} is not a command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Listing must not import the lazy modules, so their help comes from LAZY_COMMANDS.
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                command = self.commands[name]
                if not command.hidden:
                    rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
            else:
                rows.append((name, LAZY_COMMANDS[name][2]))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="np2torch", message="%(prog)s %(version)s")
def cli() -> None:
    """Find NumPy/SciPy calls that torch computes faster, and rewrite them to exact drop-in helpers."""


# ---------------------------------------------------------------- options shared by check and fix


def _codes(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...] | None:
    if not value:
        return None
    codes = split_codes(value)
    if not codes:  # `--select ''` would silently run no rule
        raise click.BadParameter("needs at least one rule code or prefix (NPT, NPT001, ALL)", ctx=ctx, param=param)
    try:
        return check_selectors(codes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _pattern_codes(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> PerFileIgnores | None:
    if not value:
        return None
    try:
        return pattern_codes(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


_Value = TypeVar("_Value")


def _validated(check: Callable[[str], _Value]) -> Callable[[click.Context, click.Parameter, str | None], _Value | None]:
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> _Value | None:
        if value is None:
            return None
        try:
            return check(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None

    return callback


_SHARED_OPTIONS = [
    click.argument("paths", nargs=-1, type=click.Path(path_type=str)),
    click.option("--select", multiple=True, callback=_codes, metavar="CODES",
                 help="Only these rules: codes or prefixes, comma separated (NPT, NPT001, ALL)."),
    click.option("--ignore", multiple=True, callback=_codes, metavar="CODES",
                 help="Skip these rules: codes or prefixes, comma separated."),
    click.option("--extend-select", multiple=True, callback=_codes, metavar="CODES",
                 help="Rules to enable on top of the selection (the defaults, or `select`), comma separated."),
    click.option("--fixable", multiple=True, callback=_codes, metavar="CODES",
                 help="Only these rules' findings may be fixed (default: all), comma separated."),
    click.option("--unfixable", multiple=True, callback=_codes, metavar="CODES",
                 help="These rules' findings are reported, never fixed, comma separated."),
    click.option("--extend-fixable", multiple=True, callback=_codes, metavar="CODES",
                 help="Rules added to the fixable ones, comma separated."),
    click.option("--ignore-noqa", is_flag=True, help="`# noqa` comments suppress nothing (as ruff's)."),
    click.option("--per-file-ignores", multiple=True, callback=_pattern_codes, metavar="PATTERN:CODE",
                 help="Per-file ignores replacing the configured ones: PATTERN:CODE items, comma separated "
                      "(patterns relative to here)."),
    click.option("--extend-per-file-ignores", multiple=True, callback=_pattern_codes, metavar="PATTERN:CODE",
                 help="Per-file ignores added to the configured ones: PATTERN:CODE items, comma separated."),
    click.option("--output-format", "--format", "fmt", type=click.Choice((*FORMATS, "text")), default=None,
                 envvar="NP2TORCH_OUTPUT_FORMAT", show_envvar=True,
                 help="How findings are printed (default: concise; `text` is concise). `--format` is an alias."),
    click.option("-o", "--output-file", type=click.Path(dir_okay=False, path_type=str), metavar="PATH",
                 help="Write the findings (and the summary) to this file instead of stdout."),
    click.option("--exit-zero", is_flag=True,
                 help="Exit 0 even when there are findings or syntax errors (other errors still exit 2)."),
    click.option("-q", "--quiet", is_flag=True, help="Print findings and errors only, no summary."),
    click.option("-s", "--silent", is_flag=True,
                 help="Print no finding, summary or warning (--statistics' counts and --diff's patch still), exit "
                      "codes unchanged: 1 on findings (as ruff's)."),
    click.option("--config", "config_options", multiple=True, metavar="PATH | KEY=VALUE",
                 help="A configuration file for every path instead of the nearest one (pyproject.toml's "
                      "[tool.np2torch], or an np2torch.toml), or one setting as TOML, e.g. "
                      "--config 'extend-select = [\"NPT019\"]', overriding every file's."),
    click.option("--isolated", is_flag=True, help="Read no configuration file (settings on the command line only)."),
    click.option("--exclude", multiple=True, metavar="PATTERNS",
                 help="Exclude patterns replacing the configured ones (comma separated; relative to here)."),
    click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
                 help="Exclude patterns added to the configured ones (comma separated; relative to here)."),
    click.option("--show-settings", is_flag=True,
                 help="Print the settings the first path gets and the file each came from, then exit."),
    click.option("--show-files", is_flag=True, help="Print the files that would be checked, then exit."),
    click.option("--runtime-module", callback=_validated(check_module), metavar="MODULE",
                 help="Module the fixes import the helpers from (default: np2torch.runtime)."),
    click.option("--alias", callback=_validated(check_alias), metavar="NAME",
                 help="Name the fixes bind the runtime module to (default: np2t)."),
    click.option("--target-version", callback=_validated(check_target_version), metavar="pyXY",
                 help="The oldest Python the code supports, e.g. py312 (as ruff's). Code in a newer syntax than "
                      "the running Python can read is skipped with a warning, an error if it is newer than this."),
    click.option("--stdin-filename", metavar="PATH",
                 help="Read the source from stdin (path `-`) and report it as PATH, whose settings apply; "
                      "`fix` writes the fixed source to stdout, its report to stderr."),
    click.option("--force-exclude", is_flag=True,
                 help="Apply exclude settings to files named on the command line too (the pre-commit hooks do)."),
    click.option("--no-cache", is_flag=True, help="Neither read nor write the lint cache."),
    click.option("--cache-dir", metavar="PATH", envvar="NP2TORCH_LINT_CACHE_DIR", show_envvar=True,
                 help="The lint cache's folder (default: .np2torch_cache at the project root)."),
    click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
                 help="Also apply (fix) or offer (check) the fixes that can change results, e.g. NPT901 "
                      "(default: `unsafe-fixes` in the config, else off)."),
    click.option("--statistics", is_flag=True,
                 help="Print counts per rule code (with [*] when fixable) instead of each finding."),
    click.option("--show-fixes", is_flag=True,
                 help="check: the fix under each fixable finding; fix: the fixes made, per file and code."),
    click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
                 help="Worker processes (default: all cores)."),
]


_Command = TypeVar("_Command", bound=Callable[..., object])


def _shared_options(function: _Command) -> _Command:
    for option in reversed(_SHARED_OPTIONS):
        function = option(function)
    return function


_CONFLICTS = frozenset(map(frozenset, [
    ("diff", "show_fixes"), ("diff", "statistics"), ("silent", "quiet"),
    ("add_noqa", "apply_fixes"), ("add_noqa", "diff"), ("add_noqa", "statistics"), ("add_noqa", "watch"),
]))
"""The flags ruff's ``check`` refuses together (its argument parser's conflicts), by parameter name."""


def _refuse_conflicts(ctx: click.Context) -> None:
    """A usage error (exit 2) for flags ruff refuses together, in its words: the first flag given that conflicts
    with another given, and those (``the argument '--diff' cannot be used with '--show-fixes'``)."""
    given = [name for name, value in ctx.params.items()  # in the order given: click handles them so
             if value is True and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    for name in given:
        others = [_flag(ctx, other) for other in given if frozenset((name, other)) in _CONFLICTS]
        if len(others) == 1:
            raise click.UsageError(f"the argument '{_flag(ctx, name)}' cannot be used with '{others[0]}'", ctx=ctx)
        if others:
            listed = "".join(f"\n  {other}" for other in others)
            raise click.UsageError(f"the argument '{_flag(ctx, name)}' cannot be used with:{listed}", ctx=ctx)


def _flag(ctx: click.Context, name: str) -> str:
    """The parameter ``name``'s long option (``apply_fixes``: ``--fix``)."""
    option = next(param for param in ctx.command.params if param.name == name)
    return max(option.opts, key=len)


# ---------------------------------------------------------------- commands


@cli.command(short_help="Report NumPy/SciPy calls np2torch can rewrite.")
@_shared_options
@click.option("--fix", "apply_fixes", is_flag=True, help="Apply the fixes, as `np2torch fix` (ruff's `check --fix`).")
@click.option("--diff", is_flag=True,
              help="Print a unified diff of the fixes, write nothing, with --fix (--fix-only) or without "
                   "(as `np2torch fix --diff`).")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: NPTxxx` to every line with a finding (merged into an existing noqa): a baseline.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="With --fix: exit 1 whenever a file was rewritten.")
@click.option("--fix-only", is_flag=True,
              help="Apply the fixes and report only what was fixed: exit 0 whatever is left (implies --fix).")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a file changes (clearing the screen).")
@click.pass_context
def check(ctx: click.Context, /, apply_fixes: bool, diff: bool, add_noqa: bool, exit_non_zero_on_fix: bool,
          fix_only: bool, watch: bool, **options: Any) -> None:
    """Report NumPy/SciPy calls that np2torch can rewrite (exit 1 when there are any)."""
    _refuse_conflicts(ctx)
    options["quiet"] |= options["silent"]  # ruff's --silent is --quiet with no finding either (_report)
    if add_noqa and fix_only and not options["quiet"]:
        _error("warning: --fix is incompatible with --add-noqa.")  # ruff's words; it adds the comments
    # ruff's `--fix --diff` and `--fix-only --diff`: the diff wins (shown, nothing written)
    mode = (runner.DIFF if diff else runner.NOQA if add_noqa else runner.FIX if apply_fixes or fix_only
            else runner.CHECK)
    if watch:
        if options.get("paths") == (STDIN,) or options.get("stdin_filename") is not None:
            raise click.UsageError("--watch checks files, not stdin", ctx=ctx)
        from np2torch.cli.watch import watch as watching

        ctx.exit(watching(lambda: _run(mode, exit_non_zero_on_fix=exit_non_zero_on_fix, fix_only=fix_only, **options),
                          options.get("paths") or (os.curdir,), quiet=options["quiet"]))
    ctx.exit(_run(mode, exit_non_zero_on_fix=exit_non_zero_on_fix, fix_only=fix_only, **options))


@cli.command(short_help="Rewrite those calls to np2torch.runtime helpers, in place.")
@_shared_options
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes, write nothing (exit 1 if any).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 whenever a file was rewritten.")
@click.option("--from-run", metavar="REPORT",
              help="Rewrite only the call sites whose saving `np2torch run --report-file REPORT` measured "
                   "(default paths: the report's files).")
@click.option("--min-saving", metavar="MARGIN", callback=_validated(parse_margin),
              help="With --from-run: the saving a site must show, e.g. 10%,1ms (the default).")
@click.pass_context
def fix(ctx: click.Context, /, diff: bool, exit_non_zero_on_fix: bool, from_run: str | None,
        min_saving: Margin | None, **options: Any) -> None:
    """Rewrite NumPy/SciPy calls to np2torch.runtime helpers, in place."""
    _refuse_conflicts(ctx)
    options["quiet"] |= options["silent"]  # ruff's --silent is --quiet with no finding either (_report)
    if min_saving is not None and from_run is None:
        raise click.UsageError("--min-saving goes with --from-run")
    ctx.exit(_run(runner.DIFF if diff else runner.FIX, exit_non_zero_on_fix=exit_non_zero_on_fix,
                  from_run=from_run, margin=min_saving or Margin(), **options))


@cli.command(short_help="Remove the lint cache (the project's, and any below this folder).")
@click.option("--cache-dir", metavar="PATH", envvar="NP2TORCH_LINT_CACHE_DIR", show_envvar=True,
              help="Also remove this cache folder.")
@click.pass_context
def clean(ctx: click.Context, /, cache_dir: str | None) -> None:
    """Remove np2torch's lint caches: the project's (or --cache-dir's) and every .np2torch_cache below here.

    Only folders np2torch made (they hold its CACHEDIR.TAG) are removed."""
    try:
        project = ConfigFinder().project()
    except ConfigError as exc:
        _error(f"error: {exc}")
        ctx.exit(2)
    for removed in clean_caches(cache_folder(cache_dir, project), os.getcwd()):
        _echo(f"Removing cache at: {removed}")
    ctx.exit(0)


@cli.command(name="rules", short_help="List the rules.")
@click.option("--output-format", "--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text",
              show_default=True, help="text, json (with the keys of `ruff rule --output-format json`) or markdown.")
def rules_command(fmt: str) -> None:
    """List the rules: code, name, function, runtime helper, fixable and fix safety."""
    for line in rules_table(RULES, fmt):
        _echo(line)


# ---------------------------------------------------------------- running


def _error(message: str) -> None:
    _echo(message, err=True)


def _echo(line: str, err: bool = False) -> None:
    """Print one line; a file name that is not valid UTF-8 goes out as its own bytes.

    Python decodes such a name with surrogate escapes (``b"\\xff"`` becomes ``"\\udcff"``), which a
    UTF-8 stream refuses: printed as is, the first such name would end the run with no output.
    """
    stream = sys.stderr if err else sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
    except UnicodeEncodeError:
        click.echo(_as_bytes(line, encoding), err=err)
        return
    except LookupError:  # a stream whose codec Python does not know: let click cope
        pass
    click.echo(line, err=err)


def _as_bytes(line: str, encoding: str) -> bytes:
    try:
        return line.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:  # a character the stream's codec lacks: a readable escape
        return line.encode(encoding, "backslashreplace")


def _run(mode: str, *, paths: tuple[str, ...], select: tuple[str, ...] | None, ignore: tuple[str, ...] | None,
         fmt: str | None, exit_zero: bool, quiet: bool, config_options: tuple[str, ...], runtime_module: str | None,
         alias: str | None, force_exclude: bool, no_cache: bool, jobs: int | None,
         target_version: tuple[int, int] | None = None, stdin_filename: str | None = None,
         statistics: bool = False, show_fixes: bool = False, unsafe_fixes: bool | None = None,
         exit_non_zero_on_fix: bool = False, extend_select: tuple[str, ...] | None = None,
         output_file: str | None = None, isolated: bool = False, exclude: tuple[str, ...] = (),
         extend_exclude: tuple[str, ...] = (), show_settings: bool = False, show_files: bool = False,
         cache_dir: str | None = None, from_run: str | None = None, margin: Margin | None = None,
         fixable: tuple[str, ...] | None = None, unfixable: tuple[str, ...] | None = None,
         extend_fixable: tuple[str, ...] | None = None, ignore_noqa: bool = False, fix_only: bool = False,
         per_file_ignores: PerFileIgnores | None = None, extend_per_file_ignores: PerFileIgnores | None = None,
         watch: bool = False, silent: bool = False) -> int:
    overrides = Overrides(select=select, ignore=ignore or (), runtime_module=runtime_module, alias=alias,
                          unsafe_fixes=unsafe_fixes, target_version=target_version, fixable=fixable,
                          unfixable=unfixable or (), extend_fixable=extend_fixable or (), ignore_noqa=ignore_noqa,
                          extend_select=extend_select or ())
    report = None
    outside: list[runner.FileResult] = []
    if from_run is not None:
        loaded = _load_report(from_run, paths, stdin_filename)
        if isinstance(loaded, int):
            return loaded
        report, paths, outside = loaded
    try:
        finder = _finder(config_options, isolated, exclude, extend_exclude, per_file_ignores, extend_per_file_ignores or ())
        project = finder.project()
        fmt = check_output_format(fmt or project.output_format or "concise")
    except (ConfigError, ValueError) as exc:
        _error(f"error: {exc}")
        return 2
    with _Output(output_file) as out:
        if STDIN in paths or (stdin_filename is not None and not paths):
            if paths not in ((), (STDIN,)):
                _error(f"error: `{STDIN}` (stdin) cannot be combined with other paths")
                return 2
            return _run_stdin(mode, stdin_filename, overrides, finder, force_exclude=force_exclude, fmt=fmt,
                              quiet=quiet, exit_zero=exit_zero, statistics=statistics, show_fixes=show_fixes,
                              exit_non_zero_on_fix=exit_non_zero_on_fix, out=out, fix_only=fix_only, silent=silent)
        try:
            targets, missing = discover(list(paths) or [os.curdir], finder, force_exclude=force_exclude)
            if show_settings or show_files:
                given = paths[0] if paths else (targets[0].display if targets else os.curdir)
                shown = (settings_report(given, finder, overrides, fmt=fmt, cache=cache_folder(cache_dir, project))
                         if show_settings else (target.display for target in targets))
                return _echo_all(shown, out)
            settings = _settings_by_file(targets, overrides)
        except ConfigError as exc:
            _error(f"error: {exc}")
            return 2

        cache = None if no_cache else Cache(cache_folder(cache_dir, project))
        index = _project_index(cache, tuple(paths) or (os.curdir,))
        results = [runner.failed(e.path, e) for e in missing] + outside
        only: dict[str, frozenset[tuple[int, int, str]]] = {}
        left_out = 0
        if report is not None:
            targets, refused, left_out = _plan_from_run(report, margin or Margin(), targets,
                                                        lambda t: index.settings(t.path, settings[t.path]), only, quiet)
            results += refused
        results += runner.run(targets, lambda t: settings[t.path], mode, jobs=jobs, cache=cache,
                              progress_factory=None if quiet else _progress_bar,
                              only_for=(lambda t: only.get(t.path, frozenset())) if report is not None else None,
                              indexed=index.settings)
        if report is not None:
            _drop_left_out(results)
        results.sort(key=lambda r: r.display)
        if cache is not None and cache.write_error and not quiet:
            _error(f"warning: cannot write the cache ({cache.write_error}); --no-cache skips it")

        if not results and not missing and not quiet:
            _error("warning: no Python files found under the given paths")
        code = _report(mode, results, fmt=fmt, quiet=quiet, exit_zero=exit_zero, stats=statistics,
                       show_fixes=show_fixes, out=out, left_out=left_out, fix_only=fix_only, silent=silent,
                       lint_settings={t.display: settings[t.path].lint for t in targets})
        if mode == runner.FIX and not quiet and fmt in TEXT_FORMATS:  # a hint, as the `--unsafe-fixes` one
            _echo_all([notice] if (notice := dependency_notice(results)) else [], out)
        if code == 0 and exit_non_zero_on_fix and any(r.changed for r in results):
            return 1
        return code


def _echo_all(lines: Iterable[str], out: _Output) -> int:
    for line in lines:
        out.echo(line)
    return 0


def _drop_left_out(results: Sequence[runner.FileResult]) -> None:
    """``fix --from-run``: each site left out has had its line, so it is not a finding np2torch cannot fix."""
    from np2torch.lint.engine import REASON_LEFT_OUT, REASON_NOT_A_SITE

    for result in results:
        result.findings = [f for f in result.findings if f.reason not in (REASON_LEFT_OUT, REASON_NOT_A_SITE)]


def _load_report(from_run: str, paths: tuple[str, ...], stdin_filename: str | None
                 ) -> tuple[RunReport, tuple[str, ...], list[runner.FileResult]] | int:
    """``--from-run``'s report, the paths to fix (those given, else the files the run measured in this
    project) and the errors for the measured files outside it, or the exit status when there is nothing to do."""
    if STDIN in paths or stdin_filename is not None:
        _error("error: --from-run fixes files the run measured, not stdin")
        return 2
    try:
        report = RunReport.load(from_run)
    except ConfigError as exc:
        _error(f"error: {exc}")
        return 2
    outside: list[runner.FileResult] = []
    if not paths:  # a report may come from elsewhere: alone, it names files of this project only
        root = project_root(os.getcwd())
        paths = tuple(display_path(path) for path in report.paths() if within(path, root))
        outside = [runner.FileResult(display_path(path), errors=[
            f"{display_path(path)}: error: outside the project of the working directory ({root}); not fixed "
            "from the report unless named on the command line"]) for path in report.paths() if not within(path, root)]
    if not paths and not outside:
        _error(f"warning: no file {from_run} measured exists; nothing to fix")
        return 0
    return report, paths, outside


def _project_index(cache: Cache | None, given: tuple[str, ...] = ()) -> ProjectIndex:
    """The run's project index (np2torch.cli.index), its parses kept beside the lint cache's entries (``given``:
    the paths given to the run, one project at least)."""
    if cache is None:
        return ProjectIndex(given=given)
    return ProjectIndex(cache.folder, fingerprint=cache.fingerprint, tag=True, given=given)


def _finder(config_options: Sequence[str], isolated: bool, exclude: Sequence[str],
            extend_exclude: Sequence[str], per_file_ignores: PerFileIgnores | None = None,
            extend_per_file_ignores: PerFileIgnores = ()) -> ConfigFinder:
    """Where each path's settings come from: ``--config PATH`` or ``--isolated`` or the nearest file, with
    ``--config KEY=VALUE``, ``--exclude`` and ``--extend-exclude`` on top."""
    files = [value for value in config_options if not is_inline_setting(value)]
    inline = [value for value in config_options if is_inline_setting(value)]
    if len(files) > 1:
        raise ConfigError(f"--config: only one configuration file can be given, got {', '.join(files)}")
    if files and isolated:
        raise ConfigError(f"--config {files[0]} and --isolated contradict each other")
    values = inline_settings(inline) if inline else {}
    if per_file_ignores is not None:  # as `--config 'per-file-ignores = ...'`: replaces every file's
        values["per_file_ignores"] = per_file_ignores
    overlay = Overlay(values, exclude=check_globs(split_codes(exclude)) if exclude else None,
                      extend_exclude=check_globs(split_codes(extend_exclude)),
                      extend_per_file_ignores=extend_per_file_ignores)
    return ConfigFinder(load_explicit_config(files[0]) if files else None, isolated=isolated, overlay=overlay)


def _settings_by_file(targets: Sequence[Target], overrides: Overrides) -> dict[str, RunSettings]:
    """Each target's settings, built once per configuration and set of per-file ignores."""
    built: dict[tuple[int, tuple[str, ...]], RunSettings] = {}
    by_file: dict[str, RunSettings] = {}
    for target in targets:
        key = (id(target.config), per_file_ignored(target.config, target.path))
        if key not in built:
            built[key] = run_settings(target.config, overrides, target.path)
        by_file[target.path] = built[key]
    return by_file


class _Output:
    """Where findings and the summary go: stdout, or ``--output-file`` (written when the run ends)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._lines: list[str] = []

    def __enter__(self) -> _Output:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.path is None or exc[0] is not None:
            return
        text = "".join(line + "\n" for line in self._lines)
        try:
            with open(self.path, "w", encoding="utf-8", errors="surrogateescape") as stream:
                stream.write(text)
        except OSError as error:
            _error(f"error: {self.path}: cannot write the output file: {error.strerror or error}")

    def echo(self, line: str, err: bool = False) -> None:
        if self.path is not None and not err:
            self._lines.append(line)
        else:
            _echo(line, err=err)


def _plan_from_run(report: RunReport, margin: Margin, targets: list[Target],
                   settings_for: Callable[[Target], RunSettings], only: dict[str, frozenset[tuple[int, int, str]]],
                   quiet: bool) -> tuple[list[Target], list[runner.FileResult], int]:
    """``fix --from-run``: per target, the sites that paid (into ``only``); a file changed since the run is
    refused with one line; one line on stderr per site left out and why, and how many were."""
    from np2torch.lint import engine

    decisions = decide(report, margin)
    kept, refused = [], []
    left_out = 0
    for target in targets:
        try:
            raw, _stamp = read_bytes(target.path, target.display)
            if is_notebook(target.path):
                raise FileError(target.display, "--from-run fixes .py files (`np2torch run` measures no notebook)")
            text = decode_source(raw, target.display).text
            findings = engine.check_source(text, target.display, settings=settings_for(target).lint)
        except FileError as exc:
            refused.append(runner.failed(target.display, exc))
            continue
        except engine.SourceError:
            kept.append(target)  # the run reports it as it reports any unparsable file
            continue
        plan = plan_file(report, decisions, target.path, raw, findings)
        if plan.error is not None or plan.keep is None:
            refused.append(runner.FileResult(target.display, errors=[plan.error or f"{target.display}: error"]))
            continue
        only[target.path] = plan.keep
        kept.append(target)
        left_out += len(plan.lines)
        if not quiet:
            for line in plan.lines:
                _error(line)
    return kept, refused, left_out


RUNTIME_DISTRIBUTION = "np2torch"


def dependency_notice(results: Sequence[runner.FileResult]) -> str | None:
    """One warning when a fix made files import np2torch's own runtime in a project that does not depend
    on np2torch: the fixed code would fail with ModuleNotFoundError where np2torch is not installed.
    A vendored runtime (``--runtime-module mypkg._np2torch``) is the project's own code: no warning."""
    added = [r for r in results if r.runtime_import and r.runtime_import.split(".")[0] == RUNTIME_DISTRIBUTION]
    projects = {project_file(r.display) for r in added}
    if not any(p is None or not depends_on(p, RUNTIME_DISTRIBUTION) for p in projects):
        return None
    module = added[0].runtime_import
    return (f"note: the fixed files now import {module} at run time: add `{RUNTIME_DISTRIBUTION}` to the "
            f"project's dependencies, or copy the runtime into the project with `np2torch vendor` "
            f"(then fix with --runtime-module)")


STDIN = "-"


def _run_stdin(mode: str, stdin_filename: str | None, overrides: Overrides, finder: ConfigFinder, *,
               force_exclude: bool, fmt: str, quiet: bool, exit_zero: bool, statistics: bool, show_fixes: bool,
               exit_non_zero_on_fix: bool, out: _Output, fix_only: bool = False, silent: bool = False) -> int:
    """``check``/``fix`` of the source on stdin, as an editor calls ruff: ``fix`` echoes the (fixed) source to
    stdout whatever happens, so an editor replacing its buffer with it never loses text; the report goes
    to stderr then."""
    raw = sys.stdin.buffer.read()
    display = stdin_filename or STDIN
    path = os.path.abspath(stdin_filename or "stdin.py")
    result: runner.FileResult | None = None
    source = None
    if mode == runner.NOQA:
        mode = runner.CHECK  # nothing to write a noqa comment into
    try:
        config = finder.for_file(path)
        excluded = (force_exclude or config.force_exclude) and Excluder(config).excludes(path)
        if not excluded:
            settings = run_settings(config, overrides, path)
            source = (decode_notebook if is_notebook(path) else decode_source)(raw, display)
            if stdin_filename is not None and (is_notebook(path) or runner.might_have_findings(source.text,
                                                                                                 settings)):
                settings = _project_index(None).settings(path, settings)  # the project the file says it is in
            result = runner.run_job(runner.Job(display, path, source, None, settings, mode, ""))
    except ConfigError as exc:
        result = runner.FileResult(display, errors=[f"error: {exc}"])
    except FileError as exc:
        result = runner.failed(display, exc)
    except Exception as exc:  # a bug in np2torch: named on stderr, and the source still echoed below
        result = runner.FileResult(display, errors=[runner.internal_error(display, exc)])
    to_stderr = mode == runner.FIX
    if to_stderr:
        sys.stdout.buffer.write(result.new_bytes if result is not None and result.new_bytes is not None else raw)
        sys.stdout.flush()
    results = [] if result is None else [result]
    text = None
    if source is not None:
        text = source.text if result is None or result.new_bytes is None else result.new_bytes.decode(source.encoding)
    code = _report(mode, results, fmt=fmt, quiet=quiet, exit_zero=exit_zero, stats=statistics,
                   show_fixes=show_fixes, err=to_stderr, out=out, stdin=(display, text), fix_only=fix_only,
                   silent=silent)
    if code == 0 and exit_non_zero_on_fix and any(r.changed for r in results):
        return 1
    return code


def _progress_bar(total: int) -> Progress | None:
    stream = sys.stderr
    return Progress(total, stream) if stream.isatty() else None


_RULE_NAMES = {**{rule.code: rule.name for rule in RULES}, **NOT_ANALYSED}


def _report(mode: str, results: list[runner.FileResult], *, fmt: str, quiet: bool, exit_zero: bool,
            stats: bool = False, show_fixes: bool = False, err: bool = False, out: _Output | None = None,
            stdin: tuple[str, str | None] | None = None, left_out: int = 0,
            lint_settings: Mapping[str, Settings] | None = None, fix_only: bool = False, silent: bool = False) -> int:
    """Print the results (to stderr with ``err``: stdout carries the fixed source) and return the exit code
    (``left_out``: the sites ``fix --from-run`` left as they are, counted in the summary, not in the code).
    ``lint_settings``: each file's, by displayed path, for the fixes the JSON formats show (``check`` only).
    ``silent`` (ruff's ``--silent``, which implies ``quiet``): no finding, nor fix list; ``--statistics``' counts
    and ``--diff``'s patch are still printed, as ruff's are, and errors that make the exit code 2."""
    out = out or _Output(None)
    failed = sum(1 for r in results if r.errors and r.code is None)  # exit 2
    for result in results:
        # one with a code is a finding: reported as ruff's, or where ruff reports none (--fix-only, --diff,
        # --add-noqa) left unsaid as ruff leaves it
        for message in () if result.code else result.errors:
            _error(message)
        for message in () if quiet else result.warnings:
            _error(message)
    changed = [r for r in results if r.changed]
    fixed = [(r.display, r.fixed_codes) for r in changed]
    if mode == runner.DIFF:
        _report_diff(results, fmt=fmt, quiet=quiet, out=out, stdin=stdin is not None)
        return 2 if failed else (1 if changed and not exit_zero else 0)
    if mode == runner.NOQA:
        return _report_noqa(results, quiet=quiet, silent=silent, failed=failed)

    problems = [problem(r.display, m, r.code) for r in results for m in r.errors]
    findings = sorted([*(f for r in results for f in r.findings), *(as_finding(p) for p in problems if p.code)],
                      key=sort_key)
    problems = [p for p in problems if p.code is None]
    if fix_only:  # ruff's `--fix-only`: what was fixed, never what is left (nor an exit 1 for it)
        hidden = _hidden(findings)
        if show_fixes and not silent:
            for line in fixed_report(fixed, _RULE_NAMES):
                out.echo(line, err=err)
        if not quiet and fmt in SUMMARY_FORMATS:
            out.echo(fix_only_summary(sum(r.fixed for r in results), hidden), err=err)
        return 2 if failed else 0
    if stats:
        lines = statistics(findings, fmt, _RULE_NAMES)
    elif silent:
        lines = []
    elif show_fixes and fmt == "concise":  # `full` shows the fix itself; the others keep their shape
        lines = [line for f in findings for line in (*render([f], fmt, source_line=SourceLines(stdin)),
                                                      *show_fixes_check(f))]
    else:
        fixes = FixEdits(lint_settings) if lint_settings is not None and mode == runner.CHECK else None
        lines = render(findings, fmt, problems, source_line=SourceLines(stdin), fixes=fixes)
    for line in lines:
        out.echo(line, err=err)
    if show_fixes and mode == runner.FIX and not silent:
        for line in fixed_report(fixed, _RULE_NAMES):
            out.echo(line, err=err)
    fixable = sum(1 for f in findings if f.fixable)
    if not quiet and (fmt in SUMMARY_FORMATS or (stats and fmt != "json")):
        hidden = _hidden(findings)
        if mode == runner.CHECK:
            summary = check_summary(len(findings), fixable, failed, hidden)
        else:
            summary = fix_summary(sum(r.fixed for r in results), len(changed), len(findings), fixable, failed, hidden,
                                  left_out)
        for line in summary:
            out.echo(line, err=err)
    if failed:
        return 2
    return 1 if findings and not exit_zero else 0


def _hidden(findings: Iterable[Finding]) -> int:
    """How many of ``findings`` have a fix that only ``--unsafe-fixes`` applies (ruff's hidden fixes)."""
    return sum(1 for f in findings if not f.fixable and f.reason and UNSAFE_HINT in f.reason)


def _report_diff(results: list[runner.FileResult], *, fmt: str, quiet: bool, out: _Output, stdin: bool) -> None:
    """``--diff``: each changed file's patch on stdout (each ends with an empty line, as ruff's), then ruff's summary
    line where ruff's goes (to stdout, to ``--output-file``, to stderr for stdin's source), none with ``--quiet``,
    in a machine format or when nothing would be fixed."""
    changed = [r for r in results if r.changed]
    for result in changed:
        click.echo(result.diff, nl=False)
    summary = [] if quiet or fmt not in SUMMARY_FORMATS else diff_summary(
        sum(r.fixed for r in changed), _hidden(f for r in results for f in r.findings))
    for line in summary:
        out.echo(line, err=stdin)


def _report_noqa(results: list[runner.FileResult], *, quiet: bool, silent: bool, failed: int) -> int:
    """``check --add-noqa``: how many directives were added, on stderr as ruff's (nothing when none was, as
    ruff's); exit 0 unless a file failed."""
    for result in () if silent else results:
        for finding in result.findings:  # left: no comment could go on that line
            _error(f"{result.display}:{finding.line}:{finding.column}: warning: no noqa comment can go on this "
                   f"line (it ends inside a string or a line continuation): {finding.code}")
    added = sum(r.fixed for r in results)
    if added and not quiet:
        _error(f"Added {plural(added, 'noqa directive')}.")
    return 2 if failed else 0


# ---------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (``sys.exit(main())`` in the console script)."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="np2torch",
                          standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        _error("Aborted!")
        return 130
    except BrokenPipeError:
        # The reader went away (`np2torch check | head`); exit quietly, as other Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:  # a bug outside per-file work (which reports its own): name it, no traceback
        _error(runner.internal_error("np2torch", exc))
        return 2
    return result if isinstance(result, int) else 0
