import argparse

import pytest

from elmo_bilm import load_bilm_tf
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


@pytest.fixture(scope="session")
def fixture_bilm():
    return load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()


def run_command(subcommand, argv):
    """Parse `argv` with the subcommand's own parser and run it in this process."""
    parser = argparse.ArgumentParser()
    subcommand().add_subparser(parser.add_subparsers())
    args = parser.parse_args(argv)
    args.func(args)


BILM_ARGS = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
