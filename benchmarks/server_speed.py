"""How long the language server takes to publish a file's diagnostics, next to `np2torch check` of the file.

    .venv/bin/python benchmarks/server_speed.py                      # 1k, 4k, 16k and 50k lines
    .venv/bin/python benchmarks/server_speed.py --lines 1000 4000 --burst 8000

Each file has two findings a line (``np.exp`` and ``np.log``), as issue 25
measured.  The server is driven as an editor drives it: pygls's client over
stdio opens the file and waits for its diagnostics.  Columns, per size:

* server: from ``didOpen`` to the diagnostics, wall seconds and the server
  process's CPU seconds (user + system, from /proc/PID/stat: Linux only);
* check: ``python -m np2torch check --no-cache`` of the same file as a child
  process (its start and imports included), wall and CPU seconds
  (``resource.getrusage(RUSAGE_CHILDREN)``);
* the ratio server/check of CPU seconds.

``--burst LINES``: ten edits of a file of LINES lines, ``--pause`` seconds apart
(0.1 s: a typist; 1 s or more: edits that come while an analysis runs),
then the seconds from the last edit to the diagnostics of the last version,
against one analysis of it (an edit analysed alone); the server's CPU seconds
for the whole burst against those of the one analysis; which versions were published.

Timings on a busy machine are noise: compare CPU seconds, and rerun on a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

HEADER = "import numpy as np\n\n"


def two_findings_a_line(lines: int) -> str:
    return HEADER + "".join(f"y{n} = np.exp(x) + np.log(x)\n" for n in range(lines))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Session:
    """One server, and the diagnostics it published (per URI: a list of (version, count, when))."""

    def __init__(self) -> None:
        self.client = LanguageClient("server-speed", "1")
        self.published: dict[str, list[tuple[int | None, int, float]]] = {}
        self.arrived = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(
                (params.version, len(params.diagnostics), time.perf_counter()))
            self.arrived.set()

    async def start(self, cwd: Path) -> int:
        await self.client.start_io(sys.executable, "-m", "np2torch", "server", cwd=str(cwd))
        await self.client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(),
                                                                  root_uri=from_fs_path(str(cwd))))
        self.client.initialized(types.InitializedParams())
        return int(self.client._server.pid)  # pygls keeps the server's process there

    async def version(self, uri: str, version: int) -> tuple[int, float]:
        """Wait for the diagnostics of ``uri`` at ``version``: their count and arrival time."""
        while True:
            for got, count, when in self.published.get(uri, []):
                if got == version:
                    return count, when
            self.arrived.clear()
            await self.arrived.wait()

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def server_time(path: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds from opening ``path`` to its diagnostics, and how many there were."""
    session = Session()
    pid = await session.start(path.parent)
    uri = from_fs_path(str(path)) or ""
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    count, when = await session.version(uri, 1)
    used = cpu_seconds(pid) - cpu
    await session.stop()
    return when - start, used, count


def check_time(path: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "np2torch", "check", "--no-cache", "-q", str(path)],
                   cwd=path.parent, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def burst(path: Path, edits: int = 10, pause: float = 0.1) -> None:
    session = Session()
    pid = await session.start(path.parent)
    uri = from_fs_path(str(path)) or ""
    text = path.read_text()
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    await session.version(uri, 1)
    # one analysis of the file, measured as a change the server has to analyse alone
    cpu, start = cpu_seconds(pid), time.perf_counter()
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangeWholeDocument(text=text + "z = np.exp(x)\n")]))
    _count, when = await session.version(uri, 2)
    one, one_cpu = when - start, cpu_seconds(pid) - cpu
    cpu = cpu_seconds(pid)
    for n in range(edits):
        session.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=3 + n),
            [types.TextDocumentContentChangeWholeDocument(text=text + "z = np.exp(x)\n" * (n + 2))]))
        last = time.perf_counter()
        await asyncio.sleep(pause)
    _count, when = await session.version(uri, 2 + edits)
    versions = [version for version, _n, _when in session.published[uri]]
    information = await session.client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="np2torch.printDebugInformation"))
    print(f"burst: {edits} edits {pause:.1f} s apart of {path.stat().st_size // 1000} kB: latest diagnostics "
          f"{when - last:.2f} s after the last edit, one analysis {one:.2f} s (ratio {(when - last) / one:.2f}); "
          f"server CPU for the burst {cpu_seconds(pid) - cpu:.2f} s, for one analysis {one_cpu:.2f} s; "
          f"versions published {versions}; analyses {information['documents'][uri]['analyses']}, "
          f"{information['interruptedAnalyses']} of them stopped by an edit")
    await session.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--lines", type=int, nargs="*", default=[1000, 4000, 16000, 50000])
    parser.add_argument("--burst", type=int, metavar="LINES", help="also time ten quick edits of LINES lines")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between the burst's edits (0.1)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'lines':>7} {'findings':>9} {'server wall':>12} {'server CPU':>11} {'check wall':>11} "
              f"{'check CPU':>10} {'CPU ratio':>10}")
        for lines in args.lines:
            path = Path(folder, f"m{lines}.py")
            path.write_text(two_findings_a_line(lines))
            wall, cpu, count = asyncio.run(server_time(path))
            check_wall, check_cpu = check_time(path)
            print(f"{lines:>7} {count:>9} {wall:>11.2f}s {cpu:>10.2f}s {check_wall:>10.2f}s {check_cpu:>9.2f}s "
                  f"{cpu / check_cpu:>10.2f}")
        if args.burst:
            path = Path(folder, f"burst{args.burst}.py")
            path.write_text(two_findings_a_line(args.burst))
            asyncio.run(burst(path, pause=args.pause))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
