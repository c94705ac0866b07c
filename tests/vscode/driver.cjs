// Drives code-server in headless Chromium like a person would, for one scenario, and writes what
// it saw to a JSON file. Usage: node driver.cjs CONFIG.json
// Every scenario opens the file, waits for the Stepscope squiggle and reads the Problems view; then
//   "profile":     starts a profile from the CodeLens and cancels it, runs "Stepscope: Profile This
//                  Step" from the command palette, waits for the inline ms/step timings, then edits
//                  the file and checks that its timings are gone.
//   "restricted":  runs the command and waits for the refusal notification.
//   "failures":    runs the command with an interpreter that has no torch (the server's error is
//                  shown), then points stepscope.interpreter at a missing file (the interpreter
//                  problem is shown with its actions).
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
  result.timings = await waitFor(
    "inline ms/step timings",
    async () => {
      const errors = await errorNotifications(page);
      if (errors.length > 0) {
        throw new Error(`an error appeared instead of timings: ${errors.join(" | ")}`);
      }
      const timings = await inlineTimings(page);
      return timings.length > 0 ? timings : undefined;
    },
    config.profileTimeoutMs ?? 240_000,
  );
  await page.waitForTimeout(500);
  result.status = (await statusTexts(page)).filter((t) => t.includes("Stepscope"));
  await shot(page, "timings");

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

async function failuresScenario(page) {
  step("profile with an interpreter that has no torch");
  await runCommand(page, "Stepscope: Profile This Step");
  result.profileError = await waitFor(
    "the profile error",
    async () => (await errorNotifications(page))[0],
    config.profileTimeoutMs ?? 240_000,
  );
  await shot(page, "profile-error");
  await page.locator(".notification-toast .codicon-notifications-clear").first().click().catch(() => {});
  for (const close of await page.locator(".notification-toast .codicon-close").all()) {
    await close.click().catch(() => {});
  }

  step("point stepscope.interpreter at a missing file, in the Settings editor");
  await runCommand(page, "Preferences: Open User Settings");
  await page.locator(".settings-editor").waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1000);
  await page.keyboard.type("stepscope.interpreter");
  const input = page.locator(".settings-editor .setting-item-contents input:visible").first();
  await input.waitFor({ timeout: 30_000 });
  await input.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type(config.missingInterpreter);
  await page.keyboard.press("Enter");
  await page.waitForTimeout(1000);
  await shot(page, "settings");
  await page.keyboard.press("Escape");
  result.interpreterError = await toast(
    page,
    "the interpreter problem",
    (t) => t.includes(config.missingInterpreter),
    60_000,
  );
  await shot(page, "interpreter-error");
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
