// Stands in for VS Code around the panel served alone: the webview API that records what the panel
// posts, as VS Code's `acquireVsCodeApi()` gives it. Loaded before the panel, with the page's nonce.
(function () {
  "use strict";
  const posted = [];
  let state;
  window.__harness = { posted, violations: [] };
  document.addEventListener("securitypolicyviolation", (e) => {
    window.__harness.violations.push(`${e.violatedDirective} ${e.blockedURI || ""}`.trim());
  });
  window.acquireVsCodeApi = function () {
    return {
      postMessage: (message) => {
        posted.push(JSON.parse(JSON.stringify(message)));
        // the host's side of the handshake, when a state was loaded beside the page (the benchmark's)
        if (message.type === "ready" && window.__pendingState !== undefined) {
          const state = window.__pendingState;
          window.__pendingState = undefined;
          setTimeout(() => window.postMessage({ type: "state", state }, "*"), 0);
        }
      },
      getState: () => (state === undefined ? window.__harnessInitialState : state),
      setState: (s) => {
        state = s;
      },
    };
  };
})();
