// The status-bar items: one for the profile whose labels the active editor shows, one beside it for
// the last measure run, so a measure never takes the profile's place. Each shows its run's figure,
// that a run is going, or that the last one failed (the good run's figure stays, marked); its text
// and tooltip come from the server's presenter, this item only places them. Clicking an item opens
// the trace panel on the run it names (the log while a run is going).
import * as vscode from "vscode";

const OPEN_PANEL = "stepscope.openPanel";

/** Which runs an item shows: the profile's (the editor's labels) or the measure runs'. */
export interface StatusKind {
  id: string;
  name: string;
  icon: string;
  priority: number;
  measure: boolean;
}

export const PROFILE_STATUS: StatusKind = { id: "stepscope.status", name: "Stepscope", icon: "$(pulse)", priority: 50, measure: false };
export const MEASURE_STATUS: StatusKind = {
  id: "stepscope.measureStatus", name: "Stepscope measure", icon: "$(graph)", priority: 49, measure: true,
};

export class StepStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  /** The last good run's text and tooltip, kept through a running, failed or cancelled run. */
  private last: { text: string; tooltip: string; runId: string } | undefined;
  private busy = false;

  constructor(private readonly kind: StatusKind = PROFILE_STATUS) {
    this.item = vscode.window.createStatusBarItem(kind.id, vscode.StatusBarAlignment.Left, kind.priority);
    this.item.name = kind.name;
    this.item.command = "stepscope.showLogs";
  }

  /** The run this item names, if any. */
  get runId(): string | undefined {
    return this.last?.runId;
  }

  running(title: string, doing = "profiling"): void {
    this.busy = true;
    this.item.command = "stepscope.showLogs";
    this.item.text = `$(sync~spin) Stepscope: ${doing}…`;
    this.item.tooltip = `${doing[0].toUpperCase()}${doing.slice(1)} ${title}` + (this.last ? ` (last run: ${this.last.text})` : "");
    this.item.show();
  }

  /** `text` is plain text (`51.4 ms/step`); `tooltip` is Markdown, shown untrusted (no commands, no HTML). */
  result(text: string, tooltip: string, runId: string): void {
    this.busy = false;
    this.paint(text, tooltip, runId);
  }

  /** The active editor shows this run's labels (after a reload, or another file's run): the item
   * names it, unless a run is going (its figure comes when it ends). */
  shows(text: string, tooltip: string, runId: string): void {
    if (this.busy) {
      this.last = { text, tooltip, runId };
      return;
    }
    if (this.last?.runId !== runId || this.last.text !== text) {
      this.paint(text, tooltip, runId);
    }
  }

  /** The run (`verb`) failed or was cancelled: the last good run's figure stays, with what happened. */
  ended(what: string, verb = "profile"): void {
    this.busy = false;
    if (!this.last) {
      this.item.hide();
      return;
    }
    this.item.command = this.openCommand(this.last.runId);  // the last good run, which the panel still shows
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

  private paint(text: string, tooltip: string, runId: string): void {
    this.last = { text, tooltip, runId };
    this.item.text = `${this.kind.icon} Stepscope: ${text}`;
    this.item.command = this.openCommand(runId);  // the run shown, in the trace panel
    this.item.tooltip = untrusted(`${tooltip}\n\nClick to open run ${runId} in the trace panel.`);
    this.item.show();
  }

  private openCommand(runId: string): vscode.Command {
    const target = this.kind.measure ? { runId, kind: "measure" } : { runId };
    return { command: OPEN_PANEL, title: "Open in the trace panel", arguments: [target] };
  }
}

function untrusted(markdown: string): vscode.MarkdownString {
  const text = new vscode.MarkdownString(markdown);
  text.isTrusted = false;
  text.supportHtml = false;
  return text;
}
