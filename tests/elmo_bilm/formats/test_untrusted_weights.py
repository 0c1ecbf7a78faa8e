"""bilm-tf weight files are untrusted: they read no other file and allocate no memory on their
word alone (issue 55, cases 3 and 10)."""

import json
from pathlib import Path
from typing import Any, Dict, Optional

import h5py
import numpy
import pytest

from elmo_bilm import FormatError, load_bilm_tf
from elmo_bilm.formats.bilm_tf import read_softmax
from tests.conftest import OPTIONS_FILE, WEIGHT_FILE


def _copy(tmp_path: Path, skip: str = "", name: str = "weights.hdf5") -> Path:
    """The fixture's weights without the dataset `skip` (to be replaced by the caller)."""
    path = tmp_path / name
    with h5py.File(WEIGHT_FILE, "r") as source, h5py.File(path, "w") as target:

        def copy(key: str, item: Any) -> None:
            if isinstance(item, h5py.Dataset) and key != skip:
                target[key] = item[...]

        source.visititems(copy)
    return path


def _secret(tmp_path: Path) -> numpy.ndarray:
    """A file outside the model folder, whose bytes must not become embeddings."""
    with h5py.File(WEIGHT_FILE, "r") as source:
        shape = source["char_embed"].shape
    secret = numpy.full(shape, 7.0, dtype=numpy.float32)
    (tmp_path / "secret.bin").write_bytes(secret.tobytes())
    with h5py.File(tmp_path / "secret.hdf5", "w") as other:
        other["char_embed"] = secret
    return secret


def _external_storage(tmp_path: Path, weights: h5py.File, shape: Any) -> None:
    size = int(numpy.prod(shape)) * 4
    weights.create_dataset(
        "char_embed", shape, "float32", external=[(str(tmp_path / "secret.bin"), 0, size)]
    )


def _virtual(tmp_path: Path, weights: h5py.File, shape: Any) -> None:
    layout = h5py.VirtualLayout(shape=shape, dtype="float32")
    layout[...] = h5py.VirtualSource(str(tmp_path / "secret.hdf5"), "char_embed", shape=shape)
    weights.create_virtual_dataset("char_embed", layout)


def _external_link(tmp_path: Path, weights: h5py.File, shape: Any) -> None:
    weights["char_embed"] = h5py.ExternalLink(str(tmp_path / "secret.hdf5"), "char_embed")


def _soft_link_outside(tmp_path: Path, weights: h5py.File, shape: Any) -> None:
    weights["elsewhere"] = h5py.ExternalLink(str(tmp_path / "secret.hdf5"), "/")
    weights["char_embed"] = h5py.SoftLink("/elsewhere/char_embed")


CASES = {
    "external_storage": (_external_storage, r"dataset 'char_embed' is stored in other files"),
    "virtual": (_virtual, r"dataset 'char_embed' is a virtual dataset"),
    "external_link": (_external_link, r"char_embed is an HDF5 external link to .*secret\.hdf5"),
    "soft_link_outside": (_soft_link_outside, r"elsewhere is an HDF5 external link"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_weights_that_read_other_files_are_refused(tmp_path: Path, case: str) -> None:
    secret = _secret(tmp_path)
    path = _copy(tmp_path, skip="char_embed")
    make, expected = CASES[case]
    with h5py.File(path, "a") as weights:
        make(tmp_path, weights, secret.shape)
    with h5py.File(path, "r") as weights:  # the repro: HDF5 itself reads the outside bytes
        assert numpy.array_equal(weights["char_embed"][...], secret)
    with pytest.raises(FormatError, match=rf"^{path}: {expected}") as error:
        load_bilm_tf(OPTIONS_FILE, path)
    assert "\n" not in str(error.value)


def test_a_soft_link_inside_the_file_loads(tmp_path: Path) -> None:
    path = _copy(tmp_path, skip="char_embed")
    with h5py.File(WEIGHT_FILE, "r") as source, h5py.File(path, "a") as weights:
        weights["kept/char_embed"] = source["char_embed"][...]
        weights["char_embed"] = h5py.SoftLink("/kept/char_embed")
    assert load_bilm_tf(OPTIONS_FILE, path).num_layers == 3


def test_the_softmax_of_a_file_that_reads_other_files_is_refused(tmp_path: Path) -> None:
    _secret(tmp_path)
    path = _copy(tmp_path)
    with h5py.File(path, "a") as weights:
        weights["softmax/W"] = h5py.ExternalLink(str(tmp_path / "secret.hdf5"), "char_embed")
        weights["softmax/b"] = numpy.zeros(261, dtype=numpy.float32)
    with pytest.raises(FormatError, match=r"softmax/W is an HDF5 external link"):
        read_softmax(path)


def _options(tmp_path: Path, lstm: Optional[Dict[str, Any]] = None, **cnn: Any) -> Path:
    options = json.loads(OPTIONS_FILE.read_text())
    options["lstm"].update(lstm or {})
    options["char_cnn"].update(cnn)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    return path


def test_an_inflated_file_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    """Options and datasets agree on a 16,384-d LSTM (38 MiB of float32, `dim` within bounds);
    the file holds gzip chunks of the fill value only, so it is a few KiB."""
    options = _options(tmp_path, lstm={"dim": 16384})
    path = tmp_path / "weights.hdf5"
    with h5py.File(WEIGHT_FILE, "r") as source, h5py.File(path, "w") as target:

        def copy(key: str, item: Any) -> None:
            if isinstance(item, h5py.Dataset) and not key.startswith("RNN_"):
                target[key] = item[...]

        source.visititems(copy)
        for direction in (0, 1):
            for layer in (0, 1):
                prefix = f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"
                for name, shape in (("W_0", (32, 65536)), ("B", (65536,)), ("W_P_0", (16384, 16))):
                    target.create_dataset(
                        f"{prefix}/{name}", shape, "float32", chunks=True, compression="gzip"
                    )
    assert path.stat().st_size < 1 << 20
    with pytest.raises(FormatError, match=r"MiB of weights in a file of .* KiB; .* inflated"):
        load_bilm_tf(options, path)


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("char_cnn", "n_highway", 10**6),
        ("char_cnn", "filters", [[1, 100000]]),
        ("char_cnn", "filters", [[1, 20000], [2, 20000]]),
        ("char_cnn", "filters", [[1000, 4]]),
        ("char_cnn", "embedding", {"dim": 10**6}),
        ("lstm", "dim", 10**7),
        ("lstm", "projection_dim", 10**6),
        ("lstm", "n_layers", 10**5),
    ],
)
def test_absurd_sizes_in_the_options_are_refused_naming_the_key(
    tmp_path: Path, section: str, key: str, value: Any
) -> None:
    if section == "lstm":
        options = _options(tmp_path, lstm={key: value})
    else:
        options = _options(tmp_path, **{key: value})
    shown = "embedding.dim" if key == "embedding" else key
    with pytest.raises(FormatError, match=rf"options\.json: {section}\.{shown} is .*<="):
        load_bilm_tf(options, WEIGHT_FILE)
