// A message from the extension host to a webview as VS Code carries it (extHostWebviewMessaging.ts):
// JSON text with each typed array taken out as a buffer. On the page, `window.__harness.deliver`
// (harness.js) puts it back together as VS Code's webview side does and posts it to the panel.
// Buffers travel here as base64 text (VS Code copies them as bytes): decoding them on the page
// costs more than VS Code's copy does, never less.

export function serializeWebviewMessage(message) {
  const buffers = [];
  const text = JSON.stringify(message, (_key, value) => {
    if (ArrayBuffer.isView(value)) {
      buffers.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64"));
      return { $$vscode_array_buffer_reference$$: true, index: buffers.length - 1, view: { type: value.constructor.name } };
    }
    return value;
  });
  return { text, buffers };
}
