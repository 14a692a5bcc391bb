"""A redis-py workload for `maintwatch simulate --grade` (tests/it/redis_py.rs).

A connection pool shared by a few threads doing SET / GET / INCR in a loop for a given time, with
redis-py's maintenance notifications enabled, connected by the simulator's hostname (or by an
address, when --host is one: then nothing is resolved). The machine's
resolver cannot know that name (and /etc/hosts is not to be touched), so `socket.getaddrinfo` is
wrapped for that one name only: it asks the simulator's DNS server, on every call, as the system
resolver would with a short TTL. Everything else is redis-py's own code path.

Prints one JSON line: operations done, errors by type, and the library version.
"""

import argparse
import ipaddress
import json
import random
import socket
import struct
import threading
import time

import redis
from redis.maint_notifications import MaintNotificationsConfig


def query_a(name, server):
    """The A records of `name` from a DNS server (host, port), over UDP."""
    tid = random.randrange(1 << 16)
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.strip(".").split("."))
    packet = struct.pack(">HHHHHH", tid, 0x0100, 1, 0, 0, 0) + question + b"\0"
    packet += struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(packet, server)
        data = s.recv(4096)
    if struct.unpack(">H", data[:2])[0] != tid:
        raise OSError("DNS reply for another query")
    answers = struct.unpack(">H", data[6:8])[0]
    pos = 12
    while data[pos] != 0:
        pos += data[pos] + 1
    pos += 5
    ips = []
    for _ in range(answers):
        if data[pos] & 0xC0 == 0xC0:
            pos += 2
        else:
            while data[pos] != 0:
                pos += data[pos] + 1
            pos += 1
        rtype, _, _, length = struct.unpack(">HHIH", data[pos : pos + 10])
        pos += 10
        if rtype == 1 and length == 4:
            ips.append(socket.inet_ntoa(data[pos : pos + 4]))
        pos += length
    return ips


def hook_resolver(name, server):
    original = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, str) and host.strip(".") == name.strip("."):
            ips = query_a(name, server)
            if not ips:
                raise socket.gaierror(socket.EAI_NONAME, "no A records")
            return [
                (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (ip, int(port)))
                for ip in ips
            ]
        return original(host, port, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dns", required=True, help="the simulator's DNS server, ip:port")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--threads", type=int, default=3)
    args = ap.parse_args()
    dns_host, dns_port = args.dns.rsplit(":", 1)
    try:
        ipaddress.ip_address(args.host)  # connected by address: nothing to resolve
    except ValueError:
        hook_resolver(args.host, (dns_host, int(dns_port)))

    pool = redis.ConnectionPool(
        host=args.host,
        port=args.port,
        protocol=3,
        socket_timeout=5,
        maint_notifications_config=MaintNotificationsConfig(enabled=True),
    )
    client = redis.Redis(connection_pool=pool)
    stop = time.monotonic() + args.seconds
    ops = [0]
    errors = {}
    lock = threading.Lock()

    def work(n):
        key = f"workload:{n}"
        while time.monotonic() < stop:
            try:
                client.set(key, "v")
                client.get(key)
                client.incr(f"{key}:count")
                with lock:
                    ops[0] += 3
            except Exception as e:  # every failure is counted, by type
                with lock:
                    errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                time.sleep(0.05)
            time.sleep(0.01)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"redis": redis.__version__, "ops": ops[0], "errors": errors}))


if __name__ == "__main__":
    main()
