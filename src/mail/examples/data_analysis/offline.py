"""Scripted agents of ``data-analysis-offline`` (no LLM): the analyst is
:class:`~mail.examples.offline.team.OfflineCoordinatorFunction`; these answer its requests
with the data-analysis swarm's real actions. The processor's answer lists the values of
one numeric column ("Values of units: 1, 2, ..."), which the statistician analyzes."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from mail.examples.data_analysis.processor.actions import DATASET_GENERATORS
from mail.examples.offline.team import OfflineCoordinatorFunction, OfflineTeamWorker

__all__ = [
    "OfflineAnalystFunction",
    "OfflineProcessorFunction",
    "OfflineReporterFunction",
    "OfflineStatisticsFunction",
]

#: The data-analysis-offline entry agent.
OfflineAnalystFunction = OfflineCoordinatorFunction

_ROWS = 12
_VALUES = re.compile(r"Values of (\w+): ([-\d., ]+)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _to_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


class OfflineProcessorFunction(OfflineTeamWorker):
    """Generates the dataset named in the question (``generate_sample_data``, default
    sales) and reads it back as CSV (``parse_csv``)."""

    steps = ("generate_sample_data", "parse_csv")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        if step == "generate_sample_data":
            lowered = question.lower()
            dataset = next((name for name in DATASET_GENERATORS if name in lowered), "sales")
            return {"dataset": dataset, "rows": _ROWS}
        sample = results.get("generate_sample_data")
        if not isinstance(sample, dict):
            return None
        return {"data": _to_csv(sample["data"], sample["columns"])}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        parsed = results.get("parse_csv")
        sample = results.get("generate_sample_data")
        if not isinstance(parsed, dict) or not isinstance(sample, dict):
            return f"I could not prepare the data: {parsed or sample}"
        numeric = [c for c, kind in parsed["column_types"].items() if kind != "string"]
        column = numeric[-1]
        values = ", ".join(str(row[column]) for row in parsed["data"])
        return (
            f"Dataset {sample['dataset']} ({sample['description']}): {parsed['row_count']} "
            f"rows, columns {', '.join(parsed['columns'])}. Values of {column}: {values}"
        )


class OfflineStatisticsFunction(OfflineTeamWorker):
    """Describes the numbers found so far (``calculate_statistics``) and their trend
    over their order (``run_correlation``)."""

    steps = ("calculate_statistics", "run_correlation")

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        values = self._values(question, findings)
        if step == "calculate_statistics":
            return {"data": values, "metrics": ["mean", "median", "std", "min", "max"]}
        if len(values) < 2:  # noqa: PLR2004 -- a correlation needs two points
            return None
        return {"x": [float(i) for i in range(1, len(values) + 1)], "y": values}

    @staticmethod
    def _values(question: str, findings: str) -> list[float]:
        match = _VALUES.search(findings)
        text = match.group(2) if match else question
        return [float(n) for n in _NUMBER.findall(text)] or [0.0]

    def describe(self, question: str, results: dict[str, Any]) -> str:
        stats = results.get("calculate_statistics")
        if not isinstance(stats, dict):
            return f"Statistics failed: {stats}"
        text = str(stats["interpretation"])
        trend = results.get("run_correlation")
        if isinstance(trend, dict):
            text += f" Trend over the rows: {trend['interpretation']}"
        return text


class OfflineReporterFunction(OfflineTeamWorker):
    """Formats the question and the findings as a Markdown report (``format_report``)."""

    steps = ("format_report",)

    def arguments(
        self, step: str, question: str, findings: str, results: dict[str, Any]
    ) -> dict[str, Any] | None:
        sections = [{"heading": "Question", "content": question}]
        for line in findings.splitlines():
            who, _, said = line.partition(": ")
            if said:
                sections.append({"heading": who.strip().capitalize(), "content": said})
        return {"title": "Analysis report", "sections": sections}

    def describe(self, question: str, results: dict[str, Any]) -> str:
        report = results.get("format_report")
        if not isinstance(report, dict):
            return f"I could not format the report: {report}"
        return f"Report ready ({report['section_count']} sections):\n{report['report']}"
