// Keeps the inline labels in step with the server: it asks `stepscope/figures` for each visible
// document when it appears, after each edit (the server moves the figures with their lines and hides
// those whose code changed), and when the server says a document's figures changed
// (`stepscope/figuresChanged`: a new run, a run opened, deleted, or a later run that failed).
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { TimingDecorations } from "./decorations";
import { normaliseUri } from "./heat";
import { DocumentFigures, parseFigures } from "./result";

export const FIGURES_REQUEST = "stepscope/figures";
export const FIGURES_CHANGED = "stepscope/figuresChanged";
/** Edits arrive per keystroke; ask once typing pauses. */
const EDIT_DELAY_MS = 150;

export class FigureSync implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly changed = new vscode.EventEmitter<DocumentFigures>();
  /** Fires with a document's figures each time they are asked for (the status item follows it). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly decorations: TimingDecorations,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      this.changed,
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (event.contentChanges.length > 0 && this.isPython(event.document)) {
          this.later(event.document.uri);
        }
      }),
      vscode.window.onDidChangeVisibleTextEditors((editors) => {
        for (const editor of editors) {
          if (this.isPython(editor.document)) {
            void this.refresh(editor.document.uri);
          }
        }
      }),
    );
  }

  /** A (re)started client: listen to it and ask for every visible document's figures. */
  attach(client: LanguageClient): vscode.Disposable {
    this.client = client;
    const listener = client.onNotification(FIGURES_CHANGED, (params: unknown) => {
      const uris = (params as { uris?: unknown })?.uris;
      for (const uri of Array.isArray(uris) ? uris : []) {
        if (typeof uri === "string") {
          void this.refresh(vscode.Uri.parse(uri));
        }
      }
    });
    void this.refreshVisible();
    return new vscode.Disposable(() => {
      listener.dispose();
      if (this.client === client) {
        this.client = undefined;
      }
    });
  }

  async refreshVisible(): Promise<void> {
    await Promise.all(vscode.window.visibleTextEditors
      .filter((editor) => this.isPython(editor.document))
      .map((editor) => this.refresh(editor.document.uri)));
  }

  /** Ask the server what `uri` shows now, and paint it. */
  async refresh(uri: vscode.Uri): Promise<DocumentFigures | undefined> {
    const client = this.client;
    if (!client || uri.scheme !== "file") {
      return undefined;
    }
    try {
      const answer = await client.sendRequest(FIGURES_REQUEST, { uri: uri.toString() });
      const figures = parseFigures(answer, uri.toString());
      this.decorations.set(figures);
      this.changed.fire(figures);
      return figures;
    } catch (error) {
      this.log.warn(`Could not read the figures of ${uri.fsPath}: ${error instanceof Error ? error.message : error}`);
      return undefined;
    }
  }

  dispose(): void {
    this.timers.forEach((timer) => clearTimeout(timer));
    this.disposables.forEach((d) => d.dispose());
  }

  private later(uri: vscode.Uri): void {
    const key = normaliseUri(uri.toString());
    const pending = this.timers.get(key);
    if (pending) {
      clearTimeout(pending);
    }
    this.timers.set(key, setTimeout(() => {
      this.timers.delete(key);
      void this.refresh(uri);
    }, EDIT_DELAY_MS));
  }

  private isPython(document: vscode.TextDocument): boolean {
    return document.languageId === "python" && document.uri.scheme === "file";
  }
}
