/**
 * The handler's console server: the API reaches a VMI's serial console, VNC
 * and serial log through the handler on the VMI's node, over mutual TLS.
 * Each side checks the other's certificate names the component it expects.
 * Its routes are handlerRoutes (handler-routes.ts).
 */
export const ConsoleServer = {
  port: 8186,
  handlerIdentity: "kubevirt-ts-handler",
  apiIdentity: "kubevirt-ts-api",
} as const;
