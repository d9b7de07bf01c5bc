"""Runs the IoT example pipeline as a deployment would: its declaration named by STREAMHOUSE_PIPELINE.

``python -m tests.pipeline.iot_run PREFIX DOCS_DIR`` (with STREAMHOUSE_PIPELINE, STREAMHOUSE_LAKE_ROOT,
STREAMHOUSE_BOOTSTRAP_SERVERS, ...): the pipeline's own generator sends its sample to
``<PREFIX>readings`` / ``<PREFIX>devices``, then the ingest job and the daily job for every day that
received events run in-process, exactly as ``streamhouse demo`` runs the demo's. Prints one JSON line.
"""

from __future__ import annotations

import importlib
import json
import sys
from datetime import UTC, datetime

from dagster import DagsterInstance

START = datetime(2026, 3, 2, tzinfo=UTC)


def main(prefix: str, docs_dir: str) -> None:
    from assets.pipeline.active import active_pipeline
    from assets.pipeline.topics import source_topic_specs
    from edge.kafka import create_topics
    from orchestration.definitions import build_definitions
    from orchestration.pipeline import run_daily, run_ingest
    from orchestration.settings import load_settings
    from quality.checks import QualityResource

    settings = load_settings()
    pipeline = active_pipeline()
    client = settings.kafka_client()
    create_topics(client, source_topic_specs(pipeline, prefix))
    module, _, function = (pipeline.generator or "").partition(":")
    sample = getattr(importlib.import_module(module), function)(client, prefix, start=START, days=2)
    defs = build_definitions(settings, topic_prefix=prefix, quality=QualityResource(docs_dir=docs_dir))
    instance = DagsterInstance.ephemeral()
    ingest = run_ingest(defs, instance)
    assert ingest.result.success
    results = run_daily(defs, ingest.affected_days, instance)
    print(
        json.dumps(
            {
                "pipeline": pipeline.name,
                "records": ingest.records,
                "days": ingest.affected_days,
                "daily_success": [r.success for r in results],
                "injected": sample.injected,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
