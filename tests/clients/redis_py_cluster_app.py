"""An unmodified redis-py cluster application, for
`maintwatch simulate --scenario oss-cluster --grade -- python redis_py_cluster_app.py`.

Only `redis.RedisCluster(host=..., port=...)` and `os.environ`: the seed host name resolves through
the machine's resolver, which `simulate` points at its own DNS. Three threads doing SET / GET on
keys spread over the slots until SIGTERM; then one JSON line.
"""

import json
import os
import signal
import threading
import time

import redis

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

client = redis.RedisCluster(
    host=os.environ["MAINTWATCH_SIM_HOST"],
    port=int(os.environ["MAINTWATCH_SIM_PORT"]),
    protocol=3,
    # A short timeout, so that a stall shows whether the client relaxes it in a maintenance
    # window (the stalls of the failover and shard-migration scenarios last 1.5-2 s).
    socket_timeout=1,
)
ops = [0]
errors = {}
lock = threading.Lock()


def work(n):
    i = 0
    while not stop.is_set():
        key = f"app:{n}:{i % 64}"
        i += 1
        try:
            client.set(key, "v")
            client.get(key)
            with lock:
                ops[0] += 2
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
