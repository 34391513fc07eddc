"""The README cannot drift from the tool.

Every fenced block is accounted for: `sh` blocks are the two set-up commands (`.ci/run` runs the test one),
`console` blocks are run command by command, in order, in a scratch copy of this repository, and `python` blocks
are doctests run in the same copy at that point of the tour. A command must exit 0, or the status its output
ends with (`[exit 1]`), and print what the README shows: `...` stands for any text, and commit ids and dates may
differ. The command table and the diagnostic-code table are the CLI's own.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from cfgtool.cli.app import build_app
from cfgtool.diagnostics import CODES
from cfgtool.store.git import git_env
from tests.spark.conftest import JAVA_OPTIONS, spark_missing

CHECKOUT = Path(__file__).resolve().parents[1]
README = CHECKOUT / "README.md"
SETUP_COMMANDS = [
    "python3 -m venv .venv && .venv/bin/pip install -e '.[serve,spark]' && .venv/bin/cfgtool compile",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[dev,spark]' && .venv/bin/python -m pytest",
]
NOT_COMMANDS = {"text", "hocon", "yaml"}  # blocks that show files or output, never something to run
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_EXIT = re.compile(r"\n?\[exit (\d+)\]$")
_DATE = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?: ?[+-]\d\d:?\d\d|Z)?")
_SHOWN_COMMIT = re.compile(r"(?<![0-9a-f:])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9a-f])")


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int


def blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def test_every_block_is_a_setup_command_a_tour_step_or_plain_text() -> None:
    found = blocks()
    unknown = [(b.line, b.lang) for b in found if b.lang not in {"sh", "console", "python", *NOT_COMMANDS}]
    assert not unknown, "a README block this test does not run or check: give it a known language"
    assert [b.body.strip() for b in found if b.lang == "sh"] == SETUP_COMMANDS
    assert sum(b.lang == "console" for b in found) >= 5


def test_readme_lists_exactly_the_registered_diagnostic_codes() -> None:
    listed = re.findall(r"^\| ([EW]_[A-Z_]+) \|", README.read_text(encoding="utf-8"), re.MULTILINE)
    assert listed == list(CODES)


def test_the_command_table_is_the_cli_with_each_command_s_summary() -> None:
    listed = re.findall(r"^\| `([a-z-]+)` \| (.*) \|$", README.read_text(encoding="utf-8"), re.MULTILINE)
    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.core.TyperGroup)
    assert listed == [(name, (cmd.help or "").strip().splitlines()[0]) for name, cmd in group.commands.items()]


def test_the_serving_section_says_a_publish_reaches_a_key_at_its_checkpoint() -> None:
    text = README.read_text(encoding="utf-8")
    serving = text[text.index("## Serve configs over HTTP") :]
    serving = " ".join(serving[: serving.index("```")].split())
    assert "each key moves to the new version at its own checkpoint, spread over `--cache-time` seconds" in serving
    assert "`versions/current/...` answers the new version at once" in serving


# ------------------------------------------------------------------------------------------ the tour


def scratch_copy(root: Path, env: dict[str, str]) -> Path:
    """The checkout's tracked files, committed to a new repository at `root`: what a reader has."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=CHECKOUT, env=git_env(), capture_output=True, check=True
    ).stdout.decode()
    for rel in filter(None, files.split("\0")):
        if (CHECKOUT / rel).is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CHECKOUT / rel, root / rel)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "The embedded example store"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return root


def reader_env(home: Path) -> dict[str, str]:
    """The environment of a reader named Ann Example (her own ~/.gitconfig), with this cfgtool on PATH. Her
    Spark configuration runs its JVMs as the Spark tests' (tests/spark/conftest.py: half the CPU time)."""
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ann Example\n\temail = ann@example.com\n[commit]\n\tgpgsign = false\n", encoding="utf-8"
    )
    spark_conf = home / "spark-conf"
    spark_conf.mkdir()
    (spark_conf / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions {JAVA_OPTIONS}\nspark.executor.extraJavaOptions {JAVA_OPTIONS}\n",
        encoding="utf-8",
    )
    scripts = sysconfig.get_path("scripts")
    return {
        **git_env(),
        "HOME": str(home),
        "SPARK_CONF_DIR": str(spark_conf),
        "PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",  # stdout and stderr interleave as on a terminal
        "LC_ALL": "C.UTF-8",
        "COLUMNS": "",  # a pipe, as the README shows it: nothing is fitted to a terminal's width
    }


def normalize(text: str, commits: list[str]) -> str:
    """Dates become <date>; commit ids become <commit>: in the README any hex word with a letter, in real
    output the ids of the scratch repository's commits (digests stay: they depend on the content only)."""
    text = _DATE.sub("<date>", text)
    if commits:
        ids = "|".join(sorted({c[:n] for c in commits for n in (40, 12, 7)}, key=len, reverse=True))
        text = re.sub(rf"(?<![0-9a-f:])(?:{ids})[0-9a-f]*(?![0-9a-f])", "<commit>", text)
    else:
        text = _SHOWN_COMMIT.sub("<commit>", text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def matches(expected: str, actual: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual, re.DOTALL) is not None


def console_steps(body: str) -> list[tuple[str, str, int]]:
    """(command, expected output, expected exit status) for each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1][1].append(line)
    out = []
    for command, lines in steps:
        expected = "\n".join(lines)
        status = _EXIT.search(expected)
        out.append((command, _EXIT.sub("", expected), int(status.group(1)) if status else 0))
    return out


def commits(root: Path) -> list[str]:
    proc = subprocess.run(["git", "rev-list", "--all"], cwd=root, env=git_env(), capture_output=True, text=True)
    return proc.stdout.split()


@pytest.mark.long
def test_every_tour_command_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = reader_env(tmp_path / "home")
    cwd = scratch_copy(tmp_path / "checkout", env)
    cwd_file = tmp_path / "cwd"
    ran, skipped = 0, []
    for block in blocks():
        if block.lang == "python":
            monkeypatch.chdir(cwd)
            run_doctest(block)
            continue
        if block.lang != "console":
            continue
        for command, expected, status in console_steps(block.body):
            where = f"README.md block at line {block.line}: $ {command}"
            if "spark" in command and (reason := spark_missing()):
                skipped.append(f"{where}: {reason}")
                continue
            script = f'{command}\ns=$?\npwd > "$1"\nexit $s'  # a `cd` carries over to the next command
            proc = subprocess.run(
                ["bash", "--noprofile", "--norc", "-o", "pipefail", "-c", script, "-", str(cwd_file)],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
                check=False,
            )
            assert proc.returncode == status, f"{where}: exit {proc.returncode}, expected {status}\n{proc.stdout}"
            shown, got = normalize(expected, []), normalize(proc.stdout, commits(cwd))
            assert matches(shown, got), f"{where}: the output differs\n--- README\n{shown}\n--- actual\n{got}"
            cwd = Path(cwd_file.read_text(encoding="utf-8").strip())
            ran += 1
    assert ran >= 15
    if skipped:
        pytest.skip("every other step passed; not run: " + "; ".join(skipped))


def run_doctest(block: Block) -> None:
    test = doctest.DocTestParser().get_doctest(block.body, {}, "README.md", str(README), block.line)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


def test_the_normalization_keeps_what_matters() -> None:
    real = "published version 2 on commit d62a722 at 2026-11-22 05:14+00:00, 7776000000 ms"
    shown = "published version 2 on commit 38ff45a at 2026-11-21 09:00+00:00, 7776000000 ms"
    ids = ["d62a722defd1" + "0" * 28]
    assert matches(normalize(shown, []), normalize(real, ids))
    assert not matches(normalize(shown.replace("7776", "5184"), []), normalize(real, ids))
    assert not matches(normalize(shown.replace("2 on", "3 on"), []), normalize(real, ids))
    assert matches(normalize("a\n...\nz", []), normalize("a\nb\nc\nz", []))
    assert console_steps("$ false\n[exit 1]\n$ true") == [("false", "", 1), ("true", "", 0)]
