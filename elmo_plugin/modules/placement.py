"""Where ELMo goes in a task model (Sec. 3.3, Table 3): the one value every ELMo component asks."""

from dataclasses import dataclass
from typing import Iterable, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError

NAMES = ("input", "output", "both")
INPUT = "input"
OUTPUT = "output"


@dataclass(frozen=True)
class Placement:
    """ELMo at the `"input"`, the `"output"` or `"both"` of a task encoder. It knows the mixes that
    placement needs (`mixes`: `("input",)`, `("output",)` or `("input", "output")`, in the order
    the embedder concatenates them), so that the embedder, the output encoder, BCN and BiDAF do
    not each re-derive them from the string."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in NAMES:
            raise ConfigurationError(f"placement must be one of {NAMES}, got {self.name!r}")

    @classmethod
    def parse(cls, name: Optional[str]) -> Optional["Placement"]:
        """`None` (no ELMo: a baseline) or the placement named `name`."""
        return None if name is None else cls(name)

    @property
    def mixes(self) -> Tuple[str, ...]:
        """The ELMo vectors this placement needs, one Eq. (1) mix each."""
        return (INPUT, OUTPUT) if self.name == "both" else (self.name,)

    @property
    def at_input(self) -> bool:
        """Whether ELMo is concatenated to the task model's input."""
        return INPUT in self.mixes

    @property
    def at_output(self) -> bool:
        """Whether ELMo is concatenated to the task encoder's output."""
        return OUTPUT in self.mixes

    def indices(self, mixes: Iterable[str]) -> List[int]:
        """The positions of the named `mixes` (e.g. those a task model drops itself); a name this
        placement does not have is a `ConfigurationError`."""
        names = list(mixes)
        unknown = sorted(set(names) - set(self.mixes))
        if unknown:
            raise ConfigurationError(
                f"{unknown}: ELMo with placement {self.name!r} has only the mixes {list(self.mixes)}"
            )
        return [self.mixes.index(name) for name in names]
