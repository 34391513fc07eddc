"""`cfgtool.cli.error_handler.run_handled`: exceptions become one message on stderr and an exit code."""

from __future__ import annotations

import pytest

from cfgtool.cli.error_handler import run_handled
from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.hocon.errors import E_SYNTAX, HoconError
from cfgtool.hocon.origin import Origin


def raising(exc: BaseException) -> int:
    raise exc


def test_run_handled_returns_the_functions_exit_code() -> None:
    assert run_handled(lambda: 0) == 0
    assert run_handled(lambda: 1) == 1


def test_run_handled_cfgtool_error_prints_message_and_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_handled(lambda: raising(CfgtoolError("the store has no nodes", hint="add a main.conf")))
    assert code == 1
    assert capsys.readouterr().err == "cfgtool: error: the store has no nodes\n  hint: add a main.conf\n"


@pytest.mark.parametrize("cls", [UsageError, SourceError])
def test_run_handled_usage_and_source_errors_exit_2(cls: type[CfgtoolError]) -> None:
    assert run_handled(lambda: raising(cls("nope"))) == 2


def test_run_handled_hocon_error_prints_location_code_and_notes(capsys: pytest.CaptureFixture[str]) -> None:
    err = HoconError(E_SYNTAX, "expected '}'", Origin("a.conf", 3, 7), notes=("a.conf:1:5: the object began here",))
    assert run_handled(lambda: raising(err)) == 1
    assert capsys.readouterr().err == "a.conf:3:7: E_SYNTAX expected '}'\na.conf:1:5: the object began here\n"


def test_run_handled_keyboard_interrupt_exits_130() -> None:
    assert run_handled(lambda: raising(KeyboardInterrupt())) == 130


def test_run_handled_bug_is_an_internal_error_without_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CFGTOOL_DEBUG", raising=False)
    assert run_handled(lambda: raising(ZeroDivisionError("division by zero"))) == 3
    err = capsys.readouterr().err
    assert err.startswith("cfgtool: internal error: ZeroDivisionError: division by zero\n")
    assert "CFGTOOL_DEBUG=1" in err
    assert "Traceback" not in err


def test_run_handled_debug_shows_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_DEBUG", "1")
    assert run_handled(lambda: raising(ZeroDivisionError("division by zero"))) == 3
    assert "Traceback (most recent call last)" in capsys.readouterr().err
