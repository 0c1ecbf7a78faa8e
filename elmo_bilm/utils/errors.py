"""The errors a user can cause, below every other module (`elmo_bilm.utils.files` and
`elmo_bilm.utils.names` raise them; both names are importable from `elmo_bilm.utils.files` too)."""


class UsageError(ValueError):
    """An input, option or argument a user gave that cannot be used; the message says which and
    why. A `ValueError`, so that code catching those keeps working."""


class FormatError(UsageError):
    """An input file that is not in the expected format; the message names the file (and line)."""


def install_extra(extra: str) -> str:
    """The line that installs the core's optional dependencies `extra`, as it works before a
    release (the package is on no index yet): `make install` in a checkout installs every extra;
    the core wheel that `make wheels` builds takes the extra as `[extra]`."""
    from importlib import metadata

    try:
        version = metadata.version("elmo-bilm")
    except metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
        version = "VERSION"
    return (
        f'pip install "$(ls dist/elmo_bilm-{version}-*.whl)[{extra}]" (the wheel `make wheels` '
        "builds in the checkout, named for its platform; `make install` there installs every "
        "extra)"
    )
