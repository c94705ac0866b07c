"""JSON Schema of the report (`--json` of analyze/profile): the minimum fields of the product brief."""

NUMBER = {"type": "number"}
NULLABLE_NUMBER = {"type": ["number", "null"]}
COPY = {"type": "object", "required": ["count", "bytes"],
        "properties": {"count": {"type": "integer", "minimum": 0}, "bytes": {"type": "integer", "minimum": 0}}}

LINE = {
    "type": "object",
    "required": ["file", "line", "precision", "wall_ms", "cpu_self_ms", "cpu_total_ms", "gpu_ms",
                 "backward_ms", "kernels", "copies", "sync_ms"],
    "properties": {
        "file": {"type": "string", "pattern": "^/"},
        "line": {"type": "integer", "minimum": 0},
        "precision": {"enum": ["exact", "call", "function"]},
        "wall_ms": {"type": "number", "minimum": 0},
        "cpu_self_ms": {"type": "number", "minimum": 0},
        "cpu_total_ms": {"type": "number", "minimum": 0},
        "gpu_ms": NULLABLE_NUMBER,
        "backward_ms": NULLABLE_NUMBER,
        "kernels": {"type": "integer", "minimum": 0},
        "copies": {"type": "object", "required": ["h2d", "d2h", "d2d"],
                   "properties": {"h2d": COPY, "d2h": COPY, "d2d": COPY}},
        "sync_ms": {"type": "number", "minimum": 0},
    },
}

# a folder of per-rank traces: each rank's own figures, its lines in the shape of the top-level lines
RANK = {
    "type": "object",
    "required": ["trace", "rank", "ms_per_step", "steps", "gpu_ms", "collective_ms", "lines", "regions", "slowest"],
    "properties": {"trace": {"type": "string", "pattern": "^/"}, "rank": {"type": ["integer", "null"]},
                   "ms_per_step": {"type": ["number", "null"], "minimum": 0},
                   "steps": {"type": "integer", "minimum": 0}, "gpu_ms": NULLABLE_NUMBER,
                   "collective_ms": NULLABLE_NUMBER,
                   "lines": {"type": "array", "maxItems": 10, "items": LINE},
                   "regions": {"type": "array", "maxItems": 10}, "slowest": {"type": "boolean"}},
}

REPORT_SCHEMA = {
    "type": "object",
    "required": ["traces", "machine", "scenario", "schedule", "gpu", "startup", "steps", "ms_per_step",
                 "samples_per_s", "lines", "regions", "findings"],
    "properties": {
        "traces": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": "^/"}},
        "machine": {"type": "object"},
        "scenario": {"type": "object"},
        "schedule": {"type": "object"},
        "gpu": {"type": "object", "required": ["observed", "reason"],
                "properties": {"observed": {"type": "boolean"}, "reason": {"type": ["string", "null"]}}},
        "startup": {"type": "object", "required": ["to_first_step_ms", "first_steps_ms"],
                    "properties": {"to_first_step_ms": NULLABLE_NUMBER,
                                   "first_steps_ms": {"type": "array", "items": NUMBER}}},
        # a trace without step markers is one window: no steps and no ms/step (null, never 0)
        "steps": {"type": "array", "items": {
            "type": "object", "required": ["name", "ms"],
            "properties": {"name": {"type": "string"}, "ms": {"type": "number", "minimum": 0}}}},
        "ms_per_step": {"type": ["number", "null"], "minimum": 0},
        "samples_per_s": NULLABLE_NUMBER,
        "lines": {"type": "array", "items": LINE},
        "regions": {"type": "array", "items": {
            "type": "object", "required": ["label", "file", "line", "wall_ms", "gpu_ms"],
            "properties": {"label": {"type": "string"}, "file": {"type": ["string", "null"]},
                           "line": {"type": ["integer", "null"]}, "wall_ms": {"type": "number", "minimum": 0},
                           "gpu_ms": NULLABLE_NUMBER}}},
        "ranks": {"type": "array", "minItems": 2, "items": RANK},
        "slowest_rank": {"type": ["integer", "null"]},
        "findings": {"type": "array", "items": {
            "type": "object", "required": ["kind", "file", "line", "observation", "hypothesis", "next_check"],
            "properties": {"kind": {"type": "string"}, "file": {"type": ["string", "null"]},
                           "line": {"type": ["integer", "null"]}, "observation": {"type": "string"},
                           "hypothesis": {"type": "string"}, "next_check": {"type": "string"}}}},
    },
}
