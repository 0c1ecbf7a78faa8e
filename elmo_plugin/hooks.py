"""Everything importing `elmo_plugin` changes outside its own modules, installed once by `install()`.

1. **The ELMo penalty in every model's loss.** `Model.get_regularization_penalty` is wrapped so that
   it adds `lambda * ||w||^2` of every trainable `ElmoScalarMix` with `lambda > 0`
   (`elmo_plugin.modules.regularization`). The Trainer adds that method's result to the loss, so
   the `l2_coefficient` of the plugin's embedders works inside any model (allennlp-models' ESIM,
   CRF tagger, ...) with no `regularizer` block. A mix whose weights the config's own AllenNLP
   `regularizer` already reaches (configs copied from allennlp-models regularise
   `scalar_parameters`) is counted once, by that regulariser, with a warning.
2. **Configs by name, and their variables' defaults.** AllenNLP offers no hook for default
   `ext_vars`, so `Params.from_file` is wrapped: a packaged config's name (`snli_esim_elmo`)
   stands for its path, and for the plugin's own configs only (in the package's config folder,
   or importing a file there: `config_env.is_plugin_config`) the variables the config reads that
   the environment lacks get their defaults as `ext_vars` of that one read
   (`elmo_plugin.common.config_env`): the shipped biLM, data under `$ELMO_PLUGIN_DATA`, built
   word vectors; an unset or missing dataset is one error naming the variable. Any other config
   is read as AllenNLP reads it. Nothing is written into the environment.
3. **numpy scalars in every checkpointer's `--recover`** (compatibility with torch >= 2.6).
   torch loads with `weights_only=True` by default; AllenNLP 2.10's training states hold numpy
   scalars where a metric gives one (`SpearmanCorrelation`, allennlp-models' coreference scores,
   kept by the metric tracker), so `allennlp train --recover` failed ("Weights only load failed")
   with AllenNLP's own checkpointer as with the plugin's. `Checkpointer.load_checkpoint` (every
   checkpointer's) allows numpy's scalar and dtypes for its own loads only
   (`torch.serialization.safe_globals`; `training/safe_checkpointer.py`); torch's allow-list is
   left as it is. Test: `tests/test_hooks.py::test_every_checkpointer_recovers_training_states_with_numpy_scalars`.
4. **An exit hook for distributed runs.** AllenNLP's workers return without destroying their
   process group; with torch 2.x gloo can then abort the process at exit (SIGABRT) before the
   model is archived. The group is destroyed at exit.
5. **ELMo placement contract.** `Model.from_params` is wrapped so that every model built from a
   config or an archive is checked: ELMo at the output without the `elmo_plugin_output_elmo`
   encoder, a wrapper without ELMo at the output, or widths that disagree are a
   `ConfigurationError` at construction (`elmo_plugin.modules.placement_contract`).
6. **Archives are untrusted.** AllenNLP's `extracted_archive` (behind `load_archive`, every
   `allennlp evaluate`/`predict` and `from_archive` model) is replaced by
   `elmo_bilm.sources.archives.extracted_archive`, which refuses members that would write
   outside the extraction folder (`..`, absolute paths, links outside, device files).
7. **One line for a user's error, under the `allennlp` command only.** A `sys.excepthook` prints
   the plugin's config errors (`ConfigError`: an unset or missing dataset, a misspelt config name)
   as `allennlp: error: ...`, and an `allennlp train` ended by Ctrl-C or SIGTERM as one line
   naming what its serialization folder holds and the `--recover` command that resumes it
   (`elmo_plugin.common.command_line`); other exceptions reach AllenNLP's hook as before. Under
   the command too (`elmo_plugin.common.config_errors`): `Params.pop_choice` raises a subclass of
   its `ConfigurationError` for an unknown registered name (any config's `type`), printed as one
   line with the config, the key and the closest names; and `allennlp train`'s `train_model`
   removes the serialization folder a failed run created when it holds nothing trained, so that
   the same command retries (a folder there before the run is never removed; one whose run
   trained an epoch is kept, with its logs, and the error line says so).
8. **AllenNLP's `reduce_on_plateau`, fixed for every config** (compatibility with torch >= 2.7).
   AllenNLP 2.10's passes `verbose=` to `ReduceLROnPlateau`, which torch 2.7 removed: every config
   naming it (allennlp-models' ESIM configs among them) failed to build its trainer (`TypeError:
   ... unexpected keyword argument 'verbose'`). AllenNLP's name is registered to
   `elmo_plugin.training.reduce_on_plateau.ReduceOnPlateauScheduler` (a subclass of AllenNLP's,
   same parameters and schedule, `verbose` logged by itself; also registered as
   `elmo_plugin_reduce_on_plateau`, the name the plugin's configs and their archives carry).
   Tests: `tests/elmo_plugin/training/test_reduce_on_plateau.py`, and
   `tests/test_foreign_configs.py::test_allennlp_models_esim_elmo_trains_with_the_embedder_swapped`.

Compatibility entries (3, 8) restore what AllenNLP did on the torch it was released with, for every
config; they are the breaks found by auditing AllenNLP 2.10 and allennlp-models 2.10 against the
torch the plugin installs (issue 69 item 5; every other scheduler, momentum scheduler and
optimizer builds and steps; the other `torch.load` calls read tensors only: model archives,
`best.th`, the `pretrained` initializer, the tensor cache). Checked and left as they are: the
trainer's `torch.cuda.amp.autocast` / `GradScaler`, which work on this torch and print torch's
`FutureWarning` once each per run.

Besides, importing the plugin registers its components, each under a name of its own
(`elmo_plugin_*`). Hooks 1, 5 and 7 act only on the plugin's objects (its mixes, its placement
modules, its errors and `allennlp train`'s interrupts); 3, 4, 6 and 8 reach everyone by design
(docs/design.md says why); `tests/test_foreign_configs.py` trains a config without the plugin's
components to the same weights and metrics with and without the plugin.
"""

import atexit

import torch.distributed as dist

from elmo_bilm.sources import archives
from elmo_plugin.common import command_line, config_env
from elmo_plugin.modules import placement_contract, regularization
from elmo_plugin.training import reduce_on_plateau, safe_checkpointer

_installed = False


def destroy_process_group() -> None:
    """Destroy the default process group, if one is initialised (registered with `atexit`)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def route_archive_extraction() -> None:
    """Hook 6: AllenNLP's archive extraction through the core's checked `extracted_archive`."""
    from allennlp.models import archival

    archival.extracted_archive = archives.extracted_archive  # type: ignore[assignment]


def install() -> None:
    """Install hooks 1-8; idempotent."""
    global _installed
    if _installed:
        return
    regularization.install()
    config_env.install()
    atexit.register(destroy_process_group)
    placement_contract.install()
    route_archive_extraction()
    command_line.install()
    reduce_on_plateau.install()
    safe_checkpointer.install_checkpoint_loading()
    _installed = True
