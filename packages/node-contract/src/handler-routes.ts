import { DOMAIN_ACTION_SUBRESOURCE, FREEZE_ACTIONS, GUEST_AGENT_QUERIES } from "@kubevirt-ts/kubevirt-api";
import { bounded, describeIssues, domainStats, domainStatus, migrationReport } from "@kubevirt-ts/launcher-protocol";
import { SHARED_CONSOLE_QUERY, guestAgentInfo, guestFileSystem, guestUser } from "@kubevirt-ts/vm-rules";
import { z } from "zod";

// The handler's HTTP API (its console server, KubeVirt's port 8186), which
// only virt-api calls: every route declared once here, with its method, its
// path, the query it takes, and what it answers (a websocket, bytes, or JSON
// of a schema). The handler dispatches on matchHandlerRoute; virt-api builds
// its paths with handlerPath and checks each answer against the route's
// bounds and schema: a handler's pod runs on a node a tenant's VM shares, so
// neither side takes the other's bytes on trust.

const KiB = 1024;
const MiB = 1024 * KiB;

/** A query parameter: how a caller's value is written into the URL, and how the handler reads it back. */
export interface QueryParam<T> {
  /** undefined: left out of the URL. */
  encode(value: T): string | undefined;
  /** The value the handler acts on; throws a HandlerRouteRefusal (400) when the text cannot be one. */
  decode(raw: string | null): T;
}

/** Why a request matches no route, or not the way it came: its HTTP status and words. */
export class HandlerRouteRefusal extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** A yes that only "true" says; anything else (or nothing) is no. */
const flag: QueryParam<boolean> = { encode: (value) => (value ? "true" : undefined), decode: (raw) => raw === "true" };
const text: QueryParam<string | undefined> = { encode: (value) => value, decode: (raw) => raw ?? undefined };
const wholeSeconds = (name: string): QueryParam<number> => ({
  encode: (value) => String(value),
  decode: (raw) => {
    const seconds = Number(raw ?? "0");
    if (!Number.isInteger(seconds) || seconds < 0)
      throw new HandlerRouteRefusal(400, `${name} is a whole number of seconds, 0 or more`);
    return seconds;
  },
});

/** How a route answers: a websocket of raw bytes, bytes of one content type, or JSON of a schema. */
type Answer =
  | { readonly kind: "websocket" }
  | { readonly kind: "bytes"; readonly contentType: string; readonly maxBytes: number }
  | {
      readonly kind: "json";
      readonly maxBytes: number;
      readonly result: z.ZodType | Readonly<Record<string, z.ZodType>>;
      readonly resultBy?: string;
    };

interface RouteSpec {
  readonly method: "GET" | "PUT";
  /** Segments after "/": a word, ":param" one segment of any text (URI-encoded), "*param" the rest of the path. */
  readonly path: string;
  /** The words a ":param" may be; a segment that is none of them matches no route. */
  readonly words?: Readonly<Record<string, readonly string[]>>;
  readonly query: Readonly<Record<string, QueryParam<unknown>>>;
  readonly answer: Answer;
}

/** The part every route of one VMI starts with. */
const VMI = "v1/namespaces/:namespace/virtualmachineinstances/:name";
const noQuery = {};
/** A domain's status, as the launcher answered it; the API only needs to know the call succeeded. */
const domainAnswer = { kind: "json", maxBytes: 1 * MiB, result: bounded(domainStatus) } as const;
/** KubeVirt's list of a guest agent's users or file systems. */
const agentList = <T extends z.ZodType>(item: T) =>
  bounded(z.strictObject({ metadata: z.strictObject({}), items: z.array(item) }));

/** Every route of the handler, by name. */
export const handlerRoutes = {
  /**
   * The VMI's serial console: a websocket of raw bytes; shared=true joins the viewers of one session (vm-rules'
   * console-sharing.ts), viewer names who joins, as the API server authenticated them.
   */
  console: {
    method: "GET",
    path: `${VMI}/console`,
    query: { [SHARED_CONSOLE_QUERY]: flag, viewer: text },
    answer: { kind: "websocket" },
  },
  /**
   * The VMI's display (VNC): as the console; preserveSession=true refuses (503) while another session holds it, as
   * KubeVirt's.
   */
  vnc: {
    method: "GET",
    path: `${VMI}/vnc`,
    query: { [SHARED_CONSOLE_QUERY]: flag, viewer: text, preserveSession: flag },
    answer: { kind: "websocket" },
  },
  /**
   * A tunnel to a port of the guest, through the launcher; the handler checks the port and protocol (parsePortForward).
   */
  portForward: {
    method: "GET",
    path: `${VMI}/portforward/:port/:protocol`,
    query: noQuery,
    answer: { kind: "websocket" },
  },
  /** The display's screenshot, PNG; the handler serves as much as it reads of a pod's file. */
  screenshot: {
    method: "GET",
    path: `${VMI}/vnc/screenshot`,
    query: noQuery,
    answer: { kind: "bytes", contentType: "image/png", maxBytes: 32 * MiB },
  },
  /** The last 512 KiB the guest printed on its serial console. */
  serialLog: {
    method: "GET",
    path: `${VMI}/serial-log`,
    query: noQuery,
    answer: { kind: "bytes", contentType: "application/octet-stream", maxBytes: 512 * KiB },
  },
  /** An action on the running domain, by KubeVirt's name of its subresource (DOMAIN_ACTION_SUBRESOURCE). */
  domainAction: {
    method: "PUT",
    path: `${VMI}/:action`,
    words: { action: Object.values(DOMAIN_ACTION_SUBRESOURCE) },
    query: noQuery,
    answer: domainAnswer,
  },
  /** Freezes the guest's file systems (thawed by themselves after unfreezeTimeoutSeconds, 0: never), or thaws them. */
  fileSystems: {
    method: "PUT",
    path: `${VMI}/:action`,
    words: { action: FREEZE_ACTIONS },
    query: { unfreezeTimeoutSeconds: wholeSeconds("unfreezeTimeoutSeconds") },
    answer: domainAnswer,
  },
  /** What the guest agent tells, in KubeVirt's shape of each query. */
  guestAgent: {
    method: "GET",
    path: `${VMI}/:query`,
    words: { query: GUEST_AGENT_QUERIES },
    query: noQuery,
    answer: {
      kind: "json",
      maxBytes: 1 * MiB,
      resultBy: "query",
      result: {
        guestosinfo: bounded(guestAgentInfo),
        userlist: agentList(guestUser),
        filesystemlist: agentList(guestFileSystem),
      },
    },
  },
  /**
   * The domain stats of every VMI running on the node, read by the API's metrics store: a few KiB a VMI, 64 MiB far
   * above a node's worth.
   */
  stats: {
    method: "GET",
    path: "v1/stats",
    query: noQuery,
    answer: {
      kind: "json",
      maxBytes: 64 * MiB,
      result: bounded(
        z.strictObject({
          vmis: z.array(z.strictObject({ namespace: z.string(), name: z.string(), stats: domainStats })),
        }),
      ),
    },
  },
  /**
   * The last figures of a migration the node's launchers sent, by its uid; 404 once the handler no longer keeps them.
   */
  migration: {
    method: "GET",
    path: "v1/migrations/*uid",
    query: noQuery,
    answer: { kind: "json", maxBytes: 1 * MiB, result: bounded(migrationReport) },
  },
} as const satisfies Record<string, RouteSpec>;

export type HandlerRoute = keyof typeof handlerRoutes;
type Spec<R extends HandlerRoute> = (typeof handlerRoutes)[R];
/** The routes answered over a websocket, and the plain requests. */
export type HandlerStreamRoute = {
  [R in HandlerRoute]: Spec<R>["answer"]["kind"] extends "websocket" ? R : never;
}[HandlerRoute];
export type HandlerRequestRoute = Exclude<HandlerRoute, HandlerStreamRoute>;
export type HandlerJsonRoute = {
  [R in HandlerRoute]: Spec<R>["answer"]["kind"] extends "json" ? R : never;
}[HandlerRoute];

type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<Rest>
  : P extends `${string}:${infer Name}`
    ? Name
    : P extends `${string}*${infer Name}`
      ? Name
      : never;
type WordsOf<R extends HandlerRoute> = Spec<R> extends { words: infer W } ? W : object;
/** A route's path params: each ":param" and "*param", a word of its list when the route has one. */
export type HandlerRouteParams<R extends HandlerRoute> = {
  [K in ParamNames<Spec<R>["path"]>]: K extends keyof WordsOf<R>
    ? WordsOf<R>[K] extends readonly (infer W)[]
      ? W
      : string
    : string;
};
type ValueOf<Q> = Q extends QueryParam<infer T> ? T : never;
/** The query the handler reads of a request of the route. */
export type HandlerRouteQuery<R extends HandlerRoute> = { [K in keyof Spec<R>["query"]]: ValueOf<Spec<R>["query"][K]> };
/** The query a caller may give. */
export type HandlerRouteQueryInput<R extends HandlerRoute> = Partial<HandlerRouteQuery<R>>;
type ResultSchemas<R extends HandlerJsonRoute> = Spec<R>["answer"] extends { result: infer S }
  ? S extends z.ZodType
    ? S
    : S[keyof S]
  : never;
/** What a JSON route answers. */
export type HandlerRouteResult<R extends HandlerJsonRoute> = z.output<ResultSchemas<R>>;

const segmentsOf = (route: HandlerRoute): string[] => handlerRoutes[route].path.split("/");
const wordsOf = (route: HandlerRoute): Readonly<Record<string, readonly string[]>> =>
  "words" in handlerRoutes[route] ? (handlerRoutes[route] as { words: Record<string, readonly string[]> }).words : {};

/** The path (and query) of a request of the route. */
export function handlerPath<R extends HandlerRoute>(
  route: R,
  params: HandlerRouteParams<R>,
  query?: HandlerRouteQueryInput<R>,
): string {
  const values = params as Record<string, string>;
  const path = segmentsOf(route)
    .map((segment) =>
      segment.startsWith(":") || segment.startsWith("*") ? encodeURIComponent(values[segment.slice(1)] ?? "") : segment,
    )
    .join("/");
  const search = new URLSearchParams();
  const codecs = handlerRoutes[route].query as Record<string, QueryParam<unknown>>;
  for (const [name, value] of Object.entries(query ?? {})) {
    const written = value === undefined ? undefined : codecs[name]?.encode(value);
    if (written !== undefined) search.set(name, written);
  }
  const searchText = search.toString();
  return `/${path}${searchText ? `?${searchText}` : ""}`;
}

/**
 * A request matched to its route: its decoded params and query, and `word`, what its path asks of the VMI (the part
 * after the VMI's name) for messages.
 */
export type HandlerRouteMatch = {
  [R in HandlerRoute]: { route: R; params: HandlerRouteParams<R>; query: HandlerRouteQuery<R>; word: string };
}[HandlerRoute];

const VMI_SEGMENTS = VMI.split("/").length;
/** Whether the route is one of a VMI (rather than of the node). */
const ofVmi = (route: HandlerRoute): boolean => handlerRoutes[route].path.startsWith(`${VMI}/`);

/** The route and params of a path, by segments; undefined when no route has it. */
function matchPath(
  pathname: string,
): { route: HandlerRoute; params: Record<string, string>; word: string } | undefined {
  const segments = pathname.split("/").slice(1);
  const matches = (route: HandlerRoute): Record<string, string> | undefined => {
    const pattern = segmentsOf(route);
    const rest = pattern.at(-1)?.startsWith("*") === true;
    if (rest ? segments.length < pattern.length : segments.length !== pattern.length) return undefined;
    const words = wordsOf(route);
    const params: Record<string, string> = {};
    for (const [i, part] of pattern.entries()) {
      const segment = segments[i] ?? "";
      const name = part.slice(1);
      if (part.startsWith("*")) {
        // The rest of the path, slashes and all; it may be empty.
        params[name] = decodeURIComponent(segments.slice(i).join("/"));
      } else if (!part.startsWith(":")) {
        if (segment !== part) return undefined;
      } else {
        if (segment === "" || words[name]?.includes(segment) === false) return undefined;
        params[name] = decodeURIComponent(segment);
      }
    }
    return params;
  };
  for (const route of Object.keys(handlerRoutes) as HandlerRoute[]) {
    const params = matches(route);
    if (params) return { route, params, word: ofVmi(route) ? segments.slice(VMI_SEGMENTS).join("/") : "" };
  }
  return undefined;
}

/** Why a plain request came by the wrong method (405), in each route's words. */
function wrongMethod(route: HandlerRoute, word: string): string {
  switch (route) {
    case "stats":
      return "stats are read with GET";
    case "migration":
      return "a migration's figures are read with GET";
    case "console":
    case "vnc":
    case "portForward":
    case "serialLog":
      return `${word} is a websocket; serial-log is read with GET`;
    default:
      return (
        `${word} is ${handlerRoutes[route].method === "PUT" ? "done" : "read"} ` + `with ${handlerRoutes[route].method}`
      );
  }
}

/**
 * The route a request asks for, with its params and query read; throws a HandlerRouteRefusal: 404 for a path no
 * route has, 405 for a plain request by another method (or one of a websocket's path), 400 for a websocket asked of a
 * VMI's plain route or a query value the route cannot take. A websocket asked of a node's route (stats, migrations)
 * is a path no websocket has: 404.
 */
export function matchHandlerRoute(
  method: string | undefined,
  url: string | undefined,
  upgrade: boolean,
): HandlerRouteMatch {
  const pathname = new URL(url ?? "/", "https://handler").pathname;
  const found = matchPath(pathname);
  if (!found || (upgrade && !ofVmi(found.route))) throw new HandlerRouteRefusal(404, `no such path: ${pathname}`);
  const spec: RouteSpec = handlerRoutes[found.route];
  const websocket = spec.answer.kind === "websocket";
  if (upgrade && !websocket) throw new HandlerRouteRefusal(400, `${found.word} is a plain request, not a websocket`);
  if (!upgrade && (websocket || method !== spec.method))
    throw new HandlerRouteRefusal(405, wrongMethod(found.route, found.word));
  const search = new URL(url ?? "/", "https://handler").searchParams;
  const query = Object.fromEntries(
    Object.entries(spec.query as Record<string, QueryParam<unknown>>).map(([name, codec]) => [
      name,
      codec.decode(search.get(name)),
    ]),
  );
  return { route: found.route, params: found.params, query, word: found.word } as HandlerRouteMatch;
}

/** The schema of a JSON route's answer (for the guest agent, of the query asked). */
export function handlerResultSchema<R extends HandlerJsonRoute>(
  route: R,
  params: HandlerRouteParams<R>,
): ResultSchemas<R> {
  const answer = handlerRoutes[route].answer as { result: z.ZodType | Record<string, z.ZodType>; resultBy?: string };
  const schema =
    answer.resultBy === undefined
      ? answer.result
      : (answer.result as Record<string, z.ZodType>)[(params as Record<string, string>)[answer.resultBy] ?? ""];
  return schema as ResultSchemas<R>;
}

/** The most bytes a plain route's answer may have. */
export const handlerAnswerMaxBytes = (route: HandlerRequestRoute): number =>
  (handlerRoutes[route].answer as { maxBytes: number }).maxBytes;

/** What a plain route answers, once read: the JSON route's result, or the bytes. */
export type HandlerAnswer<R extends HandlerRequestRoute> = R extends HandlerJsonRoute ? HandlerRouteResult<R> : Buffer;

/**
 * A plain route's answer (a 200's body, at most handlerAnswerMaxBytes) as the caller takes it: the bytes, or the JSON
 * checked against the route's schema; a HandlerRouteRefusal (502) naming what is wrong when it is not one.
 */
export function readHandlerAnswer<R extends HandlerRequestRoute>(
  route: R,
  params: HandlerRouteParams<R>,
  body: Buffer,
): HandlerAnswer<R> {
  if (handlerRoutes[route].answer.kind !== "json") return body as HandlerAnswer<R>;
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    throw new HandlerRouteRefusal(502, `the handler's answer to ${route} is not JSON`);
  }
  const checked = handlerResultSchema(
    route as HandlerJsonRoute,
    params as HandlerRouteParams<HandlerJsonRoute>,
  ).safeParse(value);
  if (!checked.success)
    throw new HandlerRouteRefusal(
      502,
      `the handler's answer to ${route} is not one: ${describeIssues(checked.error, route)}`,
    );
  return checked.data as HandlerAnswer<R>;
}
