import { describe, expect, it } from "vitest";
import { plainText } from "./serial-log";

describe("plainText", () => {
  it("takes out colours, cursor moves and titles, and keeps the words and the underscores", () => {
    expect(plainText("\x1b[0;32m  OK  \x1b[0m] Reached target multi_user.\r\n")).toBe(
      "  OK  ] Reached target multi_user.\n",
    );
    expect(plainText("\x1b]0;title\x07login: \x1b[?25h")).toBe("login: ");
    expect(plainText("a\rb\x07\tc")).toBe("a\nb\tc");
  });
});
