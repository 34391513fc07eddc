"""examples/spark_job.py under `spark-submit --master local-cluster[2,1,1024]`: real executors, each a JVM of
its own with its own Python workers, started with a PATH that has no git. Two applications are started
around a publish; once both drivers have loaded, the repository is moved away, and each still gives the
rows of its own pinned version: neither the executors nor the drivers touch git or the repository again."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pytest

from cfgtool.versions import publish
from tests.conftest import copy_embedded
from tests.spark.conftest import JAVA_OPTIONS, set_partitions

pytestmark = pytest.mark.long  # its own applications (spark-submit): not the shared session of the "spark" group

if TYPE_CHECKING:
    from tests.conftest import GitRepo

CHECKOUT = Path(__file__).resolve().parents[2]
JOB = CHECKOUT / "examples/spark_job.py"
WAIT_S = 300  # a generous bound on a loaded machine; a run takes about a minute


def spark_submit() -> Path:
    """The `spark-submit` of the installed pyspark (its package directory is a complete SPARK_HOME)."""
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def submit(repo: GitRepo, tmp: Path, name: str, no_git: Path) -> subprocess.Popen[str]:
    """Start the example job on `repo`, to wait for the file `tmp/go` once loaded; its Spark log goes to a
    file."""
    env = {
        **os.environ,
        "PYTHONPATH": str(CHECKOUT),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "CFGTOOL_CACHE_DIR": str(tmp / "cache"),
    }
    command = [
        str(spark_submit()),
        "--master",
        "local-cluster[2,1,1024]",
        "--conf",
        f"spark.executorEnv.PATH={no_git}",
        "--conf",
        f"spark.executorEnv.PYTHONPATH={CHECKOUT}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        f"spark.driver.extraJavaOptions={JAVA_OPTIONS}",
        "--conf",
        f"spark.executor.extraJavaOptions={JAVA_OPTIONS}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        str(JOB),
        "--repo",
        str(repo.root),
        "--wait-for",
        str(tmp / "go"),
    ]
    log = (tmp / f"{name}.log").open("w")
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=tmp, start_new_session=True
    )


def stop(proc: subprocess.Popen[str], log: Path) -> None:
    """End a job that is still running, with its driver, local cluster and executors (its own session), and
    remove the executor logs its local cluster wrote under SPARK_HOME/work (SPARK_WORKER_DIR does not move
    them in local-cluster mode)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    work = spark_submit().parents[1] / "work"
    for app in set(re.findall(r"\bapp-\d{14}-\d{4}\b", log.read_text(errors="replace"))):
        shutil.rmtree(work / app, ignore_errors=True)
    with contextlib.suppress(OSError):  # left when another application still writes there
        work.rmdir()


def wait_loaded(proc: subprocess.Popen[str], log: Path) -> str:
    """The job's first line (`ConfigLoader(...)`), once its driver has loaded and waits."""
    out: IO[str] | None = proc.stdout
    assert out is not None
    lines = []
    for line in out:
        lines.append(line)
        if line.startswith("loaded;"):
            return lines[0]
    proc.wait(WAIT_S)
    raise AssertionError(f"the job ended before loading: {''.join(lines)}\n{log.read_text()[-3000:]}")


def rows(output: str) -> dict[str, list[str]]:
    """The cells of each row of the job's table, by dataset."""
    table = [line.strip("|").split("|") for line in output.splitlines() if line.startswith("|/data/")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in table}


def test_spark_job_on_real_executors_keeps_its_pin_without_git_or_the_repository(tmp_path: Path) -> None:
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="first")
    no_git = tmp_path / "bin"
    no_git.mkdir()
    assert not (no_git / "git").exists()
    before = submit(repo, tmp_path, "before", no_git)
    try:
        assert wait_loaded(before, tmp_path / "before.log").startswith("ConfigLoader(store='store', version=1,")
        set_partitions(repo, 256, "second")  # published while the first application runs
        after = submit(repo, tmp_path, "after", no_git)
        try:
            assert wait_loaded(after, tmp_path / "after.log").startswith("ConfigLoader(store='store', version=2,")
            repo.root.rename(tmp_path / "moved")  # from now on, nothing may read the repository
            (tmp_path / "go").touch()
            outputs = [proc.communicate(timeout=WAIT_S)[0] for proc in (before, after)]
        finally:
            stop(after, tmp_path / "after.log")
    finally:
        stop(before, tmp_path / "before.log")
    assert [before.returncode, after.returncode] == [0, 0], (tmp_path / "before.log").read_text()[-3000:]
    first, second = rows(outputs[0]), rows(outputs[1])
    # dataset: events, owner, kafka_partitions, cluster_name, topic (the topic from a UDF on the executors)
    assert first["/data/tracking/PageViewEvent"] == ["1204332", "tracking-infra", "128", "ltx1", "PageViewEvent"]
    assert second["/data/tracking/PageViewEvent"] == ["1204332", "tracking-infra", "256", "ltx1", "PageViewEvent"]
    for table in (first, second):
        assert table["/data/tracking/BrandNewEvent"] == ["12", "tracking-infra", "8", "ltx1", "BrandNewEvent"]
        assert table["/data/databases/jobs/postings"] == ["5310", "jobs-team", "NULL", "ltx1", "NULL"]
    assert " |-- kafka_partitions: long" in outputs[1]
