import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';

export interface CuttingProxy {
  url: string;
  /** Each request seen: method, path and its Last-Event-ID header. */
  requests: { method: string; path: string; lastEventId?: string }[];
  close: () => Promise<void>;
}

/**
 * A proxy to `target` that forwards every request, but cuts the body of the first streamed
 * `POST /message` answer after `cutAfter` bytes (the socket is destroyed mid-body, as a
 * dropped connection would). With `refuseResumes`, `GET /tasks/{id}/events` is answered
 * 503 `{"detail": "resume refused"}` instead of being forwarded.
 */
export async function startCuttingProxy(target: string, cutAfter: number, options: { refuseResumes?: boolean } = {}): Promise<CuttingProxy> {
  const requests: CuttingProxy['requests'] = [];
  let cut = false;
  const server: Server = createServer((req, res) => {
    const lastEventId = req.headers['last-event-id'];
    requests.push({ method: req.method!, path: req.url!, lastEventId: typeof lastEventId === 'string' ? lastEventId : undefined });
    if (options.refuseResumes && req.method === 'GET' && req.url!.includes('/events')) {
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'resume refused' }));
      return;
    }
    const upstream = request(new URL(req.url!, target), { method: req.method, headers: req.headers as IncomingHttpHeaders }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      const cutThis = !cut && req.method === 'POST' && req.url === '/message' && String(answer.headers['content-type']).startsWith('text/event-stream');
      if (!cutThis) {
        answer.pipe(res);
        return;
      }
      cut = true;
      res.flushHeaders();
      let sent = 0;
      answer.on('data', (chunk: Buffer) => {
        if (sent >= cutAfter) return;
        const part = chunk.subarray(0, cutAfter - sent);
        sent += part.length;
        const done = sent >= cutAfter;
        if (done) answer.destroy();
        // the cut comes once the bytes before it are written, so the client reads them
        res.write(part, () => {
          if (done) res.socket?.destroy();
        });
      });
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}
