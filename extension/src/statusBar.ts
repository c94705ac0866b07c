// The status-bar item: the last profile's ms/step, or that a profile is running. Its text and
// tooltip come from the server's presenter; this item only places them. Clicking it opens the trace
// panel on the run it shows (the log while a profile runs).
import * as vscode from "vscode";

export class StepStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem("stepscope.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "Stepscope";
    this.item.command = "stepscope.showLogs";
  }

  running(where: string): void {
    this.item.command = "stepscope.showLogs";
    this.item.text = "$(sync~spin) Stepscope: profiling…";
    this.item.tooltip = `Profiling the step at ${where}`;
    this.item.show();
  }

  /** `text` is plain text (`51.4 ms/step`); `tooltip` is Markdown, shown untrusted (no commands, no HTML). */
  result(text: string, tooltip: string): void {
    this.item.text = `$(pulse) Stepscope: ${text}`;
    this.item.command = "stepscope.openPanel";  // the run shown, in the trace panel
    const markdown = new vscode.MarkdownString(`${tooltip}\n\nClick to open the trace panel.`);
    markdown.isTrusted = false;
    markdown.supportHtml = false;
    this.item.tooltip = markdown;
    this.item.show();
  }

  idle(): void {
    this.item.hide();
  }

  dispose(): void {
    this.item.dispose();
  }
}
