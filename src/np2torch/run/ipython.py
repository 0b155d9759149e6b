"""``%load_ext np2torch``: the rewrite of ``np2torch run`` applied to every IPython or Jupyter cell run afterwards.

IPython parses a cell, hands the tree to its ``ast_transformers``, and
compiles what they return; the extension's transformer rewrites the cell's
calls into call sites (:func:`np2torch.run.instrument.instrument_tree`) and
registers the sites before the cell runs (:func:`np2torch.runtime.sites.register`:
in :mod:`builtins`, as ``np2torch run`` does; the user's namespace is left
alone).  Nothing is added to the cell: every node keeps its line and columns,
so a traceback points where it points without the extension.

The linter resolves names statically, and a cell's names were bound by the
cells before it (``import numpy as np`` in one, ``np.exp(x)`` in the next): a
cell is analysed after the text of the cells run before it in this session
(those in IPython's history when the extension was loaded, then each cell it
saw), and only the cell's own findings count.  The text analysed is the cell
as IPython parsed it, after its input transformations (``%magic`` lines become
``get_ipython()`` calls), recorded by a last ``input_transformers_post`` entry
that changes nothing; when it does not parse to the tree the transformer is
given (another transformer changed it), ``ast.unparse(tree)`` is analysed.

Code that IPython's ``%time``/``%timeit`` (and ``%%time``/``%%timeit``) compile
goes through the transformer too, and that is not a cell: its sites count but
never run the original (:func:`np2torch.runtime.sites.table` with
``sample=False``), and while those magics run no site samples
(:func:`np2torch.runtime.sites.paused`), so ``%timeit f(x)`` times the helpers
only.  Their calls are in the report as ``<In[N] %timeit>``.

``%np2torch report`` prints the report of ``np2torch run`` for the cells so far
(``--json``, ``--file PATH``).  ``[tool.np2torch]`` comes from the
``pyproject.toml`` nearest the working directory, read as ``np2torch run``
reads it (:class:`np2torch.run.hook.Rewriter`); ``%np2torch options`` takes
what ``np2torch run`` takes on its command line (``--select``, ``--ignore``,
``--unsafe-fixes``) for the cells that follow.  ``%unload_ext np2torch``
restores plain execution; functions defined meanwhile keep their sites and go on
counting, and ``%np2torch report`` stays to report them (when the extension
rewrote anything).  A new ``%load_ext np2torch`` starts a fresh report: every
site counts from zero, and the time is that since the new load.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
import shlex
import sys
import time
from typing import Callable, Dict, List, Protocol, Tuple, TypeVar

from np2torch.cli.config import ConfigError, Overrides, check_selectors, split_codes
from np2torch.lint.model import SourceError
from np2torch.run import report
from np2torch.run.hook import Rewriter, Scope, Skipped
from np2torch.run.instrument import TreeMismatch, instrument_tree
from np2torch.runtime import sites

_T = TypeVar("_T")
_Magic = Callable[..., object]


class _Events(Protocol):
    def register(self, event: str, function: Callable[..., None]) -> None: ...

    def unregister(self, event: str, function: Callable[..., None]) -> None: ...


class _MagicsManager(Protocol):
    magics: Dict[str, Dict[str, _Magic]]
    """Kind (``line``, ``cell``) -> name -> the magic."""


class Shell(Protocol):
    """What the extension uses of IPython's ``InteractiveShell``."""

    execution_count: int
    input_transformers_post: List[Callable[[List[str]], List[str]]]
    ast_transformers: List[ast.NodeTransformer]
    events: _Events
    magics_manager: _MagicsManager

    def find_magic(self, magic_name: str, magic_kind: str = ...) -> _Magic | None: ...

    def register_magic_function(self, func: _Magic, magic_kind: str = ..., magic_name: str | None = ...) -> None: ...

TIMED = ("time", "timeit")
"""IPython's magics that time the code they compile: no site samples while they run."""


class _Transformer(ast.NodeTransformer):
    """What IPython calls: ``visit(tree)`` for each cell (and each tree a magic compiles)."""

    def __init__(self, extension: Extension) -> None:
        self.extension = extension

    def visit(self, node: ast.AST) -> ast.AST:
        return self.extension.transform(node) if isinstance(node, ast.Module) else node


class Extension:
    """The extension in one shell: its hooks, the cells seen, what was left as it was."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.rewriter = Rewriter(Scope((os.getcwd(),)), Overrides(), cache=False, warn=_stderr)
        history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None) or [""]
        self.cells: List[str] = [_line_ended(text) for text in history[1:] if _parses(text)]
        """The text of the cells run so far in this session: what a cell is analysed after."""
        self.recorded: str | None = None
        """The last text IPython transformed (a cell's, or the statement a magic compiles)."""
        self.cell: Tuple[int, str | None] | None = None
        """The number and text of the cell whose tree comes next (set when IPython announces a cell)."""
        self.number = shell.execution_count
        self.magic: str | None = None
        """The timing magic running now (``%timeit``, ``%%time``; ``%timeit 2`` for the cell's second), if any."""
        self.magics_run = 0
        """Timing magics the current cell has run."""
        self.serial = 0
        self.start = time.perf_counter()
        self.transformer = _Transformer(self)
        self.timed: Dict[Tuple[str, str], Callable[..., object]] = {}
        """The magics replaced by a pausing wrapper: (kind, name) -> IPython's own."""
        self.labels: set[str] = set()
        """The labels of the cells (and timed statements) this load registered sites for."""
        self.loaded = True
        """False once ``%unload_ext``: cells run plain, ``%np2torch report`` still reports this load's sites."""

    # -- IPython's hooks ---------------------------------------------------------------------------------

    def install(self) -> None:
        shell = self.shell
        shell.input_transformers_post.append(self.record)
        shell.ast_transformers.append(self.transformer)
        shell.events.register("pre_run_cell", self.pre_run_cell)
        shell.events.register("post_run_cell", self.post_run_cell)
        magics = shell.magics_manager.magics
        for kind in ("line", "cell"):
            for name in TIMED:
                # find_magic loads a magic IPython registered lazily (its stand-in would look itself up again
                # in the table, and find the wrapper)
                original = shell.find_magic(name, kind)
                if original is not None:
                    self.timed[(kind, name)] = original
                    magics[kind][name] = self._pausing(original, ("%%" if kind == "cell" else "%") + name)
        shell.register_magic_function(self.command, "line", "np2torch")

    def uninstall(self) -> None:
        shell = self.shell
        _remove(shell.input_transformers_post, self.record)
        _remove(shell.ast_transformers, self.transformer)
        for event, callback in (("pre_run_cell", self.pre_run_cell), ("post_run_cell", self.post_run_cell)):
            try:
                shell.events.unregister(event, callback)
            except ValueError:
                pass
        magics = shell.magics_manager.magics
        for (kind, name), original in self.timed.items():
            if getattr(magics[kind].get(name), "__wrapped__", None) is original:
                magics[kind][name] = original
        self.loaded = False
        if not self.labels and getattr(magics["line"].get("np2torch"), "__self__", None) is self:
            del magics["line"]["np2torch"]  # nothing of this load can count: nothing to report

    def record(self, lines: List[str]) -> List[str]:
        """The last input transformation: remembers the text, changes nothing."""
        self.recorded = "".join(lines)
        return lines

    def pre_run_cell(self, info: object) -> None:
        """IPython is about to parse a cell (it has transformed its text): the next tree is that cell's."""
        self.number = self.shell.execution_count - (1 if getattr(info, "store_history", False) else 0)
        self.cell = (self.number, self.recorded)
        self.magics_run = 0

    def post_run_cell(self, result: object) -> None:
        """The cell is done (or never parsed): a tree that comes now is not a cell's (code run silently)."""
        self.cell = None

    def _pausing(self, original: Callable[..., object], label: str) -> Callable[..., object]:
        @functools.wraps(original)
        def magic(*args: object, **kwargs: object) -> object:
            self.magics_run += 1
            outer, self.magic = self.magic, label + (f" {self.magics_run}" if self.magics_run > 1 else "")
            try:
                with sites.paused():
                    return original(*args, **kwargs)
            finally:
                self.magic = outer

        needs = getattr(original, "needs_local_scope", None)  # IPython reads it off the function it calls
        if needs is not None:
            magic.needs_local_scope = needs  # type: ignore[attr-defined]
        return magic

    # -- the rewrite -------------------------------------------------------------------------------------

    def transform(self, tree: ast.Module) -> ast.Module:
        """The cell's (or a magic's) tree with its call sites, registered; ``tree`` when there is nothing to
        rewrite or it cannot be rewritten (one line on stderr)."""
        cell, self.cell = self.cell, None
        if cell is not None:
            number, text = cell
            label, sample = f"<In[{number}]>", True
        else:
            text = None
            label, sample = f"<In[{self.number}] {self.magic or 'code'}>", False
        try:
            settings = self.rewriter.settings_for(os.path.join(os.getcwd(), "<cell>"), True)
        except ConfigError as exc:
            _stderr(f"np2torch: {exc}; {label} runs unchanged")
            return tree
        if settings is None:
            return tree
        self.serial += 1
        key = f"{label}#{self.serial}"
        prefix = "".join(self.cells)
        rewritten = copy.deepcopy(tree)
        try:
            try:
                text = text if text is not None else ast.unparse(tree)
                result = instrument_tree(rewritten, text, label, settings.lint, key=key, prefix=prefix)
            except TreeMismatch:
                text = ast.unparse(tree)
                rewritten = copy.deepcopy(tree)
                result = instrument_tree(rewritten, text, label, settings.lint, key=key, prefix=prefix)
        except SourceError as exc:
            line = (exc.line or 0) - prefix.count("\n")
            where = f"{label}:{line}:{exc.column}: {exc}" if line > 0 else f"{label}: {exc}" + (
                " (in the cells before it)" if exc.line else "")
            _stderr(f"np2torch: {where}; it runs unchanged")
            return tree
        except Exception as exc:  # a bug in np2torch must not change the cell: run it as it is
            _stderr(f"np2torch: {label}: cannot rewrite ({type(exc).__name__}: {exc}); it runs unchanged")
            return tree
        if cell is not None:
            self.cells.append(_line_ended(text))
        self.rewriter.skipped.extend(Skipped(label, f.line, f.column, f.code, f.reason or "")
                                     for f in result.not_rewritten)
        if not result.sites:
            return tree
        sites.register(key, label, result.sites, sample=sample)
        self.labels.add(label)
        return rewritten

    # -- %np2torch -----------------------------------------------------------------------------------------

    def report(self) -> report.Report:
        """The report of ``np2torch run`` since this load: the calls of every site (a function of a cell before
        it counts too) since then, the sites of this load's cells that were not called, the time since then."""
        command = ["%load_ext", "np2torch", f"(cells up to In[{self.number}])" + ("" if self.loaded else ", unloaded")]
        skipped = [item.as_dict() for item in self.rewriter.skipped]
        records = [record for record in sites.snapshot() if record["path"] in self.labels or record["bands"]]
        return report.build(command, time.perf_counter() - self.start, records, skipped, {}, None)

    def command(self, line: str) -> None:
        """``%np2torch report [--json] [--file PATH]`` / ``%np2torch options [--select CODES] [--ignore CODES]
        [--unsafe-fixes]``; a mistake is one line, and the usage, on stderr."""
        try:
            words = shlex.split(line)
            verb = words[0] if words else ""
            if verb not in SUBCOMMANDS:
                raise UsageError(f"{verb!r} is not a subcommand" if verb else "a subcommand is missing")
            given = _parse(words[1:], SUBCOMMANDS[verb])
            if verb == "report":
                self.print_report(given.get("--json") is not None, given.get("--file"))
            elif not self.loaded:
                raise UsageError("the extension is unloaded: options apply to the cells it rewrites "
                                 "(%load_ext np2torch)")
            else:
                self.set_options(given)
        except (UsageError, ConfigError, ValueError) as exc:
            _stderr(f"np2torch: {exc}\n{USAGE}")

    def print_report(self, as_json: bool, path: str | None) -> None:
        built = self.report()
        if path is not None:
            try:
                with open(path, "w", encoding="utf-8") as file:
                    file.write(report.dump(built) + "\n")
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        if path is None or as_json:
            print(report.dump(built) if as_json else report.text(built))

    def set_options(self, given: Dict[str, str]) -> None:
        """What ``np2torch run``'s command line says, for the cells run from now on (all of it: what is not
        given goes back to the default)."""
        select = check_selectors(split_codes([given["--select"]])) if "--select" in given else None
        ignore = check_selectors(split_codes([given["--ignore"]])) if "--ignore" in given else ()
        overrides = Overrides(select=select, ignore=ignore, unsafe_fixes="--unsafe-fixes" in given)
        rewriter = Rewriter(self.rewriter.scope, overrides, cache=False, warn=_stderr)
        rewriter.skipped = self.rewriter.skipped
        self.rewriter = rewriter
        print("np2torch: the next cells run with "
              + ", ".join([f"--select {','.join(select)}" if select is not None else "the selection of [tool.np2torch]",
                           *([f"--ignore {','.join(ignore)}"] if ignore else []),
                           "unsafe fixes" if overrides.unsafe_fixes else "no unsafe fix"]))


class UsageError(Exception):
    """A ``%np2torch`` line that cannot be done; one line."""


SUBCOMMANDS: Dict[str, Dict[str, bool]] = {
    "report": {"--json": False, "--file": True},
    "options": {"--select": True, "--ignore": True, "--unsafe-fixes": False},
}
"""Each subcommand's options: whether it takes a value."""

USAGE = ("usage: %np2torch report [--json] [--file PATH]\n"
         "       %np2torch options [--select CODES] [--ignore CODES] [--unsafe-fixes]")


def _parse(words: List[str], options: Dict[str, bool]) -> Dict[str, str]:
    """``--name value``, ``--name=value`` and flags (value ``""``), each at most once."""
    given: Dict[str, str] = {}
    rest = list(words)
    while rest:
        name, equals, value = rest.pop(0).partition("=")
        if name not in options:
            raise UsageError(f"unexpected {name!r}")
        if options[name] and not equals:
            if not rest:
                raise UsageError(f"{name} needs a value")
            value = rest.pop(0)
        elif not options[name] and equals:
            raise UsageError(f"{name} takes no value")
        if name in given:
            raise UsageError(f"{name} given twice")
        given[name] = value
    return given


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _line_ended(text: str) -> str:
    """History keeps a cell without its last newline; the next cell starts on a line of its own."""
    return text if text.endswith("\n") else text + "\n"


def _remove(items: List[_T], item: _T) -> None:
    while item in items:
        items.remove(item)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_LOADED: Dict[int, Extension] = {}
"""id(shell) -> its extension."""


def load(shell: Shell) -> None:
    """``%load_ext np2torch`` (IPython calls it once per shell until unloaded)."""
    if id(shell) in _LOADED:
        return
    sites.clear()  # a fresh report: what an earlier load counted is not this load's
    extension = Extension(shell)
    extension.install()
    _LOADED[id(shell)] = extension


def unload(shell: Shell) -> None:
    """``%unload_ext np2torch``: cells run as they are again."""
    extension = _LOADED.pop(id(shell), None)
    if extension is not None:
        extension.uninstall()
