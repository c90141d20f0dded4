// A guest's serial output as plain text for reading: terminal control
// sequences (colours, cursor moves, title changes) taken out, carriage
// returns made line ends, and other control characters dropped.

// eslint-disable-next-line no-control-regex -- terminal escape sequences begin with ESC
const ESCAPES = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[@-Z\\-_])/g;

export function plainText(raw: string): string {
  return (
    raw
      .replace(ESCAPES, "")
      .replace(/\r\n?/g, "\n")
      // eslint-disable-next-line no-control-regex -- what is taken out are control characters
      .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "")
  );
}
