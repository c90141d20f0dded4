import { type LookupAddress, lookup as dnsLookup } from "node:dns";
import { type IncomingMessage, request as httpRequest } from "node:http";
import { readFile, readdir, stat } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { BlockList, type LookupFunction, isIP } from "node:net";
import { ImportError } from "./errors.ts";

// The http source's requests. The URL the DataVolume names is fetched where
// it points (the tenant chose it, as they could from a pod of their own),
// but a redirect is followed only to an address outside the private and
// reserved ranges, where a cluster's pods, Services, nodes and API server
// are (the local cluster's 198.18.0.0/15 among them), and at most
// MAX_REDIRECTS times. Each connection's resolved address is checked as it
// is made, so a name that resolves differently the second time changes
// nothing.

export const MAX_REDIRECTS = 5;

/**
 * Where no redirect may lead: loopback, link-local (cloud metadata), private, shared and benchmarking ranges, and the
 * API server (its address in KUBERNETES_SERVICE_HOST).
 */
export function redirectDenyList(apiServerHost?: string): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
  ] as const)
    list.addSubnet(net, prefix, "ipv4");
  for (const [net, prefix] of [
    ["::", 128],
    ["::1", 128],
    ["fc00::", 7],
    ["fe80::", 10],
  ] as const)
    list.addSubnet(net, prefix, "ipv6");
  if (apiServerHost && isIP(apiServerHost)) list.addAddress(apiServerHost, isIP(apiServerHost) === 6 ? "ipv6" : "ipv4");
  return list;
}

const denied = (list: BlockList, address: string) => list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
const deniedError = (url: URL, address: string) =>
  new ImportError(
    `the http data source redirected to ${url.origin}, whose address ${address} is inside the cluster or a ` +
      "private range; give the image's final URL, outside the cluster, as the DataVolume's source",
  );

/** A DNS lookup that fails for an address on the deny list. */
function checkedLookup(url: URL, list: BlockList): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, "", 0);
        return;
      }
      const bad = addresses.find((a) => denied(list, a.address));
      if (bad) {
        callback(deniedError(url, bad.address), "", 0);
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]?.address ?? "", addresses[0]?.family ?? 4);
    });
  };
}

function get(
  url: URL,
  headers: Record<string, string>,
  list: BlockList | undefined,
  ca: string | undefined,
): Promise<IncomingMessage> {
  if (list) {
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    if (isIP(literal) && denied(list, literal)) return Promise.reject(deniedError(url, literal));
  }
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { headers, ...(list ? { lookup: checkedLookup(url, list) } : {}), ...(ca !== undefined ? { ca } : {}) },
      resolve,
    );
    req.on("error", reject);
    req.end();
  });
}

/**
 * GETs the URL, following redirects by hand: at most MAX_REDIRECTS, none to an address on `denyList`, and the
 * Authorization header never sent to another origin. The answer is not a redirect.
 */
export async function httpGet(
  endpoint: string,
  headers: Record<string, string>,
  denyList: BlockList,
  /** The PEM certificates an https server is verified with (certConfigMap); the system's roots when unset. */
  ca?: string,
): Promise<IncomingMessage> {
  let url = new URL(endpoint);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ImportError(`the http data source's URL ${endpoint} is not http or https; give an http(s) URL`);
  const origin = url.origin;
  for (let hop = 0; ; hop++) {
    const sent =
      url.origin === origin
        ? headers
        : Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== "authorization"));
    let response: IncomingMessage;
    try {
      response = await get(url, sent, hop === 0 ? undefined : denyList, ca);
    } catch (error) {
      if (error instanceof ImportError) throw error;
      throw new ImportError(`Unable to connect to http data source ${url.href}: ${(error as Error).message}`);
    }
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status < 300 || status >= 400 || location === undefined) return response;
    response.destroy();
    if (hop >= MAX_REDIRECTS)
      throw new ImportError(
        `the http data source redirected more than ${String(MAX_REDIRECTS)} times (last ` +
          `to ${location}); give the image's final URL`,
      );
    url = new URL(location, url);
    if (url.protocol !== "http:" && url.protocol !== "https:")
      throw new ImportError(`the http data source redirected to ${url.href}, which is not http or https`);
  }
}

/** The most files and bytes read from the mounted certConfigMap and header Secrets: what a ConfigMap can hold. */
const MAX_MOUNTED_FILES = 64;
const MAX_MOUNTED_BYTES = 1024 * 1024;

/** The regular files of a mounted ConfigMap or Secret (not the kubelet's ..data links and folders), bounded. */
async function mountedFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => !n.startsWith(".")).sort();
  if (names.length > MAX_MOUNTED_FILES)
    throw new ImportError(
      `${dir} holds more than ${String(MAX_MOUNTED_FILES)} keys; keep the certificates or headers only`,
    );
  const contents: string[] = [];
  let bytes = 0;
  for (const name of names) {
    const file = join(dir, name);
    if (!(await stat(file)).isFile()) continue;
    const text = await readFile(file, "utf8");
    bytes += text.length;
    if (bytes > MAX_MOUNTED_BYTES)
      throw new ImportError(`${dir} holds more than ${String(MAX_MOUNTED_BYTES)} bytes of certificates or headers`);
    contents.push(text);
  }
  return contents;
}

/** The certificates of the certConfigMap (every value, PEM), one bundle. */
export async function mountedCertificates(dir: string): Promise<string> {
  return (await mountedFiles(dir)).join("\n");
}

/** The headers of the secretExtraHeaders Secrets, each mounted in a folder of its own below `dir`: every value one. */
export async function mountedHeaders(dir: string): Promise<string[]> {
  const headers: string[] = [];
  for (const folder of (await readdir(dir)).sort())
    for (const value of await mountedFiles(join(dir, folder))) {
      const header = value.trim();
      if (!/^[!#$%&'*+.^`|~\w-]+:/.test(header))
        throw new ImportError(`a value of a secretExtraHeaders Secret is not a header 'Name: value'`);
      headers.push(header);
    }
  return headers;
}
