"""The research swarm's verification: ``verify_claim`` and ``rate_confidence``.

Both judge from the text they are given (word overlap between claim and sources or
evidence); nothing is looked up. ``verify_claim`` also says how checkable the claim is
(:data:`VERIFIABLE_INDICATORS`, :data:`SUBJECTIVE_INDICATORS`) and how reliable each
source looks (:data:`SOURCE_RELIABILITY`).
"""

from __future__ import annotations

import re
from typing import Any

from mail.examples._actionkit import ArgumentError, make_action, text_arg

__all__ = [
    "RATE_CONFIDENCE_PARAMETERS",
    "SOURCE_RELIABILITY",
    "SUBJECTIVE_INDICATORS",
    "VERIFIABLE_INDICATORS",
    "VERIFY_CLAIM_PARAMETERS",
    "rate_confidence",
    "verify_claim",
]

#: kind of source -> (words in a source's text that mark it as that kind, reliability
#: 0..1), checked in order; a source matching none is ``unknown`` (0.5).
SOURCE_RELIABILITY: dict[str, tuple[tuple[str, ...], float]] = {
    "academic": (("journal", "study", "university", "peer", "doi"), 0.9),
    "government": ((".gov", "government", "agency", "official"), 0.85),
    "encyclopedia": (("wikipedia", "encyclopedia", "britannica"), 0.75),
    "news": (("news", "reported", "reuters", "times", "press"), 0.7),
    "blog": (("blog", "forum", "opinion", "reddit"), 0.4),
}
#: Words that make a claim checkable (measurements, dates, attributions).
VERIFIABLE_INDICATORS: frozenset[str] = frozenset(
    {"percent", "according", "study", "measured", "data", "survey", "census", "report", "since"}
)
#: Words that make a claim a matter of opinion.
SUBJECTIVE_INDICATORS: frozenset[str] = frozenset(
    {"best", "worst", "beautiful", "ugly", "should", "believe", "think", "amazing", "terrible"}
)

_NEGATIONS = {"not", "no", "never", "false", "incorrect", "myth", "disproved", "wrong"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def _texts(args: dict[str, Any], key: str, *, required: bool) -> list[str]:
    value = args.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(f"Error: '{key}' must be an array of strings")
    if required and not value:
        raise ArgumentError(f"Error: '{key}' must not be empty")
    return value


def _stance(claim: set[str], text: str) -> str:
    words = set(re.findall(r"[a-z]+", text.lower()))
    if len(claim & _words(text)) < max(1, len(claim) // 3):
        return "unrelated"
    return "contradicts" if words & _NEGATIONS else "supports"


def _claim_analysis(claim: str, key: set[str]) -> dict[str, Any]:
    words = set(re.findall(r"[a-z]+", claim.lower()))
    verifiable = sorted(words & VERIFIABLE_INDICATORS)
    subjective = sorted(words & SUBJECTIVE_INDICATORS)
    checkable = bool(verifiable or re.search(r"\d", claim)) and not subjective
    return {
        "key_terms": sorted(key),
        "word_count": len(claim.split()),
        "verifiable_indicators": verifiable,
        "subjective_indicators": subjective,
        "claim_type": "subjective" if subjective else "factual" if checkable else "general",
    }


def _reliability(source: str) -> dict[str, Any]:
    lowered = source.lower()
    for kind, (markers, score) in SOURCE_RELIABILITY.items():
        if any(marker in lowered for marker in markers):
            return {"source_type": kind, "reliability": score}
    return {"source_type": "unknown", "reliability": 0.5}


def _verify(args: dict[str, Any]) -> dict[str, Any]:
    claim = text_arg(args, "claim")
    sources = _texts(args, "sources", required=False)
    key = _words(claim)
    stances = [_stance(key, source) for source in sources]
    support, contra = stances.count("supports"), stances.count("contradicts")
    if not sources:
        status, explanation = "unverified", "No sources were given to check the claim against."
    elif support and not contra:
        status, explanation = "supported", f"{support} source(s) agree and none disagree."
    elif contra and not support:
        status, explanation = "refuted", f"{contra} source(s) contradict the claim."
    elif support:
        status, explanation = "disputed", f"{support} source(s) agree, {contra} disagree."
    else:
        status, explanation = "unverified", "None of the sources address the claim."
    return {
        "claim": claim,
        "status": status,
        "explanation": explanation,
        "claim_analysis": _claim_analysis(claim, key),
        "source_analysis": [
            {"source": s[:120], "stance": st, **_reliability(s)}
            for s, st in zip(sources, stances, strict=True)
        ],
        "sources_checked": len(sources),
        "recommendation": "usable" if status == "supported" else "needs more evidence",
    }


def _rate(args: dict[str, Any]) -> dict[str, Any]:
    claim = text_arg(args, "claim")
    evidence = _texts(args, "evidence", required=True)
    key = _words(claim)
    stances = [_stance(key, item) for item in evidence]
    support = [e for e, s in zip(evidence, stances, strict=True) if s == "supports"]
    contra = [e for e, s in zip(evidence, stances, strict=True) if s == "contradicts"]
    score = round((len(support) - len(contra)) / len(evidence) * 0.5 + 0.5, 2)
    level = "high" if score >= 0.75 else "medium" if score >= 0.5 else "low"
    return {
        "claim": claim,
        "confidence_level": level,
        "confidence_score": score,
        "evidence_count": len(evidence),
        "supporting_evidence": support,
        "contradicting_evidence": contra,
        "reason": f"{len(support)} supporting and {len(contra)} contradicting item(s).",
        "reliability_note": "Rated from the evidence text alone; sources were not checked.",
    }


#: ``verify_claim {claim: str, sources?: string[]}`` -> JSON ``{claim, status:
#: supported|refuted|disputed|unverified, explanation, claim_analysis: {key_terms,
#: word_count, verifiable_indicators, subjective_indicators, claim_type:
#: factual|subjective|general}, source_analysis: [{source, stance, source_type,
#: reliability}], sources_checked, recommendation}`` or ``"Error: ..."``.
verify_claim = make_action(
    "verify_claim",
    "Check a claim against source texts and say whether they support it.",
    {
        "claim": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "string"}},
    },
    ["claim"],
    _verify,
)

#: ``rate_confidence {claim: str, evidence: string[]}`` -> JSON ``{claim,
#: confidence_level: high|medium|low, confidence_score (0..1), evidence_count,
#: supporting_evidence, contradicting_evidence, reason, reliability_note}`` or ``"Error: ..."``.
rate_confidence = make_action(
    "rate_confidence",
    "Rate how confident one can be in a claim given pieces of evidence.",
    {
        "claim": {"type": "string"},
        "evidence": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    ["claim", "evidence"],
    _rate,
)

#: The JSON Schema of ``verify_claim``'s arguments.
VERIFY_CLAIM_PARAMETERS: dict[str, Any] = verify_claim.parameters
#: The JSON Schema of ``rate_confidence``'s arguments.
RATE_CONFIDENCE_PARAMETERS: dict[str, Any] = rate_confidence.parameters
