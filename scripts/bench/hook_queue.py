#!/usr/bin/env python3
"""Issue 25 item 12, the --exec queue with big lines: a server on 127.0.0.1 that answers the
handshake, then sends COUNT MOVINGs whose target is a 4 MB host name, while the hook (`sleep 5`)
is slower than them. Prints the watch's peak RSS (VmHWM) after `--duration DURATION` (10s), and its exit.

    scripts/bench/hook_queue.py target/release/maintwatch LABEL [COUNT [DURATION]]
"""
import socket, subprocess, sys, threading, time
BIN, LABEL = sys.argv[1], sys.argv[2]
COUNT = int(sys.argv[3]) if len(sys.argv) > 3 else 300
DURATION = sys.argv[4] if len(sys.argv) > 4 else "10s"
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(5)
port = srv.getsockname()[1]
target = b"h" * (4 << 20) + b":6379"
def serve():
    c, _ = srv.accept()
    c.recv(4096); c.sendall(b"%2\r\n$6\r\nserver\r\n$5\r\nflood\r\n$5\r\nproto\r\n:3\r\n")
    c.recv(4096); c.sendall(b"+OK\r\n")
    try:
        for i in range(COUNT):
            c.sendall(b">4\r\n$6\r\nMOVING\r\n:%d\r\n:15\r\n$%d\r\n%s\r\n" % (i, len(target), target))
        time.sleep(60)
    except OSError: pass
threading.Thread(target=serve, daemon=True).start()
args = ["/usr/bin/time", "-f", "%M", BIN, "watch", "redis://127.0.0.1:%d" % port, "--no-handoff",
        "--no-dns", "--json", "--exec", "sleep 5", "--exec-timeout", "1s", "--duration", DURATION]
p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
err = p.stderr.decode(errors="replace").strip().splitlines()
print(f"{LABEL}: peak RSS {int(err[-1]) // 1024} MiB; exit {p.returncode}; {len(err) - 1} stderr lines, e.g. {[l[:120] for l in err if 'exec' in l][:2]}")
