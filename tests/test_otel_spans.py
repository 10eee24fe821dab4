"""OpenTelemetry spans per request, read back with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.compaction.pruning import ToolResultPruning

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from context_manager.integrations.otel import SPAN_NAME, instrument


def _tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_each_request_is_a_span_with_genai_usage_attributes() -> None:
    tracer_provider, exporter = _tracing()
    manager = MessageContextManager(20_000, counter="chars", system_prompt="s" * 8_000)
    instrument(manager, "anthropic", "claude-sonnet-4-5", tracer_provider=tracer_provider)
    for turn in range(3):
        manager.add({"role": "user", "content": f"question {turn}"})
        manager.get_context()
        manager.add({"role": "assistant", "content": f"answer {turn}"})
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == [SPAN_NAME] * 3
    last: Any = spans[-1].attributes
    report = manager.stats().cache
    assert last["gen_ai.provider.name"] == "anthropic"
    assert last["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert last["gen_ai.usage.input_tokens"] == report.prompt_tokens
    assert last["gen_ai.usage.cache_read.input_tokens"] == report.cached_tokens > 0
    assert last["gen_ai.usage.cache_creation.input_tokens"] == report.written_tokens
    assert last["context_manager.cache.break_reason"] == "extended"
    assert last["context_manager.context.tokens"] == report.prompt_tokens  # no tools here
    assert spans[0].attributes["context_manager.cache.break_reason"] == "first_request"


def test_pruning_and_compaction_show_on_the_request_span() -> None:
    tracer_provider, exporter = _tracing()
    pruning = ToolResultPruning(
        max_chars=200, head_chars=50, tail_chars=50, soft_ratio=None, keep_last=1
    )
    manager = MessageContextManager(
        100_000, counter="chars", system_prompt="s" * 8_000, pruning=pruning
    )
    instrument(manager, "openai", tracer_provider=tracer_provider)
    for turn in range(3):
        manager.add({"role": "user", "content": f"look {turn}"})
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read", "arguments": "{}"},
        }
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{turn}", "content": "r" * 2_000})
        manager.get_context()
    manager.apply_compaction({"role": "user", "content": "summary"}, 6)
    manager.get_context()
    spans = exporter.get_finished_spans()
    assert sum(s.attributes["context_manager.pruned.results"] for s in spans) >= 1
    names = [e.name for s in spans for e in s.events]
    assert "context_manager.tool_results_pruned" in names
    assert spans[-1].attributes["context_manager.compacted"] is True
    assert spans[-1].attributes["context_manager.cache.break_reason"] == "compacted"
    assert [e.name for e in spans[-1].events] == ["context_manager.compacted"]


def test_unsubscribing_stops_the_spans() -> None:
    tracer_provider, exporter = _tracing()
    manager = MessageContextManager(2_000, counter="chars")
    stop = instrument(manager, "gemini", tracer_provider=tracer_provider)
    manager.add({"role": "user", "content": "hi"})
    manager.get_context()
    stop()
    manager.get_context()
    assert len(exporter.get_finished_spans()) == 1


def test_opentelemetry_is_imported_only_when_enabled() -> None:
    code = (
        "import sys; import context_manager.integrations.otel; "
        "from context_manager import MessageContextManager; "
        "m = MessageContextManager(1000, counter='chars'); "
        "m.add({'role': 'user', 'content': 'x'}); m.get_context(); "
        "print(any(k.startswith('opentelemetry') for k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_instrumenting_something_else_is_a_configuration_error() -> None:
    from context_manager.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="manager"):
        instrument(None, "openai")
    with pytest.raises(ConfigurationError, match="model"):
        instrument(MessageContextManager(1_000), "openai", 42)  # type: ignore[arg-type]
