// An unmodified ioredis application, for `maintwatch certify -- node ioredis_app.js`
// (tests/it/ioredis.rs).
//
// It knows nothing of the simulator but what its environment says (MAINTWATCH_SIM_HOST and
// MAINTWATCH_SIM_PORT) and has no resolver code: the host name resolves through the machine's
// resolver, which `simulate` points at its own DNS. ioredis 6 speaks RESP3 by default and its
// `maintNotifications` is `auto` by default, so nothing about the feature is configured here.
// The one option set is a 1 s `socketTimeout` (no reply for 1 s destroys the socket and
// ioredis's default retry strategy reconnects): the timeout its `maintRelaxedSocketTimeout`
// relaxes in a maintenance window, and the same kind the node-redis application sets, so that
// giving up shows on the wire as a close. Three loops of SET / GET / INCR until SIGTERM; then
// one JSON line (operations, errors by name, the version).

const Redis = require("ioredis");
const version = require("ioredis/package.json").version;

const client = new Redis({
  host: process.env.MAINTWATCH_SIM_HOST,
  port: Number(process.env.MAINTWATCH_SIM_PORT),
  socketTimeout: 1000,
});
client.on("error", () => {}); // reconnects are ioredis's job; errors are counted below

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
  const loops = [0, 1, 2].map(work);
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ ioredis: version, ops, errors }));
  client.disconnect();
}

main();
