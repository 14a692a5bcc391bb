"""An unmodified redis-py application, for `maintwatch simulate --grade -- python redis_py_app.py`.

It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through the machine's
resolver, which `simulate` points at its own DNS. Three threads share one client doing SET / GET /
INCR until SIGTERM; then it prints one JSON line (operations, errors by type, the version).
"""

import json
import os
import signal
import threading
import time

import redis

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

client = redis.Redis(
    host=os.environ["MAINTWATCH_SIM_HOST"],
    port=int(os.environ["MAINTWATCH_SIM_PORT"]),
    # RESP3: the explicit opt-in redis-py 7.x needs (RESP2 by default before 8.0); with it the
    # notifications are 'auto' in every release from 7.0 (7.0's RedisCluster turns them off).
    protocol=3,
    # A short timeout, so that a stall shows whether the client relaxes it in a maintenance
    # window (the stalls of the failover and shard-migration scenarios last 1.5-2 s).
    socket_timeout=1,
)
ops = [0]
errors = {}
lock = threading.Lock()


def work(n):
    key = f"app:{n}"
    while not stop.is_set():
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


threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
while not stop.wait(0.2):
    pass
for t in threads:
    t.join()
print(json.dumps({"redis": redis.__version__, "ops": ops[0], "errors": errors}), flush=True)
