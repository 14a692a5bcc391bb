// An unmodified node-redis cluster application, for
// `maintwatch simulate --scenario oss-cluster --grade -- node node_redis_cluster_app.js`.
// Only createCluster with the seed from MAINTWATCH_SIM_HOST / _PORT: the host name resolves
// through the machine's resolver, which `simulate` points at its own DNS. Three loops of SET / GET
// on keys spread over the slots until SIGTERM; then one JSON line.

const { createCluster } = require("redis");
const version = require("redis/package.json").version;

const cluster = createCluster({
  rootNodes: [
    {
      socket: {
        host: process.env.MAINTWATCH_SIM_HOST,
        port: Number(process.env.MAINTWATCH_SIM_PORT),
      },
    },
  ],
  // A short timeout (no reply for 1 s closes the socket), so that a stall shows whether the
  // client relaxes it in a maintenance window.
  // node-redis's default strategy never reconnects after a socket timeout (the client closes for
  // good); an application with a timeout reconnects, with the default's back-off.
  defaults: {
    socket: {
      socketTimeout: 1000,
      reconnectStrategy: (retries) => Math.min(2 ** retries * 50, 2000),
    },
  },
  RESP: 3,
});
cluster.on("error", () => {});

let ops = 0;
let stopping = false;
const errors = {};

async function work(n) {
  let i = 0;
  while (!stopping) {
    const key = `app:${n}:${i++ % 64}`;
    try {
      await cluster.set(key, "v");
      await cluster.get(key);
      ops += 2;
    } catch (e) {
      errors[e.name] = (errors[e.name] || 0) + 1;
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main() {
  await cluster.connect();
  const loops = [0, 1, 2].map(work);
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ redis: version, ops, errors }));
  cluster.destroy();
}

main();
