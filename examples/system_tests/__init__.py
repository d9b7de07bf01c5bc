"""Ports of Kafka Streams' system-test clients (``SmokeTestClient``, ``EosTestClient``) to the edge DSL.

Kafka's own drivers (``org.apache.kafka.streams.tests.StreamsSmokeTest`` / ``StreamsEosTest`` from the
``kafka-streams`` test jar) produce the input and verify these apps' outputs, so the verdict is Kafka's,
not ours: ``scripts/system_test.py`` runs them (``make system-test``), ``tests/system`` a short form.
Each port keeps the Java client's topics, store names, outputs and the stdout lines Kafka's test
services wait for (``tests/kafkatest/services/streams.py``, ``streams_smoke_test.py``,
``streams_eos_test.py``).
"""
