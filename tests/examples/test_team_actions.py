"""Argument and result shapes of the support, data-analysis and research actions (CONTRACT §12)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mail.examples.data_analysis.processor.actions import generate_sample_data, parse_csv
from mail.examples.data_analysis.reporter.actions import format_report
from mail.examples.data_analysis.statistics.actions import calculate_statistics, run_correlation
from mail.examples.research.searcher.actions import extract_facts, search_topic
from mail.examples.research.summarizer.actions import create_bibliography, summarize_text
from mail.examples.research.verifier.actions import rate_confidence, verify_claim
from mail.examples.support.classifier.actions import classify_ticket
from mail.examples.support.faq.actions import search_faq
from mail.examples.support.sentiment.actions import analyze_sentiment, create_escalation

SOURCES = [{"title": "Solar", "author": "Doe", "year": 2020, "url": "https://example.org/s"}]
# action, good arguments, the result's keys
OK: list[tuple[Any, dict[str, Any], set[str]]] = [
    (
        search_faq,
        {"query": "reset password"},
        {"query", "total_matches", "results_returned", "results"},
    ),
    (
        classify_ticket,
        {"text": "app crash"},
        {
            "category",
            "category_confidence",
            "priority",
            "priority_confidence",
            "reasoning",
            "suggested_actions",
        },
    ),
    (
        analyze_sentiment,
        {"text": "thanks, great help"},
        {
            "sentiment",
            "score",
            "score_factors",
            "emotions_detected",
            "escalation_recommended",
            "escalation_reason",
            "analysis_summary",
        },
    ),
    (
        create_escalation,
        {"ticket_id": "T-1", "reason": "angry", "priority": "high"},
        {"success", "message", "escalation"},
    ),
    (
        generate_sample_data,
        {"dataset": "weather", "rows": 5},
        {"dataset", "description", "columns", "row_count", "data"},
    ),
    (
        parse_csv,
        {"data": "a,b\n1,x\n2,y"},
        {"success", "columns", "column_types", "row_count", "data", "parse_errors"},
    ),
    (calculate_statistics, {"data": [1, 2, 3]}, {"count", "metrics", "interpretation"}),
    (
        run_correlation,
        {"x": [1, 2, 3], "y": [3, 2, 1]},
        {
            "correlation_coefficient",
            "r_squared",
            "data_points",
            "strength",
            "direction",
            "interpretation",
            "x_stats",
            "y_stats",
        },
    ),
    (
        format_report,
        {"title": "T", "sections": [{"heading": "H", "content": "C"}]},
        {"success", "title", "section_count", "character_count", "report"},
    ),
    (
        search_topic,
        {"query": "tides"},
        {"query", "source", "result_count", "combined_facts", "sources", "retrieved_at"},
    ),
    (
        search_topic,
        {"query": "tides", "source": "news"},
        {"query", "source", "result_count", "results", "retrieved_at"},
    ),
    (
        extract_facts,
        {"text": "The moon pulls the sea twice a day."},
        {"fact_count", "facts", "numbers_found"},
    ),
    (
        verify_claim,
        {"claim": "tides follow the moon"},
        {
            "claim",
            "status",
            "explanation",
            "claim_analysis",
            "source_analysis",
            "sources_checked",
            "recommendation",
        },
    ),
    (
        rate_confidence,
        {"claim": "tides follow the moon", "evidence": ["the moon drives tides"]},
        {
            "claim",
            "confidence_level",
            "confidence_score",
            "evidence_count",
            "supporting_evidence",
            "contradicting_evidence",
            "reason",
            "reliability_note",
        },
    ),
    (
        summarize_text,
        {"text": "One two three four. Five six."},
        {"summary", "original_length", "summary_length", "compression_ratio", "sentences_kept"},
    ),
    (
        create_bibliography,
        {"sources": SOURCES, "style": "mla"},
        {"style", "entry_count", "entries", "bibliography"},
    ),
]
BAD: list[tuple[Any, dict[str, Any], str]] = [
    (search_faq, {"query": ""}, "Error: 'query' must be a non-empty string"),
    (
        search_faq,
        {"query": "x", "max_results": 11},
        "Error: 'max_results' must be an integer between 1 and 10",
    ),
    (classify_ticket, {}, "Error: 'text' must be a non-empty string"),
    (
        create_escalation,
        {"ticket_id": "T", "reason": "r", "priority": "low"},
        "Error: 'priority' must be one of high, urgent",
    ),
    (
        generate_sample_data,
        {"dataset": "stocks"},
        "Error: 'dataset' must be one of sales, users, inventory, weather",
    ),
    (
        generate_sample_data,
        {"dataset": "sales", "rows": 0},
        "Error: 'rows' must be an integer between 1 and 1000",
    ),
    (calculate_statistics, {"data": ["a"]}, "Error: 'data' must be an array of at least 1 numbers"),
    (
        run_correlation,
        {"x": [1, 2], "y": [1, 2, 3]},
        "Error: 'x' and 'y' must have the same length",
    ),
    (
        format_report,
        {"title": "T", "sections": []},
        "Error: 'sections' must be a non-empty array of {heading, content} objects",
    ),
    (
        search_topic,
        {"query": "x", "source": "blog"},
        "Error: 'source' must be one of wikipedia, academic, news, general",
    ),
    (rate_confidence, {"claim": "x", "evidence": []}, "Error: 'evidence' must not be empty"),
    (
        create_bibliography,
        {"sources": SOURCES, "style": "ieee"},
        "Error: 'style' must be one of apa, mla, chicago, simple",
    ),
]


@pytest.mark.parametrize(("action", "args", "keys"), OK, ids=lambda v: getattr(v, "name", ""))
async def test_result_shape(action: Any, args: dict[str, Any], keys: set[str]) -> None:
    result = json.loads(await action.function(args))
    assert set(result) == keys
    assert set(args) <= set(action.parameters["properties"])


@pytest.mark.parametrize(("action", "args", "error"), BAD, ids=lambda v: getattr(v, "name", ""))
async def test_argument_errors(action: Any, args: dict[str, Any], error: str) -> None:
    assert await action.function(args) == error


async def test_escalation_is_deterministic_and_slas_follow_priority() -> None:
    args = {"ticket_id": "T-9", "reason": "angry", "priority": "urgent"}
    first = json.loads(await create_escalation.function(args))["escalation"]
    second = json.loads(await create_escalation.function(args))["escalation"]
    assert first["escalation_id"] == second["escalation_id"].upper()
    assert first["escalation_id"].startswith("ESC-") and len(first["escalation_id"]) == 12
    assert (first["status"], first["assigned_to"], first["sla_target"]) == (
        "pending",
        "support_supervisor_queue",
        "1 hour",
    )


async def test_faq_search_ranks_the_matching_entry_first() -> None:
    found = json.loads(await search_faq.function({"query": "How do I reset my password?"}))
    assert found["results"][0]["id"] == "faq-001"
    assert found["results_returned"] <= 3
