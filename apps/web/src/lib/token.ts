// The user's Kubernetes bearer token: checked when pasted, then kept for the
// browser tab only (sessionStorage), never in cookies or localStorage.

export const tokenStorageKey = "kubevirt-ts.token";

export type TokenParseResult = { ok: true; token: string } | { ok: false; error: string };

// RFC 6750's b64token: what an Authorization: Bearer header can carry.
const bearerTokenPattern = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Reads a pasted token, accepting a copied "Bearer " prefix and surrounding whitespace. */
export function parseBearerToken(input: string): TokenParseResult {
  const token = input.trim().replace(/^bearer(?:\s+|$)/i, "");
  if (token === "") {
    return { ok: false, error: "Paste a token first, for example the output of kubectl create token NAME." };
  }
  if (/\s/.test(token)) {
    return { ok: false, error: "The token contains spaces or line breaks; paste the token alone, as one line." };
  }
  if (!bearerTokenPattern.test(token)) {
    return {
      ok: false,
      error: "The token has characters a bearer token cannot have; paste the token exactly as kubectl printed it.",
    };
  }
  return { ok: true, token };
}

export type TokenStorage = Pick<Storage, "getItem" | "setItem" | "removeItem">;

export function saveToken(storage: TokenStorage, token: string): void {
  storage.setItem(tokenStorageKey, token);
}

export function loadToken(storage: TokenStorage): string | null {
  const token = storage.getItem(tokenStorageKey);
  return token === null || token === "" ? null : token;
}

export function clearToken(storage: TokenStorage): void {
  storage.removeItem(tokenStorageKey);
}
