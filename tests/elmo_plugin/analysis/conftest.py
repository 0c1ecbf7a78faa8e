import argparse
import tarfile
from pathlib import Path

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


def run_with_log(folder: Path, name: str, minutes: int, finished: bool) -> None:
    """A run folder whose log spans `minutes` of training, finished (metrics and archive) or not."""
    run_dir = folder / name
    run_dir.mkdir(parents=True)
    line = "2026-11-24 10:{:02d}:00,000 - INFO - allennlp.common.plugins - Plugin {}\n"
    run_dir.with_name(f"{name}.log").write_text(
        line.format(0, "allennlp_models available") + line.format(minutes, "elmo_plugin available")
    )
    if finished:
        (run_dir / "metrics.json").write_text("{}")
        with tarfile.open(run_dir / "model.tar.gz", "w:gz") as tar:
            tar.add(run_dir / "metrics.json", arcname="metrics.json")
