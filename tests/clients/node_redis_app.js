// An unmodified node-redis application, for
// `maintwatch simulate --grade -- node node_redis_app.js` (tests/it/node_redis.rs).
//
// It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
// MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through the machine's
// resolver, which `simulate` points at its own DNS. RESP3, so node-redis's maintenance
// notifications are on ('auto'): the explicit opt-in 5.x needs (RESP2 by default there, and the
// feature with it off), the default from 6.0 on. Three loops of SET / GET / INCR until SIGTERM; then one JSON
// line (operations, errors by name, the version). A rejection it does not handle ends the
// process, as it would end a default Node application.

const { createClient } = require("redis");
const version = require("redis/package.json").version;

const client = createClient({
  socket: {
    host: process.env.MAINTWATCH_SIM_HOST,
    port: Number(process.env.MAINTWATCH_SIM_PORT),
    // A short timeout (no reply for 1 s closes the socket), so that a stall shows whether the
    // client relaxes it in a maintenance window.
    socketTimeout: 1000,
    // node-redis's default strategy never reconnects after a socket timeout (the client closes
    // for good); an application with a timeout reconnects, with the default's back-off.
    reconnectStrategy: (retries) => Math.min(2 ** retries * 50, 2000),
  },
  RESP: 3,
});
client.on("error", () => {}); // reconnects are node-redis's job; errors are counted below

let ops = 0;
let stopping = false;
const errors = {};

async function work(n) {
  const key = `app:${n}`;
  while (!stopping) {
    try {
      await client.set(key, "v");
      await client.get(key);
      await client.incr(`${key}:count`);
      ops += 3;
    } catch (e) {
      errors[e.name] = (errors[e.name] || 0) + 1;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main() {
  await client.connect();
  const loops = [0, 1, 2].map(work);
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ redis: version, ops, errors }));
  client.destroy();
}

main();
