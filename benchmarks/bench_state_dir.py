"""CPU of what a full-disk-aware process adds to its hot paths: one ``RocksStore.write`` of a
views-sized batch (10 rows of 600 B; the write now takes a lock and may call a hook), and one
``os.statvfs`` (a node daemon's pass looks before taking commands). Prints microseconds of CPU
per call and the 1-minute load average; run it from each tree in turn (docs/benchmarks.md).

    PYTHONPATH=. python benchmarks/bench_state_dir.py LABEL
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from streams.rocks import RocksStore

CALLS = 20_000


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "tree"
    directory = Path(tempfile.mkdtemp(prefix="bench-state-dir-"))
    store = RocksStore(directory / "db")
    rows = {f"job:{i:04d}".encode(): b"x" * 600 for i in range(10)}
    for _ in range(2000):  # warm the memtable
        store.write(rows)
    started = time.process_time()
    for _ in range(CALLS):
        store.write(rows)
    write_us = (time.process_time() - started) / CALLS * 1e6
    started = time.process_time()
    for _ in range(CALLS):
        os.statvfs(directory)
    statvfs_us = (time.process_time() - started) / CALLS * 1e6
    store.close()
    RocksStore.destroy(directory / "db")
    directory.rmdir()
    print(f"{label}: write {write_us:.2f} us CPU, statvfs {statvfs_us:.2f} us CPU, "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
