import type { ConsoleKind, FreezeAction, GuestAgentQuery, PortForwardSegment, VmiDomainAction } from "@kubevirt-ts/kubevirt-api";
import { DOMAIN_ACTION_SUBRESOURCE } from "@kubevirt-ts/kubevirt-api";

/**
 * The handler's console server: the API reaches a VMI's serial console, VNC
 * and serial log through the handler on the VMI's node, over mutual TLS.
 * Each side checks the other's certificate names the component it expects.
 */
export const ConsoleServer = {
  port: 8186,
  handlerIdentity: "kubevirt-ts-handler",
  apiIdentity: "kubevirt-ts-api",
} as const;

/** The handler's path of the domain stats of every VMI running on its node (JSON), read by the API's metrics store. */
export const HANDLER_STATS_PATH = "/v1/stats";

/** The handler's path of the migrations its node's launchers sent (their last figures, by migration uid), read by the API. */
export const HANDLER_MIGRATIONS_PATH = "/v1/migrations";
export const handlerMigrationPath = (migrationUid: string): string => `${HANDLER_MIGRATIONS_PATH}/${encodeURIComponent(migrationUid)}`;

/** The handler's path of a VMI's console, VNC, port forward, screenshot, serial log, domain action or guest agent query. */
export function consoleServerPath(namespace: string, name: string, what: ConsoleKind | PortForwardSegment | "vnc/screenshot" | "serial-log" | VmiDomainAction | GuestAgentQuery | FreezeAction): string {
  const segment = what in DOMAIN_ACTION_SUBRESOURCE ? DOMAIN_ACTION_SUBRESOURCE[what as VmiDomainAction] : what;
  return `/v1/namespaces/${encodeURIComponent(namespace)}/virtualmachineinstances/${encodeURIComponent(name)}/${segment}`;
}
