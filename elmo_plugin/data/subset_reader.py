"""A random, seeded fraction of another reader's instances (Figure 1's training-set sizes)."""

import random
from typing import Iterable

from allennlp.data import DatasetReader, Instance

from elmo_bilm.utils.files import UsageError


@DatasetReader.register("elmo_plugin_subset")
class SubsetReader(DatasetReader):
    """Reads everything `reader` yields for a path and keeps a random `fraction` of it, chosen
    by `seed` (the same instances for the same seed and data, in their original order).

    Registered as a `DatasetReader` with name "elmo_plugin_subset".

    # Parameters

    reader : `DatasetReader`
        The task's reader.
    fraction : `float`
        In (0, 1]; at least one instance is kept.
    seed : `int`, optional (default = `0`)
    """

    def __init__(self, reader: DatasetReader, fraction: float, seed: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        if not 0.0 < fraction <= 1.0:
            raise UsageError(f"fraction must be in (0, 1], got {fraction}")
        self.reader = reader
        self.fraction = fraction
        self.seed = seed

    def _read(self, file_path: str) -> Iterable[Instance]:
        instances = list(self.reader.read(file_path))
        keep = max(1, round(self.fraction * len(instances)))
        for index in sorted(random.Random(self.seed).sample(range(len(instances)), keep)):
            yield instances[index]

    def text_to_instance(self, *args, **kwargs) -> Instance:  # type: ignore[override]
        return self.reader.text_to_instance(*args, **kwargs)

    def apply_token_indexers(self, instance: Instance) -> None:
        self.reader.apply_token_indexers(instance)
