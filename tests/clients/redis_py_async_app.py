"""An unmodified asyncio redis-py application (redis-py 8.1 or later: `redis.asyncio` has the
maintenance notifications from 8.1.0), for `maintwatch simulate --grade -- python APP`.

The asyncio twin of redis_py_app.py: it knows nothing of the simulator but what its environment
says (MAINTWATCH_SIM_HOST and MAINTWATCH_SIM_PORT) and has no resolver code. Three tasks share
one client doing SET / GET / INCR until SIGTERM; then it prints one JSON line (operations,
errors by type, the version).
"""

import asyncio
import json
import os
import signal

import redis
import redis.asyncio


async def main():
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    client = redis.asyncio.Redis(
        host=os.environ["MAINTWATCH_SIM_HOST"],
        port=int(os.environ["MAINTWATCH_SIM_PORT"]),
        protocol=3,
        # The same short timeout as the threaded app, so that a stall shows whether the client
        # relaxes it in a maintenance window.
        socket_timeout=1,
    )
    ops = [0]
    errors = {}

    async def work(n):
        key = f"app:{n}"
        while not stop.is_set():
            try:
                await client.set(key, "v")
                await client.get(key)
                await client.incr(f"{key}:count")
                ops[0] += 3
            except Exception as e:  # every failure is counted, by type
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.01)

    await asyncio.gather(*(work(i) for i in range(3)))
    await client.aclose()
    print(json.dumps({"redis": redis.__version__, "ops": ops[0], "errors": errors}), flush=True)


asyncio.run(main())
