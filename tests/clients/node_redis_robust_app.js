// An unmodified node-redis application for the robustness set
// (`maintwatch certify --scenarios robustness -- node node_redis_robust_app.js`): the tier app's
// SET / GET / INCR loops, plus the shapes a frame may meet a connection in, each as node-redis's
// README shows it:
// - a loop blocked in BLPOP (0.5 s at a time) on a client of its own (`client.duplicate()`, as
//   the README asks for blocking commands);
// - a loop running MULTI / EXEC (`client.multi()...exec()`);
// - a subscriber on a RESP3 connection of its own (`duplicate()`, `subscribe`), which a loop
//   publishes to.
// It knows nothing of the simulator but MAINTWATCH_SIM_HOST and MAINTWATCH_SIM_PORT. Until
// SIGTERM; then one JSON line (operations by loop, errors by name, the version). A rejection it
// does not handle ends the process, as it would end a default Node application.

const { createClient } = require("redis");
const version = require("redis/package.json").version;

const options = {
  socket: {
    host: process.env.MAINTWATCH_SIM_HOST,
    port: Number(process.env.MAINTWATCH_SIM_PORT),
    socketTimeout: 1000,
    reconnectStrategy: (retries) => Math.min(2 ** retries * 50, 2000),
  },
  RESP: 3,
};
const client = createClient(options);
const blocking = client.duplicate();
const subscriber = client.duplicate();
for (const c of [client, blocking, subscriber]) c.on("error", () => {});

const ops = {};
const errors = {};
let stopping = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const count = (kind) => (ops[kind] = (ops[kind] || 0) + 1);

function loop(kind, body) {
  return (async () => {
    while (!stopping) {
      try {
        await body();
        count(kind);
      } catch (e) {
        errors[e.name] = (errors[e.name] || 0) + 1;
        await sleep(50);
      }
      await sleep(10);
    }
  })();
}

function setGetIncr(n) {
  const key = `app:${n}`;
  return async () => {
    await client.set(key, "v");
    await client.get(key);
    await client.incr(`${key}:count`);
  };
}

async function main() {
  await Promise.all([client.connect(), blocking.connect(), subscriber.connect()]);
  await subscriber.subscribe("app:channel", () => count("message"));
  const loops = [
    loop("set-get-incr", setGetIncr(0)),
    loop("set-get-incr", setGetIncr(1)),
    loop("blpop", () => blocking.blPop("app:queue", 0.5)),
    loop("multi-exec", () => client.multi().incr("app:multi").get("app:multi").exec()),
    loop("publish", async () => {
      await client.publish("app:channel", "hello");
      await sleep(200);
    }),
  ];
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ redis: version, ops, errors }));
  for (const c of [client, blocking, subscriber]) c.destroy();
}

main();
