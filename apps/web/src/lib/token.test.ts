import { describe, expect, it } from "vitest";
import { clearToken, loadToken, parseBearerToken, saveToken, tokenStorageKey, type TokenStorage } from "./token";

function memoryStorage(): TokenStorage & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => items.set(key, value),
    removeItem: (key) => items.delete(key),
  };
}

const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJl";

describe("parseBearerToken", () => {
  it.each([
    ["a service account JWT", jwt, jwt],
    ["a bootstrap token", "abcdef.0123456789abcdef", "abcdef.0123456789abcdef"],
    ["surrounding whitespace and a trailing newline", `  ${jwt}\n`, jwt],
    ["a copied Bearer prefix", `Bearer ${jwt}`, jwt],
    ["a lowercase bearer prefix", `bearer   ${jwt}`, jwt],
    ["base64 padding", "dG9rZW4=", "dG9rZW4="],
  ])("accepts %s", (_case, input, token) => {
    expect(parseBearerToken(input)).toEqual({ ok: true, token });
  });

  it.each([
    ["an empty field", "", /Paste a token first/],
    ["whitespace only", " \n\t", /Paste a token first/],
    ["a bare Bearer prefix", "Bearer ", /Paste a token first/],
    ["a token split over lines", "abc\ndef", /spaces or line breaks/],
    ["two words", "abc def", /spaces or line breaks/],
    ["characters outside b64token", "tok<en>", /characters a bearer token cannot have/],
    ["padding in the middle", "ab=cd", /characters a bearer token cannot have/],
  ])("rejects %s", (_case, input, error) => {
    const result = parseBearerToken(input);
    expect(result.ok).toBe(false);
    expect(result.ok ? "" : result.error).toMatch(error);
  });
});

describe("token storage", () => {
  it("saves, loads and clears the token under one key", () => {
    const storage = memoryStorage();
    expect(loadToken(storage)).toBeNull();

    saveToken(storage, jwt);
    expect(storage.items.get(tokenStorageKey)).toBe(jwt);
    expect(loadToken(storage)).toBe(jwt);

    clearToken(storage);
    expect(storage.items.has(tokenStorageKey)).toBe(false);
    expect(loadToken(storage)).toBeNull();
  });

  it("treats an empty stored value as signed out", () => {
    const storage = memoryStorage();
    storage.setItem(tokenStorageKey, "");
    expect(loadToken(storage)).toBeNull();
  });
});
