#!/usr/bin/env python3
"""Issue 12, time to stop under an endless flood: a server on 127.0.0.1 that answers the handshake
and then sends pub/sub pushes forever, faster than the watch writes them. MODE sigint sends
SIGINT after 2 s; MODE duration runs `--duration 2s`. Prints how long after the signal or the
deadline the watch exited, and whether its capture ends with a whole line.

    scripts/bench/stop_endless.py target/release/maintwatch LABEL sigint|duration
"""
import socket, subprocess, sys, time, os, signal, threading, tempfile
BIN, LABEL, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(5)
port = srv.getsockname()[1]
buf = b"".join(b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$%d\r\n%d\r\n" % (len(str(i)), i) for i in range(50000))
def serve():
    c, _ = srv.accept()
    c.recv(4096); c.sendall(b"%2\r\n$6\r\nserver\r\n$5\r\nflood\r\n$5\r\nproto\r\n:3\r\n")
    c.recv(4096); c.sendall(b"+OK\r\n")
    try:
        while True: c.sendall(buf)
    except OSError: pass
threading.Thread(target=serve, daemon=True).start()
d = tempfile.mkdtemp()
args = [BIN, "watch", "redis://127.0.0.1:%d" % port, "--no-handoff", "--capture", d + "/cap.jsonl"]
if MODE == "duration": args += ["--duration", "2s"]
t0 = time.time()
p = subprocess.Popen(args, stdout=open(d + "/out", "wb"), stderr=subprocess.DEVNULL)
if MODE == "sigint":
    time.sleep(2); t0 = time.time(); p.send_signal(signal.SIGINT)
else:
    t0 += 2
try:
    p.wait(timeout=60)
    took = f"{time.time() - t0:.2f} s"
except subprocess.TimeoutExpired:
    took = "not within 60 s (killed)"
    hwm = [l for l in open("/proc/%d/status" % p.pid) if l.startswith("VmHWM")][0].split()[1]
    p.kill(); p.wait()
cap = open(d + "/cap.jsonl", "rb").read()
last = cap.rstrip(b"\n").rsplit(b"\n", 1)[-1][:30]
NL = b"\n"; n = cap.count(NL); ends = cap.endswith(NL)
print(f"{LABEL} {MODE}: stopped {took} after the {'signal' if MODE=='sigint' else 'deadline'}; exit {p.returncode}; capture {n} lines, ends with newline {ends}, last {last}")
