// An unmodified ioredis application for the robustness set
// (`maintwatch certify --scenarios robustness -- node ioredis_robust_app.js`): the tier app's
// SET / GET / INCR loops, plus the shapes a frame may meet a connection in, each as ioredis's
// README shows it:
// - a loop blocked in BLPOP (0.5 s at a time) on a connection of its own (`redis.duplicate()`:
//   a blocking command holds the connection it runs on);
// - a loop running MULTI / EXEC (`redis.multi()...exec()`);
// - a subscriber on a connection of its own (`duplicate()`, `subscribe`, `on("message")`;
//   RESP3, ioredis 6's default), which a loop publishes to.
// It knows nothing of the simulator but MAINTWATCH_SIM_HOST and MAINTWATCH_SIM_PORT; the 1 s
// `socketTimeout` is the tier app's. Until SIGTERM; then one JSON line (operations by loop,
// errors by name, the version).

const Redis = require("ioredis");
const version = require("ioredis/package.json").version;

const client = new Redis({
  host: process.env.MAINTWATCH_SIM_HOST,
  port: Number(process.env.MAINTWATCH_SIM_PORT),
  socketTimeout: 1000,
});
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
  subscriber.on("message", () => count("message"));
  await subscriber.subscribe("app:channel");
  const loops = [
    loop("set-get-incr", setGetIncr(0)),
    loop("set-get-incr", setGetIncr(1)),
    loop("blpop", () => blocking.blpop("app:queue", 0.5)),
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
  console.log(JSON.stringify({ ioredis: version, ops, errors }));
  for (const c of [client, blocking, subscriber]) c.disconnect();
}

main();
