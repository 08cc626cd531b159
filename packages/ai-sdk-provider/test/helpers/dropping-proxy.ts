import { connect, createServer, type Socket } from 'node:net';

export interface Attempt {
  /** The request line (`POST /message HTTP/1.1`). */
  line: string;
  /** The request's headers, by lower-case name. */
  headers: Record<string, string>;
  body: string;
}

export interface DroppingProxy {
  url: string;
  /** Each request that matched, in order: every attempt of the client. */
  attempts: Attempt[];
  /** How many of them were dropped. */
  dropped: () => number;
  /** Resolves once `count` requests matched. */
  waitAttempts: (count: number) => Promise<void>;
  close: () => Promise<void>;
}

const HEAD_END = Buffer.from('\r\n\r\n');

function parseHead(head: string): { line: string; headers: Record<string, string> } {
  const [line = '', ...rest] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const header of rest) {
    const colon = header.indexOf(':');
    if (colon > 0) headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }
  return { line, headers };
}

/**
 * A TCP proxy to `target` that loses answers the server gave. On the first `drops`
 * connections (all of them when `null`) whose request starts with `request` (`POST
 * /message `), it forwards the request, waits until `accepted()` says the server took it
 * (polled; without `accepted`, until the server's first answer byte), then destroys the
 * client's connection without passing on a byte: the server runs the request, the client
 * sees its connection drop before any answer. The server's answer is thrown away. Other
 * requests pass through; requests on one connection are read one after the other (a client
 * sends the next once it has read the last answer).
 */
export async function startDroppingProxy(
  target: string,
  options: { accepted?: () => Promise<boolean>; drops?: number | null; request?: string } = {},
): Promise<DroppingProxy> {
  const { hostname: host, port } = new URL(target);
  const prefix = options.request ?? 'POST /message ';
  const drops = options.drops === undefined ? 1 : options.drops;
  const attempts: Attempt[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();
  let dropped = 0;

  const arrived = (attempt: Attempt) => {
    attempts.push(attempt);
    for (const waiter of waiters.filter((w) => attempts.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };

  const until = async (accepted: () => Promise<boolean>, stop: () => boolean) => {
    while (!stop()) {
      if (await accepted().catch(() => false)) return;
      await new Promise((r) => setTimeout(r, 10)); // the server is asked over HTTP: nothing to wait on
    }
  };

  const server = createServer((client) => {
    const upstream = connect(Number(port), host);
    sockets.add(client).add(upstream);
    let buffer = Buffer.alloc(0);
    let relaying = true;
    let dropping = false;
    let answered: () => void = () => {};
    const firstAnswerByte = new Promise<void>((r) => (answered = r));
    upstream.on('data', (chunk: Buffer) => (relaying ? client.write(chunk) : answered()));
    upstream.on('end', () => (dropping ? undefined : client.end()));
    client.on('close', () => (dropping ? undefined : upstream.destroy()));
    client.on('error', () => {});
    upstream.on('error', () => client.destroy());

    const drop = async (request: Buffer) => {
      dropping = true;
      relaying = false; // earlier answers are through: none of this one is
      dropped += 1;
      upstream.write(request);
      const taken = options.accepted ? until(options.accepted, () => client.destroyed) : new Promise<void>(() => {});
      await Promise.race([firstAnswerByte, taken]);
      client.destroy(); // the client's connection drops before any answer byte
    };

    client.on('data', (chunk: Buffer) => {
      if (dropping) return;
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf(HEAD_END);
        if (end < 0) return;
        const { line, headers } = parseHead(buffer.subarray(0, end).toString('latin1'));
        const length = Number(headers['content-length'] ?? 0);
        const total = end + HEAD_END.length + length;
        if (buffer.length < total) return;
        const request = buffer.subarray(0, total);
        buffer = buffer.subarray(total);
        if (line.startsWith(prefix)) {
          arrived({ line, headers, body: request.subarray(end + HEAD_END.length).toString('utf8') });
          if (drops === null || dropped < drops) {
            void drop(request);
            return;
          }
        }
        upstream.write(request);
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  const proxyPort = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${proxyPort}`,
    attempts,
    dropped: () => dropped,
    waitAttempts: (count) =>
      attempts.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise((ok) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => ok());
      }),
  };
}
