// Inline ms/step per line: the server's label at the end of each profiled line, coloured on a heat
// scale by the line's share of the step (heat.ts). The hover of a timed line comes from the server
// (textDocument/hover), so every LSP editor gets the same one. Timings of a document are dropped as
// soon as it is edited, because the lines they describe may have moved.
import * as vscode from "vscode";
import { HEAT, heatBucket, normaliseUri } from "./heat";
import { LineTiming } from "./result";

export class TimingDecorations implements vscode.Disposable {
  private readonly types: vscode.TextEditorDecorationType[];
  /** Timings by normalised document URI. */
  private readonly timings = new Map<string, LineTiming[]>();
  private readonly disposables: vscode.Disposable[] = [];
  private enabled: boolean;

  constructor(enabled: boolean) {
    this.enabled = enabled;
    this.types = HEAT.map((step) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: step.background,
        after: { color: step.text, margin: "0 0 0 3em", fontStyle: "italic" },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
      }),
    );
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length > 0) {
          this.clear(event.document.uri);
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors(() => this.paintVisible()),
    );
  }

  /** Replaces every shown timing with these; returns how many lines could be shown. */
  show(lines: LineTiming[]): number {
    this.timings.clear();
    for (const timing of lines) {
      const key = normaliseUri(timing.uri);
      const list = this.timings.get(key) ?? [];
      list.push(timing);
      this.timings.set(key, list);
    }
    this.paintVisible();
    return lines.length;
  }

  /** Clears one document's timings, or all of them. */
  clear(uri?: vscode.Uri): void {
    if (uri) {
      if (!this.timings.delete(normaliseUri(uri.toString()))) {
        return;
      }
    } else {
      this.timings.clear();
    }
    this.paintVisible();
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.paintVisible();
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.types.forEach((t) => t.dispose());
  }

  private paintVisible(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      this.paint(editor);
    }
  }

  private paint(editor: vscode.TextEditor): void {
    const buckets: vscode.DecorationOptions[][] = this.types.map(() => []);
    const lines = this.enabled ? this.timings.get(normaliseUri(editor.document.uri.toString())) ?? [] : [];
    for (const timing of lines) {
      if (timing.line < 0 || timing.line >= editor.document.lineCount) {
        continue;
      }
      const line = editor.document.lineAt(timing.line);
      buckets[heatBucket(timing.fraction)].push({
        range: new vscode.Range(line.range.start.translate(0, line.firstNonWhitespaceCharacterIndex), line.range.end),
        renderOptions: { after: { contentText: timing.label } },
      });
    }
    this.types.forEach((type, index) => editor.setDecorations(type, buckets[index]));
  }
}
