"""An unmodified redis-py cluster application, for
`maintwatch simulate --scenario oss-cluster --grade -- python redis_py_cluster_app.py [--sharded]`.

Only `redis.RedisCluster(host=..., port=...)` and `os.environ`: the seed host name resolves through
the machine's resolver, which `simulate` points at its own DNS. Three threads doing SET / GET on
1,000 keys spread over the slots (KEYS) until SIGTERM; then one JSON line. With --sharded, a
fourth holds an SSUBSCRIBE to a sharded channel whose slot the oss-cluster scenario moves (what
sharded-resubscribe judges); the client matrix runs without it, since its extra connections make
the cells depend on the machine's load.
"""

import json
import os
import signal
import sys
import threading
import time

import redis
from redis.crc import key_slot

stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

client = redis.RedisCluster(
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


# How many keys the threads go through, together in turn: app:key:0 to app:key:999, spread over the
# whole slot space as a real application's are. Six of them fall in the slots that oss-cluster and
# cascading-smigrated move (8892-8991), so a client's stale slot map shows on the wire (a -MOVED, a
# redirect) and smigrated-refresh is decided.
KEYS = 1000
WORKERS = 3


def work(n):
    i = 0
    while not stop.is_set():
        key = f"app:key:{(i * WORKERS + n) % KEYS}"
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


# A channel in the slots oss-cluster moves (8892-8991), so that its subscription has to follow.
CHANNEL = next(
    c for c in (f"app:sharded:{i}" for i in range(100000)) if 8892 <= key_slot(c.encode()) <= 8991
)
messages = [0]


def listen():
    pubsub = client.pubsub()
    try:
        pubsub.ssubscribe(CHANNEL)
        while not stop.is_set():
            m = pubsub.get_sharded_message(ignore_subscribe_messages=True, timeout=0.2)
            if m is not None and m.get("type") in ("smessage", b"smessage"):
                with lock:
                    messages[0] += 1
    except Exception as e:
        with lock:
            errors["pubsub " + type(e).__name__] = errors.get("pubsub " + type(e).__name__, 0) + 1


threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
if "--sharded" in sys.argv[1:]:
    threads.append(threading.Thread(target=listen))
for t in threads:
    t.start()
while not stop.wait(0.2):
    pass
for t in threads:
    t.join()
print(
    json.dumps(
        {"redis": redis.__version__, "ops": ops[0], "sharded_messages": messages[0], "errors": errors}
    ),
    flush=True,
)
