import json
import logging
import os
import signal
import subprocess
import sys

import h5py
import numpy
import pytest
import torch
from allennlp.modules.elmo import batch_to_ids

from elmo_bilm import ElmoEmbedder, load_bilm_tf
from elmo_bilm.cli.embed import main
from elmo_bilm.runtime.engine import count_sentences, embed_file
from elmo_bilm.utils.files import FormatError
from tests.conftest import OPTIONS_FILE, REPO_ROOT, WEIGHT_FILE
from tests.numerics import NETWORK, ONE_REDUCTION, assert_float32_close


@pytest.fixture(scope="module")
def bilm():
    return load_bilm_tf(OPTIONS_FILE, WEIGHT_FILE).eval()


def write_input(path, sentences):
    path.write_text("\n".join(" ".join(s) for s in sentences) + "\n")
    return str(path)


def contents(path):
    with h5py.File(path, "r") as out:
        return {key: out[key][()] for key in out.keys()}


def assert_same_contents(a, b, units=0):
    """The same datasets and index; values within `units` float32 rounding units (0: equal)."""
    assert a.keys() == b.keys()
    for key in a:
        if key == "sentence_to_index":
            assert json.loads(a[key][0]) == json.loads(b[key][0])
        else:
            assert_float32_close(a[key], b[key], units, key)


@pytest.mark.numerics
def test_all_layers_of_every_sentence(tmp_path, bilm, fixture_sentences):
    sentences = fixture_sentences[0][:5] + [["Single"], fixture_sentences[0][2]]  # a repeat
    source = write_input(tmp_path / "in.txt", sentences)
    assert embed_file(bilm, source, str(tmp_path / "out.hdf5"), batch_size=4) == 7
    stored = contents(tmp_path / "out.hdf5")
    assert set(stored) == {str(i) for i in range(7)} | {"sentence_to_index"}
    index = json.loads(stored["sentence_to_index"][0])  # AllenNLP 0.9 readers' idiom
    assert index[" ".join(sentences[2])] == "6"  # the last line of a repeated sentence
    for i, sentence in enumerate(sentences):
        assert stored[str(i)].shape == (3, len(sentence), 32)
        with torch.no_grad():
            alone = torch.stack(bilm(batch_to_ids([sentence]))["activations"])[:, 0].numpy()
        assert_float32_close(stored[str(i)], alone, NETWORK)


@pytest.mark.numerics
@pytest.mark.parametrize("layers", ["top", "average"])
def test_single_layer_outputs(tmp_path, bilm, fixture_sentences, layers):
    sentences = fixture_sentences[1][:3]
    source = write_input(tmp_path / "in.txt", sentences)
    embed_file(bilm, source, str(tmp_path / "out.hdf5"), layers=layers, batch_size=2)
    with torch.no_grad():
        all_layers = torch.stack(bilm(batch_to_ids(sentences))["activations"], 1)
    stored = contents(tmp_path / "out.hdf5")
    for i, sentence in enumerate(sentences):
        expected = all_layers[i, :, : len(sentence)]
        expected = expected[-1] if layers == "top" else expected.mean(0)
        assert stored[str(i)].shape == (len(sentence), 32)
        assert_float32_close(stored[str(i)], expected, NETWORK)


@pytest.mark.numerics
def test_chunked_sorting_writes_the_same_file(tmp_path, bilm, fixture_sentences):
    source = write_input(tmp_path / "in.txt", [s for group in fixture_sentences for s in group])
    embed_file(bilm, source, str(tmp_path / "whole.hdf5"), batch_size=4, chunk_size=10_000)
    embed_file(bilm, source, str(tmp_path / "chunks.hdf5"), batch_size=4, chunk_size=7)
    # the same datasets and index; values equal up to float32 rounding (other batches pad to
    # other lengths, which changes the order of summation inside the matrix products)
    whole, chunks = contents(tmp_path / "whole.hdf5"), contents(tmp_path / "chunks.hdf5")
    assert_same_contents(whole, chunks, NETWORK)
    embed_file(bilm, source, str(tmp_path / "again.hdf5"), batch_size=4, chunk_size=7)
    assert_same_contents(chunks, contents(tmp_path / "again.hdf5"))  # deterministic


def test_existing_output_is_not_overwritten(tmp_path, bilm):
    source = write_input(tmp_path / "in.txt", [["x"]])
    (tmp_path / "out.hdf5").write_text("precious")
    with pytest.raises(FileExistsError, match=r"pass overwrite=True"):  # the API's own word
        embed_file(bilm, source, str(tmp_path / "out.hdf5"))
    assert (tmp_path / "out.hdf5").read_text() == "precious"
    embed_file(bilm, source, str(tmp_path / "out.hdf5"), overwrite=True)
    assert contents(tmp_path / "out.hdf5")["0"].shape == (3, 1, 32)


def test_input_errors_name_file_and_line(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(FormatError, match="empty.txt: no sentences"):
        count_sentences(str(tmp_path / "empty.txt"))
    (tmp_path / "gap.txt").write_text("a sentence\n\nanother one\n")
    with pytest.raises(FormatError, match="gap.txt:2: empty line"):
        count_sentences(str(tmp_path / "gap.txt"))
    assert main([str(tmp_path / "gap.txt"), str(tmp_path / "out.hdf5")]) == 1
    assert not (tmp_path / "out.hdf5").exists() and not (tmp_path / "out.hdf5.partial").exists()


def test_skip_bad_lines_leaves_out_empty_and_non_utf8_lines_keeping_line_names(
    tmp_path, bilm, capsys
):
    """Without the flag the first bad line stops the run, naming FILE:LINE and the flag; with it
    the bad lines are left out and named once, the others keep their line numbers (HDF5 name =
    line - 1, Parquet `line` = line), with the vectors of a file without the bad lines."""
    source = tmp_path / "gap.txt"
    source.write_bytes(b"a sentence\n\n   \nanother one\n\xff bad\nlast\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert main([str(source), str(tmp_path / "refused.hdf5"), *files]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("elmo-embed: error:") and "gap.txt:2: empty line" in line, line
    assert "--skip-bad-lines" in line and not (tmp_path / "refused.hdf5").exists()

    assert main([str(source), str(tmp_path / "out.hdf5"), *files, "--skip-bad-lines"]) == 0
    err = capsys.readouterr().err
    assert f"leaving out 3 empty or non-UTF-8 line(s): {source}:2, {source}:3, {source}:5" in err
    clean = write_input(tmp_path / "clean.txt", [["a", "sentence"], ["another", "one"], ["last"]])
    embed_file(bilm, clean, str(tmp_path / "clean.hdf5"))
    stored, reference = contents(tmp_path / "out.hdf5"), contents(tmp_path / "clean.hdf5")
    assert set(stored) == {"0", "3", "5", "sentence_to_index"}
    assert json.loads(stored["sentence_to_index"][0]) == {
        "a sentence": "0",
        "another one": "3",
        "last": "5",
    }
    # the fixture biLM has embedded other files first (its word cache warm): float32 rounding
    for name, clean_name in (("0", "0"), ("3", "1"), ("5", "2")):
        assert_float32_close(stored[name], reference[clean_name], NETWORK, name)

    pytest.importorskip("pyarrow")
    from elmo_bilm.formats.parquet import read_embeddings

    parquet = str(tmp_path / "out.parquet")
    assert main([str(source), parquet, *files, "--skip-bad-lines", "--format", "parquet"]) == 0
    rows = {row.line: row for row in read_embeddings(parquet)}
    assert sorted(rows) == [1, 4, 6]  # 1-based line numbers: the HDF5 name plus one
    for line_number, row in rows.items():
        assert_float32_close(row.embeddings, stored[str(line_number - 1)], 0, str(line_number))


def test_installed_script_reports_errors_with_its_exit_status(tmp_path):
    """The script exits through `console` (no interpreter teardown): status and message survive."""
    (tmp_path / "gap.txt").write_text("a sentence\n\nanother one\n")
    script = os.path.join(os.path.dirname(sys.executable), "elmo-embed")
    result = subprocess.run(
        [script, str(tmp_path / "gap.txt"), str(tmp_path / "out.hdf5")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "elmo-embed: error:" in result.stderr and "gap.txt:2: empty line" in result.stderr
    assert not (tmp_path / "out.hdf5").exists()


def test_console_script_imports_no_allennlp(tmp_path):
    source = write_input(tmp_path / "in.txt", [["a", "cat"], ["sat"]])
    code = (
        "import sys\n"
        "from elmo_bilm.cli.embed import main\n"
        f"code = main([{source!r}, {str(tmp_path / 'out.hdf5')!r}, '--options-file', "
        f"{str(OPTIONS_FILE)!r}, '--weight-file', {str(WEIGHT_FILE)!r}, '--include-package', 'elmo_plugin'])\n"
        "heavy = ('allennlp', 'elmo_plugin', 'transformers')\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0 []"
    assert "3/3 [" in result.stderr and " tokens/s]" in result.stderr  # progress in tokens
    assert contents(tmp_path / "out.hdf5")["1"].shape == (3, 1, 32)


def test_output_over_the_input_is_refused_even_with_overwrite(tmp_path, bilm):
    source = write_input(tmp_path / "in.txt", [["a", "b"]])
    with pytest.raises(ValueError, match="is the input file"):
        embed_file(bilm, source, source, overwrite=True)
    assert (tmp_path / "in.txt").read_text() == "a b\n"


@pytest.mark.parametrize(
    "output, extra, message",
    [
        ("missing/out.hdf5", [], r"missing: no such folder for out.hdf5"),
        (
            "out.hdf5",
            ["--cuda-device", "0"],
            r"device 0: no CUDA device is available here",
        ),
    ],
)
def test_command_errors_are_one_line(tmp_path, capsys, output, extra, message):
    import re

    source = write_input(tmp_path / "in.txt", [["a", "b"]])
    argv = [source, str(tmp_path / output), "--options-file", str(OPTIONS_FILE)]
    assert main([*argv, "--weight-file", str(WEIGHT_FILE), *extra]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err
    assert not list(tmp_path.glob("**/*.partial")) and not (tmp_path / "out.hdf5").exists()


def test_read_only_folder_is_one_line(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only folders")
    source = write_input(tmp_path / "in.txt", [["a"]])
    (tmp_path / "ro").mkdir(mode=0o500)
    out = str(tmp_path / "ro" / "out.hdf5")
    assert (
        main([source, out, "--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)])
        == 1
    )
    assert "not writable" in capsys.readouterr().err


def test_allennlp_elmo_flags_and_layout(tmp_path, bilm, capsys):
    """`elmo-embed` takes `allennlp elmo`'s flags and writes its layout: `--top` / `--average`
    (one layer), `--use-sentence-keys` (datasets named by the stripped line, no index),
    `--forget-sentences` (no index), `--all` and the index of AllenNLP 0.9 otherwise."""
    source = tmp_path / "in.txt"
    source.write_text("The cat  sat .\nHello !\n")
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    runs = {
        "all": ["--all"],
        "top": ["--top"],
        "keys": ["--average", "--use-sentence-keys"],
        "forget": ["--forget-sentences"],
    }
    for name, flags in runs.items():
        assert main([str(source), str(tmp_path / f"{name}.hdf5"), *files, *flags]) == 0
    with h5py.File(tmp_path / "all.hdf5", "r") as out:
        index = out["sentence_to_index"]
        assert index.shape == (1,) and h5py.check_string_dtype(index.dtype) is not None
        assert json.loads(index[0]) == {"The cat  sat .": "0", "Hello !": "1"}
        assert out["0"].dtype == "float32" and out["0"].shape == (3, 4, 32)
    with h5py.File(tmp_path / "top.hdf5", "r") as out:
        assert out["1"].shape == (2, 32)
    with h5py.File(tmp_path / "keys.hdf5", "r") as out:
        assert sorted(out.keys()) == ["Hello !", "The cat  sat ."] and out["Hello !"].shape == (
            2,
            32,
        )
    with h5py.File(tmp_path / "forget.hdf5", "r") as out:
        assert sorted(out.keys()) == ["0", "1"]
    with pytest.raises(SystemExit):  # one of the three, as AllenNLP's mutually exclusive group
        main([str(source), str(tmp_path / "x.hdf5"), "--top", "--average"])


def test_allennlp_09_elmo_command_tests_as_they_state_it(tmp_path):
    """What AllenNLP 0.9's `allennlp/tests/commands/elmo_test.py` asserts of `allennlp elmo`, in
    `elmo-embed`: `--all` gives (3, tokens, dim) per line equal to `ElmoEmbedder.embed_sentence`,
    `--top` its last layer and `--average` the mean of its three, each (tokens, dim); the index
    maps each line to its dataset; a batch of lines gets one dataset each; a repeated line
    keeps both datasets (the index names the later). Its empty-line test raised
    `ConfigurationError`: here exit 1 naming FILE:LINE (test_input_errors_name_file_and_line)."""
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    sentence = "Michael went to the store to buy some eggs ."
    source = tmp_path / "one.txt"
    source.write_text(sentence)  # no final newline, as 0.9's test wrote it
    layers = ElmoEmbedder(str(OPTIONS_FILE), str(WEIGHT_FILE)).embed_sentence(sentence.split())
    wanted = {"all": layers, "top": layers[2], "average": layers.mean(0)}
    for flag, expected in wanted.items():
        out = tmp_path / f"{flag}.hdf5"
        assert main([str(source), str(out), f"--{flag}", *files]) == 0
        with h5py.File(out, "r") as stored:
            assert set(stored) == {"0", "sentence_to_index"}
            assert json.loads(stored["sentence_to_index"][0]) == {sentence: "0"}
            assert stored["0"].shape == expected.shape
            assert_float32_close(stored["0"][...], expected, NETWORK, flag)
    lines = [sentence, "Joel rolled down the street .", "test / this is a first", sentence]
    batch = tmp_path / "batch.txt"
    batch.write_text("\n".join(lines) + "\n")
    assert main([str(batch), str(tmp_path / "batch.hdf5"), "--all", *files]) == 0
    with h5py.File(tmp_path / "batch.hdf5", "r") as stored:
        assert set(stored) == {"0", "1", "2", "3", "sentence_to_index"}
        for number, line in enumerate(lines):
            assert stored[str(number)].shape == (3, len(line.split()), 32)
        index = json.loads(stored["sentence_to_index"][0])
        assert index == {sentence: "3", lines[1]: "1", lines[2]: "2"}


def test_include_package_other_than_the_plugin_is_refused_in_one_line(tmp_path, capsys):
    """`--include-package elmo_plugin` (a habit from `allennlp elmo-embed`) is accepted; another
    package, which this command would not import, is refused (it was silently ignored)."""
    from elmo_bilm.cli.embed import main

    source = write_input(tmp_path / "in.txt", [["a", "cat"]])
    arguments = [source, str(tmp_path / "out.hdf5"), "--options-file", str(OPTIONS_FILE)]
    arguments += ["--weight-file", str(WEIGHT_FILE), "--include-package", "my_components"]
    assert main(arguments) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("elmo-embed: error: --include-package my_components:")
    assert not (tmp_path / "out.hdf5").exists()


@pytest.mark.parametrize("device, parsed", [("cuda:0", 0), ("cuda", 0), ("-1", -1), ("cpu", -1)])
def test_cuda_device_takes_what_the_api_takes(device, parsed):
    """`--cuda-device` took an int only while the API takes `cuda:1` (issue 93 item 4)."""
    import argparse

    from elmo_bilm.cli.embed import add_arguments

    parser = add_arguments(argparse.ArgumentParser(prog="elmo-embed"))
    assert parser.parse_args(["in.txt", "out.hdf5", "--cuda-device", device]).cuda_device == parsed


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "mps", ""])
def test_a_bad_cuda_device_is_one_line_at_parse_time(capsys, device):
    with pytest.raises(SystemExit) as exit:
        main(["in.txt", "out.hdf5", "--cuda-device", device])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit.value.code == 2 and err[-1].startswith(
        "elmo-embed: error: argument --cuda-device: device must be the CPU or a CUDA device"
    ), err


def test_stdin_and_a_gzip_pipe_are_read_as_streams(tmp_path):
    """`elmo-embed /dev/stdin OUT` and `elmo-embed <(zcat corpus.gz) OUT` (a pipe: counted as it
    is read, a bar without a total) write what the file gives; a FASTA on a pipe with --fasta."""
    import gzip

    source = write_input(tmp_path / "in.txt", [["a", "cat"], ["sat", "on", "it"], ["."]])
    files = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert main([source, str(tmp_path / "file.hdf5"), *files]) == 0  # the same run on the file
    with open(source, "rb") as stdin:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "elmo_bilm.cli.embed",
                "/dev/stdin",
                str(tmp_path / "stdin.hdf5"),
                *files,
            ],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    # another process: its kernels (threads, earlier tests' settings here) may round differently
    stdin_written = contents(tmp_path / "stdin.hdf5")
    assert_same_contents(contents(tmp_path / "file.hdf5"), stdin_written, units=4)
    gz = tmp_path / "in.txt.gz"
    gz.write_bytes(gzip.compress((tmp_path / "in.txt").read_bytes()))
    fasta = tmp_path / "p.fasta"
    fasta.write_text(">p1\nMKV\n>p2\nLLA\n")
    for data, output, more in [(gz, "pipe.hdf5", []), (fasta, "fasta.hdf5", ["--fasta"])]:
        read, write = os.pipe()
        with open(data, "rb") as given, os.fdopen(write, "wb") as writer:
            writer.write(given.read())  # a pipe's buffer holds these few bytes
        pipe = f"/dev/fd/{read}"
        try:
            assert main([pipe, str(tmp_path / output), *files, *more]) == 0
        finally:
            os.close(read)
    assert_same_contents(contents(tmp_path / "file.hdf5"), contents(tmp_path / "pipe.hdf5"))
    with h5py.File(tmp_path / "fasta.hdf5", "r") as out:
        assert sorted(out) == ["p1", "p2"] and out["p1"].attrs["original_id"] == "p1"


# the child holds its run after its first batch is written, so that the test's SIGINT arrives
# mid-run whatever the machine's speed. It first takes SIGINT as a shell gives it to a command:
# a pytest worker can carry SIGINT ignored or blocked (left so by a library another test ran),
# which a child keeps across exec, and then it never saw the signal (CI timed out on it, 1 run in 2)
HELD_RUN = """
import signal, sys, time
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)
from elmo_bilm.cli import embed
from elmo_bilm.formats import hdf5

write = hdf5.Hdf5Sink.write

def held(self, *args, **kwargs):
    # the first batch written into the partial file: say so, then wait for the test's SIGINT in
    # short sleeps, outside tqdm's lock (a signal inside a bar's refresh leaves it held) and
    # whatever thread the kernel hands the signal to (a sleep returns; a read would not)
    write(self, *args, **kwargs)
    sys.__stderr__.write("HELD\\n")
    sys.__stderr__.flush()
    while True:
        time.sleep(0.01)

hdf5.Hdf5Sink.write = held
sys.argv = ["elmo-embed", *sys.argv[1:]]
embed.console()
"""


def test_ctrl_c_ends_in_one_line_and_removes_the_partial(tmp_path):
    """SIGINT during `elmo-embed`'s run: one line, exit status 130, no output or partial file."""
    source = write_input(tmp_path / "in.txt", [["a", "cat"], ["sat", "down"]])
    argv = [source, str(tmp_path / "out.hdf5"), "--options-file", str(OPTIONS_FILE)]
    argv += ["--weight-file", str(WEIGHT_FILE)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", HELD_RUN, *argv],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    seen = b""
    while b"HELD" not in seen:  # the first batch is in the partial file
        block = os.read(child.stderr.fileno(), 4096)
        assert block, seen.decode()
        seen += block
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    child.send_signal(signal.SIGINT)
    try:
        rest = child.communicate(timeout=120)[1]
    finally:
        child.kill()
    assert child.returncode == 130
    stderr = (seen + rest).decode()
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1] == "elmo-embed: interrupted (Ctrl-C)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


def test_the_command_line_names_its_flag_and_counts_in_words(tmp_path, capsys, caplog):
    """ "Wrote 1 sentence" (not "1 sentences"); an existing output names `--overwrite`, the
    flag, not the Python argument `overwrite=True`."""
    source = write_input(tmp_path / "in.txt", [["a", "b"]])
    argv = [source, str(tmp_path / "out.hdf5"), "--options-file", str(OPTIONS_FILE)]
    argv += ["--weight-file", str(WEIGHT_FILE)]
    with caplog.at_level(logging.INFO):
        assert main(argv) == 0
    assert f"Wrote 1 sentence to {tmp_path / 'out.hdf5'}" in caplog.messages
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("out.hdf5 exists; pass --overwrite to replace it"), err


def seqvec_cache(tmp_path, monkeypatch, place: bool):
    """bio_embeddings' cache in `tmp_path` (SeqVec's two files placed there as bio_embeddings
    names them, if `place`), this package's cache empty, SeqVec's URLs at a port nothing
    answers (offline)."""
    from elmo_bilm.sources import published
    from tests.conftest import free_port

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("ELMO_BILM_CACHE", str(tmp_path / "cache"))
    url = f"http://127.0.0.1:{free_port()}/seqvec"
    monkeypatch.setattr(published, "SEQVEC_OPTIONS_URL", f"{url}/options.json")
    monkeypatch.setattr(published, "SEQVEC_WEIGHTS_URL", f"{url}/weights.hdf5")
    folder = published.bio_embeddings_cache()
    if place:
        folder.mkdir(parents=True)
        (folder / "options_file").write_bytes(OPTIONS_FILE.read_bytes())
        (folder / "weights_file").write_bytes(WEIGHT_FILE.read_bytes())
    return folder


def test_fasta_with_no_bilm_named_is_embedded_with_seqvec(tmp_path, monkeypatch):
    """Proteins with no biLM named get SeqVec, found where `SeqVecEmbedder()` finds it (here
    bio_embeddings' cache), not the shipped English biLM; naming that one still works."""
    seqvec_cache(tmp_path, monkeypatch, place=True)
    (tmp_path / "in.fasta").write_text(">p1\nMKTAYIAK\n>p2\nMKV\n")
    source = str(tmp_path / "in.fasta")
    assert main([source, str(tmp_path / "seqvec.hdf5")]) == 0
    named = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
    assert main([source, str(tmp_path / "files.hdf5"), *named]) == 0
    seqvec, files = contents(tmp_path / "seqvec.hdf5"), contents(tmp_path / "files.hdf5")
    assert seqvec["p1"].shape == (3, 8, 32)
    for key in ("p1", "p2"):
        assert (seqvec[key] == files[key]).all()
    assert main([source, str(tmp_path / "english.hdf5"), "--options-file", "wikipedia"]) == 0
    assert contents(tmp_path / "english.hdf5")["p1"].shape[-1] != 32  # the shipped biLM's


def test_fasta_with_no_bilm_offline_is_one_line_naming_both_files(tmp_path, monkeypatch, capsys):
    from elmo_bilm.sources import published

    folder = seqvec_cache(tmp_path, monkeypatch, place=False)
    (tmp_path / "in.faa").write_text(">p1\nMKTAYIAK\n")
    assert main([str(tmp_path / "in.faa"), str(tmp_path / "out.hdf5")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("elmo-embed: error: a FASTA input with no --options-file"), line
    for part in (published.SEQVEC_OPTIONS_URL, published.SEQVEC_WEIGHTS_URL, "--options-file"):
        assert part in line, part
    for name in ("options_file", "weights_file"):
        assert str(folder / name) in line, name
    assert not (tmp_path / "out.hdf5").exists()


def test_only_a_fasta_input_naming_no_bilm_takes_seqvec():
    import argparse

    from elmo_bilm.cli.embed import takes_seqvec

    def args(input_file, **named):
        blank = dict(options_file=None, weight_file=None, archive_file=None, fasta=False)
        return argparse.Namespace(input_file=input_file, **{**blank, **named})

    assert takes_seqvec(args("in.fasta")) and takes_seqvec(args("in.txt", fasta=True))
    assert not takes_seqvec(args("in.txt"))
    assert not takes_seqvec(args("in.fa", options_file="wikipedia"))
    assert not takes_seqvec(args("in.fa", archive_file="model.tar.gz"))


BILM_FILES = ["--options-file", str(OPTIONS_FILE), "--weight-file", str(WEIGHT_FILE)]
# the longest line runs in pieces under --max-tokens 5 (its 12 tokens and two boundaries)
REDUCE_LINES = "The cat  sat .\nHello !\na b c d e f g h i j k l\n"


def reduced(vectors, reduction):
    """The reduction of one item's per-token output `(..., n_tokens, dim)`, in float64."""
    mean = vectors.astype("float64").mean(axis=-2)
    return mean if reduction == "mean" else mean / numpy.linalg.norm(mean)


@pytest.mark.numerics
@pytest.mark.parametrize(
    "flags, shape",
    [
        (["--all"], (3, 32)),
        (["--top"], (32,)),
        (["--average"], (32,)),
        (["--mix", "1", "0", "2"], (32,)),
    ],
)
@pytest.mark.parametrize("reduction", ["mean", "unit-mean"])
@pytest.mark.parametrize("keys", [[], ["--use-sentence-keys"]])
def test_reduce_writes_the_mean_of_the_per_token_output(tmp_path, flags, shape, reduction, keys):
    """`--reduce`: one dataset per line, the mean over its tokens of what the layer flags keep
    (scaled to unit length for unit-mean), as the same run without it gives per token; a line
    longer than --max-tokens, run in pieces, too; the index as without it."""
    source = tmp_path / "in.txt"
    source.write_text(REDUCE_LINES)
    common = [str(source), *BILM_FILES, *flags, *keys, "--max-tokens", "5"]
    assert main([*common[:1], str(tmp_path / "tokens.hdf5"), *common[1:]]) == 0
    argv = [*common[:1], str(tmp_path / "reduced.hdf5"), *common[1:], "--reduce", reduction]
    assert main(argv) == 0
    tokens, means = contents(tmp_path / "tokens.hdf5"), contents(tmp_path / "reduced.hdf5")
    assert means.keys() == tokens.keys()
    for key in means:
        if key == "sentence_to_index":
            assert json.loads(means[key][0]) == json.loads(tokens[key][0])
            continue
        assert means[key].dtype == "float32" and means[key].shape == shape
        assert_float32_close(means[key], reduced(tokens[key], reduction), ONE_REDUCTION, key)


@pytest.mark.numerics
def test_reduce_of_a_fasta_input_is_bio_embeddings_reduce_per_protein(tmp_path):
    """Proteins: `--mix 0 0 0 --gamma 3 --reduce mean` (the layers summed, then the mean over
    residues) is `SeqVecEmbedder.reduce_per_protein` of the per-residue output, datasets named by
    record id with `original_id`; a protein longer than --max-tokens runs in pieces."""
    from elmo_bilm.dropins.bio_embeddings import SeqVecEmbedder

    (tmp_path / "in.fasta").write_text(">p1\nMKTAYIAKQRQISFVKSHFSRQ\n>p2\nMKV\n")
    source, small = str(tmp_path / "in.fasta"), ["--max-tokens", "6"]
    assert main([source, str(tmp_path / "all.hdf5"), *BILM_FILES, *small]) == 0
    summed = ["--mix", "0", "0", "0", "--gamma", "3", "--reduce", "mean"]
    assert main([source, str(tmp_path / "mean.hdf5"), *BILM_FILES, *small, *summed]) == 0
    per_residue = contents(tmp_path / "all.hdf5")
    with h5py.File(tmp_path / "mean.hdf5", "r") as out:
        assert sorted(out.keys()) == ["p1", "p2"]
        for key in out:
            assert out[key].attrs["original_id"] == key and out[key].shape == (32,)
            expected = SeqVecEmbedder.reduce_per_protein(per_residue[key])
            assert_float32_close(out[key][()], expected, ONE_REDUCTION, key)


@pytest.mark.numerics
def test_reduce_unit_mean_is_simple_elmo_get_elmo_vector_average(tmp_path):
    """`--average --reduce unit-mean` gives the vectors of the simple_elmo drop-in's stateless
    `get_elmo_vector_average` (layers "average")."""
    from elmo_bilm.dropins.simple_elmo import ElmoModel
    from tests.elmo_bilm.dropins.test_simple_elmo_api import _nlpl_folder

    source = tmp_path / "in.txt"
    source.write_text(REDUCE_LINES)
    argv = [str(source), str(tmp_path / "out.hdf5"), *BILM_FILES, "--average"]
    assert main([*argv, "--reduce", "unit-mean"]) == 0
    model = ElmoModel()
    model.load(str(_nlpl_folder(tmp_path)), cuda_device=-1, stateful=False)
    texts = [line.split() for line in REDUCE_LINES.splitlines()]
    expected = model.get_elmo_vector_average(texts)
    stored = contents(tmp_path / "out.hdf5")
    for i in range(len(texts)):
        assert_float32_close(stored[str(i)], expected[i], NETWORK, str(i))


@pytest.mark.numerics
@pytest.mark.parametrize("flags, shape", [(["--all"], (3, 32)), (["--top"], (32,))])
def test_reduce_into_parquet_is_one_row_per_line(tmp_path, flags, shape):
    """Parquet with `--reduce mean`: one row per line, its whole line's tokens, `start` 0, the
    embeddings read back as `(dim,)` or `(n_layers, dim)`: the mean of the per-token rows (a line
    in pieces: of its pieces' rows)."""
    from elmo_bilm.formats.parquet import read_embeddings

    source = tmp_path / "in.txt"
    source.write_text(REDUCE_LINES)
    common = [*BILM_FILES, *flags, "--format", "parquet", "--max-tokens", "5"]
    assert main([str(source), str(tmp_path / "tokens.parquet"), *common]) == 0
    argv = [str(source), str(tmp_path / "mean.parquet"), *common, "--reduce", "mean"]
    assert main(argv) == 0
    pieces = {}
    for row in read_embeddings(str(tmp_path / "tokens.parquet")):
        pieces.setdefault(row.line, []).append((row.start, row.embeddings))
    rows = sorted(read_embeddings(str(tmp_path / "mean.parquet")), key=lambda row: row.line)
    assert [row.line for row in rows] == [1, 2, 3]
    assert len(pieces[3]) > 1  # the long line was written in pieces
    for row, line in zip(rows, REDUCE_LINES.splitlines()):
        assert row.tokens == line.split() and row.start == 0 and row.embeddings.shape == shape
        whole = numpy.concatenate([e for _, e in sorted(pieces[row.line], key=lambda p: p[0])], -2)
        assert_float32_close(row.embeddings, reduced(whole, "mean"), ONE_REDUCTION, row.line)


def test_an_unknown_reduction_is_one_line(tmp_path, capsys):
    source = write_input(tmp_path / "in.txt", [["a"]])
    with pytest.raises(SystemExit):
        main([source, str(tmp_path / "out.hdf5"), "--reduce", "median"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--reduce: invalid choice: 'median'" in err, err
    assert not (tmp_path / "out.hdf5").exists()


def test_reduce_keeps_the_progress_bar_in_tokens(tmp_path):
    """The bar counts tokens with --reduce as without it, a line in pieces moving it piece by
    piece up to the total."""
    source = tmp_path / "in.txt"
    source.write_text(REDUCE_LINES)
    script = os.path.join(os.path.dirname(sys.executable), "elmo-embed")
    argv = [script, str(source), str(tmp_path / "out.hdf5"), *BILM_FILES, "--reduce", "mean"]
    result = subprocess.run(
        [*argv, "--max-tokens", "5"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    tokens = len(REDUCE_LINES.split())
    assert f"{tokens}/{tokens} [" in result.stderr, result.stderr


def test_embed_file_refuses_an_unknown_reduction_before_any_work(tmp_path, bilm):
    from elmo_bilm.utils.errors import UsageError

    source = write_input(tmp_path / "in.txt", [["a"]])
    with pytest.raises(UsageError, match="reduce must be one of"):
        embed_file(bilm, source, str(tmp_path / "out.hdf5"), reduce="median")
    assert os.listdir(tmp_path) == ["in.txt"]


# Ctrl-C while the command's module still imports torch (its first second): raised in an import,
# as a real SIGINT there is, so that the test does not depend on when a signal lands
INTERRUPTED_IMPORT = """
import sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv[0] = "elmo-embed"
from elmo_bilm.cli.scripts import embed  # the installed script's entry point
embed()
"""


def test_ctrl_c_while_the_command_starts_is_one_line(tmp_path):
    """SIGINT before the command's `main` runs (its imports): one line, as during the run."""
    source = write_input(tmp_path / "in.txt", [["a", "cat"]])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    argv = [source, str(tmp_path / "out.hdf5"), "--options-file", str(OPTIONS_FILE)]
    out = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT, *argv, "--weight-file", str(WEIGHT_FILE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode in (130, -signal.SIGINT)  # the shell's status either way
    assert out.stderr.splitlines() == ["elmo-embed: interrupted (Ctrl-C)"]
