// The official SDK's reference server (test/_reference.mjs: MAPServer with mail on, its
// in-memory stores, one API key) as a process of its own, for benchmarks/map_websocket.py:
// listens on a loopback port and prints `listening ws://127.0.0.1:PORT/map key KEY`;
// stops on SIGINT or SIGTERM.
import { WebSocket } from 'ws';

import { startReference } from '../test/_reference.mjs';

// the SDK's socket stream reads WebSocket.OPEN from the global: Node 20 has no WebSocket
globalThis.WebSocket ??= WebSocket;

const reference = await startReference();
console.log(`listening ${reference.url}/map key ${reference.key}`);

const stop = async () => {
  await reference.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
