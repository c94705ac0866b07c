// A small timeline document for the unit tests: two tracks, nested spans, one merged span.
import type { TimelineDoc } from "../src/timeline-doc";

/** A document as the JSON has it: its span columns are lists (the tests edit them). */
export type ListDoc = TimelineDoc & { spans: { [K in keyof TimelineDoc["spans"]]: number[] } };

export function smallDoc(): ListDoc {
  return {
    schema_version: 1,
    window: { duration_us: 100, per: "step", steps: 2, gpu_observed: true },
    range: { start_us: 0, end_us: 100 },
    cap: 1000,
    reduced: true,
    resolution_us: 1,
    spans_in_range: 9,
    notes: [],
    categories: ["region", "batch_read", "annotation", "operator", "python", "runtime", "sync", "collective", "kernel",
      "copy_h2d", "copy_d2h", "copy_d2d", "copy_other", "memset", "gpu_annotation", "device_other", "mixed"],
    tracks: [
      { label: "thread 1", kind: "cpu", main: true, rows: 2 },
      { label: "GPU 0 · stream 7", kind: "gpu", main: false, rows: 1 },
    ],
    names: ["ss:f0:3", "aten::mm", "gemm", "aten::add"],
    files: { f0: "train.py" },
    lines: { file: ["f0"], line: [3] },
    spans: {
      // region [0, 50] holds mm [10, 30] and add [35, 45]; region [60, 90]; kernels [20, 40], [50, 52] merged
      track: [0, 0, 0, 0, 1, 1],
      start_us: [0, 10, 35, 60, 20, 50],
      dur_us: [50, 20, 10, 30, 20, 10],
      name: [0, 1, 3, 0, 2, 2],
      category: [0, 3, 3, 0, 8, 8],
      depth: [0, 1, 1, 0, 0, 0],
      line: [0, 0, 0, 0, 0, -1],
    },
    merged: { span: [5], count: [4], busy_us: [4] },
    steps: [
      { name: "ProfilerStep#1", start_us: 0, cpu_start_us: 0, cpu_end_us: 55, completion_us: 55, ms: 0.055, cpu_known: true },
      { name: "ProfilerStep#2", start_us: 55, cpu_start_us: 58, cpu_end_us: 100, completion_us: 100, ms: 0.045, cpu_known: true },
    ],
  };
}
