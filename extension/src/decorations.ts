// Inline ms/step per line: the server's label at the end of each profiled line, coloured on a heat
// scale by the line's share of the step. Timings of a document are dropped as soon as it is edited,
// because the lines they describe may have moved.
import * as vscode from "vscode";

export interface LineTiming {
  uri: string;
  /** 0-based line. */
  line: number;
  wallMs: number;
  gpuMs: number | null;
  /** Share of the step, 0..1. */
  fraction: number;
  label: string;
}

/** Heat scale: the lower bound of each bucket's share of the step and its colours. */
const HEAT = [
  { from: 0.0, text: "#8c8c8c", background: undefined },
  { from: 0.05, text: "#c8a400", background: undefined },
  { from: 0.15, text: "#e07b00", background: "rgba(224, 123, 0, 0.07)" },
  { from: 0.3, text: "#e5531a", background: "rgba(229, 83, 26, 0.11)" },
  { from: 0.5, text: "#e0281f", background: "rgba(224, 40, 31, 0.16)" },
] as const;

export function heatBucket(fraction: number): number {
  let bucket = 0;
  HEAT.forEach((step, index) => {
    if (fraction >= step.from) {
      bucket = index;
    }
  });
  return bucket;
}

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
      const key = normalise(timing.uri);
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
      if (!this.timings.delete(uri.toString())) {
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
    const lines = this.enabled ? this.timings.get(editor.document.uri.toString()) ?? [] : [];
    for (const timing of lines) {
      if (timing.line < 0 || timing.line >= editor.document.lineCount) {
        continue;
      }
      // The whole line: the timing sits after its end, and hovering the code shows the details.
      const line = editor.document.lineAt(timing.line);
      buckets[heatBucket(timing.fraction)].push({
        range: new vscode.Range(line.range.start.translate(0, line.firstNonWhitespaceCharacterIndex), line.range.end),
        hoverMessage: hoverFor(timing),
        renderOptions: { after: { contentText: timing.label } },
      });
    }
    this.types.forEach((type, index) => editor.setDecorations(type, buckets[index]));
  }
}

function hoverFor(timing: LineTiming): vscode.MarkdownString {
  const gpu = timing.gpuMs === null ? "not observed" : `${timing.gpuMs.toFixed(2)} ms`;
  const hover = new vscode.MarkdownString();
  hover.appendMarkdown("**Stepscope** (per step)\n\n");
  hover.appendMarkdown(`- wall: ${timing.wallMs.toFixed(2)} ms\n`);
  hover.appendMarkdown(`- GPU: ${gpu}\n`);
  hover.appendMarkdown(`- share of the step: ${(timing.fraction * 100).toFixed(1)}%\n`);
  return hover;
}

/** The same document can be spelled with different escapes; compare VS Code's own spelling. */
export function normalise(uri: string): string {
  return vscode.Uri.parse(uri).toString();
}
