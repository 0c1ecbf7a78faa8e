"""`elmo_bilm.runtime.layers.Layers`, the one layer choice of every entry point: what each choice
keeps, the names, indices and weights it is given as, and what it refuses in one line."""

import numpy
import pytest
import torch

from elmo_bilm.runtime.layers import Layers

ACTIVATIONS = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)


def test_each_choice_keeps_what_it_names() -> None:
    a = ACTIVATIONS
    assert torch.equal(Layers().select(a), a)
    assert torch.equal(Layers("top").select(a), a[:, -1])
    assert torch.equal(Layers("average").select(a), a.mean(1))
    assert torch.equal(Layers(index=0).select(a), a[:, 0])
    assert torch.equal(Layers(index=-1).select(a), a[:, 2])
    concatenated = Layers("concatenated").select(a)
    assert concatenated.shape == (2, 4, 15)
    assert torch.equal(concatenated[1, 2], torch.cat([a[1, 0, 2], a[1, 1, 2], a[1, 2, 2]]))
    mixed = Layers(mix=(0.0, 1.0, 2.0), gamma=0.5).select(a)
    weights = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    assert torch.allclose(mixed, 0.5 * (weights[:, None, None, None] * a.transpose(0, 1)).sum(0))


def test_keep_is_select_for_one_sentence_on_the_host() -> None:
    one = ACTIVATIONS[0].numpy()
    for choice in ("all", "top", "average", "concatenated", 1, [1.0, 2.0, 3.0]):
        layers = Layers.of(choice)
        kept = layers.keep(one)
        assert isinstance(kept, numpy.ndarray) and kept.flags.c_contiguous
        numpy.testing.assert_array_equal(kept, layers.select(ACTIVATIONS)[0].numpy())


def test_of_reads_names_indices_and_weights() -> None:
    assert Layers.of("top") == Layers("top")
    assert Layers.of(2) == Layers(index=2) and Layers.of(numpy.int64(-1)) == Layers(index=-1)
    assert Layers.of([1, 2.5, 0]) == Layers(mix=(1.0, 2.5, 0.0))
    assert Layers.of(Layers("average")) == Layers("average")
    # one vector per token (flair, spaCy's doc.tensor): "all" is every layer side by side
    assert Layers.of("all", flat=True) == Layers("concatenated")
    assert Layers.of("top", flat=True) == Layers("top")


@pytest.mark.parametrize(
    "bad", ["bottom", "", True, None, 1.5, [1.0, "2"], [True, 1.0], {"top": 1}, b"top"]
)
def test_of_refuses_the_rest_in_one_line(bad: object) -> None:
    with pytest.raises(ValueError) as error:
        Layers.of(bad)  # type: ignore[arg-type]
    assert "\n" not in str(error.value) and "layers" in str(error.value)


def test_depth_checks_weights_and_indices_against_the_biLM() -> None:
    assert Layers().depth(3) == 3 and Layers("top").depth(3) == 1
    with pytest.raises(ValueError, match="2 layer weights for a biLM of 3 layers"):
        Layers(mix=(1.0, 2.0)).select(ACTIVATIONS)
    with pytest.raises(ValueError, match="layer 3 of a biLM of 3 layers"):
        Layers(index=3).select(ACTIVATIONS)
    with pytest.raises(ValueError, match="layer -4 of a biLM of 3 layers"):
        Layers(index=-4).depth(3)
    with pytest.raises(ValueError, match="whole number"):
        Layers(index=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "weights", [[1.0, float("nan"), 0.0], [float("inf"), 0.0, 0.0], (0.0, 0.0, -float("inf"))]
)
def test_weights_that_are_not_finite_are_refused_not_mixed_into_nan(weights) -> None:
    # a NaN or infinite weight made every mixed vector NaN, silently
    with pytest.raises(ValueError) as error:
        Layers.of(weights)
    assert "\n" not in str(error.value) and "finite" in str(error.value)


def test_numpy_weights_are_weights() -> None:
    # numpy.float32 weights and a numpy array were refused as "not mixing weights"
    expected = Layers(mix=(1.0, 2.0, 3.0))
    assert Layers.of(numpy.array([1.0, 2.0, 3.0])) == expected
    assert Layers.of(numpy.array([1, 2, 3], dtype=numpy.float32)) == expected
    assert Layers.of([numpy.float32(1), numpy.int64(2), 3]) == expected
    assert Layers.of(torch.tensor([1.0, 2.0, 3.0]).tolist()) == expected
    with pytest.raises(ValueError, match="layers must be one of"):
        Layers.of(numpy.array([True, False, True]))
    with pytest.raises(ValueError, match="layers must be one of"):
        Layers.of(numpy.ones((3, 1)))


def test_a_layers_made_directly_is_checked_as_of_makes_it() -> None:
    # Layers(mix=[...]) kept the list (an unhashable frozen dataclass) and any items ("a" failed
    # only in the mix); gamma was not read at all
    made = Layers(mix=[1, 2, 3])  # type: ignore[arg-type]
    assert made.mix == (1.0, 2.0, 3.0) and hash(made) == hash(Layers(mix=(1.0, 2.0, 3.0)))
    assert Layers(mix=(1, 2, 3), gamma=numpy.float32(2.0)).gamma == 2.0
    for bad in (dict(mix=["a", 1, 2]), dict(mix=(1.0, float("nan"))), dict(mix="abc")):
        with pytest.raises(ValueError, match="weights"):
            Layers(**bad)  # type: ignore[arg-type]
    for gamma in (float("nan"), float("inf"), "2", None):
        with pytest.raises(ValueError, match="gamma must be a (finite )?number"):
            Layers(mix=(1.0, 2.0, 3.0), gamma=gamma)  # type: ignore[arg-type]
