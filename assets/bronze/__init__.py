"""Lakehouse bronze layer (Dagster assets + the PySpark/Kafka code behind them)."""
