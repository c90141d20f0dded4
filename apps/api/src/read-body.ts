import type { IncomingMessage } from "node:http";

/**
 * The request's body, or undefined as soon as it is known to pass `max`
 * bytes: a declared Content-Length over it is refused unread, and a body
 * sent without one is dropped once it grows past it (the rest is discarded
 * unbuffered until the request ends or times out).
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  if (Number(req.headers["content-length"] ?? 0) > max) {
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      req.off("data", onData);
      req.resume();
      resolve(undefined);
    };
    req.on("data", onData);
    req.on("end", () => {
      resolve(Buffer.concat(chunks));
    });
    req.on("error", reject);
  });
}
