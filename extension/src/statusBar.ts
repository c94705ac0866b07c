// The status-bar item: the last profile's ms/step, or that a profile is running.
import * as vscode from "vscode";

export class StepStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem("stepscope.status", vscode.StatusBarAlignment.Left, 50);
    this.item.name = "Stepscope";
    this.item.command = "stepscope.showLogs";
  }

  running(where: string): void {
    this.item.text = "$(sync~spin) Stepscope: profiling…";
    this.item.tooltip = `Profiling the step at ${where}`;
    this.item.show();
  }

  result(msPerStep: number, summary: string, machine: string): void {
    this.item.text = `$(pulse) Stepscope: ${formatMs(msPerStep)} ms/step`;
    const tooltip = new vscode.MarkdownString();
    tooltip.appendText(summary);
    if (machine) {
      tooltip.appendMarkdown("\n\n");
      tooltip.appendText(machine);
    }
    this.item.tooltip = tooltip;
    this.item.show();
  }

  idle(): void {
    this.item.hide();
  }

  dispose(): void {
    this.item.dispose();
  }
}

export function formatMs(ms: number): string {
  if (ms >= 100) {
    return ms.toFixed(0);
  }
  if (ms >= 10) {
    return ms.toFixed(1);
  }
  return ms.toFixed(2);
}
