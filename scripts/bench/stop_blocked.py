#!/usr/bin/env python3
"""Issue 25 item 10, time to stop with a blocked stdout: a server on 127.0.0.1 that answers the
handshake and then sends MIGRATED pushes forever; the watch's stdout is a pipe nobody reads.
After 3 s (the pipe long full) MODE sigterm sends SIGTERM; MODE duration runs `--duration 3s`.
Prints how long after the signal or the deadline the watch exited, its exit code, and the last
line of its stderr.

    scripts/bench/stop_blocked.py target/release/maintwatch LABEL sigterm|duration
"""
import socket, subprocess, sys, time, signal, threading, os
BIN, LABEL, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(5)
port = srv.getsockname()[1]
buf = b"".join(b">3\r\n$8\r\nMIGRATED\r\n:%d\r\n$5\r\n[\"1\"]\r\n" % i for i in range(50000))
def serve():
    c, _ = srv.accept()
    c.recv(4096); c.sendall(b"%2\r\n$6\r\nserver\r\n$5\r\nflood\r\n$5\r\nproto\r\n:3\r\n")
    c.recv(4096); c.sendall(b"+OK\r\n")
    try:
        while True: c.sendall(buf)
    except OSError: pass
threading.Thread(target=serve, daemon=True).start()
r, w = os.pipe()  # r is kept open and never read
args = [BIN, "watch", "redis://127.0.0.1:%d" % port, "--no-handoff"]
if MODE == "duration": args += ["--duration", "3s"]
t0 = time.time()
p = subprocess.Popen(args, stdout=w, stderr=subprocess.PIPE)
os.close(w)
if MODE == "sigterm":
    time.sleep(3); t0 = time.time(); p.send_signal(signal.SIGTERM)
else:
    t0 += 3
try:
    _, err = p.communicate(timeout=20)
    took = f"{time.time() - t0:.2f} s"
    last = err.decode(errors="replace").strip().splitlines()[:1]
except subprocess.TimeoutExpired:
    took = "not within 20 s (killed)"; last = []
    p.kill(); p.wait()
print(f"{LABEL} {MODE}: stopped {took} after the {'signal' if MODE=='sigterm' else 'deadline'}; exit {p.returncode}; stderr: {last}")
