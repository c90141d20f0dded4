// Kubernetes resource quantities ("128Mi", "1G", "500m", 2): the format the
// API server accepts, and a parser for the comparisons validation needs.

const DECIMAL = "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))";
/** The pattern the Kubernetes API server publishes for quantities. */
export const QUANTITY_PATTERN = `^(\\+|-)?${DECIMAL}(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?${DECIMAL}))?$`;

const quantityRegExp = new RegExp(QUANTITY_PATTERN);

const binarySuffixes: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const decimalSuffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

export type Quantity = string | number;

export function isQuantity(value: Quantity): boolean {
  return typeof value === "number" ? Number.isFinite(value) : quantityRegExp.test(value);
}

/**
 * The value of a quantity in base units (bytes for memory, cores for cpu), or
 * undefined when it is not a quantity.
 */
export function parseQuantity(value: Quantity): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (!quantityRegExp.test(value)) return undefined;
  const match = /^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$/.exec(value);
  if (!match) return undefined;
  const [, numberPart = "", suffix = ""] = match;
  const base = Number(numberPart);
  const binary = binarySuffixes[suffix];
  if (binary !== undefined) return base * binary;
  const decimal = decimalSuffixes[suffix];
  if (decimal !== undefined) return base * decimal;
  // An exponent such as "1e3" or "2E-2".
  return base * 10 ** Number(suffix.slice(1));
}
