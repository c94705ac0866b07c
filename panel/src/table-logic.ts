// Sorting and filtering of the panel's tables. No DOM.

export interface Column<T> {
  key: string;
  label: string;
  /** the value sorted on; null sorts last whatever the direction */
  value: (row: T) => number | string | null;
  numeric: boolean;
  format?: (row: T) => string;
  /** a short description for the header's tooltip and screen readers */
  help?: string;
  /** a note that marks the cell (what sharing the trace would do to its text), or null */
  mark?: (row: T) => string | null;
}

export type Direction = "ascending" | "descending";

export function sortRows<T>(rows: readonly T[], column: Column<T>, direction: Direction): T[] {
  const sign = direction === "ascending" ? 1 : -1;
  return rows
    .map((row, position) => ({ row, position, value: column.value(row) }))
    .sort((a, b) => {
      if (a.value === null || b.value === null) {
        if (a.value === b.value) return a.position - b.position;
        return a.value === null ? 1 : -1;
      }
      let order: number;
      if (typeof a.value === "number" && typeof b.value === "number") order = a.value - b.value;
      else order = String(a.value).localeCompare(String(b.value), "en", { numeric: true });
      return order * sign || a.position - b.position;
    })
    .map((x) => x.row);
}

/** Rows whose text columns contain every word of the query (case-insensitive). */
export function filterRows<T>(rows: readonly T[], columns: readonly Column<T>[], query: string): T[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return rows.slice();
  return rows.filter((row) => {
    const text = columns
      .map((c) => (c.format ? c.format(row) : String(c.value(row) ?? "")))
      .join("\u0000")
      .toLowerCase();
    return words.every((w) => text.includes(w));
  });
}
