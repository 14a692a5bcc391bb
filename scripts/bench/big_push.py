#!/usr/bin/env python3
"""The large-aggregate measurement of issue 12: a tiny RESP3 server on 127.0.0.1 that answers the
watch's handshake, sends one push of N nulls in 64 KiB pieces (the last TRICKLE bytes one at a
time, TRICKLE_GAP seconds apart), then a MOVING so that `--count 1` ends the watch, and waits
for the client to close. It prints its port first.

    coproc S { scripts/bench/big_push.py 10000000 0; }; read -r port <&"${S[0]}"
    /usr/bin/time -v target/release/maintwatch watch redis://127.0.0.1:$port --count 1 \
        --no-dns --no-handoff --no-cluster > /dev/null
"""
import socket, sys, time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
trickle = int(sys.argv[2]) if len(sys.argv) > 2 else 0
push = b">%d\r\n" % n + b"_\r\n" * n

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
buf = b""
def command():
    global buf
    while True:
        if buf.startswith(b"*"):
            lines = buf.split(b"\r\n")
            count = int(lines[0][1:])
            if len(lines) >= 1 + 2 * count + 1:
                args = [lines[2 + 2 * i] for i in range(count)]
                used = sum(len(l) + 2 for l in lines[: 1 + 2 * count])
                buf = buf[used:]
                return args
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
hello = b"%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n$5\r\nproto\r\n:3\r\n"
while True:
    args = command()
    if args is None:
        sys.exit(0)
    name = args[0].upper()
    if name == b"HELLO":
        conn.sendall(hello)
    elif name == b"CLIENT" and args[1].upper() == b"MAINT_NOTIFICATIONS":
        conn.sendall(b"+OK\r\n")
        break
    else:
        conn.sendall(b"+OK\r\n")
start = time.time()
body = push[: len(push) - trickle]
for i in range(0, len(body), 65536):
    conn.sendall(body[i : i + 65536])
for i in range(len(body), len(push)):
    conn.sendall(push[i : i + 1])
    time.sleep(float(__import__("os").environ.get("TRICKLE_GAP", "0.001")))
conn.sendall(b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n_\r\n")
print("sent %d bytes in %.2f s" % (len(push), time.time() - start), file=sys.stderr, flush=True)
try:
    while conn.recv(65536):
        pass
except OSError:
    pass
