"""One local Spark session (`local[2]`) for the whole test run; the directory is skipped without pyspark or
java. Each test starts with no cfgtool pin or variable in the session's conf."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.versions import publish
from tests.conftest import copy_embedded

if TYPE_CHECKING:
    from tests.conftest import GitRepo


def spark_missing() -> str | None:
    """Why Spark tests cannot run here (a skip reason), or None."""
    try:
        import pyarrow  # type: ignore[import-untyped]  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark/pyarrow not installed: pip install -e '.[spark]'"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Spark needs Java 17+ (no `java` on PATH and no JAVA_HOME)"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip this directory's tests, with the reason, where Spark cannot run (a conftest may not skip itself)."""
    reason = spark_missing()
    if reason is not None:
        for item in items:
            if "tests/spark/" in str(item.path).replace(os.sep, "/"):
                item.add_marker(pytest.mark.skip(reason=reason))


# The JVMs of the tests' short applications: the quick compiler only and one garbage-collector thread take about
# half the CPU time of Spark's defaults (the tier-2 compiler's threads, parallel GC) on a loaded 2-core machine.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cfgtool-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", JAVA_OPTIONS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def fresh_pins(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests share one application: clear every `spark.cfgtool.*` entry after each that uses it."""
    yield
    if "spark" not in request.fixturenames:
        return
    spark = request.getfixturevalue("spark")
    for key in list(spark.conf.getAll):
        if key.startswith("spark.cfgtool."):
            spark.conf.unset(key)


def set_partitions(repo: GitRepo, count: int, message: str) -> None:
    """Commit PageViewEvent's `kafka.partitions = count` and publish it as the next version."""
    conf = repo.root / "store/data/tracking/PageViewEvent/main.conf"
    text = conf.read_text()
    old = next(line for line in text.splitlines() if line.strip().startswith("kafka.partitions"))
    conf.write_text(text.replace(old, f"kafka.partitions = {count}"))
    subprocess.run(["git", "-C", str(repo.root), "commit", "-qam", message], check=True)
    publish(repo.root, message=message)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """The embedded store published as v1 (128 partitions) and v2 (256 partitions), once per test module."""
    repo = copy_embedded(tmp_path_factory.mktemp("spark") / "repo")
    publish(repo.root, message="first")
    set_partitions(repo, 256, "second")
    return repo


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"
