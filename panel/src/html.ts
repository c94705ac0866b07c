// The trace panel's page, as the extension host serves it in a webview, and as tests serve it alone.
// No DOM and no `vscode` here: the host passes what the webview API gives it.
//
// Content-Security-Policy: nothing may load or run but the panel's own script(s), carrying a fresh
// nonce, and its own stylesheet from the extension's resource origin (`cspSource`); no inline style,
// no remote resource, no eval, no frames, no form posts.

export interface PageOptions {
  /** `webview.cspSource` (the origin the webview serves the extension's files from) */
  cspSource: string;
  /** a fresh random nonce per page (`makeNonce()`) */
  nonce: string;
  /** `webview.asWebviewUri(...)` of panel/dist/panel.js (and any script to run before it) */
  scripts: string[];
  /** `webview.asWebviewUri(...)` of panel/dist/panel.css */
  style: string;
  title?: string;
}

const NONCE = /^[A-Za-z0-9+/=_-]{16,128}$/;

/** `text` safe inside a double-quoted HTML attribute and as HTML text. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** 32 random characters for a script nonce (Web Crypto: Node 19+ and every browser). */
export function makeNonce(): string {
  const bytes = new Uint8Array(32);
  globalThis.crypto.getRandomValues(bytes);
  let out = "";
  for (const b of bytes) out += "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[b & 63];
  return out;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  if (!NONCE.test(nonce)) throw new Error("the nonce must be 16..128 characters of [A-Za-z0-9+/=_-]");
  // VS Code gives e.g. `'self' https://*.vscode-cdn.net` (the web) or `https://file+.vscode-resource.vscode-cdn.net`:
  // hosts and schemes, and of the quoted keywords only 'self' (never an 'unsafe-…' one)
  const sources = cspSource.trim().split(/\s+/);
  if (!cspSource.trim() || /[;,"<>\r\n]/.test(cspSource)
      || sources.some((source) => source.includes("'") && source !== "'self'")) {
    throw new Error("cspSource is not a list of sources");
  }
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

export function panelHtml(options: PageOptions): string {
  const { cspSource, nonce, scripts, style } = options;
  const csp = contentSecurityPolicy(cspSource, nonce);
  const title = escapeHtml(options.title ?? "Stepscope trace");
  const tags = scripts.map((src) => `    <script nonce="${escapeHtml(nonce)}" src="${escapeHtml(src)}"></script>`).join("\n");
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="stylesheet" href="${escapeHtml(style)}">
    <title>${title}</title>
  </head>
  <body>
    <div id="app" class="app" aria-busy="true"><p class="empty">Loading the trace panel…</p></div>
${tags}
  </body>
</html>
`;
}
