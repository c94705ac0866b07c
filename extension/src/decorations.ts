// Inline ms/step per line: the server's label at the end of each timed line, coloured on a heat
// scale by the line's share of the step (heat.ts), in theme colours. The lines come from the server
// already placed where their code is now (figures.ts asks after every edit): a line whose code
// changed since the run has no label, the others keep theirs. Figures from an earlier run than one
// that failed or was cancelled keep their heat colour and say so. A line below the label threshold
// (`stepscope.inline.minShare`) gets no label; its hover still has the figures. The hover of a timed
// line comes from the server (textDocument/hover), so every LSP editor gets the same one.
import * as vscode from "vscode";
import { HEAT, heatBucket, normaliseUri, worthALabel } from "./heat";
import { DocumentFigures } from "./result";

export class TimingDecorations implements vscode.Disposable {
  private readonly types: vscode.TextEditorDecorationType[];
  /** Figures by normalised document URI. */
  private readonly figures = new Map<string, DocumentFigures>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private enabled: boolean,
    private minShare: number,
  ) {
    const after = { margin: "0 0 0 3em", fontStyle: "italic" };
    this.types = HEAT.map((step) =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: step.background ? new vscode.ThemeColor(step.background) : undefined,
        after: { ...after, color: new vscode.ThemeColor(step.text) },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
      }),
    );
    this.disposables.push(vscode.window.onDidChangeVisibleTextEditors(() => this.paintVisible()));
  }

  /** What one document shows now (replaces what it showed). */
  set(figures: DocumentFigures): void {
    const key = normaliseUri(figures.uri);
    if (figures.runId === null) {
      if (!this.figures.delete(key)) {
        return;
      }
    } else {
      this.figures.set(key, figures);
    }
    this.paintVisible(key);
  }

  /** Clears every document's labels (the Clear Inline Timings command). */
  clear(): void {
    this.figures.clear();
    this.paintVisible();
  }

  /** The labels a document shows, for the runs view and tests. */
  shown(uri: vscode.Uri): DocumentFigures | undefined {
    return this.figures.get(normaliseUri(uri.toString()));
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.paintVisible();
  }

  setMinShare(minShare: number): void {
    this.minShare = minShare;
    this.paintVisible();
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.types.forEach((t) => t.dispose());
  }

  private paintVisible(only?: string): void {
    for (const editor of vscode.window.visibleTextEditors) {
      if (only === undefined || normaliseUri(editor.document.uri.toString()) === only) {
        this.paint(editor);
      }
    }
  }

  private paint(editor: vscode.TextEditor): void {
    const buckets: vscode.DecorationOptions[][] = this.types.map(() => []);
    const figures = this.enabled ? this.figures.get(normaliseUri(editor.document.uri.toString())) : undefined;
    for (const timing of figures?.lines ?? []) {
      if (timing.line < 0 || timing.line >= editor.document.lineCount || !worthALabel(timing.fraction, this.minShare)) {
        continue;
      }
      const line = editor.document.lineAt(timing.line);
      const options = {
        range: new vscode.Range(line.range.start.translate(0, line.firstNonWhitespaceCharacterIndex), line.range.end),
        renderOptions: { after: { contentText: figures?.stale ? `${timing.label} · earlier run` : timing.label } },
      };
      buckets[heatBucket(timing.fraction)].push(options);
    }
    this.types.forEach((type, index) => editor.setDecorations(type, buckets[index]));
  }
}
