"""Does this kernel give what the compiled bench reader relies on? Prints one JSON object.

The reader (rigbook/bench/_reader.c) asks each stream's socket for the kernel's receive stamp
(SO_TIMESTAMPNS, read back as a control message of recvmsg) and reads the handshake's round trip
from TCP_INFO. A sandboxed kernel (gVisor's, say) may accept the option and send no stamp; this says
what it does, on a loopback connection that writes three events 20 ms apart. The GPU machine's
kernel on 2026-12-06 (Linux 6.18 in a VM) gave both: benchmarks/runs/2026-12-06-h200-client-compiled/2026-12-06-compiled.txt.

    python3 benchmarks/scripts/h200/client/kernel-stamps-probe.py
"""

from __future__ import annotations

import json
import os
import platform
import socket
import struct
import time

SCM_TIMESTAMPNS = getattr(socket, "SCM_TIMESTAMPNS", 35)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def main() -> None:
    report: dict = {"kernel": platform.release(), "python": platform.python_version()}
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
        with client, peer:
            try:
                client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                report["so_timestampns_set"] = True
            except OSError as exc:
                report["so_timestampns_set"] = f"{type(exc).__name__}: {exc}"
            try:
                info = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
                report["tcp_info_bytes"] = len(info)
                if len(info) >= 104:
                    report["tcp_info_rtt_us"] = struct.unpack_from("I", info, 68)[0]
                    report["tcp_info_total_retrans"] = struct.unpack_from("I", info, 100)[0]
            except OSError as exc:
                report["tcp_info_bytes"] = f"{type(exc).__name__}: {exc}"
            reads = []
            for k in range(3):
                sent_real = time.time()
                peer.sendall(b"data: {}\n\n")
                time.sleep(0.02)  # the read comes 20 ms after the bytes arrived
                data, ancillary, _, _ = client.recvmsg(4096, socket.CMSG_SPACE(16))
                read_real = time.time()
                stamp = None
                for level, kind, value in ancillary:
                    if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", value[:16])
                        stamp = sec + nsec * 1e-9
                reads.append(
                    {
                        "bytes": len(data),
                        "stamped": stamp is not None,
                        "stamp_after_send_ms": None if stamp is None else 1e3 * (stamp - sent_real),
                        "read_after_send_ms": 1e3 * (read_real - sent_real),
                    }
                )
            report["reads"] = reads
    report["pid"] = os.getpid()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
