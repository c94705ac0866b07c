"""The events of a launched run's agents, read from their files in the run folder as they grow.

Each agent appends one JSON line per event to its own `events-rank<r>.jsonl` (`events.jsonl`
without a rank; a measure run's process k > 0: `events-rank<r>-<k>.jsonl`), named by the run
contract; `EventFiles.poll` returns the events of one process's files written since the last poll,
with the rank of the file they came from.

Invariants:
- Only whole lines are read: a line still being written is read by a later poll, whole.
- A file is found whenever it appears (the ranks are known from the files, not up front), and read
  from where the last poll stopped; a line that is no event of the contract is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...agent import protocol
from ...agent.protocol import Event


class EventFiles:
    def __init__(self, run_dir: Path, process: int = 0) -> None:
        self._run_dir = Path(run_dir)
        self._process = process
        self._read: dict[Path, int] = {}  # file -> bytes consumed (whole lines)

    def _files(self) -> list[tuple[Path, int | None]]:
        found = []
        try:
            names = os.listdir(self._run_dir)
        except OSError:
            return []
        for name in names:
            parsed = protocol.parse_run_file_name(name)
            if parsed.name == protocol.EVENTS and parsed.cycle == self._process:
                found.append((self._run_dir / name, parsed.rank))
        return sorted(found, key=lambda f: (f[1] is None, f[1] or 0))

    def poll(self) -> list[tuple[int | None, Event]]:
        """The events appended since the last poll, file by file (ranks in order), each file's in
        the order written."""
        out: list[tuple[int | None, Event]] = []
        for path, rank in self._files():
            start = self._read.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1  # whole lines only
            if not end:
                continue
            self._read[path] = start + end
            for line in chunk[:end].decode("utf-8", errors="replace").splitlines():
                event = protocol.decode_event(line)
                if event is not None:
                    out.append((rank, event))
        return out
