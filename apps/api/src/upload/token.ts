import { createHmac, timingSafeEqual } from "node:crypto";

// CDI's upload tokens: what an UploadTokenRequest answers (token-api.ts, and
// the dashboard's images procedures) and what the upload proxy (proxy.ts)
// takes, each naming one claim for a few minutes. Signed with a key derived
// from virt-api's serving key, which every replica mounts, so a token one
// replica made is taken by any other. The token names its claim; it carries
// no more of the user than that.

/** How long a token is taken, as CDI's: enough to start an upload, which then runs as long as it needs. */
export const UPLOAD_TOKEN_TTL_MS = 5 * 60_000;

export interface UploadTarget {
  namespace: string;
  pvcName: string;
}

interface Payload extends UploadTarget {
  /** When it stops being taken, in ms since the epoch. */
  exp: number;
}

const encode = (value: Buffer | string) => Buffer.from(value).toString("base64url");

export class UploadTokens {
  private readonly key: Buffer;

  private constructor(key: Buffer) {
    this.key = key;
  }

  /** Tokens signed with a key derived from the serving key's PEM (never the key itself). */
  static fromServingKey(pem: Buffer): UploadTokens {
    if (pem.length === 0) throw new Error("the serving key is empty: upload tokens need it");
    return new UploadTokens(createHmac("sha256", pem).update("kubevirt-ts upload tokens").digest());
  }

  private signature(body: string): Buffer {
    return createHmac("sha256", this.key).update(body).digest();
  }

  sign(target: UploadTarget, now = Date.now()): string {
    const body = encode(
      JSON.stringify({
        namespace: target.namespace,
        pvcName: target.pvcName,
        exp: now + UPLOAD_TOKEN_TTL_MS,
      } satisfies Payload),
    );
    return `${body}.${encode(this.signature(body))}`;
  }

  /** The claim a token names, or why it is not taken. */
  verify(token: string, now = Date.now()): UploadTarget | { refused: string } {
    const [body, signature, ...rest] = token.split(".");
    if (!body || !signature || rest.length > 0)
      return { refused: "the upload token is malformed: ask for a new one with an UploadTokenRequest" };
    const given = Buffer.from(signature, "base64url");
    const wanted = this.signature(body);
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted))
      return {
        refused:
          "the upload token was not made by this cluster's upload proxy: ask for a new one with an UploadTokenRequest",
      };
    const payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Payload;
    if (payload.exp < now)
      return {
        refused: "the upload token has expired (tokens last 5 minutes): ask for a new one with an UploadTokenRequest",
      };
    return { namespace: payload.namespace, pvcName: payload.pvcName };
  }
}
