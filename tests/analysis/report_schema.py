"""The report's JSON Schema, as the package ships it (server/stepscope/analysis/report.schema.json,
generated from the typed model in stepscope.analysis.model). Tests validate every report they make
against this file, so a report that leaves the shipped contract fails where it is made."""

import json
from importlib import resources

REPORT_SCHEMA = json.loads(resources.files("stepscope.analysis").joinpath("report.schema.json").read_text())
