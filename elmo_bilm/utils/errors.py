"""The errors a user can cause, below every other module (`elmo_bilm.utils.files` and
`elmo_bilm.utils.names` raise them; both names are importable from `elmo_bilm.utils.files` too)."""


class UsageError(ValueError):
    """An input, option or argument a user gave that cannot be used; the message says which and
    why. A `ValueError`, so that code catching those keeps working."""


class FormatError(UsageError):
    """An input file that is not in the expected format; the message names the file (and line)."""
