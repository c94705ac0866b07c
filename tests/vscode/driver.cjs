// Drives code-server in headless Chromium like a person would, for one scenario, and writes what
// it saw to a JSON file. Usage: node driver.cjs CONFIG.json
// Every scenario opens the file, waits for the Stepscope squiggle and reads the Problems view; then
//   "profile":     starts a profile from the CodeLens (confirming the first real run in the modal
//                  dialog) and cancels it, runs "Stepscope: Profile This Step" from the command
//                  palette, waits for the inline ms/step timings, hovers a timed line, opens the runs
//                  view, edits one line (the others keep their timings), saves, closes and reopens
//                  the file (the timings come back), then runs a profile that fails (the last good
//                  timings stay, marked, and the status item says so).
//   "restricted":  runs the command and waits for the refusal notification; no CodeLens is
//                  offered; the runs view lists a run made earlier and opens it (its timings are
//                  painted: viewing needs no trust).
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
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input").first();
  await input.waitFor({ state: "visible", timeout: 30_000 });
  await input.fill(text);
  return input;
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

async function confirmFirstRun(page) {
  const dialog = page.locator(".monaco-dialog-box").first();
  await dialog.waitFor({ timeout: 30_000 });
  result.confirmDialog = (await dialog.innerText()).replace(/\s*\n\s*/g, " | ");
  await shot(page, "confirm-first-run");
  await dialog.getByRole("button", { name: "Profile" }).click();
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
  await page.locator(".monaco-editor .view-line span", { hasText: "model(x)" }).last().hover();
  const hover = page.locator(".monaco-hover:visible", { hasText: "share of the step" }).first();
  await hover.waitFor({ timeout: 15_000 });
  result.hover = await hover.innerText();
  result.hoverLinks = await hover.locator("a").allInnerTexts();
  await shot(page, "hover");
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");

  step("the runs view lists the run");
  result.runs = await runsView(page);
  await shot(page, "runs-view");

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
  await runCommand(page, "Stepscope: Profile This Step");
  const failure = page.locator(".notification-toast", { has: page.locator(".codicon-error") }).first();
  await failure.waitFor({ timeout: config.profileTimeoutMs ?? 240_000 });
  result.failureNotice = (await failure.innerText()).replace(/\s*\n\s*/g, " | ");
  await page.waitForTimeout(1500);
  result.timingsAfterFailure = await inlineTimings(page);
  result.statusAfterFailure = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "failed-run-keeps-timings");
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

async function main() {
  const context = await chromium.launchPersistentContext(config.profileDir, {
    executablePath: config.chromium,
    headless: true,
    viewport: { width: 1440, height: 960 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  try {
    step("open the workspace");
    await page.goto(`${config.url}/?folder=${encodeURIComponent(config.folder)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
    await page.waitForTimeout(1500);

    step(`open ${config.file}`);
    await openFile(page, config.file);
    // Squiggles render only for visible lines: bring the loop into view first.
    await goToLine(page, config.cursorLine);
    step("wait for the Stepscope squiggle");
    await page
      .locator(".monaco-editor .squiggly-warning, .monaco-editor .squiggly-error, .monaco-editor .squiggly-info")
      .first()
      .waitFor({ timeout: 120_000 });
    result.problems = await problems(page);
    result.restrictedIndicator = (await statusTexts(page)).some((t) => t.includes("Restricted Mode"));
    // The Problems view took the focus; put the cursor back in the loop.
    await goToLine(page, config.cursorLine);
    await shot(page, "diagnostics");

    const scenarios = { profile: profileScenario, restricted: restrictedScenario, failures: failuresScenario };
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
