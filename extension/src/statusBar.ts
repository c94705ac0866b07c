// The status-bar item: the last good run's ms/step, that a profile is running, or that the last one
// failed (the good run's figure stays, marked). Its text and tooltip come from the server's
// presenter; this item only places them. Clicking it opens the trace panel on the run it shows (the
// log while a profile runs).
import * as vscode from "vscode";

export class StepStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  /** The last good run's text and tooltip, kept through a running, failed or cancelled profile. */
  private last: { text: string; tooltip: string; runId: string } | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem("stepscope.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "Stepscope";
    this.item.command = "stepscope.showLogs";
  }

  running(title: string, doing = "profiling"): void {
    this.item.command = "stepscope.showLogs";
    this.item.text = `$(sync~spin) Stepscope: ${doing}…`;
    this.item.tooltip = `${doing[0].toUpperCase()}${doing.slice(1)} ${title}` + (this.last ? ` (last run: ${this.last.text})` : "");
    this.item.show();
  }

  /** `text` is plain text (`51.4 ms/step`); `tooltip` is Markdown, shown untrusted (no commands, no HTML). */
  result(text: string, tooltip: string, runId: string): void {
    this.last = { text, tooltip, runId };
    this.item.text = `$(pulse) Stepscope: ${text}`;
    this.item.command = "stepscope.openPanel";  // the run shown, in the trace panel
    this.item.tooltip = untrusted(`${tooltip}\n\nClick to open the trace panel.`);
    this.item.show();
  }

  /** The profile (or measure: `verb`) failed or was cancelled: the last good run's figure stays, with what happened. */
  ended(what: string, verb = "profile"): void {
    if (!this.last) {
      this.item.hide();
      return;
    }
    this.item.command = "stepscope.openPanel";  // the last good run, which the panel still shows
    this.item.text = `$(warning) Stepscope: ${this.last.text}`;
    const said = what.replace(/[\\`*_{}[\]()<>#+\-.!|~]/g, (c) => `\\${c}`);
    this.item.tooltip = untrusted(`**The last ${verb} ${said}**; these figures are from the run before it.\n\n` +
      this.last.tooltip);
    this.item.show();
  }

  /** Runs were deleted: if the one shown is among them, nothing is left to show. */
  forget(runIds: string[]): void {
    if (this.last && runIds.includes(this.last.runId)) {
      this.last = undefined;
      this.item.command = "stepscope.showLogs";
      this.item.hide();
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}

function untrusted(markdown: string): vscode.MarkdownString {
  const text = new vscode.MarkdownString(markdown);
  text.isTrusted = false;
  text.supportHtml = false;
  return text;
}
