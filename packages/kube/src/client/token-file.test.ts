import { describe, expect, it } from "vitest";
import { TOKEN_FILE_PERIOD_MS, TokenFile } from "./token-file.ts";

/** A token file whose content and clock the test sets, counting the reads. */
function fixture() {
  const state = { content: "one" as string | Error, now: 0, reads: 0, stale: [] as unknown[] };
  const file = new TokenFile("/var/run/secrets/kubernetes.io/serviceaccount/token", {
    now: () => state.now,
    read: (): Promise<string> => {
      state.reads += 1;
      return state.content instanceof Error ? Promise.reject(state.content) : Promise.resolve(state.content);
    },
    onStale: (error) => state.stale.push(error),
  });
  return { state, file };
}

describe("TokenFile", () => {
  it("reads the file again only after the period", async () => {
    const { state, file } = fixture();
    expect(await file.token()).toBe("one");
    state.content = "two\n";
    state.now = TOKEN_FILE_PERIOD_MS - 1;
    expect(await file.token()).toBe("one");
    state.now = TOKEN_FILE_PERIOD_MS;
    expect(await file.token()).toBe("two");
    expect(state.reads).toBe(2);
  });

  it("reads the file at once on refresh, one read for callers at the same time", async () => {
    const { state, file } = fixture();
    await file.token();
    state.content = "two";
    expect(await Promise.all([file.refresh(), file.refresh(), file.token()])).toEqual(["two", "two", "one"]);
    expect(state.reads).toBe(2);
    expect(await file.token()).toBe("two");
  });

  it("keeps the last token when the file cannot be read, and tries again a period later", async () => {
    const { state, file } = fixture();
    await file.token();
    state.content = new Error("ENOENT");
    state.now = TOKEN_FILE_PERIOD_MS;
    expect(await file.token()).toBe("one");
    expect(await file.token()).toBe("one");
    expect(state.reads).toBe(2);
    expect(state.stale).toEqual([state.content]);
    state.content = "";
    state.now = 2 * TOKEN_FILE_PERIOD_MS;
    expect(await file.token()).toBe("one");
    expect(String(state.stale[1])).toMatch(/token is empty$/);
  });

  it("fails naming the file when there has been no token yet", async () => {
    const { state, file } = fixture();
    state.content = new Error("EACCES: permission denied");
    await expect(file.token()).rejects.toThrow(
      "cannot read the service-account token file " +
        "/var/run/secrets/kubernetes.io/serviceaccount/token: EACCES: permission denied",
    );
  });
});
