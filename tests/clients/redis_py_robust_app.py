"""An unmodified redis-py application for the robustness set (`maintwatch certify --scenarios
robustness -- python redis_py_robust_app.py`): the tier app's SET / GET / INCR threads, plus the
shapes a frame may meet a connection in, each as redis-py's README shows it:

- a thread blocked in BLPOP (0.5 s at a time, under the 1 s socket timeout);
- a thread running MULTI / EXEC (`pipeline()`, transactional by default);
- a thread subscribed on a RESP3 pub/sub connection (`pubsub()`, `get_message`), which a fourth
  thread publishes to.

It knows nothing of the simulator but MAINTWATCH_SIM_HOST and MAINTWATCH_SIM_PORT. Until SIGTERM;
then it prints one JSON line (operations by thread kind, errors by type, the version).
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
    protocol=3,
    socket_timeout=1,
)
ops = {}
errors = {}
lock = threading.Lock()


def count(kind, n=1):
    with lock:
        ops[kind] = ops.get(kind, 0) + n


def failed(e):
    with lock:
        errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
    time.sleep(0.05)


def loop(kind, body):
    def run():
        while not stop.is_set():
            try:
                body()
                count(kind)
            except Exception as e:  # every failure is counted, by type
                failed(e)
            time.sleep(0.01)

    return run


def set_get_incr(n):
    key = f"app:{n}"
    return lambda: (client.set(key, "v"), client.get(key), client.incr(f"{key}:count"))


def blpop():
    client.blpop(["app:queue"], timeout=0.5)


def multi_exec():
    pipe = client.pipeline()
    pipe.incr("app:multi")
    pipe.get("app:multi")
    pipe.execute()


def subscribed():
    pubsub = None
    while not stop.is_set():
        try:
            if pubsub is None:
                pubsub = client.pubsub()
                pubsub.subscribe("app:channel")
            if pubsub.get_message(timeout=0.2) is not None:
                count("message")
        except Exception as e:  # subscribe again on a new connection
            failed(e)
            try:
                pubsub.close()
            except Exception:
                pass
            pubsub = None
    if pubsub is not None:
        pubsub.close()


def publish():
    client.publish("app:channel", "hello")
    time.sleep(0.2)


threads = [threading.Thread(target=loop("set-get-incr", set_get_incr(i))) for i in range(2)]
threads.append(threading.Thread(target=loop("blpop", blpop)))
threads.append(threading.Thread(target=loop("multi-exec", multi_exec)))
threads.append(threading.Thread(target=subscribed))
threads.append(threading.Thread(target=loop("publish", publish)))
for t in threads:
    t.start()
while not stop.wait(0.2):
    pass
for t in threads:
    t.join()
print(json.dumps({"redis": redis.__version__, "ops": ops, "errors": errors}), flush=True)
