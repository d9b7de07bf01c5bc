"""Processor API and the task runtime shared by the Kafka runtime and the TopologyTestDriver."""

from __future__ import annotations

from edge.processor.api import Cancellable, Processor, ProcessorContext, ProcessorSupplier, PunctuationType
from edge.processor.collector import RecordCollector
from edge.processor.config import StreamsConfig, TaskConfig
from edge.processor.handlers import (
    DeadLetterQueueHandler,
    ErrorAction,
    ErrorContext,
    ErrorKind,
    ErrorResponse,
    ExceptionHandler,
    LogAndContinueHandler,
    LogAndFailHandler,
    ProcessingFailed,
)
from edge.processor.partitioner import default_partition, murmur2
from edge.processor.record import Change, Record
from edge.processor.task import StreamTask, task_id

__all__ = [
    "Cancellable",
    "Change",
    "DeadLetterQueueHandler",
    "ErrorAction",
    "ErrorContext",
    "ErrorKind",
    "ErrorResponse",
    "ExceptionHandler",
    "LogAndContinueHandler",
    "LogAndFailHandler",
    "ProcessingFailed",
    "Processor",
    "ProcessorContext",
    "ProcessorSupplier",
    "PunctuationType",
    "Record",
    "RecordCollector",
    "StreamTask",
    "StreamsConfig",
    "TaskConfig",
    "default_partition",
    "murmur2",
    "task_id",
]
