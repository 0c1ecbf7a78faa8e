"""What a command reports as one line and what keeps its traceback (`elmo_bilm.utils.files`)."""

import pytest

from elmo_bilm.utils.files import FormatError, UsageError, reports_errors


@pytest.mark.parametrize(
    "error",
    [
        UsageError("--batch-size must be at least 1"),
        FormatError("in.txt:3: empty line"),
        FileNotFoundError("in.txt"),
    ],
)
def test_a_users_error_is_one_line_and_status_1(error):
    @reports_errors("elmo-x")
    def command():
        raise error

    with pytest.raises(SystemExit) as exit_:
        command()
    assert exit_.value.code == f"elmo-x: error: {error}"  # sys.exit(str): printed, status 1


def test_an_internal_value_error_keeps_its_traceback():
    @reports_errors("elmo-x")
    def command():
        raise ValueError("a bug: shapes (2, 3) and (4,) do not broadcast")

    with pytest.raises(ValueError, match="a bug"):
        command()


def test_user_errors_stay_value_errors_for_callers_that_catch_those():
    assert issubclass(UsageError, ValueError) and issubclass(FormatError, UsageError)
