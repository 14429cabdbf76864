"""Benchmark harnesses: Who&When (which agent, which step) and TRAIL (where, what)."""

from agentdebug.bench.metrics import (
    BUCKETS,
    TraceScore,
    bucket_of,
    grouped,
    normalize_agent,
    summarize,
)
from agentdebug.bench.trail import TrailResult, TrailScore, run_trail, summarize_trail
from agentdebug.bench.whowhen import BenchResult, run_whowhen

__all__ = [
    "BUCKETS",
    "BenchResult",
    "TraceScore",
    "TrailResult",
    "TrailScore",
    "bucket_of",
    "grouped",
    "normalize_agent",
    "run_trail",
    "run_whowhen",
    "summarize",
    "summarize_trail",
]
