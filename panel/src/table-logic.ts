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
  /** a place (`file.py:35`): never broken across lines, so a line number is never cut in two */
  place?: boolean;
}

/** Where an operator or kernel ran, and how much of it ran there when other lines ran it too:
 * `train.py:22 (60 of 68 calls)`. */
export function placeText(place: string | null, atLine: number | null | undefined, total: number, unit: string): string {
  if (!place) return "";
  if (atLine === null || atLine === undefined || atLine >= total - 1e-9) return place;
  const n = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/\.?0+$/, ""));
  return `${place} (${n(atLine)} of ${n(total)} ${unit})`;
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
