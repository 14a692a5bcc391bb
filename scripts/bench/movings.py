#!/usr/bin/env python3
"""Issue 12, memory after 100,000 distinct MOVINGs (one in ten declaring a window of i64::MAX
seconds): peak RSS and CPU of `watch --json`, and the size of its summary line.

    scripts/bench/movings.py target/release/maintwatch LABEL
"""
import socket, subprocess, sys, time, os, signal, threading
BIN, LABEL = sys.argv[1], sys.argv[2]
import tempfile
OUT = os.path.join(tempfile.mkdtemp(), "movings.out")
N = 100_000
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(5)
port = srv.getsockname()[1]
payload = b"".join(b">4\r\n$6\r\nMOVING\r\n:%d\r\n:%d\r\n_\r\n" % (i, (2**63-1) if i % 10 == 0 else 15) for i in range(N))
def serve():
    c, _ = srv.accept()
    c.recv(4096)
    c.sendall(b"%2\r\n$6\r\nserver\r\n$5\r\nflood\r\n$5\r\nproto\r\n:3\r\n")
    c.recv(4096)
    c.sendall(b"+OK\r\n")
    c.sendall(payload)
    time.sleep(600)
threading.Thread(target=serve, daemon=True).start()
out = open(OUT, "wb")
t0 = time.time()
p = subprocess.Popen([BIN, "watch", "redis://127.0.0.1:%d" % port, "--json"], stdout=out, stderr=subprocess.DEVNULL)
# wait until the output has N push lines (poll file size growth to settle)
last = -1
while True:
    time.sleep(2)
    size = os.path.getsize(OUT)
    if size == last and size > 0: break
    last = size
hwm = [l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]
cpu = open("/proc/%d/stat" % p.pid).read().split()
ut, st = int(cpu[13]) / os.sysconf("SC_CLK_TCK"), int(cpu[14]) / os.sysconf("SC_CLK_TCK")
p.send_signal(signal.SIGINT); p.wait(timeout=120)
lines = open(OUT, "rb").read().split(b"\n")
last_line = [l for l in lines if l][-1]
pushes = sum(1 for l in lines if b'"push"' in l)
print(f"{LABEL}: {pushes} MOVINGs shown, peak RSS {int(hwm)/1024:.1f} MiB, CPU {ut:.2f} user {st:.2f} sys, summary line {len(last_line)} bytes, exit {p.returncode}")
