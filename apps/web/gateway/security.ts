// The headers every dashboard response carries, pages and API answers alike.
//
// Scripts: only the dashboard's own files and the inline scripts Next.js
// writes into each page, which carry a nonce made per request (the gateway
// passes the policy to Next.js on the request, and Next.js puts its nonce on
// every script it renders), so no 'unsafe-inline' and no 'unsafe-eval' for
// scripts. Styles: 'unsafe-inline', because xterm.js and noVNC write <style>
// elements and style attributes at run time; styles cannot run code.
// Websockets of the consoles and SSE streams go to the page's own origin
// ('self' covers ws: and wss: there). No framing by anyone
// (frame-ancestors 'none'), no plugins, no <base> rewriting.
//
// No Strict-Transport-Security: with the certificate the chart makes itself
// a browser must still let its user accept it, which HSTS would forbid.

export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function securityHeaders(nonce: string): Record<string, string> {
  return {
    "content-security-policy": contentSecurityPolicy(nonce),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  };
}
