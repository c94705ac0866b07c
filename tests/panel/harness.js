// Stands in for VS Code around the panel served alone: the webview API that records what the panel
// posts, as VS Code's `acquireVsCodeApi()` gives it, and the delivery of the host's messages as VS
// Code's webview side does it (webview-message.mjs). Loaded before the panel, with the page's nonce.
(function () {
  "use strict";
  const posted = [];
  let state;
  const TYPED = { Float64Array, Float32Array, Int32Array, Uint32Array, Int16Array, Uint16Array, Int8Array, Uint8Array };

  function bytes(base64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(base64).buffer;
    const text = atob(base64);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out.buffer;
  }

  /** A message serialised by webview-message.mjs, read back (typed arrays restored) and posted. */
  function deliver(text, buffers) {
    const message = buffers.length
      ? JSON.parse(text, (_key, value) => {
          if (value && value.$$vscode_array_buffer_reference$$ === true) return new TYPED[value.view.type](bytes(buffers[value.index]));
          return value;
        })
      : JSON.parse(text);
    window.postMessage(message, "*");
  }

  window.__harness = { posted, violations: [], deliver };
  document.addEventListener("securitypolicyviolation", (e) => {
    window.__harness.violations.push(`${e.violatedDirective} ${e.blockedURI || ""}`.trim());
  });
  window.acquireVsCodeApi = function () {
    return {
      postMessage: (message) => {
        posted.push(JSON.parse(JSON.stringify(message)));
        // the host's side of the handshake, when its answer was loaded beside the page (the benchmark's)
        if (message.type === "ready" && window.__pendingMessages !== undefined) {
          const pending = window.__pendingMessages;
          window.__pendingMessages = undefined;
          setTimeout(() => {
            const started = performance.now();
            for (const m of pending) deliver(m.text, m.buffers);
            // VS Code's part on the page (the benchmark prints it apart from the panel's)
            performance.measure("stepscope delivery", { start: started, end: performance.now() });
          }, 0);
        }
      },
      getState: () => (state === undefined ? window.__harnessInitialState : state),
      setState: (s) => {
        state = s;
      },
    };
  };
})();
