// A sortable, filterable table whose rows lead to their source line, usable from the keyboard:
// Tab reaches the filter, the sort buttons and the rows (one tab stop: the active row); ↑/↓, Home/End,
// PageUp/PageDown move between rows; Enter opens the row's line.

import { MARK } from "./redaction";
import { clear, h, shorten } from "./dom";
import { Column, Direction, filterRows, sortRows } from "./table-logic";

export interface TableOptions<T> {
  id: string;
  caption: string;
  columns: Column<T>[];
  rows: T[];
  /** where a row leads: its source, or null (the row is then not a link) */
  source: (row: T) => { fileId: string; line: number; label: string } | null;
  onOpen: (fileId: string, line: number) => void;
  /** what Enter or a click on a row does instead of opening its source (e.g. show a step) */
  activate?: (row: T) => void;
  /** the row's link text when `activate` is given */
  activateLabel?: (row: T) => string;
  sortBy?: string;
  direction?: Direction;
  /** rows shown at most (filter or sort to see others) */
  limit?: number;
  note?: string;
}

const MAX_CELL = 400; // characters of a name shown in a cell (the title attribute holds the rest)

export class DataTable<T> {
  readonly root: HTMLElement;
  private readonly options: TableOptions<T>;
  private sortKey: string;
  private direction: Direction;
  private query = "";
  private readonly body: HTMLTableSectionElement;
  private readonly head: HTMLTableRowElement;
  private readonly status: HTMLElement;
  private shown: T[] = [];
  private active = 0;

  constructor(options: TableOptions<T>) {
    this.options = options;
    this.sortKey = options.sortBy ?? options.columns.find((c) => c.numeric)?.key ?? options.columns[0].key;
    this.direction = options.direction ?? "descending";
    const filter = h("input", {
      type: "search",
      class: "filter",
      placeholder: "Filter",
      "aria-label": `Filter ${options.caption.toLowerCase()}`,
      "aria-controls": `${options.id}-table`,
    });
    filter.addEventListener("input", () => {
      this.query = filter.value;
      this.active = 0;
      this.renderBody();
    });
    this.status = h("span", { class: "table-status", role: "status", "aria-live": "polite" });
    this.head = h("tr");
    this.body = h("tbody");
    const table = h(
      "table",
      { id: `${options.id}-table`, class: "data", "aria-describedby": `${options.id}-status` },
      h("caption", { class: "visually-hidden" }, options.caption),
      h("thead", {}, this.head),
      this.body,
    );
    this.status.id = `${options.id}-status`;
    this.body.addEventListener("keydown", (e) => this.onKey(e));
    this.body.addEventListener("focusin", (e) => {
      // a row focused by a click or a screen reader becomes the active one (the tab stop)
      const tr = (e.target as HTMLElement).closest("tr");
      if (!tr || tr.parentElement !== this.body || tr.dataset.index === undefined) return;
      const index = Number(tr.dataset.index);
      if (index === this.active) return;
      this.rowElement(this.active)?.setAttribute("tabindex", "-1");
      this.active = index;
      tr.setAttribute("tabindex", "0");
    });
    this.body.addEventListener("click", (e) => {
      const tr = (e.target as HTMLElement).closest("tr");
      if (tr && tr.parentElement === this.body) this.activate(Number(tr.dataset.index));
    });
    this.root = h(
      "section",
      { class: "table-view", "aria-label": options.caption },
      h("div", { class: "table-tools" }, filter, this.status),
      options.note ? h("p", { class: "note" }, options.note) : null,
      h("div", { class: "table-scroll" }, table),
    );
    this.renderHead();
    this.renderBody();
  }

  private renderHead(): void {
    clear(this.head);
    for (const column of this.options.columns) {
      const sorted = column.key === this.sortKey;
      const button = h(
        "button",
        { type: "button", class: "sort", title: column.help ?? null },
        column.label,
        h("span", { class: "sort-mark", "aria-hidden": "true" }, sorted ? (this.direction === "ascending" ? " ▲" : " ▼") : ""),
      );
      button.addEventListener("click", () => this.sort(column.key));
      this.head.appendChild(
        h(
          "th",
          { scope: "col", class: column.numeric ? "num" : null, "aria-sort": sorted ? this.direction : "none", "data-key": column.key },
          button,
        ),
      );
    }
  }

  sort(key: string): void {
    if (key === this.sortKey) this.direction = this.direction === "ascending" ? "descending" : "ascending";
    else {
      this.sortKey = key;
      const column = this.options.columns.find((c) => c.key === key);
      this.direction = column?.numeric ? "descending" : "ascending";
    }
    this.renderHead();
    this.renderBody();
  }

  private renderBody(): void {
    const { columns, rows, limit = 500 } = this.options;
    const column = columns.find((c) => c.key === this.sortKey) ?? columns[0];
    const matching = sortRows(filterRows(rows, columns, this.query), column, this.direction);
    this.shown = matching.slice(0, limit);
    clear(this.body);
    this.shown.forEach((row, index) => {
      const source = this.options.source(row);
      const label = this.options.activate ? this.options.activateLabel?.(row) ?? null : source ? `Open ${source.label}` : null;
      const tr = h("tr", {
        "data-index": index,
        tabindex: index === Math.min(this.active, this.shown.length - 1) ? 0 : -1,
        class: label ? "link" : null,
        title: label,
      });
      for (const c of columns) {
        const text = c.format ? c.format(row) : String(c.value(row) ?? "");
        const shown = shorten(text, MAX_CELL);
        const note = c.mark?.(row) ?? null;
        const flag = note ? h("span", { class: "redact-mark", title: note, "aria-label": note }, MARK) : null;
        const cell = c.numeric ? h("td", { class: "num" }, shown) : h("td", { class: c.place ? "name place" : "name" }, h("div", { class: "clamp" }, flag, shown));
        if (!c.numeric && text.length > 120) cell.setAttribute("title", text.slice(0, 5000));
        if (note) cell.setAttribute("title", `${cell.getAttribute("title") ?? text}\n${MARK} ${note}`.trim());
        tr.appendChild(cell);
      }
      this.body.appendChild(tr);
    });
    const total = rows.length;
    const parts = [`${matching.length} of ${total} rows`];
    if (matching.length > this.shown.length) parts.push(`the first ${this.shown.length} shown: filter or sort to see others`);
    this.status.textContent = parts.join("; ");
    if (!this.shown.length) {
      this.body.appendChild(h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, total ? "No row matches the filter." : "Nothing to show.")));
    }
  }

  /**
   * Brings the first row `match` accepts into view, focused and marked (the panel opened on a line);
   * false when no row shown matches (the status says so, with `what`).
   */
  reveal(match: (row: T) => boolean, what: string): boolean {
    this.body.querySelector("tr.revealed")?.classList.remove("revealed");
    const index = this.shown.findIndex(match);
    if (index < 0) {
      this.status.textContent = `${this.status.textContent}; ${what} is not among them`;
      return false;
    }
    this.focusRow(index);
    const tr = this.rowElement(index);
    tr?.classList.add("revealed");
    tr?.scrollIntoView({ block: "center" });
    return true;
  }

  private rowElement(index: number): HTMLTableRowElement | null {
    return this.body.querySelector(`tr[data-index="${index}"]`);
  }

  private focusRow(index: number): void {
    const n = this.shown.length;
    if (!n) return;
    const next = Math.max(0, Math.min(n - 1, index));
    this.rowElement(this.active)?.setAttribute("tabindex", "-1");
    this.active = next;
    const tr = this.rowElement(next);
    if (tr) {
      tr.setAttribute("tabindex", "0");
      tr.focus();
    }
  }

  private onKey(e: KeyboardEvent): void {
    const page = 10;
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
    if (e.key in moves) this.focusRow(this.active + moves[e.key]);
    else if (e.key === "Home") this.focusRow(0);
    else if (e.key === "End") this.focusRow(this.shown.length - 1);
    else if (e.key === "Enter" || e.key === " ") this.activate(this.active);
    else return;
    e.preventDefault();
  }

  private activate(index: number): void {
    const row = this.shown[index];
    if (row === undefined) return;
    this.active = index;
    if (this.options.activate) {
      this.options.activate(row);
      return;
    }
    const source = this.options.source(row);
    if (source) this.options.onOpen(source.fileId, source.line);
  }
}
