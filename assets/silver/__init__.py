"""Lakehouse silver layer (Dagster assets + the PySpark/Kafka code behind them)."""
