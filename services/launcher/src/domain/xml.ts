// A few lines of XML writing: elements as nested arrays, attributes escaped,
// so that no value from a VMI spec can break out of the document.

export type XmlNode = string | XmlElement;
export interface XmlElement {
  name: string;
  attributes?: Record<string, string | number | undefined>;
  children?: (XmlNode | undefined | false)[];
}

export function el(
  name: string,
  attributes?: XmlElement["attributes"],
  ...children: (XmlNode | undefined | false)[]
): XmlElement {
  return { name, attributes, children };
}

export function escapeXml(value: string): string {
  return value
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

export function renderXml(node: XmlNode, indent = ""): string {
  if (typeof node === "string") return `${indent}${escapeXml(node)}`;
  const attrs = Object.entries(node.attributes ?? {})
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([k, v]) => ` ${k}="${escapeXml(String(v))}"`)
    .join("");
  const children = (node.children ?? []).filter((c): c is XmlNode => c !== undefined && c !== false);
  if (children.length === 0) return `${indent}<${node.name}${attrs}/>`;
  if (children.length === 1 && typeof children[0] === "string")
    return `${indent}<${node.name}${attrs}>${escapeXml(children[0])}</${node.name}>`;
  return [
    `${indent}<${node.name}${attrs}>`,
    ...children.map((c) => renderXml(c, `${indent}  `)),
    `${indent}</${node.name}>`,
  ].join("\n");
}
