// Drives the trace panel served alone (the page the extension host serves, with its CSP and nonce)
// in headless Chromium, as a person would: reads tables, sorts, filters, clicks rows and spans, zooms,
// pans, selects; writes what it saw to a JSON file for pytest to judge, and screenshots to look at.
// Usage: node driver.mjs CONFIG.json
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { inflateSync } from "node:zlib";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(import.meta.url);
const { chromium } = require(config.playwrightCore);
const { panelHtml, makeNonce } = await import(pathToFileURL(config.htmlModule).href);
// the host posts a timeline's span columns apart, as typed arrays (panel/src/timeline-doc.ts)
const { splitTimeline } = await import(pathToFileURL(join(dirname(config.htmlModule), "timeline-doc.mjs")).href);
const { serializeWebviewMessage } = await import(pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), "webview-message.mjs")).href);

/** Post `message` to the page as VS Code carries a webview message: JSON text and buffers. */
async function deliver(page, message) {
  const { text, buffers } = serializeWebviewMessage(message);
  await page.evaluate(([t, b]) => window.__harness.deliver(t, b), [text, buffers]);
}
mkdirSync(config.screenshots, { recursive: true });

// ---------------------------------------------------------------- a local server for the page
const files = {
  "/panel.js": [join(config.dist, "panel.js"), "text/javascript"],
  "/panel.css": [join(config.dist, "panel.css"), "text/css"],
  "/harness.js": [config.harness, "text/javascript"],
};
const pages = new Map();
const server = createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  if (pages.has(url.pathname)) {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(pages.get(url.pathname));
  } else if (url.pathname === "/favicon.ico") {
    res.writeHead(204); // the browser asks for one; the webview never does
    res.end();
  } else if (files[url.pathname]) {
    res.writeHead(200, { "content-type": files[url.pathname][1] });
    res.end(readFileSync(files[url.pathname][0]));
  } else {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const origin = `http://127.0.0.1:${server.address().port}`;

function pageFor(name) {
  const path = `/${name}.html`;
  pages.set(path, panelHtml({ cspSource: origin, nonce: makeNonce(), scripts: [`${origin}/harness.js`, `${origin}/panel.js`], style: `${origin}/panel.css`, title: "Stepscope trace" }));
  return origin + path;
}

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const results = {};

async function open(name, { theme = "dark", width = 1280, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme: theme, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const seen = { requests: [], console: [], errors: [] };
  page.on("request", (r) => seen.requests.push(r.url()));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") seen.console.push(m.text());
  });
  page.on("pageerror", (e) => seen.errors.push(String(e)));
  await page.goto(pageFor(name));
  await page.waitForFunction(() => window.__harness && window.stepscopePanel);
  return { page, context, seen };
}

async function load(page, statePath) {
  // as the host posts it (the span columns apart) and VS Code carries it (JSON text and buffers)
  const state = JSON.parse(readFileSync(statePath, "utf8"));
  const split = state && state.timeline ? splitTimeline(state.timeline) : null;
  await deliver(page, { type: "state", state: split ? { ...state, timeline: split.rest } : state });
  if (split) await deliver(page, { type: "spans", runId: state.runId, of: "state", spans: split.spans });
  await page.waitForSelector("#app[data-state=ready]");
  const columns = await page.evaluate(() => {
    const spans = window.stepscopePanel.state()?.timeline?.spans;
    return spans ? Object.values(spans).map((c) => c.constructor.name) : [];
  });
  if (columns.includes("Array")) throw new Error(`the panel was not given the span columns as the host posts them: ${columns}`);
  await page.waitForTimeout(100);
}

async function shot(page, name) {
  const file = join(config.screenshots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

const posted = (page) => page.evaluate(() => window.__harness.posted.slice());
const lastPosted = async (page) => (await posted(page)).at(-1);

async function tab(page, name) {
  await page.click(`#tab-${name}`);
  await page.waitForSelector(`#panel-${name}:not([hidden])`);
}

async function column(page, panel, key) {
  return page.evaluate(
    ([panel, key]) => {
      const table = document.querySelector(`#panel-${panel} table.data`);
      const keys = [...table.querySelectorAll("thead th")].map((th) => th.dataset.key);
      const k = keys.indexOf(key);
      return [...table.querySelectorAll("tbody tr[data-index]")].map((tr) => tr.children[k].textContent);
    },
    [panel, key],
  );
}

const view = (page) => page.evaluate(() => window.stepscopePanel.timeline.view());

async function contrastPairs(page) {
  // computed colours of text a person reads, against the background behind it
  return page.evaluate(() => {
    const parse = (c) => (c.match(/[\d.]+/g) || []).slice(0, 4).map(Number);
    const lum = ([r, g, b]) => {
      const f = (x) => ((x /= 255) <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
      }
      return parse(getComputedStyle(document.documentElement).backgroundColor).slice(0, 3);
    };
    const out = [];
    for (const sel of [".big", ".hint", ".machine", "h3", "table.data td", "table.data th button", ".tabs [role=tab]", ".tabs [role=tab][aria-selected=true]", ".filter", ".toolbar button", "button.link", ".banner", ".timeline-status", ".zoom-level", ".legend li", ".timeline-legend li", ".bar-label", ".kind"]) {
      const el = [...document.querySelectorAll(sel)].find((e) => e.offsetParent !== null || e.getClientRects().length);
      if (!el) continue;
      const fg = parse(getComputedStyle(el).color).slice(0, 3);
      const bg = background(el);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      out.push({ selector: sel, ratio: (a + 0.05) / (b + 0.05) });
    }
    return out;
  });
}

// ---------------------------------------------------------------- scenarios

async function mainScenario(s) {
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  r.banner = await page.evaluate(() => (document.querySelector(".banner").hidden ? null : document.querySelector(".banner").textContent));
  r.firstPosted = (await posted(page))[0];
  r.screens = [await shot(page, `${s.name}-overview`)];
  r.overviewText = await page.evaluate(() => document.querySelector("#panel-overview").innerText);
  r.bars = await page.evaluate(() => [...document.querySelectorAll(".bars .bar")].map((b) => {
    const total = [...b.querySelectorAll(".segment")].reduce((sum, seg) => sum + parseFloat(seg.style.width), 0);
    return { label: b.getAttribute("aria-label"), segmentsPercent: total };
  }));
  // findings: the location link opens the line
  const link = page.locator(".finding button.link").first();
  if (await link.count()) {
    await link.click();
    r.findingPosted = await lastPosted(page);
  }
  r.rows = {};
  for (const t of ["lines", "operators", "kernels", "steps"]) {
    await tab(page, t);
    r.rows[t] = await page.locator(`#panel-${t} tbody tr[data-index]`).count();
    r.screens.push(await shot(page, `${s.name}-${t}`));
  }
  // sorting the lines by wall time, both ways, then by line
  await tab(page, "lines");
  r.wallDefault = await column(page, "lines", "wall");
  await page.click('#panel-lines th[data-key="wall"] button');
  r.wallAscending = await column(page, "lines", "wall");
  r.wallSortState = await page.getAttribute('#panel-lines th[data-key="wall"]', "aria-sort");
  await page.click('#panel-lines th[data-key="line"] button');
  r.lineSorted = await column(page, "lines", "line");
  // filtering
  await page.fill("#panel-lines input.filter", s.filter);
  r.filtered = await column(page, "lines", "line");
  r.filterStatus = await page.textContent("#panel-lines .table-status");
  await page.fill("#panel-lines input.filter", "no-such-thing-anywhere");
  r.filteredNone = await page.locator("#panel-lines tbody tr[data-index]").count();
  await page.fill("#panel-lines input.filter", "");
  // a click on a row opens its line; so do ↓ and Enter
  await page.click('#panel-lines th[data-key="wall"] button'); // back to descending
  r.clickedRow = await column(page, "lines", "line").then((lines) => lines[0]);
  await page.click("#panel-lines tbody tr[data-index='0'] td:nth-child(3)");
  r.rowPosted = await lastPosted(page);
  await page.focus("#panel-lines tbody tr[data-index='0']");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  r.keyboardRow = await column(page, "lines", "line").then((lines) => lines[1]);
  r.keyboardPosted = await lastPosted(page);
  // a step row shows the step on the timeline
  await tab(page, "steps");
  await page.focus("#panel-steps tbody tr[data-index='1']");
  await page.keyboard.press("Enter");
  await page.waitForSelector("#panel-timeline:not([hidden])");
  await page.waitForTimeout(100);
  r.stepView = await view(page);
  // the timeline: zoom, pan, select, hover, click
  await page.click('#panel-timeline button[title^="Show the whole range"]');
  await page.waitForTimeout(50);
  r.viewStart = await view(page);
  const canvas = page.locator("canvas.timeline-canvas");
  await canvas.focus();
  await page.keyboard.press("+");
  await page.waitForTimeout(50);
  r.viewZoomKey = await view(page);
  await page.keyboard.press("ArrowRight");
  await page.waitForTimeout(50);
  r.viewPanKey = await view(page);
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
  await page.keyboard.down("Control");
  await page.mouse.wheel(0, -300);
  await page.keyboard.up("Control");
  await page.waitForTimeout(80);
  r.viewWheel = await view(page);
  await page.mouse.move(box.x + box.width * 0.6, box.y + 60);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.4, box.y + 60, { steps: 5 });
  await page.mouse.up();
  await page.waitForTimeout(80);
  r.viewDrag = await view(page);
  await page.keyboard.press("0");
  await page.waitForTimeout(50);
  // select a range: shift+drag
  await page.keyboard.down("Shift");
  await page.mouse.move(box.x + box.width * 0.3, box.y + 60);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.8, box.y + 70, { steps: 6 });
  await page.mouse.up();
  await page.keyboard.up("Shift");
  await page.waitForTimeout(100);
  r.selection = await page.textContent(".selection-summary");
  r.screens.push(await shot(page, `${s.name}-timeline-selection`));
  // click a span: it opens its line
  const point = await page.evaluate((i) => window.stepscopePanel.timeline.pointOf(i), s.clickSpan);
  r.spanPoint = point;
  if (point) {
    await page.mouse.move(point.x, point.y);
    await page.waitForTimeout(80);
    r.tooltip = await page.evaluate(() => {
      const t = document.querySelector(".tooltip");
      return t.hidden ? null : t.innerText;
    });
    r.screens.push(await shot(page, `${s.name}-timeline-hover`));
    await page.mouse.click(point.x, point.y);
    r.spanPosted = await lastPosted(page);
  }
  // keyboard in the timeline: a row, a span, Enter
  await canvas.focus();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("]");
  const before = (await posted(page)).length;
  await page.keyboard.press("Enter");
  r.keyboardSpanPosted = (await posted(page)).slice(before);
  r.announced = await page.evaluate(() => document.querySelector(".timeline-view .visually-hidden[aria-live]").textContent);
  // the legend: what each colour means, its swatches as the canvas paints them
  r.legend = await page.evaluate(() => [...document.querySelectorAll(".timeline-legend li")].map((li) => ({
    category: li.dataset.category, text: li.textContent, color: getComputedStyle(li.querySelector(".swatch")).backgroundColor,
  })));
  // W/S/A/D as in Perfetto, while the timeline has the focus: around the centre with the pointer away...
  await page.mouse.move(2, 2);
  await canvas.focus();
  await page.keyboard.press("Escape"); // no selection over the spans whose colours are read below
  await page.keyboard.press("0");
  await page.waitForTimeout(50);
  r.keys = { whole: await view(page), wholeLevel: await page.textContent(".zoom-level") };
  await page.keyboard.press("w");
  await page.waitForTimeout(50);
  r.keys.w = await view(page);
  r.keys.wLevel = await page.textContent(".zoom-level");
  await page.keyboard.press("d");
  await page.waitForTimeout(50);
  r.keys.d = await view(page);
  await page.keyboard.press("a");
  await page.waitForTimeout(50);
  r.keys.a = await view(page);
  // ...and around the pointer when it is over the spans (three quarters across the canvas)
  await page.mouse.move(box.x + box.width * 0.85, box.y + 60);
  await page.keyboard.press("w");
  await page.waitForTimeout(50);
  r.keys.wPointer = await view(page);
  await page.keyboard.press("s");
  await page.waitForTimeout(50);
  r.keys.sPointer = await view(page);
  await page.mouse.move(2, 2);
  // search: typed into its box, the letters move nothing; matches are highlighted, the rest dimmed
  await page.focus(".timeline-search");
  await page.keyboard.type(s.search);
  await page.waitForTimeout(80);
  r.search = { typedView: await view(page), status: await page.textContent(".search-status") };
  r.screens.push(await shot(page, `${s.name}-timeline-search`));
  // the colour on screen in span i, above its label's letters (6 px over its middle): a one-pixel
  // screenshot (the first pixel of a PNG is stored as is, whatever its row's filter)
  const centrePixel = async (i) => {
    await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
    const p = await page.evaluate((i) => window.stepscopePanel.timeline.pointOf(i), i);
    if (!p) return null;
    const png = await page.screenshot({ clip: { x: Math.floor(p.x), y: Math.floor(p.y) - 6, width: 1, height: 1 } });
    const chunks = [];
    for (let at = 8; at < png.length;) {
      const n = png.readUInt32BE(at);
      if (png.toString("latin1", at + 4, at + 8) === "IDAT") chunks.push(png.subarray(at + 8, at + 8 + n));
      at += 12 + n;
    }
    const row = inflateSync(Buffer.concat(chunks));
    return `rgb(${row[1]}, ${row[2]}, ${row[3]})`;
  };
  // the span clicked above, zoomed to, with the search matching it, then matching nothing
  const before0 = await view(page);
  await page.evaluate(([a, b]) => window.stepscopePanel.timeline.setView(a, b), s.clickRange);
  r.search.pixelMatch = await centrePixel(s.clickSpan);
  await page.evaluate(() => window.stepscopePanel.timeline.search("no-such-span-anywhere"));
  r.search.noneStatus = await page.textContent(".search-status");
  r.search.pixelDimmed = await centrePixel(s.clickSpan);
  await page.evaluate(() => window.stepscopePanel.timeline.search(""));
  r.search.pixelPlain = await centrePixel(s.clickSpan);
  await page.evaluate(([a, b]) => window.stepscopePanel.timeline.setView(a, b), before0);
  await page.fill(".timeline-search", s.search);
  await page.waitForTimeout(50);
  // Enter, Enter, Shift+Enter: the next, the next, back; Escape clears
  const announced = () => page.evaluate(() => document.querySelector(".timeline-view .visually-hidden[aria-live]").textContent);
  r.search.jumps = [];
  for (const key of ["Enter", "Enter", "Shift+Enter"]) {
    await page.keyboard.press(key);
    await page.waitForTimeout(50);
    r.search.jumps.push({ key, view: await view(page), status: await page.textContent(".search-status"), announced: await announced() });
  }
  r.search.focusStayed = await page.evaluate(() => document.activeElement?.classList.contains("timeline-search"));
  await page.keyboard.press("Escape");
  await page.waitForTimeout(50);
  r.search.cleared = { value: await page.inputValue(".timeline-search"), status: await page.textContent(".search-status") };
  // a line region, found by the words it is shown with
  await page.fill(".timeline-search", "NET.PY:");
  r.lineSearch = await page.textContent(".search-status");
  await page.fill(".timeline-search", "");
  r.search.clearedAgain = { value: await page.inputValue(".timeline-search"), status: await page.textContent(".search-status") };
  // frame times, spans in view
  r.frames = await page.evaluate(() => window.stepscopePanel.timeline.frameTimes.length);
  r.console = seen.console.slice(); // before the injection below, whose refusal the browser logs
  // the policy holds: an inline script (as an injected trace string would be) does not run
  r.injected = await page.evaluate(async () => {
    const s = document.createElement("script");
    s.textContent = "window.__inlineRan = true";
    document.body.appendChild(s);
    await new Promise((ok) => setTimeout(ok, 50));
    return { ran: window.__inlineRan === true, violations: window.__harness.violations.slice() };
  });
  r.contrast = [];
  for (const t of ["overview", "lines", "timeline"]) {
    await tab(page, t);
    r.contrast.push(...(await contrastPairs(page)).map((p) => ({ ...p, tab: t })));
  }
  r.requests = seen.requests;
  r.errors = seen.errors;
  r.posted = await posted(page);
  await context.close();
  return r;
}

async function hostileScenario(s) {
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme, width: 1100, height: 800 });
  await load(page, s.state);
  r.screens = [await shot(page, `${s.name}-overview`)];
  for (const t of ["timeline", "lines", "operators", "kernels", "steps"]) {
    await tab(page, t);
    await page.waitForTimeout(60);
    r.screens.push(await shot(page, `${s.name}-${t}`));
  }
  await tab(page, "timeline");
  // hover every span of the hostile names that is in view
  r.tooltips = [];
  for (const i of s.hoverSpans) {
    const p = await page.evaluate((i) => window.stepscopePanel.timeline.pointOf(i), i);
    if (!p) continue;
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(40);
    r.tooltips.push(
      await page.evaluate(() => {
        const t = document.querySelector(".tooltip");
        const rect = t.getBoundingClientRect();
        return { hidden: t.hidden, text: t.innerText.slice(0, 400), width: rect.width, right: rect.right };
      }),
    );
  }
  r.screens.push(await shot(page, `${s.name}-timeline-hover`));
  await tab(page, "operators");
  r.operatorNames = await column(page, "operators", "name");
  r.layout = await page.evaluate(() => ({
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
    widest: Math.max(...[...document.querySelectorAll("#panel-operators td")].map((td) => td.getBoundingClientRect().width)),
  }));
  r.dom = await page.evaluate(() => ({
    pwned: window.__pwned ?? null,
    scripts: document.querySelectorAll("script").length,
    images: document.querySelectorAll("img").length,
    iframes: document.querySelectorAll("iframe").length,
    handlers: [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
    violations: window.__harness.violations.slice(),
  }));
  r.requests = seen.requests;
  r.errors = seen.errors;
  r.console = seen.console;
  await context.close();
  return r;
}

async function reducedScenario(s) {
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  await tab(page, "timeline");
  r.status = await page.textContent(".timeline-status");
  await page.evaluate(([a, b]) => window.stepscopePanel.timeline.setView(a, b), s.zoomTo);
  await page.waitForFunction(() => window.__harness.posted.some((m) => m.type === "requestRange"), null, { timeout: 10000 });
  r.request = (await posted(page)).find((m) => m.type === "requestRange");
  const finer = JSON.parse(readFileSync(s.range, "utf8"));
  const range = splitTimeline(finer);
  await deliver(page, { type: "range", runId: r.request.runId, timeline: range ? range.rest : finer });
  if (range) await deliver(page, { type: "spans", runId: r.request.runId, of: "range", spans: range.spans });
  await page.waitForFunction(() => document.querySelector(".timeline-status").textContent.includes("finer level"), null, { timeout: 10000 });
  r.statusFine = await page.textContent(".timeline-status");
  r.screens = [await shot(page, `${s.name}-finer`)];
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function measureScenario(s) {
  // a measure run alone (no report, no timeline): its distribution and, compared, both sides
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  r.banner = await page.evaluate(() => (document.querySelector(".banner").hidden ? null : document.querySelector(".banner").textContent));
  r.overviewText = await page.evaluate(() => document.querySelector("#panel-overview").innerText);
  r.shareDisabled = await page.evaluate(() => document.querySelector(".actions button.share").disabled);
  r.tabs = await page.evaluate(() => [...document.querySelectorAll(".tabs [role=tab]")].filter((t) => !t.hidden).map((t) => t.textContent));
  r.strip = await page.evaluate(() => {
    const plot = document.querySelector(".measure svg.strip");
    if (!plot) return null;
    const dots = (sel) => [...plot.querySelectorAll(sel)].map((c) => Number(c.getAttribute("data-ms")));
    return {
      label: plot.getAttribute("aria-label"),
      rows: [...plot.querySelectorAll("text.axis")].map((t) => t.textContent),
      measured: dots("circle.dot:not(.warm):not(.before)"),
      warm: dots("circle.dot.warm"),
      before: dots("circle.dot.before"),
      histBars: plot.querySelectorAll("rect.hist:not(.before)").length,
      histBefore: plot.querySelectorAll("rect.hist.before").length,
      width: plot.getBoundingClientRect().width,
    };
  });
  r.contrast = await contrastPairs(page);
  r.screens = [await shot(page, `${s.name}`)];
  r.errors = seen.errors;
  r.console = seen.console;
  await context.close();
  return r;
}

async function comparisonScenario(s) {
  // two profile runs statement by statement (no report, no timeline): the table, the one-sided lists,
  // sorting it, and statement texts made to attack the page shown as text
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  r.banner = await page.evaluate(() => (document.querySelector(".banner").hidden ? null : document.querySelector(".banner").textContent));
  r.overviewText = await page.evaluate(() => document.querySelector("#panel-overview").innerText);
  r.tabs = await page.evaluate(() => [...document.querySelectorAll(".tabs [role=tab]")].filter((t) => !t.hidden).map((t) => t.textContent));
  r.shareDisabled = await page.evaluate(() => document.querySelector(".actions button.share").disabled);
  r.statements = await column(page, "overview", "statement");
  r.placesA = await column(page, "overview", "a");
  r.placesB = await column(page, "overview", "b");
  r.onlyA = await page.evaluate(() => [...document.querySelectorAll(".one-side.only-a li")].map((li) => li.textContent));
  r.onlyB = await page.evaluate(() => [...document.querySelectorAll(".one-side.only-b li")].map((li) => li.textContent));
  await page.click('#panel-overview th[data-key="statement"] button');
  r.sortedByStatement = await column(page, "overview", "statement");
  r.screens = [await shot(page, `${s.name}`)];
  r.dom = await page.evaluate(() => ({
    pwned: window.__pwned ?? null,
    scripts: document.querySelectorAll("script").length,
    images: document.querySelectorAll("img").length,
    handlers: [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
    violations: window.__harness.violations.slice(),
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
  }));
  r.contrast = await contrastPairs(page);
  r.errors = seen.errors;
  r.console = seen.console;
  r.requests = seen.requests;
  await context.close();
  return r;
}

async function brokenScenario(s) {
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  r.banner = await page.textContent(".banner");
  await page.evaluate(() => window.postMessage({ type: "eval", code: "window.__pwned = 1" }, "*"));
  await page.waitForTimeout(100);
  r.bannerAfter = await page.textContent(".banner");
  r.pwned = await page.evaluate(() => window.__pwned ?? null);
  r.timelineText = await page.evaluate(() => document.querySelector("#panel-timeline").innerText);
  r.posted = await posted(page);
  r.screens = [await shot(page, `${s.name}`)];
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function redactScenario(s) {
  // strings sharing would change are marked, by kind; the panel's button asks the host to share
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme });
  await load(page, s.state);
  r.shareBefore = await page.evaluate(() => document.querySelector(".actions button.share").disabled);
  await tab(page, "timeline");
  const p = await page.evaluate((i) => window.stepscopePanel.timeline.pointOf(i), s.hoverSpan);
  r.hoverPoint = p;
  if (p) {
    await page.mouse.move(p.x, p.y);
    await page.waitForTimeout(80);
    r.tooltip = await page.evaluate(() => {
      const t = document.querySelector(".tooltip");
      return t.hidden ? null : t.innerText;
    });
    r.screens = [await shot(page, `${s.name}-timeline-mark`)];
  }
  await page.click(".actions button.share");
  r.sharePosted = await lastPosted(page);
  await page.click(".actions button.perfetto");
  r.perfettoPosted = await lastPosted(page);
  r.text = await page.evaluate(() => document.body.innerText);
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function compiledScenario(s) {
  // a recorded torch.compile run: the lines table says what each line's kernels are fused with
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme, width: 1600 });
  await load(page, s.state);
  await tab(page, "lines");
  r.lines = await column(page, "lines", "line");
  r.fused = await column(page, "lines", "fused");
  r.header = await page.evaluate(() => document.querySelector('#panel-lines th[data-key="fused"]')?.innerText ?? null);
  r.screens = [await shot(page, `${s.name}-lines`)];
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function cpuScenario(s) {
  // a CPU-only run: no column that could only be empty, places never cut, counts said per line
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme, width: 900 });
  await load(page, s.state);
  const headers = (panel) => page.evaluate((panel) => [...document.querySelectorAll(`#panel-${panel} thead th`)].map((th) => th.dataset.key), panel);
  const note = (panel) => page.evaluate((panel) => document.querySelector(`#panel-${panel} .note`)?.textContent ?? null, panel);
  await tab(page, "lines");
  r.lineColumns = await headers("lines");
  r.linesNote = await note("lines");
  await tab(page, "operators");
  r.operatorColumns = await headers("operators");
  r.operatorsNote = await note("operators");
  r.operatorNames = await column(page, "operators", "name");
  r.operatorPlaces = await column(page, "operators", "where");
  r.operatorGrouping = await hasOperatorGrouping(page);
  r.placeLineBoxes = await page.evaluate(() => [...document.querySelectorAll('#panel-operators td.place .clamp')].map((el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].map((b) => Math.round(b.top))).size;
  }));
  r.screens = [await shot(page, `${s.name}-operators`)];
  await tab(page, "steps");
  r.stepHeaders = await page.evaluate(() => [...document.querySelectorAll("#panel-steps thead th")].map((th) => th.innerText.replace(/[▲▼]/g, "").trim()));
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function memshapesScenario(s) {
  // a run that recorded memory and input shapes: memory columns on the lines, shapes written as lists
  // of dims, operators grouped by operator and input shapes on demand
  const r = {};
  const { page, context, seen } = await open(s.name, { theme: s.theme, width: 1400 });
  await load(page, s.state);
  const headers = (panel) => page.evaluate((panel) => [...document.querySelectorAll(`#panel-${panel} table.data thead th`)].map((th) => th.dataset.key), panel);
  await tab(page, "lines");
  r.lineColumns = await headers("lines");
  r.linesNote = await page.evaluate(() => document.querySelector("#panel-lines .note")?.textContent ?? null);
  r.lines = await column(page, "lines", "line");
  r.allocated = await column(page, "lines", "allocated");
  r.peak = await column(page, "lines", "peak");
  await page.click('#panel-lines th[data-key="allocated"] button');
  r.allocatedSorted = await column(page, "lines", "allocated");
  r.screens = [await shot(page, `${s.name}-lines`)];
  await tab(page, "operators");
  r.operatorColumns = await headers("operators");
  r.operatorNames = await column(page, "operators", "name");
  r.operatorShapes = await column(page, "operators", "shapes");
  await page.selectOption("#operators-group", "shapes");
  r.groupedColumns = await headers("operators");
  r.groupedNames = await column(page, "operators", "name");
  r.groupedInputs = await column(page, "operators", "inputs");
  r.groupedCalls = await column(page, "operators", "calls");
  r.screens.push(await shot(page, `${s.name}-operators-by-shapes`));
  await page.selectOption("#operators-group", "operator");
  r.regroupedColumns = await headers("operators");
  r.text = await page.evaluate(() => document.body.innerText);
  r.errors = seen.errors;
  await context.close();
  return r;
}

async function hasOperatorGrouping(page) {
  return page.evaluate(() => document.querySelector("#operators-group") !== null);
}

const run = { memshapes: memshapesScenario, cpu: cpuScenario, compiled: compiledScenario, measure: measureScenario, comparison: comparisonScenario, main: mainScenario, redact: redactScenario, hostile: hostileScenario, reduced: reducedScenario, broken: brokenScenario };
try {
  for (const s of config.scenarios) {
    try {
      results[s.name] = await run[s.kind](s);
    } catch (e) {
      results[s.name] = { failed: String(e && e.stack ? e.stack : e) };
    }
  }
} finally {
  await browser.close();
  server.close();
  writeFileSync(config.out, JSON.stringify({ origin, results }, null, 1));
}
