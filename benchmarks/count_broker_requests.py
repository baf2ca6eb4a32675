"""Which Kafka requests reach a broker, by client and API, from its loopback traffic (root).

    python benchmarks/count_broker_requests.py --port 9092 --seconds 20

Reads every TCP segment to ``--port`` on ``lo`` for ``--seconds`` (a raw ``AF_PACKET`` socket:
root only), reassembles each connection's byte stream and counts the requests in it (Kafka's
framing: a 4-byte length, then the API key, its version, the correlation id and the client id),
then prints the count of each (client id, API) pair, most first, with the load average. Run it
beside a benchmark to see what each submission costs the broker in requests; run it on an idle
system for the background (fetch long-polls, heartbeats, commits).
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import time
from collections import Counter
from pathlib import Path

APIS = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
        9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
        13: "LeaveGroup", 14: "SyncGroup", 18: "ApiVersions", 19: "CreateTopics",
        22: "InitProducerId", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn",
        27: "WriteTxnMarkers", 28: "TxnOffsetCommit", 32: "DescribeConfigs", 60: "DescribeCluster",
        68: "ConsumerGroupHeartbeat"}
_ETH_P_ALL = 0x0003
_MAX_FRAME = 64 << 20


def _requests(buffer: bytearray) -> list[tuple[str, str]]:
    """The whole requests at the start of ``buffer`` (removed from it): (client id, API)."""
    found = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">i", buffer)
        if size < 8 or size > _MAX_FRAME:  # not a frame boundary: lost sync, drop the rest
            buffer.clear()
            break
        if len(buffer) < 4 + size:
            break
        key, _version, _corr = struct.unpack_from(">hhi", buffer, 4)
        client = ""
        if size >= 10:
            (length,) = struct.unpack_from(">h", buffer, 12)
            if 0 <= length <= size - 10:
                client = bytes(buffer[14:14 + length]).decode(errors="replace")
        found.append((client, APIS.get(key, str(key))))
        del buffer[:4 + size]
    return found


def _owners(ports: set[int]) -> dict[int, str]:
    """Local TCP port → the process holding it (its pid and the end of its command line)."""
    inodes: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local = int(fields[1].rsplit(":", 1)[1], 16)
            if local in ports:
                inodes[f"socket:[{fields[9]}]"] = local
    owners: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = [os.readlink(fd) for fd in (proc / "fd").iterdir()]  # noqa: PTH115
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for link in links:
            if link in inodes:
                name = " ".join(w.decode(errors="replace") for w in words[-3:] if w)
                owners[inodes[link]] = f"{proc.name} {name[-40:]}"
    return owners


def count(port: int, seconds: float) -> Counter[tuple[str, str]]:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL))
    sock.bind(("lo", 0))
    sock.settimeout(0.2)
    streams: dict[tuple[int, int], bytearray] = {}
    expected: dict[tuple[int, int], int] = {}
    counts: Counter[tuple[str, str]] = Counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            frame, address = sock.recvfrom(262144)
        except TimeoutError:
            continue
        if address[2] == socket.PACKET_OUTGOING:  # lo shows each segment twice
            continue
        ip = frame[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        header = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        tcp = ip[header:total]
        src, dst, seq = struct.unpack_from(">HHI", tcp)
        if dst != port:
            continue
        payload = tcp[(tcp[12] >> 4) * 4:]
        if not payload:
            continue
        key = (src, dst)
        if key in expected and seq != expected[key]:  # a gap or a retransmission: resync
            streams[key] = bytearray()
            if seq < expected[key]:
                continue
        expected[key] = (seq + len(payload)) & 0xFFFFFFFF
        buffer = streams.setdefault(key, bytearray())
        buffer += payload
        counts.update((f"{client} port {src}", api) for client, api in _requests(buffer))
    owners = _owners({int(c.rsplit(" ", 1)[1]) for c, _ in counts})
    named: Counter[tuple[str, str]] = Counter()
    for (client, api), n in counts.items():
        src = int(client.rsplit(" ", 1)[1])
        named[(f"{client.rsplit(' port ', 1)[0]} ({owners.get(src, 'gone')})", api)] += n
    return named


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    counts = count(args.port, args.seconds)
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"requests to port {args.port} in {args.seconds:g} s (load {before} -> {after}): "
          f"{sum(counts.values())}")
    for (client, api), n in counts.most_common():
        print(f"{n:8d}  {api:20} {client}")


if __name__ == "__main__":
    main()
