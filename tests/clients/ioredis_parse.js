// Feeds frames to ioredis's own RESP3 decoder and its maintenance-notification parser (what its
// DataHandler calls for every push), and says what it made of them.
//
// Input (stdin): one frame per line, `name<TAB>hex bytes`. Run with the current directory (or
// NODE_PATH) where node_modules has `ioredis`. Output: one JSON object per frame:
// {"name", "outcome": acts|ignores|fails, "detail", "target"}; `target` is [host, port] of a
// MOVING's endpoint as parsed (where the handoff would go), or null (no endpoint: the
// configured one).
"use strict";
const path = require("path");
const base = path.dirname(require.resolve("ioredis/package.json", { paths: [process.cwd()] }));
const { Decoder } = require(path.join(base, "built/resp/decoder"));
const { parseMaintenanceNotification } = require(path.join(base, "built/maintNotifications"));

function run(name, data) {
  let push = null;
  const decoder = new Decoder({
    onReply: () => {},
    onErrorReply: () => {},
    onPush: (p) => { push = p; },
    getTypeMapping: () => ({}),
  });
  try {
    decoder.write(data);
  } catch (e) {
    return { name, outcome: "fails", detail: `decoder: ${e}`, target: null };
  }
  if (!Array.isArray(push) || push.length === 0) {
    return { name, outcome: "ignores", detail: "not a push", target: null };
  }
  const type = Buffer.isBuffer(push[0]) || typeof push[0] === "string" ? push[0].toString() : null;
  let n;
  try {
    n = type ? parseMaintenanceNotification(push, type) : null;
  } catch (e) {
    return { name, outcome: "fails", detail: `${e.name}: ${e.message}`, target: null };
  }
  if (!n) return { name, outcome: "ignores", detail: "not a maintenance notification", target: null };
  const target = n.endpoint ? [n.endpoint.host, n.endpoint.port] : null;
  return { name, outcome: "acts", detail: n.type, target };
}

async function main() {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  for (const line of input.split("\n")) {
    if (!line) continue;
    const [name, hex] = line.split("\t");
    console.log(JSON.stringify(run(name, Buffer.from(hex, "hex"))));
  }
}
main();
