// A TCP proxy in front of the test's MongoDB-protocol server that can freeze: while frozen, nothing passes either
// way (the connections stay open, as with a server that stopped answering), so whatever awaits the store waits.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from '@toolplane/testing';

/** A freezable proxy: `url` goes in MONGODB_URL. */
export interface StoreProxy {
  readonly url: string;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `target` (host and port of the real server). */
export async function storeProxy(target: { host: string; port: number }): Promise<StoreProxy> {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    if (frozen) {
      client.pause();
      upstream.pause();
    }
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `mongodb://127.0.0.1:${port}`,
    freeze() {
      frozen = true;
      for (const socket of sockets) socket.pause();
    },
    thaw() {
      frozen = false;
      for (const socket of sockets) socket.resume();
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
