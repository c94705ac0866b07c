// Drives code-server in headless Chromium like a person would, for one scenario, and writes what
// it saw to a JSON file. Usage: node driver.cjs CONFIG.json
// Every scenario opens the file, waits for the Stepscope squiggle and reads the Problems view; then
//   "profile":     starts a profile from the CodeLens and cancels it, runs "Stepscope: Profile This
//                  Step" from the command palette, waits for the inline ms/step timings, then edits
//                  the file and checks that its timings are gone.
//   "restricted":  runs the command and waits for the refusal notification.
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

async function openFile(page, name) {
  await quickInput(page, name);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first();
  await row.waitFor({ timeout: 60_000 });
  await row.click();
  await page.locator(".monaco-editor .view-lines", { hasText: "import torch" }).first().waitFor({ timeout: 60_000 });
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

async function profileScenario(page) {
  step("start a profile from the CodeLens, then cancel it");
  const lens = page.locator(".monaco-editor .codelens-decoration a", { hasText: "Profile this step" }).first();
  await lens.waitFor({ timeout: 30_000 });
  await lens.click();
  const progress = page.locator(".notification-toast", { hasText: "Stepscope: profiling" }).first();
  await progress.waitFor({ timeout: 30_000 });
  result.runningStatus = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await page.waitForTimeout(1500);
  await shot(page, "progress");
  await progress.getByRole("button", { name: "Cancel" }).click();
  const cancelledAt = Date.now();
  await progress.waitFor({ state: "detached", timeout: 30_000 });
  result.cancelClosedAfterMs = Date.now() - cancelledAt;
  result.timingsAfterCancel = await inlineTimings(page);
  result.errorsAfterCancel = await errorNotifications(page);

  step("run Stepscope: Profile This Step from the command palette");
  await goToLine(page, config.cursorLine);
  await runCommand(page, "Stepscope: Profile This Step");
  const progressTexts = new Set();
  result.timings = await waitFor(
    "inline ms/step timings",
    async () => {
      for (const text of await notifications(page)) {
        if (text.includes("Stepscope: profiling")) {
          progressTexts.add(text.replace(/\s*\n\s*/g, " | "));
        }
      }
      const errors = await errorNotifications(page);
      if (errors.length > 0) {
        throw new Error(`an error appeared instead of timings: ${errors.join(" | ")}`);
      }
      const timings = await inlineTimings(page);
      return timings.length > 0 ? timings : undefined;
    },
    config.profileTimeoutMs ?? 240_000,
    250,
  );
  result.progressTexts = [...progressTexts];
  await page.waitForTimeout(500);
  result.status = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "timings");

  step("hover a timed line");
  await page.locator(".monaco-editor .view-line span", { hasText: "backward" }).last().hover();
  const hover = page.locator(".monaco-hover:visible", { hasText: "share of the mean step" }).first();
  await hover.waitFor({ timeout: 15_000 });
  result.hover = await hover.innerText();
  await shot(page, "hover");
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");

  step("edit the file: its timings go away");
  await page.keyboard.press("End");
  await page.keyboard.type("  # edited");
  await page.waitForTimeout(1000);
  result.timingsAfterEdit = await inlineTimings(page);
  await shot(page, "edited");
}

async function restrictedScenario(page) {
  step("run Stepscope: Profile This Step in restricted mode");
  await runCommand(page, "Stepscope: Profile This Step");
  result.refusal = await toast(page, "the refusal notification", (t) => t.includes("Stepscope"), 30_000);
  // Give a wrongly started run time to paint something, then look.
  await page.waitForTimeout(3000);
  result.timings = await inlineTimings(page);
  await shot(page, "refused");
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
