import { describe, expect, it } from "vitest";
import { validationCases } from "../../test/validation-cases.ts";
import { validateVirtualMachine, validateVirtualMachineInstance } from "./index.ts";

function validate(object: unknown) {
  const kind = (object as { kind?: string }).kind;
  return kind === "VirtualMachineInstance" ? validateVirtualMachineInstance(object) : validateVirtualMachine(object);
}

describe("validation", () => {
  it("has a table of at least 25 cases", () => {
    expect(validationCases.length).toBeGreaterThanOrEqual(25);
  });

  it.each(validationCases.filter((c) => !c.invalid))("accepts $name", ({ object }) => {
    const result = validate(object);
    expect(result.ok ? [] : result.causes).toEqual([]);
  });

  it.each(validationCases.filter((c) => c.invalid))("refuses $name", ({ object, invalid }) => {
    const result = validate(object);
    expect(result.ok).toBe(false);
    const causes = result.ok ? [] : result.causes;
    const cause = causes.find((c) => c.field === invalid?.field);
    expect(cause, `a cause for ${invalid?.field ?? ""} among ${JSON.stringify(causes)}`).toBeDefined();
    expect(cause?.message).toMatch(invalid?.message ?? /./);
    // Every message names its field, so it reads on its own.
    for (const c of causes) expect(c.message.startsWith(c.field)).toBe(true);
  });

  it("leaves its input untouched", () => {
    const object = structuredClone(validationCases[0]?.object);
    const before = JSON.stringify(object);
    validate(object);
    expect(JSON.stringify(object)).toBe(before);
  });
});
