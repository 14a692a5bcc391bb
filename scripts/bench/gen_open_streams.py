#!/usr/bin/env python3
"""Writes a pcap of N RESP connections that are opened and left open, for docs/benchmarks.md's
"open streams" rows: each connection is a SYN, SYN-ACK, ACK, HELLO 3 and its reply, and every
tenth one gets a MOVING. The same shape as tests/it/pcap_robust.rs's `open_streams`. TCP and IP
checksums are left at zero (the reader does not check them).

    scripts/bench/gen_open_streams.py N FILE
"""
import struct
import sys

HELLO = b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
REPLY = (b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n"
         b"$5\r\nproto\r\n:3\r\n")
MOVING = b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n"
T0 = 1_795_953_600 * 1_000_000


def frame(src, sport, dst, dport, seq, ack, flags, payload):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      5 << 4, flags, 64000, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000,
                     64, 6, 0, bytes(src), bytes(dst))
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
    return eth + ip + tcp + payload


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    server = [10, 0, 0, 9]
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

        def rec(us, data):
            f.write(struct.pack("<IIII", us // 1_000_000, us % 1_000_000, len(data), len(data)))
            f.write(data)

        for i in range(n):
            client = [10, 1 + i // 65536 % 200, i // 256 % 256, i % 256]
            port = 20000 + i % 40000
            c, s = i, i * 7
            us = T0 + i * 100
            rec(us, frame(client, port, server, 12000, c, 0, 0x02, b""))
            rec(us + 50, frame(server, 12000, client, port, s, c + 1, 0x12, b""))
            c, s = c + 1, s + 1
            rec(us + 100, frame(client, port, server, 12000, c, s, 0x10, b""))
            rec(us + 110, frame(client, port, server, 12000, c, s, 0x18, HELLO))
            c += len(HELLO)
            rec(us + 120, frame(server, 12000, client, port, s, c, 0x18, REPLY))
            s += len(REPLY)
            if i % 10 == 0:
                rec(us + 130, frame(server, 12000, client, port, s, c, 0x18, MOVING))


main()
