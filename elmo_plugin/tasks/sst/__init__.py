"""SST-5 (Supplement A.8): BCN with the plugin's ELMo."""

from elmo_plugin.tasks.sst.dataset_readers.sst import SstTaskReader  # noqa: F401
from elmo_plugin.tasks.sst.models.bcn import ElmoBcn  # noqa: F401
