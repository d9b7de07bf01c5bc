"""The Dagster UI as a user meets it: ``dagster dev -w workspace.yaml`` in headless Chromium.

Starts the webserver and daemon the way ``make dagster`` does (on a free loopback port, a temporary
``DAGSTER_HOME``, the session's broker and a temporary lake through ``STREAMHOUSE_*``), opens the
global asset lineage with Playwright driving Debian's ``/usr/bin/chromium`` (never a browser build of
Playwright's own), finds the layers and assets a user looks for, launches a materialization of a
bronze asset with the UI's own button and waits for the run page to say Success.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from confluent_kafka import Producer
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from edge.kafka import KafkaClientConfig, create_topics

pytestmark = [pytest.mark.slow, pytest.mark.broker]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
#: What a user looks for in the lineage graph, by asset key: every layer, a topic, both edge apps.
EXPECTED_ASSETS = [
    "kafka/orders",
    "kafka/clicks",
    "edge/revenue",
    "edge/sessions",
    "bronze/orders",
    "silver/orders",
    "gold/revenue_tumbling_5m",
    "gold/click_sessions",
]
#: Small enough to ingest in a second; its bronze asset is what the test materializes from the UI.
PRODUCTS = [
    {"product_id": f"p-{i:03d}", "name": f"product {i}", "category": "tea", "list_price": 2.5}
    for i in range(5)
]


def _chromium() -> str:
    """Debian's chromium, installed by the project's own script if missing; skip only if it cannot be."""
    found = shutil.which(CHROMIUM) or shutil.which("chromium")
    if found:
        return found
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "install_chromium.py"), "--strict"],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    found = shutil.which(CHROMIUM) or shutil.which("chromium")
    if not found:
        pytest.skip(f"chromium cannot be installed on this machine: {(proc.stdout + proc.stderr).strip()}")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        f"{base}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        return json.loads(resp.read())


LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
FAILURES = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status eventConnection { events {
  ... on ExecutionStepFailureEvent { stepKey error { message } } } } } } }"""


def _wait_until_served(base: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 300) -> None:
    """Until the webserver answers and the code location has loaded (or failed to, which is an error)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"dagster dev exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            entries = _graphql(base, LOCATIONS)["data"]["workspaceOrError"]["locationEntries"]
        except (OSError, urllib.error.URLError, KeyError, TypeError, ValueError):
            time.sleep(1)
            continue
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            errors = [
                e["locationOrLoadError"]
                for e in entries
                if e["locationOrLoadError"]["__typename"] == "PythonError"
            ]
            assert not errors, f"the code location failed to load: {errors}"
            return
        time.sleep(1)
    raise AssertionError(f"dagster dev did not serve within {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def dagster_ui(kafka_broker: KafkaClientConfig, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dagster dev`` on the session's broker and a temporary lake; yields its base URL."""
    work = tmp_path_factory.mktemp("dagster-ui")
    # the topics a new user's ingest reads, unprefixed as in the UI's code location
    from assets.sample_data import topic_specs

    create_topics(kafka_broker, topic_specs())
    producer = Producer(kafka_broker.producer())
    for product in PRODUCTS:
        producer.produce("products", key=product["product_id"].encode(), value=orjson.dumps(product))
    assert producer.flush(30) == 0

    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMHOUSE_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(work / "dagster"),
        STREAMHOUSE_BOOTSTRAP_SERVERS=kafka_broker.bootstrap_servers,
        STREAMHOUSE_BROKER_PROFILE=kafka_broker.profile.value,
        STREAMHOUSE_LAKE_ROOT=str(work / "lake"),
        STREAMHOUSE_STATE_DIR=str(work / "state"),
        PYTHONWARNINGS="ignore",
    )
    (work / "dagster").mkdir()
    port = _free_port()
    log = work / "dagster-dev.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "dagster"),
                "dev",
                "-w",
                "workspace.yaml",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_served(base, proc, log)
        yield base
    finally:
        # dagster dev shuts its webserver, daemon and code servers down on Ctrl-C; the group is ours.
        with_group = os.getpgid(proc.pid) == proc.pid
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if with_group:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def page(dagster_ui: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.set_default_timeout(60_000)
            yield context.new_page()
        finally:
            browser.close()


def _dismiss_welcome(page) -> None:  # type: ignore[no-untyped-def]
    """A fresh instance greets the first visitor with a community dialog (it can take a moment to
    appear, and it covers the graph); a user clicks Skip."""
    try:
        page.get_by_role("button", name="Skip").click(timeout=5_000)
    except PlaywrightTimeout:
        pass  # not shown (already dismissed in this browser)


def test_lineage_graph_shows_topics_edge_apps_and_every_layer(dagster_ui: str, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{dagster_ui}/asset-groups")
    page.locator('[data-tooltip="bronze"]').first.wait_for()
    _dismiss_welcome(page)
    # The global lineage opens with one node per group; the layers are there.
    groups = {e.get_attribute("data-tooltip") for e in page.locator("foreignObject [data-tooltip]").all()}
    assert {"bronze", "silver", "gold"} <= groups, groups

    # Expand every group (the graph's own shortcut, ⌥E: the URL then lists the expanded groups).
    page.keyboard.press("Alt+e")
    page.wait_for_url("**expanded=**", timeout=10_000)
    expanded = page.url.split("?", 1)[1]
    # Each asset a user looks for, selected in the expanded graph by its key: its node is drawn and
    # the side panel names the key.
    missing = []
    for key in EXPECTED_ASSETS:
        page.goto(f"{dagster_ui}/asset-groups/{quote(key, safe='')}?{expanded}")
        try:
            page.get_by_text(key.replace("/", " / "), exact=True).first.wait_for(timeout=30_000)
            node = page.locator("foreignObject:not(.group)", has_text=key.rsplit("/", 1)[1])
            node.first.wait_for(state="visible", timeout=30_000)
        except PlaywrightTimeout:  # collect every missing asset, then fail once
            missing.append(key)
    assert not missing, f"not in the lineage graph: {missing}"


def test_materialize_a_bronze_asset_from_the_ui(dagster_ui: str, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{dagster_ui}/asset-groups/{quote('bronze/products', safe='')}")
    page.get_by_text("bronze / products", exact=True).first.wait_for()
    _dismiss_welcome(page)
    page.get_by_role("button", name="Materialize selected").click()
    toast = page.get_by_text("Launched run")
    toast.first.wait_for()
    page.get_by_role("link", name="View").first.click()
    page.wait_for_url("**/runs/**")
    run_id = page.url.rsplit("/runs/", 1)[1].split("?")[0]
    # The run page's status: Success, or the failure with the step's error for the report.
    status = page.get_by_text("Success", exact=True).or_(page.get_by_text("Failure", exact=True))
    status.first.wait_for(timeout=300_000)
    if page.get_by_text("Failure", exact=True).count():
        failures = _graphql(dagster_ui, FAILURES, {"id": run_id})
        pytest.fail(f"run {run_id} failed: {failures}")
    assert page.get_by_text("Success", exact=True).first.is_visible()
    # and the asset now has a materialization with the five products
    page.goto(f"{dagster_ui}/assets/bronze/products")
    page.get_by_text("records", exact=True).first.wait_for()
