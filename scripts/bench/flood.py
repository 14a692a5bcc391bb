#!/usr/bin/env python3
"""Push flood: N pub/sub messages from a real redis-server, consumed by

    maintwatch watch -h 127.0.0.1 -p P --subscribe ch --json > /dev/null
    redis-cli -3 --show-pushes yes -p P SUBSCRIBE ch > /dev/null

Each consumer is measured alone, in two ways, on the same server and the same publisher
(redis-benchmark, pipelined PUBLISH of `msg:<12 digits>`):

- preloaded: the consumer is stopped (SIGSTOP) while all N messages are published (the server
  holds them in the subscriber's output buffer, whose limit is lifted), then resumed (SIGCONT).
  Time to drain = from SIGCONT until the server's output buffer for it and its socket's receive
  queue are both empty. This isolates the consumer's own throughput.
- live: the consumer runs while the publisher publishes; time to drain = from the publisher's
  start until drained as above (server, publisher and consumer share the machine's cores).

CPU time is the consumer's (all threads, from /proc/PID/task/*/schedstat) over the same interval.
Each measurement is repeated in rounds (every consumer once per round, the order rotating) and
the median reported, with the minimum CPU and the median of each round's ratio to redis-cli. Finally one more maintwatch run writes its
JSON lines to a file, whose push lines are counted (nothing lost) and which becomes the capture
for the replay benchmark.

    scripts/bench/flood.py --bin target/release/maintwatch [--messages 1000000] [--repeat 3]
                           [--capture FILE] [--human] [--before OLD_BINARY]

--human also measures `maintwatch watch ... --subscribe ch` without --json (human lines, no
colour since stdout is not a terminal); --before also measures another maintwatch binary (an
older build) with --json, in the same run, for a before/after on the same machine load.

    scripts/bench/flood.py --bin target/release/maintwatch --instructions [--messages 100000]
                           [--repeat 3] [--before OLD_BINARY] [--keep-profiles DIR]

--instructions counts instructions instead of CPU time: every consumer runs under
`valgrind --tool=callgrind` (user space, all threads), preloaded, once with the messages and once
with none (subscribed, stopped, resumed, ended: start-up, subscription and exit), in rotating
rounds. Instructions per message = (median with N - median with none) / N, for each consumer on
the same server, publisher and messages; the ratio redis-cli/maintwatch of those is the figure
that does not move with the machine or its load. --keep-profiles keeps the callgrind files of
the last round (for callgrind_annotate).
"""

import argparse
import glob
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    """A tiny RESP2 client: enough for PING, PUBSUB NUMSUB and CLIENT LIST."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("redis closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if kind == b"*":
            return [self._read() for _ in range(int(rest))]
        raise ValueError(f"unexpected reply {line!r}")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._read()


def start_redis(port):
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--client-output-buffer-limit", "pubsub 0 0 0",
         "--maxclients", "10000", "--protected-mode", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            r = Redis(port)
            if r.call("PING") == "PONG":
                return proc, r
        except OSError:
            time.sleep(0.01)
    proc.kill()
    raise RuntimeError("redis-server did not start")


def cpu_ns(pid):
    """CPU time of every thread of a process, in nanoseconds."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def subscriber(r):
    """(addr, omem, obl, oll) of the one pub/sub client, or None."""
    text = r.call("CLIENT", "LIST", "TYPE", "pubsub")
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if int(fields.get("sub", "0")) > 0:
            return fields["addr"], int(fields["omem"]), int(fields["obl"]), int(fields["oll"])
    return None


def rx_queue(local_port):
    """Bytes waiting in the receive queue of the loopback socket bound to local_port."""
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            parts = line.split()
            port = int(parts[1].split(":")[1], 16)
            if port == local_port:
                return int(parts[4].split(":")[1], 16)
    return 0


def wait_drained(r, local_port, guard=300.0):
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        sub = subscriber(r)
        if sub is None:
            raise RuntimeError("the subscriber disappeared")
        _, omem, obl, oll = sub
        if omem == 0 and obl == 0 and oll == 0 and rx_queue(local_port) == 0:
            return time.monotonic()
        time.sleep(0.002)
    raise RuntimeError("the consumer never drained")


def publish(port, messages):
    subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(messages), "-P", "100", "-c", "1",
         "-r", "1000000000", "-q", "PUBLISH", "ch", "msg:__rand_int__"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def consumer_cmd(name, binary, port):
    """name: `maintwatch` (--json), `maintwatch-human`, `maintwatch-before` (binary is then the
    older build, --json) or `redis-cli`."""
    if name.startswith("maintwatch"):
        cmd = [binary, "watch", "-h", "127.0.0.1", "-p", str(port), "--subscribe", "ch"]
        return cmd if name == "maintwatch-human" else cmd + ["--json"]
    return ["redis-cli", "-3", "--show-pushes", "yes", "-p", str(port), "SUBSCRIBE", "ch"]


def run_once(name, binary, port, r, messages, mode, out=subprocess.DEVNULL, callgrind=None):
    """One consumer's drain: (seconds, CPU seconds, peak RSS MiB). With `callgrind` (a file
    name) the consumer runs under callgrind, which writes its counts there when it exits."""
    cmd = consumer_cmd(name, binary, port)
    if callgrind:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}", "--"] + cmd
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
    try:
        # Under valgrind a start-up takes seconds, not milliseconds.
        deadline = time.monotonic() + (120 if callgrind else 10)
        while r.call("PUBSUB", "NUMSUB", "ch")[1] != 1:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{name} never subscribed")
            time.sleep(0.01)
        local_port = int(subscriber(r)[0].rsplit(":", 1)[1])
        if mode == "preloaded":
            os.kill(proc.pid, signal.SIGSTOP)
            if messages:
                publish(port, messages)
            c0, t0 = cpu_ns(proc.pid), time.monotonic()
            os.kill(proc.pid, signal.SIGCONT)
        else:
            c0, t0 = cpu_ns(proc.pid), time.monotonic()
            publish(port, messages)
        t1 = wait_drained(r, local_port)
        c1 = cpu_ns(proc.pid)
        return t1 - t0, (c1 - c0) / 1e9, peak_rss_mib(proc.pid)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            # maintwatch ends on Ctrl-C; redis-cli gets SIGTERM (a background job started by a
            # shell ignores SIGINT, and redis-cli does not install a handler for it).
            maintwatch = name.startswith("maintwatch")
            os.kill(proc.pid, signal.SIGINT if maintwatch else signal.SIGTERM)
            try:
                proc.wait(timeout=300 if callgrind else 10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def callgrind_total(path):
    """The instructions (Ir) a callgrind output file counts, all threads."""
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {path}")


def instructions(a, consumers, port, r):
    """Instructions per message of every consumer, with none and with a.messages messages, in
    rotating rounds; prints each run and the medians, and redis-cli's per message over each
    maintwatch build's."""
    keep = a.keep_profiles or tempfile.mkdtemp(prefix="bench-flood-")
    os.makedirs(keep, exist_ok=True)
    names = list(consumers)
    runs = {(name, n): [] for name in names for n in (0, a.messages)}
    print("load average before instructions: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    for k in range(a.repeat):
        for name in names[k % len(names):] + names[:k % len(names)]:
            for n in (0, a.messages):
                path = os.path.join(keep, f"callgrind.{name}.{n}")
                run_once(name, consumers[name], port, r, n, "preloaded", callgrind=path)
                runs[(name, n)].append(callgrind_total(path))
                if not a.keep_profiles:
                    os.remove(path)
    print("load average after instructions: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    if not a.keep_profiles:
        os.rmdir(keep)
    per = {}
    for name in names:
        none = statistics.median(runs[(name, 0)])
        full = statistics.median(runs[(name, a.messages)])
        per[name] = (full - none) / a.messages
        print(f"flood instructions {name}: {a.messages} messages {full / 1e6:.1f} M, none "
              f"{none / 1e6:.1f} M: {per[name]:.0f} per message (median of {a.repeat}; runs "
              + ", ".join(f"{x / 1e6:.1f}" for x in runs[(name, a.messages)]) + " M with, "
              + ", ".join(f"{x / 1e6:.1f}" for x in runs[(name, 0)]) + " M without)",
              flush=True)
    for name in names:
        if name != "redis-cli":
            print(f"flood instructions ratio redis-cli/{name}: "
                  f"{per['redis-cli'] / per[name]:.2f}x per message", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="target/release/maintwatch")
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--capture", help="also write maintwatch's JSON lines here (replay input)")
    ap.add_argument("--capture-only", action="store_true",
                    help="only write the capture (for the replay benchmark), measure nothing")
    ap.add_argument("--human", action="store_true",
                    help="also measure maintwatch's human output (no --json)")
    ap.add_argument("--before", help="also measure this older maintwatch binary (--json)")
    ap.add_argument("--modes", default="preloaded,live",
                    help="which measurements: preloaded, live or both (comma-separated)")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions per message under callgrind instead of CPU time")
    ap.add_argument("--keep-profiles", metavar="DIR",
                    help="with --instructions: keep the last round's callgrind files in DIR")
    a = ap.parse_args()
    consumers = {"maintwatch": a.bin, "redis-cli": None}
    if a.human:
        consumers["maintwatch-human"] = a.bin
    if a.before:
        consumers["maintwatch-before"] = a.before

    port = free_port()
    server, r = start_redis(port)
    try:
        if a.instructions:
            instructions(a, consumers, port, r)
        for mode in () if a.capture_only or a.instructions else a.modes.split(","):
            results = {}
            print("load average before %s: %.2f %.2f %.2f" % ((mode,) + os.getloadavg()),
                  flush=True)
            # Rounds, each consumer once per round in a rotating order: this host's speed drifts
            # by a third between phases, and a phase then slows every consumer alike rather
            # than all runs of one.
            runs = {name: [] for name in consumers}
            names = list(consumers)
            for k in range(a.repeat):
                for name in names[k % len(names):] + names[:k % len(names)]:
                    runs[name].append(run_once(name, consumers[name], port, r, a.messages, mode))
            results = {}
            for name, got in runs.items():
                drain = statistics.median(x[0] for x in got)
                cpu = statistics.median(x[1] for x in got)
                rss = max(x[2] for x in got)
                results[name] = (drain, cpu)
                print(f"flood {mode} {name}: {a.messages} messages, time to drain "
                      f"{drain:.3f} s, consumer CPU {cpu:.3f} s (min {min(x[1] for x in got):.3f}),"
                      f" peak RSS {rss:.0f} MiB (median of {a.repeat}; drain/CPU per run: "
                      + ", ".join(f"{d:.3f}/{c:.3f}" for d, c, _ in got) + ")", flush=True)
            print("load average after %s: %.2f %.2f %.2f" % ((mode,) + os.getloadavg()),
                  flush=True)
            rc = results["redis-cli"]
            for name, mw in results.items():
                if name == "redis-cli":
                    continue
                paired = statistics.median(
                    m[1] / c[1] for m, c in zip(runs[name], runs["redis-cli"]))
                print(f"flood {mode} ratio redis-cli/{name}: drain {rc[0] / mw[0]:.2f}x, "
                      f"CPU {rc[1] / mw[1]:.2f}x (CPU {name}/redis-cli {mw[1] / rc[1]:.2f}x; "
                      f"median of the same rounds' ratios {paired:.2f}x)", flush=True)

        if a.capture:
            with open(a.capture, "wb") as out:
                run_once("maintwatch", a.bin, port, r, a.messages, "preloaded", out=out)
            pushes = 0
            lines = 0
            with open(a.capture, "rb") as f:
                for line in f:
                    lines += 1
                    if line.startswith(b'{"type":"push"'):
                        pushes += 1
            print(f"flood capture: {lines} lines, {pushes} push lines "
                  f"({'all' if pushes == a.messages + 1 else 'NOT all'} of {a.messages} messages "
                  f"+ the subscribe confirmation) -> {a.capture}", flush=True)
            if pushes != a.messages + 1:
                sys.exit(1)
    finally:
        try:
            r.call("SHUTDOWN", "NOSAVE")
        except (OSError, ConnectionError):
            pass
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
