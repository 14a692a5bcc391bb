// An unmodified node-redis cluster application, for
// `maintwatch simulate --scenario oss-cluster --grade -- node node_redis_cluster_app.js [--sharded]`.
// Only createCluster with the seed from MAINTWATCH_SIM_HOST / _PORT: the host name resolves
// through the machine's resolver, which `simulate` points at its own DNS. Three loops of SET / GET
// on 1,000 keys spread over the slots (KEYS) until SIGTERM; then one JSON line. With --sharded,
// also a sharded subscription (sSubscribe) to a channel whose slot the oss-cluster scenario moves
// (what sharded-resubscribe judges); the client matrix runs without it.

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
  // The explicit opt-in node-redis 5.x needs (RESP2 by default); each node's client gets 'auto'.
  RESP: 3,
});
cluster.on("error", () => {});

// Redis Cluster's key hash (CRC16/XMODEM mod 16384), to pick a channel in the slots oss-cluster
// moves (8892-8991) so that its subscription has to follow them.
function slot(text) {
  let crc = 0;
  for (const b of Buffer.from(text)) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
let channel = null;
for (let i = 0; channel === null; i++) {
  const c = `app:sharded:${i}`;
  if (slot(c) >= 8892 && slot(c) <= 8991) channel = c;
}
let messages = 0;

let ops = 0;
let stopping = false;
const errors = {};

// How many keys the loops go through, together in turn: app:key:0 to app:key:999, spread over the
// whole slot space as a real application's are. Six of them fall in the slots that oss-cluster and
// cascading-smigrated move (8892-8991), so a client's stale slot map shows on the wire (a -MOVED,
// a redirect) and smigrated-refresh is decided.
const KEYS = 1000;
const WORKERS = 3;

async function work(n) {
  let i = 0;
  while (!stopping) {
    const key = `app:key:${(i++ * WORKERS + n) % KEYS}`;
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
  if (process.argv.includes("--sharded")) {
    try {
      await cluster.sSubscribe(channel, () => {
        messages += 1;
      });
    } catch (e) {
      errors[`pubsub ${e.name}`] = (errors[`pubsub ${e.name}`] || 0) + 1;
    }
  }
  const loops = Array.from({ length: WORKERS }, (_, n) => work(n));
  process.on("SIGTERM", () => {
    stopping = true;
  });
  await Promise.all(loops);
  console.log(JSON.stringify({ redis: version, ops, sharded_messages: messages, errors }));
  cluster.destroy();
}

main();
