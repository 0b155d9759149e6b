"""``np2torch run [OPTIONS] SCRIPT [ARGS...]`` / ``np2torch run [OPTIONS] -m MODULE [ARGS...]``.

Options come before the program, as ``python``'s do: everything after the
script or ``-m MODULE`` is the program's, ``--help`` included.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, NoReturn, Optional, Sequence

import click

from np2torch.cli.config import ConfigError, Overrides, check_selectors, split_codes

USAGE = """\
Usage: np2torch run [OPTIONS] SCRIPT [ARGS]...
       np2torch run [OPTIONS] -m MODULE [ARGS]...

  Run a Python program with the rewrite `np2torch fix` would make applied in
  memory, as its modules are imported (nothing on disk changes), and report
  what each rewritten call site saved, measured on this run: a share of each
  site's calls runs the original and is timed against the helper.

  Rewritten: the project the script (or, with -m, the working directory)
  belongs to -- the nearest folder with a pyproject.toml or .git -- and what
  --include names; never the standard library or np2torch. [tool.np2torch]
  applies as for `np2torch fix`.

Options:
  -m MODULE               Run a module as `python -m MODULE` does.
  --include NAME_OR_PATH  Rewrite this installed package or path too (repeatable).
  --exclude NAME_OR_PATH  Do not rewrite this package or path (repeatable).
  --select CODES          Rules to apply, as for `np2torch fix` (comma-separated).
  --extend-select CODES   Rules to apply on top of the selection.
  --ignore CODES          Rules to leave out.
  --unsafe-fixes          Also apply the rewrites whose fix is unsafe (as `unsafe-fixes = true` in the config).
  --exact [ulp|bits]      bits: the helpers take only paths that give the original's own bits (NP2TORCH_EXACT;
                          `exact = "bits"` in the config); default: the environment's, else ulp.
  --config PATH           Read [tool.np2torch] from this file for every file.
  --report [text|json|none]
                          What to print on stderr at exit (default: text).
  --report-file PATH      Also write the report as JSON here (for `np2torch fix --from-run`).
  --no-children           Do not follow the program into child processes.
  --no-cache              Do not read or write compiled rewrites in np2torch's cache folder.
  -h, --help              Show this message and exit.
"""

_WITH_VALUE = ("--include", "--exclude", "--select", "--extend-select", "--ignore", "--config", "--report",
               "--report-file", "--exact")
_FLAGS = ("--unsafe-fixes", "--no-children", "--no-cache")


class UsageError(Exception):
    pass


@dataclass
class Options:
    script: str | None = None
    module: str | None = None
    args: List[str] = field(default_factory=list)
    include: List[str] = field(default_factory=list)
    exclude: List[str] = field(default_factory=list)
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    config: str | None = None
    report: str = "text"
    report_file: str | None = None
    children: bool = True
    cache: bool = True
    exact: str | None = None


def parse(argv: Sequence[str]) -> Options | None:
    """The options, or None for ``--help``; raises :class:`UsageError` with one line."""
    options = Options()
    values: Dict[str, List[str]] = {}
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word in ("-h", "--help"):
            return None
        if word == "-m" or (word.startswith("-m") and not word.startswith("--")):
            module = word[2:]
            if not module:
                if index >= len(argv):
                    raise UsageError("-m needs a module name")
                module, index = argv[index], index + 1
            options.module, options.args = module, list(argv[index:])
            break
        if word == "--":
            if index >= len(argv):
                raise UsageError("missing SCRIPT (or -m MODULE)")
            options.script, options.args = argv[index], list(argv[index + 1:])
            break
        name, equals, value = word.partition("=")
        if name in _WITH_VALUE:
            if not equals:
                if index >= len(argv):
                    raise UsageError(f"{name} needs a value")
                value, index = argv[index], index + 1
            values.setdefault(name, []).append(value)
        elif word in _FLAGS:
            values.setdefault(word, []).append("")
        elif word.startswith("-") and word != "-":
            raise UsageError(f"no such option: {word} (options go before the script; `np2torch run --help`)")
        else:
            options.script, options.args = word, list(argv[index:])
            break
    if options.script is None and options.module is None:
        raise UsageError("missing SCRIPT (or -m MODULE)")
    _apply(options, values)
    return options


def _apply(options: Options, values: Dict[str, List[str]]) -> None:
    options.include = values.get("--include", [])
    options.exclude = values.get("--exclude", [])
    try:
        if "--select" in values:
            options.select = check_selectors(split_codes(values["--select"]))
        options.extend_select = check_selectors(split_codes(values.get("--extend-select", [])))
        options.ignore = check_selectors(split_codes(values.get("--ignore", [])))
    except (ConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    options.unsafe_fixes = "--unsafe-fixes" in values
    options.children = "--no-children" not in values
    options.cache = "--no-cache" not in values
    options.config = values["--config"][-1] if "--config" in values else None
    options.report_file = values["--report-file"][-1] if "--report-file" in values else None
    exact = values["--exact"][-1] if "--exact" in values else None
    if exact not in (None, "ulp", "bits"):
        raise UsageError(f"--exact must be ulp or bits, not {exact!r}")
    options.exact = exact
    report = values["--report"][-1] if "--report" in values else "text"
    if report not in ("text", "json", "none"):
        raise UsageError(f"--report must be text, json or none, not {report!r}")
    options.report = report


def _fail(message: str, code: int) -> NoReturn:
    print(f"np2torch run: {message}", file=sys.stderr)
    sys.exit(code)


@click.command("run", add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def command(argv: tuple[str, ...]) -> None:
    """Run a program with the rewrite applied in memory; report what each call site saved."""
    try:
        options = parse(argv)
    except UsageError as exc:
        _fail(f"{exc}", 2)
    if options is None:
        click.echo(USAGE, nl=False)
        return
    main(options)


def main(options: Options) -> NoReturn:
    """Run the program under the options; never returns (the program's exit is the process's)."""
    from np2torch.cli.projects import project_root
    from np2torch.run import at_exit
    from np2torch.run.children import Run, activate, flush, follow_children
    from np2torch.run.hook import Scope, ScopeError
    from np2torch.run.program import Program, ProgramError, execute

    program = Program(options.script, options.module, tuple(options.args))
    if options.report_file:
        options.report_file = os.path.abspath(options.report_file)  # where it is now: the program may chdir
    try:
        scope = Scope.build([project_root(program.folder())], options.include, options.exclude)
    except ScopeError as exc:
        _fail(str(exc), 2)
    overrides = Overrides(select=options.select, ignore=options.ignore, extend_select=options.extend_select,
                          unsafe_fixes=True if options.unsafe_fixes else None)
    spool = tempfile.mkdtemp(prefix="np2torch-run-") if options.children else None
    try:
        run = Run(scope, overrides, options.config, spool, os.getpid(), cache=options.cache)
    except ConfigError as exc:
        _fail(str(exc), 2)
    _set_exact(options.exact or _configured_exact(program.folder(), options.config))
    run.report = {"mode": options.report, "file": options.report_file, "command": program.command,
                  "started": time.time()}
    activate(run)
    if options.children:
        follow_children(run)
    outcome: Dict[str, Optional[int]] = {"status": None}
    start = time.perf_counter()

    def report_at_exit() -> None:
        if os.getpid() != run.owner:  # a child forked by the program itself: its counts go to the spool
            flush()
            return
        at_exit.report(run, options.report, options.report_file, program.command, time.perf_counter() - start,
                       outcome["status"])

    def before() -> None:  # registered once the program is in place: after its atexit handlers, it reports
        atexit.register(report_at_exit)

    try:
        status = execute(program, run.rewriter, before=before)
    except ProgramError as exc:
        if spool:
            shutil.rmtree(spool, ignore_errors=True)
        _fail(str(exc), exc.code)
    except SystemExit as exc:
        code = exc.code
        outcome["status"] = code if isinstance(code, int) else (0 if code is None else 1)
        raise
    outcome["status"] = status
    sys.exit(status)


def _configured_exact(folder: str, config_path: str | None) -> str | None:
    """``exact`` from the configuration that governs the program's folder (``--config``'s file if given)."""
    from np2torch.cli.config import ConfigFinder, load_explicit_config

    try:
        override = None if config_path is None else load_explicit_config(config_path)
        return ConfigFinder(override).for_file(os.path.join(os.path.abspath(folder), "__main__.py")).exact
    except ConfigError as exc:
        _fail(str(exc), 2)


def _set_exact(exact: str | None) -> None:
    """The runtime's exactness for the program and its children (NP2TORCH_EXACT; the runtime, if already imported,
    configured to it)."""
    if exact is None:
        return
    os.environ["NP2TORCH_EXACT"] = exact
    if "np2torch.runtime._state" in sys.modules:
        from np2torch.runtime import configure

        configure(exact=exact)
