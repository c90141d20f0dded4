import { expect, test } from "./fixtures.ts";

for (const probe of ["/healthz", "/readyz"]) {
  test(`${probe} answers 200 with status ok`, async ({ request }) => {
    const response = await request.get(probe);

    expect(response.status()).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
}
