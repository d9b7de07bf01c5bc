"""Session-wide fixtures: one embedded broker and one Spark session for the whole suite."""

pytest_plugins = ["tests.fixtures.kafka", "tests.fixtures.spark"]
