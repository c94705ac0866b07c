// The browser half of benchmarks/panel_interactive.py: time to interactive, and frame times of
// scripted pan and zoom, for the trace panel served alone as the host serves it. Usage:
//   node benchmarks/panel_frames.mjs CONFIG.json
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(import.meta.url);
const { chromium } = require(config.playwrightCore);
const { panelHtml, makeNonce } = await import(pathToFileURL(config.htmlModule).href);
// the host of a checkout that posts a timeline's span columns apart (panel/src/timeline-doc.ts) does so
const splitter = join(dirname(config.htmlModule), "timeline-doc.mjs");
const { splitTimeline } = existsSync(splitter) ? await import(pathToFileURL(splitter).href) : {};
const { serializeWebviewMessage } = await import(pathToFileURL(join(dirname(config.harness), "webview-message.mjs")).href);

const files = {
  "/panel.js": [join(config.dist, "panel.js"), "text/javascript"],
  "/panel.css": [join(config.dist, "panel.css"), "text/css"],
  "/harness.js": [config.harness, "text/javascript"],
};
let page_html = "";
let state_js = "";
const server = createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  if (url.pathname === "/state.js") {
    // the state as the host posts it on the panel's `ready`, carried as a script of the page
    res.writeHead(200, { "content-type": "text/javascript" });
    res.end(state_js);
  } else if (url.pathname === "/panel.html") {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(page_html);
  } else if (files[url.pathname]) {
    res.writeHead(200, { "content-type": files[url.pathname][1] });
    res.end(readFileSync(files[url.pathname][0]));
  } else {
    res.writeHead(204);
    res.end();
  }
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});

const out = { interactive: [], host: [], transfer: [], panel: [], phases: [], draw: [], raf: [], inView: [] };
try {
  for (let run = 0; run < config.runs; run++) {
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.addInitScript(() => {
      window.__harnessInitialState = { tab: "timeline" }; // the panel reopens on the timeline, as a user left it
    });
    // the analysis has finished: its files are on disk. The host reads and parses them, posts the
    // state (with the span columns in a message of their own where its checkout does so), VS Code
    // serialises each message (JSON text, typed arrays apart as buffers), and the panel gets them
    // when it says `ready`
    const t0 = performance.now();
    const report = JSON.parse(readFileSync(config.report, "utf8"));
    const timeline = JSON.parse(readFileSync(config.timeline, "utf8"));
    const state = { runId: "bench", title: "benchmark", report, timeline, measure: null, stale: false };
    const split = splitTimeline ? splitTimeline(timeline) : null;
    const messages = split
      ? [{ type: "state", state: { ...state, timeline: split.rest } }, { type: "spans", runId: "bench", of: "state", spans: split.spans }]
      : [{ type: "state", state }];
    const serialised = messages.map(serializeWebviewMessage);
    out.host.push(performance.now() - t0);
    state_js = `window.__pendingMessages = ${JSON.stringify(serialised)};`;
    page_html = panelHtml({ cspSource: origin, nonce: makeNonce(), scripts: [`${origin}/state.js`, `${origin}/harness.js`, `${origin}/panel.js`], style: `${origin}/panel.css` });
    await page.goto(`${origin}/panel.html`);
    await page.waitForFunction(() => document.querySelector("#app").dataset.state === "ready" && window.stepscopePanel.timeline.frameTimes.length > 0 && window.stepscopePanel.timeline.lastVisited > 0, null, { polling: 10 });
    out.interactive.push(performance.now() - t0);
    // in the page: from its start to the message's arrival, and from there to the first frame drawn
    const inPage = await page.evaluate(() => {
      const frame = performance.getEntriesByType("measure").find((m) => m.name === "stepscope frame");
      const check = performance.getEntriesByType("measure").find((m) => m.name === "stepscope check");
      return { page: check.startTime, panel: frame.startTime + frame.duration - check.startTime };
    });
    out.transfer.push(inPage.page);
    out.panel.push(inPage.panel);
    out.phases.push(await page.evaluate(() => Object.fromEntries(performance.getEntriesByType("measure").map((m) => [m.name.replace("stepscope ", ""), Math.round(m.duration)]))));
    if (config.frames ?? run === config.runs - 1) {
      // scripted pan and zoom, each frame drawn as the panel draws it
      const frames = await page.evaluate(() => {
        const tl = window.stepscopePanel.timeline;
        const [a, b] = tl.view();
        const w = b - a;
        const draws = [];
        const inView = [];
        for (let k = 0; k < 120; k++) {
          const phase = k % 40;
          if (phase < 10) tl.setView(a, b); // the whole window
          else if (phase < 30) {
            const span = w * 0.8; // 80% of it, panned across
            const start = a + (w - span) * ((phase - 10) / 19);
            tl.setView(start, start + span);
          } else tl.setView(a + w * 0.05 * (phase - 30) / 10, b - w * 0.05 * (phase - 30) / 10); // zooming
          draws.push(tl.draw());
          inView.push(tl.lastVisited);
        }
        return { draws, inView };
      });
      out.draw = frames.draws;
      out.inView = frames.inView;
      // the same through animation frames: the interval between frames while it runs
      out.raf = await page.evaluate(
        () =>
          new Promise((done) => {
            const tl = window.stepscopePanel.timeline;
            const [a, b] = tl.view();
            const w = b - a;
            const stamps = [];
            let k = 0;
            const tick = (now) => {
              stamps.push(now);
              const span = w * (0.8 + 0.2 * Math.abs(Math.sin(k / 10)));
              const start = a + (w - span) * ((k % 20) / 19);
              tl.setView(start, start + span);
              tl.draw();
              if (++k < 90) requestAnimationFrame(tick);
              else done(stamps.slice(1).map((t, i) => t - stamps[i]));
            };
            requestAnimationFrame(tick);
          }),
      );
    }
    await context.close();
  }
} finally {
  await browser.close();
  server.close();
  writeFileSync(config.out, JSON.stringify(out));
}
