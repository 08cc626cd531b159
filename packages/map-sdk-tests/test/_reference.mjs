// The official SDK's reference server (`@multi-agent-protocol/sdk/server`'s MAPServer, mail
// on, in-memory stores, one API key) on a loopback port: the oracle compare.test.mjs runs the
// same scenario against.
import { MAPServer, createSimpleAPIKeyAuthenticator } from '@multi-agent-protocol/sdk/server';
import { websocketStream } from '@multi-agent-protocol/sdk';
import { WebSocketServer } from 'ws';

/**
 * The SDK's stream of a socket, whose writes go out one at a time: the reference router
 * takes a writer of the stream for every message and holds it until the message is
 * written, so two messages of one tick (an answer and the events it caused) would find the
 * stream locked. Here every `getWriter()` gets a writer of its own that queues its writes
 * behind the others on the one writer of the socket's stream.
 */
function queuedStream(ws) {
  const stream = websocketStream(ws);
  const writer = stream.writable.getWriter();
  let last = Promise.resolve();
  const queued = (write) => {
    last = last.then(write, write);
    return last;
  };
  const writable = {
    getWriter: () => ({
      write: (message) => queued(() => writer.write(message)),
      close: () => queued(() => writer.close()),
      releaseLock() {},
    }),
  };
  return { readable: stream.readable, writable };
}

/** Starts the reference server; resolves with `{url, key, close()}`. */
export async function startReference() {
  const key = 'reference-key';
  const server = new MAPServer({
    name: 'reference',
    mail: { enabled: true },
    auth: { required: true, authenticators: [createSimpleAPIKeyAuthenticator({ [key]: 'user-1' })] },
  });
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  wss.on('connection', (ws) => {
    server.accept(queuedStream(ws), { role: 'client', transportType: 'websocket' }).start();
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  const { port } = wss.address();
  return {
    url: `ws://127.0.0.1:${port}`,
    key,
    async close() {
      await server.close({ force: true });
      for (const ws of wss.clients) ws.terminate();
      await new Promise((resolve) => wss.close(resolve));
    },
  };
}
