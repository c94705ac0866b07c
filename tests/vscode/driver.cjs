// Drives code-server in headless Chromium like a person would, for one scenario, and writes what
// it saw to a JSON file. Usage: node driver.cjs CONFIG.json
// Every scenario opens the file, waits for the Stepscope squiggle and reads the Problems view; then
//   "profile":     starts a profile from the CodeLens (confirming the first real run in the modal
//                  dialog) and cancels it, runs "Stepscope: Profile This Step" from the command
//                  palette, waits for the inline ms/step timings, hovers a timed line and opens the
//                  trace panel from the hover's link (the line's row in view), opens the runs view,
//                  edits one line (the others keep their timings), saves, closes and reopens the
//                  file (the timings come back), then runs a profile that fails (the last good
//                  timings stay, marked, and the status item says so).
//   "restricted":  runs the command and waits for the refusal notification; no CodeLens is
//                  offered; the runs view lists a run made earlier and opens it (its timings are
//                  painted: viewing needs no trust).
//   "panel":       profiles from the command palette (confirming the first real run), opens the
//                  trace panel from the status bar, reads its overview, timeline and tables, clicks
//                  a table row, a span of the timeline and a finding (each must land the cursor on its line), opens the panel on
//                  a finding through its code action, then profiles again (the panel follows).
//   "panelRestricted": in restricted mode, opens the trace panel on a run made earlier by the CLI
//                  from the command palette, and clicks a table row.
//   "openRun":     shows a run from the runs view (one recorded elsewhere: no squiggle is waited
//                  for), scrolls to a line, hovers a timed line and opens the trace panel from the
//                  hover's link; the pictures of docs/compiled.md come from it (tools/editor_screens.py).
//   "measure":     starts Measure This Step from its CodeLens (confirming the first real run), waits
//                  for the result's notification and opens it in the panel (the distribution), runs
//                  "Stepscope: Measure This Step" from the command palette, then compares the two
//                  measure runs from the runs view (the panel shows both and the verdict); with
//                  `functionFile`, then opens that file (a step function and no loop) and measures
//                  from the lens over its `def` line.
//   "tryFix":      shows a run made earlier from the runs view (its findings become diagnostics),
//                  opens Quick Fix on its input-bound finding and runs "Try this fix (measure it)"
//                  for a variant, confirming the first real run, and cancels it (the file and the
//                  scratch folder are read from disk: nothing left behind); runs it again to its
//                  verdict (the notification) and diff (a diff editor beside the file), then Apply
//                  (the file on disk gets the very change measured).
//   "mcp":         runs "MCP: List Servers" (Stepscope is listed, no configuration), starts it from
//                  its actions, opens its output (the tools the editor discovered) and lists the
//                  servers again (Stepscope running).
//   "failures":    runs the command with an interpreter that has no torch (the server's error is
//                  shown, and its Open Logs opens the log), then the workspace settings point
//                  stepscope.interpreter at a missing file, and at a Python older than 3.10 when the
//                  machine has one (each problem is shown with its actions).
"use strict";
const fs = require("fs");
const path = require("path");

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const { chromium } = require(config.playwrightCore);
const result = { scenario: config.scenario, steps: [], screenshots: [] };

function step(name) {
  result.steps.push(name);
  console.log(`[driver] ${name}`);
}

async function shot(page, name) {
  const file = path.join(config.screenshots, `${name}.png`);
  await page.screenshot({ path: file });
  result.screenshots.push(file);
}

async function quickInput(page, text) {
  // F1 pressed while a webview (the trace panel) has the focus reaches the workbench through the
  // webview's key forwarding, and the quick input it opens can close again before it is typed in:
  // then the focus goes back to the workbench (the editor; a flow that needs its cursor places it
  // after this) and F1 is pressed again.
  const input = page.locator(".quick-input-widget input").first();
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("F1");
    try {
      await input.waitFor({ state: "visible", timeout: attempt === 3 ? 30_000 : 10_000 });
      await input.fill(text, { timeout: attempt === 3 ? 30_000 : 10_000 });
      return input;
    } catch (e) {
      if (attempt === 3) throw e;
      await page.keyboard.press("Escape");
      await page.locator(".part.editor .monaco-editor .view-lines").first().click({ timeout: 5_000 }).catch(() => undefined);
    }
  }
}

async function runCommand(page, title) {
  await quickInput(page, `>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ timeout: 30_000 });
  await row.click();
}

async function openFile(page, name, showing = "import torch") {
  await quickInput(page, name);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  await page.locator(".monaco-editor .view-lines", { hasText: showing }).first().waitFor({ timeout: 60_000 });
}

async function goToLine(page, line) {
  await quickInput(page, `:${line}`);
  await page.waitForTimeout(300);
  await page.keyboard.press("Enter");
}

async function problems(page) {
  await runCommand(page, "Focus on Problems View");
  const rows = page.locator(".markers-panel .monaco-list-row");
  await rows.first().waitFor({ timeout: 30_000 });
  return rows.allInnerTexts();
}

/** Inline texts that decorations put after lines, with the text of the line they follow. */
async function inlineTimings(page) {
  return page.evaluate(() => {
    const found = [];
    for (const line of document.querySelectorAll(".monaco-editor .view-lines .view-line")) {
      for (const span of line.querySelectorAll("span")) {
        const content = getComputedStyle(span, "::after").content;
        if (content && content !== "none" && content.includes("ms/step")) {
          found.push({ line: line.textContent.replace(/\u00a0/g, " "), label: JSON.parse(content) });
        }
      }
    }
    return found;
  });
}

async function statusTexts(page) {
  return page.locator(".statusbar-item").allInnerTexts();
}

async function notifications(page) {
  return page.locator(".notification-toast").allInnerTexts();
}

async function errorNotifications(page) {
  return page.locator(".notification-toast", { has: page.locator(".codicon-error") }).allInnerTexts();
}

async function hoverUntil(page, target, shown, attempts = 4) {
  // an editor hover shows after the pointer rests on the text; a pointer event the busy workbench
  // missed shows none, so the pointer leaves and comes back
  for (let attempt = 1; ; attempt++) {
    await page.mouse.move(5, 5);
    await target.hover();
    try {
      await shown.waitFor({ timeout: attempt === attempts ? 20_000 : 6_000 });
      return;
    } catch (e) {
      if (attempt === attempts) throw e;
    }
  }
}

async function waitFor(what, probe, timeoutMs, intervalMs = 500) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

async function toast(page, what, predicate, timeoutMs) {
  return waitFor(
    what,
    async () => {
      const texts = await notifications(page);
      const match = texts.find(predicate);
      return match;
    },
    timeoutMs,
  );
}

async function confirmFirstRun(page, button = "Profile") {
  const dialog = page.locator(".monaco-dialog-box").first();
  await dialog.waitFor({ timeout: 30_000 });
  result.confirmDialog = (await dialog.innerText()).replace(/\s*\n\s*/g, " | ");
  await shot(page, "confirm-first-run");
  await dialog.getByRole("button", { name: button }).click();
}

/** The texts of the Stepscope progress notification, seen every `intervalMs` until `until` says stop. */
async function watchProgress(page, seen, until, timeoutMs, intervalMs = 250) {
  return waitFor(
    "the profile to finish",
    async () => {
      for (const text of await notifications(page)) {
        if (text.includes("Stepscope: profiling")) {
          seen.add(text.replace(/\s*\n\s*/g, " | "));
        }
      }
      return until();
    },
    timeoutMs,
    intervalMs,
  );
}

async function runsView(page) {
  await runCommand(page, "Stepscope: Focus on Runs View");
  const rows = page.locator(".part.sidebar .monaco-list-row");
  await rows.first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(500);
  return rows.allInnerTexts();
}

async function profileScenario(page) {
  result.lensesOffered = await page.locator(".monaco-editor .codelens-decoration a", { hasText: "Profile this step" }).count();
  step("start a profile from the CodeLens, confirm the first real run, then cancel it");
  const lens = page.locator(".monaco-editor .codelens-decoration a", { hasText: "Profile this step" }).first();
  await lens.waitFor({ timeout: 30_000 });
  await lens.click();
  await confirmFirstRun(page);
  const progress = page.locator(".notification-toast", { hasText: "Stepscope: profiling" }).first();
  await progress.waitFor({ timeout: 30_000 });
  result.runningStatus = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  const early = new Set();
  // Phase text from the start: the program's start-up is said before its first step.
  await watchProgress(page, early, () => [...early].some((t) => /starting train_cpu\.py/.test(t)), 30_000);
  result.startupProgress = [...early];
  await shot(page, "progress");
  await progress.getByRole("button", { name: "Cancel" }).click();
  const cancelledAt = Date.now();
  await progress.waitFor({ state: "detached", timeout: 30_000 });
  result.cancelClosedAfterMs = Date.now() - cancelledAt;
  result.timingsAfterCancel = await inlineTimings(page);
  result.errorsAfterCancel = await errorNotifications(page);
  result.cancelNotice = await toast(page, "the cancel notice", (t) => t.includes("cancelled"), 30_000);
  await closeNotifications(page);

  step("run Stepscope: Profile This Step from the command palette");
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Profile This Step");
  result.dialogsOnSecondRun = await page.locator(".monaco-dialog-box").count();
  const progressTexts = new Set();
  result.timings = await watchProgress(page, progressTexts, async () => {
    const errors = await errorNotifications(page);
    if (errors.length > 0) {
      throw new Error(`an error appeared instead of timings: ${errors.join(" | ")}`);
    }
    const timings = await inlineTimings(page);
    return timings.length > 0 ? timings : undefined;
  }, config.profileTimeoutMs ?? 240_000);
  result.progressTexts = [...progressTexts];
  await page.waitForTimeout(1000);
  result.timings = await inlineTimings(page);
  result.status = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "timings");

  step("hover a timed line");
  const hover = page.locator(".monaco-hover:visible", { hasText: "share of the mean step" }).first();
  await hoverUntil(page, page.locator(".monaco-editor .view-line span", { hasText: "model(x)" }).last(), hover);
  result.hover = await hover.innerText();
  result.hoverLinks = await hover.locator("a").allInnerTexts();
  await shot(page, "hover");

  step("the hover's link opens the trace panel on the line");
  await hover.locator("a", { hasText: "Open in the trace panel" }).first().click();
  const linked = await panelFrame(page);
  result.hoverPanel = await waitFor("the hovered line brought into view in the trace panel", () => linked.evaluate(() => {
    const tr = document.querySelector("#panel-lines tr.revealed");
    const table = document.querySelector("#panel-lines table.data");
    if (!tr || !table || document.querySelector("#panel-lines").hidden) return null;
    const k = [...table.querySelectorAll("thead th")].findIndex((th) => th.dataset.key === "line");
    return { line: Number(tr.children[k].textContent), runId: window.stepscopePanel.state().runId };
  }), 60_000);
  await shot(page, "hover-opened-panel");
  await runCommand(page, "View: Close Editor");  // the panel has the focus; the file's editor is left
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");

  step("the runs view lists the run");
  result.runs = await runsView(page);
  await shot(page, "runs-view");

  step("the Explorer lists the workspace's files, not .stepscope/");
  await runCommand(page, "View: Show Explorer");
  const explorerRows = page.locator(".explorer-folders-view .monaco-list-row");
  await explorerRows.first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(500);
  result.explorer = (await explorerRows.allInnerTexts()).map((t) => t.trim());

  step("edit one line: the other lines keep their timings");
  await goToLine(page, config.cursorLine);
  await page.keyboard.press("End");
  await page.keyboard.type("  # edited");
  await page.waitForTimeout(1500);
  result.timingsAfterEdit = await inlineTimings(page);
  await shot(page, "edited");

  step("save, close and reopen the file: the timings come back");
  await page.keyboard.press("Control+S");
  await page.waitForTimeout(800);
  await runCommand(page, "View: Close All Editors");
  await page.waitForTimeout(800);
  await openFile(page, config.file, "for x, y in loader");  // reopened where it was scrolled to
  await goToLine(page, config.cursorLine);
  result.timingsAfterReopen = await waitFor("the timings after reopening", async () => {
    const timings = await inlineTimings(page);
    return timings.length > 0 ? timings : undefined;
  }, 30_000);
  await page.waitForTimeout(500);
  result.timingsAfterReopen = await inlineTimings(page);
  await shot(page, "reopened");

  step("a profile that fails keeps the last good timings, marked");
  fs.writeFileSync(path.join(config.folder, ".vscode", "launch.json"), JSON.stringify({ version: "0.2.0",
    configurations: [{ name: "Too short", type: "debugpy", request: "launch", program: "${workspaceFolder}/train_cpu.py",
      args: ["--steps", "1"], python: config.python }] }));
  // VS Code reads launch.json again when its file watcher says so, which a loaded machine delays by
  // seconds; a save through the editor is seen at once. The profile then runs from train_cpu.py.
  await openFile(page, "launch.json", "Too short");
  await page.keyboard.press("Control+End");
  await page.keyboard.type(" ");
  await page.keyboard.press("Control+S");
  await page.waitForTimeout(1000);
  await openFile(page, config.file, "for x, y in loader");
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Profile This Step");
  const failure = page.locator(".notification-toast", { has: page.locator(".codicon-error") }).first();
  await failure.waitFor({ timeout: config.profileTimeoutMs ?? 240_000 });
  result.failureNotice = (await failure.innerText()).replace(/\s*\n\s*/g, " | ");
  await page.waitForTimeout(1500);
  result.timingsAfterFailure = await inlineTimings(page);
  result.statusAfterFailure = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "failed-run-keeps-timings");

  step("click the failed run in the runs view: its log opens, how it ended on top");
  await closeNotifications(page);
  await runsView(page);
  await page.locator(".part.sidebar .monaco-list-row", { hasText: "failed" }).first().click();
  result.failedRunLog = await waitFor("the failed run's log", async () => {
    if (await page.locator(".tabs-container .tab.active", { hasText: "program.log" }).count() === 0) return undefined;
    const text = await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().innerText();
    return text.trim() ? text.replace(/\u00a0/g, " ") : undefined;
  }, 30_000);
  await shot(page, "failed-run-log");
  await runCommand(page, "View: Close Editor");

  step("reload the window: the status item names the run the labels come from, and opens it");
  await closeNotifications(page);
  await runCommand(page, "Developer: Reload Window");
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  await openFile(page, config.file, "for x, y in loader");
  await goToLine(page, config.cursorLine);
  result.statusAfterReload = await waitFor("the status item after the reload", async () => {
    const texts = (await statusTexts(page)).filter((t) => t.includes("Stepscope:") && t.includes("ms/step"));
    return texts.length > 0 ? texts : undefined;
  }, 60_000);
  result.timingsAfterReload = await inlineTimings(page);
  await page.locator(".statusbar-item", { hasText: "ms/step" }).first().click();
  const reloaded = await panelFrame(page);
  result.panelAfterReload = await waitFor("the panel opened from the status item", () =>
    reloaded.evaluate(() => window.stepscopePanel?.state()?.runId ?? null), 60_000);
  await shot(page, "reloaded-status-opens-its-run");
}

async function restrictedScenario(page) {
  step("run Stepscope: Profile This Step in restricted mode");
  await runCommand(page, "Stepscope: Profile This Step");
  result.refusal = await toast(page, "the refusal notification", (t) => t.includes("Stepscope"), 30_000);
  // Give a wrongly started run time to paint something, then look.
  await page.waitForTimeout(3000);
  result.timings = await inlineTimings(page);
  result.lensesOffered = await page.locator(".monaco-editor .codelens-decoration a", { hasText: "Profile this step" }).count();
  await shot(page, "refused");

  step("the runs view lists the run made earlier, and shows it");
  result.runs = await runsView(page);
  await page.locator(".part.sidebar .monaco-list-row").first().click();
  result.timingsOfOpenedRun = await waitFor("the opened run's timings", async () => {
    const timings = await inlineTimings(page);
    return timings.length > 0 ? timings : undefined;
  }, 30_000);
  await shot(page, "restricted-runs-view");
}

// ------------------------------------------------------------------------------ the trace panel

/** The frame of the trace panel's page (inside the webview's two iframes), once its state is shown. */
async function panelFrame(page, timeoutMs = 120_000) {
  return waitFor(
    "the trace panel showing a run",
    async () => {
      for (const frame of page.frames()) {
        const ready = await frame
          .evaluate(() => Boolean(window.stepscopePanel && window.stepscopePanel.state() && document.querySelector("#app[data-state=ready]")))
          .catch(() => false);
        if (ready) return frame;
      }
      return undefined;
    },
    timeoutMs,
  );
}

/** The webview's element on the page, for screenshots of the panel alone. */
function panelElement(page) {
  return page.locator("iframe.webview.ready").first();
}

async function panelShot(page, name) {
  const file = path.join(config.screenshots, `${name}.png`);
  await panelElement(page).screenshot({ path: file });
  result.screenshots.push(file);
}

/** The editor's cursor as the status bar says it ("Ln 12, Col 9"): its 1-based line. */
async function cursorLine(page) {
  const text = await page.locator("#status\\.editor\\.selection").first().innerText().catch(() => "");
  const match = /Ln (\d+)/.exec(text);
  return match ? Number(match[1]) : null;
}

/** Waits for the cursor to land on `line` in `file`'s editor (the active one); what it saw. */
async function landedOn(page, file, line) {
  let seen = null;
  try {
    await waitFor(`the cursor on ${file}:${line}`, async () => {
      const tab = await page.locator(".editor-group-container.active .tab.active").first().innerText().catch(() => "");
      const label = tab.replace(/\s+/g, "");  // the tab's label may wrap
      seen = { tab: label.includes(file) ? file : label, line: await cursorLine(page) };
      return seen.tab === file && seen.line === line;
    }, 20_000, 250);
  } catch {
    // the assertion is pytest's, with what was seen
  }
  return seen;
}

async function panelTab(frame, name) {
  await frame.click(`#tab-${name}`);
  await frame.waitForSelector(`#panel-${name}:not([hidden])`);
}

async function tableRows(frame, panel) {
  return frame.evaluate((panel) => {
    const table = document.querySelector(`#panel-${panel} table.data`);
    if (!table) return [];
    const keys = [...table.querySelectorAll("thead th")].map((th) => th.dataset.key);
    return [...table.querySelectorAll("tbody tr[data-index]")].map((tr) =>
      Object.fromEntries(keys.map((k, i) => [k, tr.children[i].textContent])));
  }, panel);
}

/** Clicks the lines table's row of `line`, then checks where the cursor landed. */
async function clickLineRow(page, frame, file, line) {
  await panelTab(frame, "lines");
  const rows = await tableRows(frame, "lines");
  const index = rows.findIndex((r) => Number(r.line) === line);
  if (index < 0) throw new Error(`line ${line} is not in the lines table: ${JSON.stringify(rows.map((r) => r.line))}`);
  await frame.click(`#panel-lines tbody tr[data-index="${index}"] td:nth-child(3)`);
  return landedOn(page, file, line);
}

async function openRunScenario(page) {
  step("the runs view lists the recorded run; a click on it shows it in the editor");
  result.runs = await runsView(page);
  await page.locator(".part.sidebar .monaco-list-row", { hasText: config.runLabel }).first().click();
  await waitFor("the run's timings", async () => (await inlineTimings(page)).length > 0, 60_000);
  await runCommand(page, "View: Toggle Primary Side Bar Visibility");  // the whole width for the labels
  await page.locator(".monaco-editor .view-lines").first().click();
  await goToLine(page, config.cursorLine);
  await page.mouse.move(5, 5);
  await page.waitForTimeout(1000);
  result.timings = await inlineTimings(page);
  await shot(page, "run-timings");

  step(`hover the line holding ${config.hoverText}`);
  const hover = page.locator(".monaco-hover:visible", { hasText: config.hoverExpect }).first();
  await hoverUntil(page, page.locator(".monaco-editor .view-line span", { hasText: config.hoverText }).last(), hover);
  await page.waitForTimeout(500);
  result.hover = await hover.innerText();
  result.hoverLinks = await hover.locator("a").allInnerTexts();
  await shot(page, "run-hover");

  step("the hover's link opens the trace panel on the line");
  await hover.locator("a", { hasText: "Open in the trace panel" }).first().click();
  const frame = await panelFrame(page);
  result.panelState = await frame.evaluate(() => {
    const s = window.stepscopePanel.state();
    return { runId: s.runId, title: s.title, stale: s.stale, lines: s.report ? s.report.lines.length : null };
  });
  result.panelLines = await tableRows(frame, "lines");
  await page.mouse.move(5, 5);
  await page.waitForTimeout(800);
  await shot(page, "run-panel-lines");
  await panelTab(frame, "overview");
  await page.waitForTimeout(500);
  result.overview = await frame.locator("#panel-overview").innerText();
  await shot(page, "run-panel-overview");
}

async function panelScenario(page) {
  step("run Stepscope: Profile This Step from the command palette, confirming the first real run");
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Profile This Step");
  await confirmFirstRun(page);
  await waitFor("inline ms/step timings", async () => {
    const errors = await errorNotifications(page);
    if (errors.length > 0) throw new Error(`an error appeared instead of timings: ${errors.join(" | ")}`);
    return (await inlineTimings(page)).length > 0;
  }, config.profileTimeoutMs ?? 240_000, 250);

  step("open the trace panel from the status bar");
  const item = page.locator(".statusbar-item", { hasText: "ms/step" }).first();
  await item.click();
  const opened = Date.now();
  let frame = await panelFrame(page);
  result.panelShownAfterMs = Date.now() - opened;
  result.panelState = await frame.evaluate(() => {
    const s = window.stepscopePanel.state();
    return { runId: s.runId, title: s.title, stale: s.stale, spans: s.timeline ? s.timeline.spans.start_us.length : null,
      lines: s.report ? s.report.lines.length : null, findings: s.report ? s.report.findings.map((f) => [f.kind, f.line]) : [] };
  });
  result.panelTabTitle = await page.locator(".tabs-container .tab", { hasText: "Trace" }).first().innerText();
  result.overview = await frame.locator("#panel-overview").innerText();
  result.banner = await frame.evaluate(() => { const b = document.querySelector(".banner"); return b && !b.hidden ? b.textContent : null; });
  await shot(page, "panel-overview");
  await panelShot(page, "panel-overview-alone");

  step("the lines table: its rows, and a click on one lands the cursor on its line");
  await panelTab(frame, "lines");
  result.lineRows = await tableRows(frame, "lines");
  await panelShot(page, "panel-lines-alone");
  result.rowLanded = await clickLineRow(page, frame, config.file, config.rowLine);
  await shot(page, "panel-row-opened");

  step("the steps table: a click on a step shows it on the timeline");
  await panelTab(frame, "steps");
  result.stepRows = (await tableRows(frame, "steps")).length;
  await frame.click('#panel-steps tbody tr[data-index="0"] td:nth-child(2)');
  await frame.waitForSelector("#panel-timeline:not([hidden])");
  await page.waitForTimeout(500);

  step("the timeline: its tracks and spans, and a click on a span lands the cursor on its line");
  // the line's region in the step shown, zoomed in on (as +/Ctrl+wheel would) so it is wide enough to aim at
  const span = await frame.evaluate(async (line) => {
    const view = window.stepscopePanel.timeline;
    const doc = window.stepscopePanel.state().timeline;
    const region = doc.categories.indexOf("region");
    const [t0, t1] = view.view();
    const frameDone = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (let i = 0; i < doc.spans.start_us.length; i++) {
      const k = doc.spans.line[i];
      const a = doc.spans.start_us[i];
      const b = a + doc.spans.dur_us[i];
      if (doc.spans.category[i] !== region || k < 0 || doc.lines.line[k] !== line || a < t0 || b > t1) continue;
      view.setView(a - (b - a), b + (b - a));
      await frameDone();
      const p = view.pointOf(i);
      if (!p) continue;
      const rect = document.querySelector("canvas.timeline-canvas").getBoundingClientRect();
      return { i, x: p.x - rect.left, y: p.y - rect.top, tracks: doc.tracks.length };
    }
    return null;
  }, config.spanLine);
  if (!span) throw new Error(`no region span of line ${config.spanLine} in view on the timeline`);
  result.timelineTracks = span.tracks;
  await panelShot(page, "panel-timeline-alone");
  await frame.locator("canvas.timeline-canvas").click({ position: { x: span.x, y: span.y } });
  result.spanLanded = await landedOn(page, config.file, config.spanLine);

  step("the operators table has rows");
  await panelTab(frame, "operators");
  result.operatorRows = (await tableRows(frame, "operators")).length;

  step("a finding in the overview: a click lands the cursor on its line");
  await panelTab(frame, "overview");
  const findingLink = frame.locator(".finding button.link").first();
  result.findingLinkText = await findingLink.innerText();
  await findingLink.click();
  const findingLine = Number(/:(\d+)$/.exec(result.findingLinkText)[1]);
  result.findingLanded = await landedOn(page, config.file, findingLine);

  step("a finding's code action opens the panel on its line");
  await goToLine(page, findingLine);
  await page.waitForTimeout(500);
  await runCommand(page, "Quick Fix...");
  await page.waitForTimeout(1500);
  await shot(page, "quick-fix");
  const action = page.locator(".action-widget .monaco-list-row", { hasText: "in the trace panel" }).first();
  await action.waitFor({ timeout: 20_000 });
  result.codeAction = (await action.innerText()).trim();
  await action.click();
  frame = await panelFrame(page);
  result.revealed = await waitFor("the finding's line brought into view", () => frame.evaluate(() => {
    const tr = document.querySelector("#panel-lines tr.revealed");
    const table = document.querySelector("#panel-lines table.data");
    if (!tr || !table || document.querySelector("#panel-lines").hidden) return null;
    const k = [...table.querySelectorAll("thead th")].findIndex((th) => th.dataset.key === "line");
    return { line: Number(tr.children[k].textContent), focused: document.activeElement === tr };
  }), 30_000);
  await shot(page, "panel-revealed");

  step("profile again: the open panel follows the new run");
  const firstRun = result.panelState.runId;
  await page.locator(".monaco-editor .view-lines").first().click();
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Profile This Step");
  result.followedRunId = await waitFor("the panel showing the new run", async () => {
    for (const f of page.frames()) {
      const id = await f.evaluate(() => window.stepscopePanel && window.stepscopePanel.state() && window.stepscopePanel.state().runId).catch(() => null);
      if (id && id !== firstRun) return id;
    }
    return undefined;
  }, config.profileTimeoutMs ?? 240_000, 500);
  await shot(page, "panel-followed");

  step("pictures for the docs: the editor beside the panel, its timeline and its lines table");
  await runCommand(page, "View: Toggle Primary Side Bar Visibility");
  await runCommand(page, "View: Toggle Panel Visibility");
  await closeNotifications(page).catch(() => {});
  frame = await panelFrame(page);
  await panelTab(frame, "overview");
  await page.locator(".tabs-container .tab", { hasText: config.file }).first().click();  // the editor, not the panel
  await goToLine(page, config.cursorLine);
  await page.mouse.move(5, 5);
  await page.waitForTimeout(800);
  await shot(page, "docs-editor-and-panel");
  await panelTab(frame, "steps");
  await frame.click('#panel-steps tbody tr[data-index="0"] td:nth-child(2)');
  await frame.waitForSelector("#panel-timeline:not([hidden])");
  await page.waitForTimeout(800);
  await panelShot(page, "docs-timeline");
  await panelTab(frame, "lines");
  await page.waitForTimeout(300);
  await panelShot(page, "docs-lines");

  step("compare the two profile runs from the runs view: the panel shows them statement by statement");
  await runCommand(page, "View: Toggle Primary Side Bar Visibility");  // hidden for the pictures above
  await runsView(page);
  const profileRows = page.locator(".part.sidebar .monaco-list-row", { hasText: "ms/step" });
  await waitFor("both profile runs in the runs view", async () => ((await profileRows.count()) >= 2 ? true : undefined), 30_000);
  await compareFromRunsView(page, profileRows.first());
  result.statements = await waitFor("the panel showing two runs statement by statement", async () => {
    for (const f of page.frames()) {
      const seen = await f.evaluate(() => {
        const s = window.stepscopePanel && window.stepscopePanel.state();
        if (!s || !s.comparison || document.querySelector("#app")?.dataset.state !== "ready") return null;
        const table = document.querySelector("#statements-table");
        const keys = table ? [...table.querySelectorAll("thead th")].map((th) => th.dataset.key) : [];
        return {
          runId: s.runId, a: s.comparison.a.run, b: s.comparison.b.run, title: s.title,
          tabs: [...document.querySelectorAll(".tabs [role=tab]")].filter((t) => !t.hidden).map((t) => t.textContent),
          rows: table ? [...table.querySelectorAll("tbody tr[data-index]")].map((tr) =>
            Object.fromEntries(keys.map((k, i) => [k, tr.children[i].textContent]))) : [],
          overview: document.querySelector("#panel-overview").innerText,
        };
      }).catch(() => null);
      if (seen) return seen;
    }
    return undefined;
  }, 60_000);
  await panelShot(page, "statements-compared");
}

/** The runs view row's inline Compare Runs action (shown while the pointer is on the row), then the
 * other run the quick pick offers. */
async function compareFromRunsView(page, row) {
  const pick = page.locator(".quick-input-widget .monaco-list-row").first();
  for (let attempt = 1; ; attempt++) {
    await row.hover();
    await row.locator('.action-label[aria-label^="Compare Runs"]').click({ timeout: 10_000 });
    try {
      await pick.waitFor({ timeout: 15_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;  // a re-rendered list can swallow the click; try again
      await page.keyboard.press("Escape");
    }
  }
  await pick.click();
}

async function panelRestrictedScenario(page) {
  step("Stepscope: Open Trace Panel in restricted mode, on a run the CLI made");
  await runCommand(page, "Stepscope: Open Trace Panel");
  const frame = await panelFrame(page);
  result.panelState = await frame.evaluate(() => {
    const s = window.stepscopePanel.state();
    return { runId: s.runId, spans: s.timeline ? s.timeline.spans.start_us.length : null, lines: s.report ? s.report.lines.length : null };
  });
  await panelTab(frame, "lines");
  result.lineRows = await tableRows(frame, "lines");
  result.rowLanded = await clickLineRow(page, frame, config.file, config.rowLine);
  await shot(page, "panel-restricted");

  step("Share Trace… from the panel's button: the redacted copy is written and said in one line");
  const sharing = await panelFrame(page);
  await sharing.locator(".actions button.share").click();
  result.shared = await toast(page, "the Share Trace summary", (t) => t.includes("redacted copy written"), 120_000);
  await shot(page, "panel-restricted-shared");

  step("Open in Perfetto… from the panel's button: where the trace is, and how to open it");
  await closeNotifications(page);
  await (await panelFrame(page)).locator(".actions button.perfetto").click();
  result.perfetto = await toast(page, "where the trace is", (t) => t.includes("Perfetto"), 60_000);
  await shot(page, "panel-restricted-perfetto");
}

function setWorkspaceInterpreter(interpreter) {
  const vscodeDir = path.join(config.folder, ".vscode");
  fs.mkdirSync(vscodeDir, { recursive: true });
  fs.writeFileSync(
    path.join(vscodeDir, "settings.json"),
    JSON.stringify({ "stepscope.interpreter": interpreter }, null, 2),
  );
}

async function closeNotifications(page) {
  await runCommand(page, "Notifications: Clear All Notifications");
  await page.locator(".notification-toast").first().waitFor({ state: "detached", timeout: 10_000 });
}

async function failuresScenario(page) {
  step("profile with an interpreter that has no torch");
  await runCommand(page, "Stepscope: Profile This Step");
  await confirmFirstRun(page);
  const errorToast = page.locator(".notification-toast", { has: page.locator(".codicon-error") }).first();
  await errorToast.waitFor({ timeout: config.profileTimeoutMs ?? 240_000 });
  result.profileError = await errorToast.innerText();
  await shot(page, "profile-error");

  step("Open Logs from the error");
  await errorToast.getByRole("button", { name: "Open Logs" }).click();
  const logLine = page.locator(".part.panel .view-lines", { hasText: "Profile failed" }).first();
  await logLine.waitFor({ timeout: 15_000 });
  result.logsShown = (await logLine.innerText()).replace(/\u00a0/g, " ");
  await shot(page, "logs");
  await closeNotifications(page);

  step("Compare Runs from the palette with no run to compare");
  await runCommand(page, "Stepscope: Compare Runs");
  result.compareRefused = await toast(page, "the compare refusal", (t) => t.includes("comparing needs two"), 30_000);
  await closeNotifications(page);

  step("point stepscope.interpreter at a missing file, in the workspace settings");
  setWorkspaceInterpreter(config.missingInterpreter);
  result.interpreterError = await toast(
    page,
    "the interpreter problem",
    (t) => t.includes(config.missingInterpreter),
    60_000,
  );
  await shot(page, "interpreter-error");

  if (config.oldInterpreter) {
    step(`point stepscope.interpreter at ${config.oldInterpreter}, a Python older than 3.10`);
    await closeNotifications(page);
    setWorkspaceInterpreter(config.oldInterpreter);
    result.oldInterpreterError = await toast(
      page,
      "the version problem",
      (t) => t.includes(config.oldInterpreter),
      60_000,
    );
    await shot(page, "old-python-error");
  }
}

// ------------------------------------------------------------------------------ try this fix

/** The file's text on disk, and what is left in the workspace's scratch folder. */
function onDisk() {
  const scratch = path.join(config.folder, ".stepscope", "scratch");
  return {
    text: fs.readFileSync(path.join(config.folder, config.file), "utf8"),
    scratch: fs.existsSync(scratch) ? fs.readdirSync(scratch) : [],
  };
}

/** Quick Fix at the finding's line, then the action titled `title`. */
async function tryFromLightbulb(page, title) {
  await page.locator(".monaco-editor .view-lines").first().click();
  await goToLine(page, config.findingLine);
  await page.waitForTimeout(500);
  await runCommand(page, "Quick Fix...");
  const action = page.locator(".action-widget .monaco-list-row", { hasText: title }).first();
  await action.waitFor({ timeout: 30_000 });
  result.actions = (await page.locator(".action-widget .monaco-list-row").allInnerTexts()).map((t) => t.trim());
  await shot(page, "try-actions");
  await action.click();
}

async function tryFixScenario(page) {
  step("show the run made earlier: its findings become diagnostics");
  await runsView(page);
  await page.locator(".part.sidebar .monaco-list-row", { hasText: "ms/step" }).first().click();
  await waitFor("the run's timings", async () => (await inlineTimings(page)).length > 0, 60_000);
  await runCommand(page, "View: Toggle Primary Side Bar Visibility");
  const before = onDisk();

  step("Try this fix from the finding's light bulb, confirming the first real run, then cancel it");
  await tryFromLightbulb(page, config.variantTitle);
  await confirmFirstRun(page, "Measure");
  const progress = page.locator(".notification-toast", { hasText: "Stepscope: trying" }).first();
  await progress.waitFor({ timeout: 30_000 });
  const seen = new Set();
  await waitFor("the try's passes", async () => {
    for (const text of await notifications(page)) if (text.includes("Stepscope: trying")) seen.add(text.replace(/\s*\n\s*/g, " | "));
    return [...seen].some((t) => / pass \d+\/\d+/.test(t));
  }, 120_000, 250);
  result.progressTexts = [...seen];
  await shot(page, "try-progress");
  await progress.getByRole("button", { name: "Cancel" }).click();
  const cancelledAt = Date.now();
  result.cancelNotice = await toast(page, "the cancel notice", (t) => t.includes("try was cancelled"), 60_000);
  // the server stops the program, then removes the scratch copy: a moment after the notice
  await waitFor("the scratch copy removed", async () => onDisk().scratch.length === 0, 30_000).catch(() => undefined);
  result.scratchGoneAfterMs = Date.now() - cancelledAt;
  const afterCancel = onDisk();
  result.unchangedAfterCancel = afterCancel.text === before.text;
  result.scratchAfterCancel = afterCancel.scratch;
  await closeNotifications(page);

  step("try it again, to its verdict and its diff");
  await tryFromLightbulb(page, config.variantTitle);
  const verdict = page.locator(".notification-toast", { hasText: "values" }).filter({ hasText: config.variantTitle }).first();
  await waitFor("the try's verdict", async () => {
    const errors = await errorNotifications(page);
    if (errors.length > 0) throw new Error(`an error appeared instead of the verdict: ${errors.join(" | ")}`);
    return (await verdict.count()) > 0;
  }, config.profileTimeoutMs ?? 240_000, 250);
  result.verdict = (await verdict.innerText()).replace(/\s*\n\s*/g, " | ");
  const diffTab = page.locator(".tabs-container .tab", { hasText: "tried:" }).first();
  await diffTab.waitFor({ timeout: 30_000 });
  result.diffTab = (await diffTab.innerText()).trim();
  result.diffText = (await page.locator(".monaco-diff-editor .modified .view-lines").first().innerText()).replace(/\u00a0/g, " ");
  result.unchangedBeforeApply = onDisk().text === before.text;
  await shot(page, "try-verdict-and-diff");

  step("Apply: the file gets the very change measured");
  await verdict.getByRole("button", { name: "Apply" }).click();
  result.appliedNotice = await toast(page, "the applied notice", (t) => t.includes("applied"), 30_000);
  result.textAfterApply = await waitFor("the change on disk", async () => {
    const now = onDisk().text;
    return now !== before.text ? now : undefined;
  }, 30_000);
  await shot(page, "try-applied");
}

// ------------------------------------------------------------------------------ measure

/** What the trace panel shows of a measure run. */
async function measureState(frame) {
  return frame.evaluate(() => {
    const s = window.stepscopePanel.state();
    const plot = document.querySelector(".measure svg.strip");
    const dots = (sel) => (plot ? plot.querySelectorAll(sel).length : 0);
    return {
      runId: s.runId, title: s.title, report: s.report !== null, timeline: s.timeline !== null,
      passes: s.measure ? s.measure.raw_ms.length : null, warmups: s.measure ? s.measure.warmup_ms.length : null,
      verdict: s.measure ? s.measure.verdict ?? null : null,
      measuredDots: dots("circle.dot:not(.warm):not(.before)"), warmDots: dots("circle.dot.warm"),
      baselineDots: dots("circle.dot.before"),
      overview: document.querySelector("#panel-overview").innerText,
    };
  });
}

async function measureDone(page, seen) {
  return waitFor("the measure's result", async () => {
    for (const text of await notifications(page)) {
      if (text.includes("Stepscope: measuring")) seen.add(text.replace(/\s*\n\s*/g, " | "));
    }
    const errors = await errorNotifications(page);
    if (errors.length > 0) throw new Error(`an error appeared instead of the result: ${errors.join(" | ")}`);
    return (await notifications(page)).find((t) => t.includes("ms/step without the profiler"));
  }, config.profileTimeoutMs ?? 240_000, 250);
}

async function measureScenario(page) {
  step("start a measure from the CodeLens, confirming the first real run");
  const lens = page.locator(".monaco-editor .codelens-decoration a", { hasText: "Measure this step" }).first();
  await lens.waitFor({ timeout: 30_000 });
  result.lenses = await page.locator(".monaco-editor .codelens-decoration a").allInnerTexts();
  await lens.click();
  await confirmFirstRun(page, "Measure");
  const progress = new Set();
  result.firstResult = (await measureDone(page, progress)).replace(/\s*\n\s*/g, " | ");
  result.progressTexts = [...progress];
  result.status = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "measure-result");

  step("open the result in the panel from its notification");
  const note = page.locator(".notification-toast", { hasText: "ms/step without the profiler" }).first();
  await note.getByRole("button", { name: "Open in Panel" }).click();
  let frame = await panelFrame(page);
  result.panel = await measureState(frame);
  result.panelTabTitle = await page.locator(".tabs-container .tab", { hasText: "Measured" }).first().innerText().catch(() => null);
  await shot(page, "measure-panel");
  await panelShot(page, "measure-panel-alone");
  await closeNotifications(page);

  step("run Stepscope: Measure This Step from the command palette");
  await runCommand(page, "View: Focus First Editor Group");
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Measure This Step");
  result.dialogsOnSecondRun = await page.locator(".monaco-dialog-box").count();
  result.secondResult = (await measureDone(page, new Set())).replace(/\s*\n\s*/g, " | ");
  result.followed = await waitFor("the panel following the second measure", async () => {
    const state = await measureState(await panelFrame(page));
    return state.runId !== result.panel.runId ? state.runId : undefined;
  }, 60_000);
  await closeNotifications(page);

  step("compare the two measure runs from the runs view");
  await runsView(page);
  // the view lists the runs once the server answers (the explorer's rows may still be there before)
  const measuredRows = page.locator(".part.sidebar .monaco-list-row", { hasText: "measured:" });
  result.runs = await waitFor("both measure runs in the runs view", async () => {
    const rows = await measuredRows.allInnerTexts();
    return rows.length >= 2 ? rows : undefined;
  }, 30_000);
  await compareFromRunsView(page, measuredRows.first());
  result.compared = await waitFor("the panel showing the comparison", async () => {
    const state = await measureState(await panelFrame(page));
    return state.verdict ? state : undefined;
  }, 60_000);
  await panelShot(page, "measure-compared");

  step("start Stepscope: Compare Runs from the command palette");
  await runCommand(page, "Stepscope: Compare Runs");
  result.paletteCompare = await waitFor("the palette asking for the first run", async () => {
    const title = await page.locator(".quick-input-widget .quick-input-title").first().innerText().catch(() => "");
    const rows = await page.locator(".quick-input-widget .monaco-list-row").allInnerTexts();
    return /first run/.test(title) && rows.length > 0 ? { title, rows } : undefined;
  }, 30_000);
  await page.keyboard.press("Escape");

  if (config.functionFile) {
    step(`measure each call of a step function from the lens over its def line in ${config.functionFile}`);
    await closeNotifications(page);
    await openFile(page, config.functionFile);
    const editor = page.locator(".monaco-editor", { hasText: "def training_step" }).first();
    const fnLens = editor.locator(".codelens-decoration a", { hasText: "Measure this step" }).first();
    await fnLens.waitFor({ timeout: 30_000 });
    result.functionLenses = await editor.locator(".codelens-decoration a").allInnerTexts();
    await fnLens.click();
    const seen = new Set();
    result.functionResult = (await measureDone(page, seen)).replace(/\s*\n\s*/g, " | ");
    result.functionProgress = [...seen];
  }
}

// ------------------------------------------------------------------------------ MCP servers

async function quickPickRows(page) {
  const rows = page.locator(".quick-input-widget .monaco-list-row");
  await rows.first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(500);
  return (await rows.allInnerTexts()).map((t) => t.replace(/\s*\n\s*/g, " | "));
}

// Picks by typing the row's text and pressing Enter: the list re-renders while a server changes
// state, and a click can land on a row that is being replaced.
async function pickRow(page, text) {
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: text }).first();
  await row.waitFor({ timeout: 30_000 });
  await page.locator(".quick-input-widget input").first().fill(text);
  await page.locator(".quick-input-widget .monaco-list-row.focused", { hasText: text }).first()
    .waitFor({ timeout: 30_000 });
  await page.keyboard.press("Enter");
}

async function mcpScenario(page) {
  step("MCP: List Servers");
  await runCommand(page, "MCP: List Servers");
  result.mcpServers = await waitFor("Stepscope in the MCP servers' list", async () => {
    const rows = await quickPickRows(page);
    return rows.some((r) => r.includes("Stepscope")) ? rows : undefined;
  }, 60_000);
  await shot(page, "mcp-servers");

  step("Stepscope's actions: Start Server");
  await pickRow(page, "Stepscope");
  result.mcpActions = await quickPickRows(page);
  await shot(page, "mcp-actions");
  await pickRow(page, "Start Server");

  step("its output: the editor lists the server's tools");
  await runCommand(page, "MCP: List Servers");
  await pickRow(page, "Stepscope");
  await pickRow(page, "Show Output");
  const output = page.locator(".part.panel .monaco-editor .view-lines").first();
  result.mcpOutput = await waitFor("the server's tools in its output", async () => {
    const text = (await output.innerText().catch(() => "")).replace(/\u00a0/g, " ");
    return /Discovered \d+ tools/.test(text) ? text : undefined;
  }, 120_000);
  await shot(page, "mcp-output");

  step("MCP: List Servers: Stepscope runs");
  await runCommand(page, "MCP: List Servers");
  result.mcpServersRunning = await waitFor("Stepscope running in the list", async () => {
    const rows = await quickPickRows(page);
    return rows.some((r) => r.startsWith("Stepscope") && r.includes("Running")) ? rows : undefined;
  }, 30_000);
  await shot(page, "mcp-servers-running");
  await page.keyboard.press("Escape");
}

async function main() {
  const context = await chromium.launchPersistentContext(config.profileDir, {
    executablePath: config.chromium,
    headless: true,
    viewport: config.viewport ?? { width: 1440, height: 960 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // what the pages (the trace panel's webview among them) say went wrong
  result.console = [];
  page.on("console", (m) => {
    if (m.type() === "error" && result.console.length < 50) result.console.push(m.text().slice(0, 500));
  });
  try {
    step("open the workspace");
    await page.goto(`${config.url}/?folder=${encodeURIComponent(config.folder)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
    await page.waitForTimeout(1500);

    step(`open ${config.file}`);
    await openFile(page, config.file);
    // Squiggles render only for visible lines: bring the loop into view first.
    await goToLine(page, config.cursorLine);
    if (config.squiggle !== false) {
      step("wait for the Stepscope squiggle");
      await page
        .locator(".monaco-editor .squiggly-warning, .monaco-editor .squiggly-error, .monaco-editor .squiggly-info")
        .first()
        .waitFor({ timeout: 120_000 });
      result.problems = await problems(page);
      // The Problems view took the focus; put the cursor back in the loop.
      await goToLine(page, config.cursorLine);
    }
    // The workbench adds its trust indicator to the status bar a moment after the folder opens, later
    // still on a loaded machine: wait for it rather than read the bar once.
    result.restrictedIndicator = await page
      .locator(".statusbar-item", { hasText: "Restricted Mode" })
      .first()
      .waitFor({ timeout: config.scenario.toLowerCase().includes("restricted") ? 30_000 : 1_000 })
      .then(() => true, () => false);
    await shot(page, "diagnostics");

    const scenarios = {
      profile: profileScenario, restricted: restrictedScenario, failures: failuresScenario,
      panel: panelScenario, panelRestricted: panelRestrictedScenario, openRun: openRunScenario,
      measure: measureScenario, tryFix: tryFixScenario, mcp: mcpScenario,
    };
    if (config.scenario in scenarios) {
      await scenarios[config.scenario](page);
    }
    result.ok = true;
  } catch (error) {
    result.ok = false;
    result.error = String(error && error.message ? error.message : error).split("\n")[0];
    result.notificationsAtFailure = await notifications(page).catch(() => []);
    await shot(page, "failure").catch(() => {});
  } finally {
    fs.writeFileSync(config.result, JSON.stringify(result, null, 2));
    await context.close();
  }
  process.exit(result.ok ? 0 : 1);
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});
