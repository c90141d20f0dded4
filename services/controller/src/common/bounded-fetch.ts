// The controller's reads from pods and the network, each bounded in bytes and
// in time: a peer that streams forever, announces a huge body, or trickles
// bytes costs the controller at most maxBytes of memory and timeoutMs of
// waiting, and ends only its own read.

export interface BoundedRead {
  /** The most bytes of the body read; past it the read is aborted. */
  maxBytes: number;
  /** The most the whole read (connecting, headers and body) may take. */
  timeoutMs: number;
}

/** The text of a GET's body, or why there is none (not answering, not 2xx, past the bound in bytes or time). */
export async function fetchBoundedText(
  url: string,
  bound: BoundedRead,
): Promise<{ text: string } | { failed: string }> {
  const abort = new AbortController();
  const timer = setTimeout(() => {
    abort.abort(new Error(`no whole answer within ${String(bound.timeoutMs)} ms`));
  }, bound.timeoutMs);
  try {
    const response = await fetch(url, { signal: abort.signal, redirect: "error" });
    if (!response.ok) {
      abort.abort();
      return { failed: `answered ${String(response.status)}` };
    }
    const announced = Number(response.headers.get("content-length") ?? 0);
    if (announced > bound.maxBytes) {
      abort.abort();
      return { failed: `announced ${String(announced)} bytes, more than the ${String(bound.maxBytes)} read` };
    }
    if (!response.body) return { text: "" };
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    // Leaving the loop early cancels the body; the abort then closes the connection.
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      if (bytes > bound.maxBytes) break;
      chunks.push(chunk);
    }
    if (bytes > bound.maxBytes) {
      abort.abort();
      return { failed: `sent more than the ${String(bound.maxBytes)} bytes read` };
    }
    return { text: Buffer.concat(chunks).toString("utf8") };
  } catch (error) {
    return {
      failed:
        abort.signal.aborted && abort.signal.reason instanceof Error
          ? abort.signal.reason.message
          : error instanceof Error
            ? error.message
            : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
}
